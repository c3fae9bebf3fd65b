"""Readable loop-nest printout of a mapping (one line per loop, marking levels and spatial loops)."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.workload.ir import Operator


def tile_shape(m: Mapping, op: Operator, level: int) -> dict[str, int]:
    """Tile extent of every dimension at ``level`` (clipped to the bound)."""
    return {d: min(b, m.coverage(d, level)) for d, b in op.dims}


def format_loop_nest(m: Mapping, op: Operator, arch: ArchSpec) -> str:
    """The loop nest outermost first. Trivial loops (factor 1) are omitted."""
    lines = [f"# {op.name or 'layer'} ({op.kind}) on {arch.name}: "
             + " ".join(f"{d}={b}" for d, b in op.dims)]
    depth = 0
    for i in range(len(arch.levels) - 1, -1, -1):
        lv, lm = arch.levels[i], m.levels[i]
        tile = tile_shape(m, op, i)
        kept = m.kept_tensors(i, op, arch)
        sizes = ", ".join(f"{t}:{op.tensor(t).size(tile)}" for t in kept)
        lines.append(f"{'  ' * depth}[{lv.name}] keeps {sizes or 'nothing (bypass)'} words")
        for d in lm.full_order(op.dim_names):
            f = lm.t(d)
            if f > 1:
                lines.append(f"{'  ' * depth}for {d.lower()}{i} in [0:{f})")
                depth += 1
        axes = dict(lm.spatial_axis)
        for d in op.dim_names:
            f = lm.s(d)
            if f > 1:
                ax = ("x", "y", "xy")[axes.get(d, 0)] if lv.fanout and len(lv.fanout.shape) == 2 else ""
                lines.append(f"{'  ' * depth}parallel-for {d.lower()}{i}s in [0:{f}){' (' + ax + ')' if ax else ''}")
                depth += 1
    lines.append(f"{'  ' * depth}MAC  # {op.operations} operations")
    return "\n".join(lines)
