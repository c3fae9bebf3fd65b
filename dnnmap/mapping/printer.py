"""Readable loop-nest printout of a mapping (one line per loop, marking levels and spatial loops)."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.workload.ir import Operator


def tile_shape(m: Mapping, op: Operator, level: int, above: int = 0) -> dict[str, int]:
    """Tile extent of every dimension at ``level`` (clipped to the bound); ``above``: of a tensor placed
    below that many of the level's loops (their factors are then outside the tile)."""
    outside = m.levels[level].loops(op.dim_names)[:above]
    return {d: min(b, m.coverage(d, level) // (m.levels[level].t(d) if d in outside else 1)) for d, b in op.dims}


def format_loop_nest(m: Mapping, op: Operator, arch: ArchSpec) -> str:
    """The loop nest outermost first. Trivial loops (factor 1) are omitted. A tensor placed inside a
    level's loops (``loops_above``) gets its own line where its tile boundary sits."""
    lines = [f"# {op.name or 'layer'} ({op.kind}) on {arch.name}: "
             + " ".join(f"{d}={b}" for d, b in op.dims)]
    depth = 0
    for i in range(len(arch.levels) - 1, -1, -1):
        lv, lm = arch.levels[i], m.levels[i]
        kept = m.kept_tensors(i, op, arch)
        placed = {t: lm.above(t) for t in kept} if i < len(arch.levels) - 1 else {t: 0 for t in kept}

        def sizes(n: int) -> str:
            return ", ".join(f"{t}:{op.tensor(t).size(tile_shape(m, op, i, n))}" for t in kept if placed[t] == n)
        header = f"{sizes(0)} words" if sizes(0) else "tiles placed below its loops" if kept else "nothing (bypass)"
        lines.append(f"{'  ' * depth}[{lv.name}] keeps {header}")
        for n, d in enumerate(lm.loops(op.dim_names), start=1):
            lines.append(f"{'  ' * depth}for {d.lower()}{i} in [0:{lm.t(d)})")
            depth += 1
            if sizes(n):
                lines.append(f"{'  ' * depth}[{lv.name}] keeps {sizes(n)} words (tile below the loops above)")
        axes = dict(lm.spatial_axis)
        for d in op.dim_names:
            f = lm.s(d)
            if f > 1:
                ax = ("x", "y", "xy")[axes.get(d, 0)] if lv.fanout and len(lv.fanout.shape) == 2 else ""
                lines.append(f"{'  ' * depth}parallel-for {d.lower()}{i}s in [0:{f}){' (' + ax + ')' if ax else ''}")
                depth += 1
    lines.append(f"{'  ' * depth}MAC  # {op.operations} operations")
    return "\n".join(lines)
