"""ZigZag mapping YAML -> dnnmap :class:`Mapping` of one layer on an imported ZigZag core.

A ZigZag mapping file is a list of entries named after a layer (or ``default``), each with a
``spatial_mapping`` (array dimension -> ``"DIM, factor"`` unrollings), optionally a
``temporal_ordering`` (``[DIM, size]`` loops, innermost first) and ``memory_operand_links``. The
unrollings go to the fan-out that spans their array dimension (:class:`ImportedZigzag.array_dims`); an
unrolling larger than the layer's dimension is clipped to it, as ZigZag clips it, and one that does not
divide it leaves a padded (imperfect) temporal factor, as ZigZag pads it. The temporal loops, innermost
first, are placed at the lowest level whose tiles still fit (ZigZag's allocation fills memories bottom up
too); without a ``temporal_ordering`` the loops left by the unrolling are placed in the layer's dimension
order, innermost last.
"""

from __future__ import annotations

import math
from typing import Any

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.zigzag import ImportedZigzag
from dnnmap.mapping.mapping import BOTH_AXES, LevelMapping, Mapping
from dnnmap.workload.importers.timeloop_yaml import Where, integer, list_at, mapping_at
from dnnmap.workload.ir import Operator, Role

_ROLE_OF_OPERAND: dict[str, Role] = {"W": "weight", "I": "input", "O": "output"}


def mapping_entry(data: object, layer: str, origin: str) -> tuple[dict[str, Any], Where]:
    """The entry of a parsed ZigZag mapping file for ``layer`` (by name, else ``default``)."""
    where = Where(origin)
    entries = [mapping_at(e, where / i) for i, e in enumerate(list_at(data, where))]
    for wanted in (layer, "default"):
        for i, e in enumerate(entries):
            if e.get("name") == wanted:
                return e, where / i
    raise where.error(f"no entry named {layer!r} or 'default'")


def operand_links(entry: dict[str, Any], at: Where) -> dict[str, Role]:
    """Memory operand -> role from an entry's ``memory_operand_links`` (``W: I2`` links the weight to I2)."""
    raw = mapping_at(entry.get("memory_operand_links", {"O": "O", "W": "I2", "I": "I1"}),
                     at / "memory_operand_links")
    if set(raw) != set(_ROLE_OF_OPERAND) or len(set(raw.values())) != 3:
        raise (at / "memory_operand_links").error("must link each of O, W, I to a distinct memory operand")
    return {str(mem): _ROLE_OF_OPERAND[op] for op, mem in raw.items()}


def _unrollings(entry: dict[str, Any], op: Operator, core: ImportedZigzag,
                at: Where) -> dict[int, dict[str, tuple[int, int]]]:
    """Level index -> dim -> (factor, axis)."""
    out: dict[int, dict[str, tuple[int, int]]] = {}
    sm_at = at / "spatial_mapping"
    for oa_dim, items in mapping_at(entry.get("spatial_mapping", {}), sm_at).items():
        for j, item in enumerate(list_at(items, sm_at / str(oa_dim))):
            parts = [x.strip() for x in item.split(",")] if isinstance(item, str) else []
            if len(parts) != 2:
                raise (sm_at / str(oa_dim) / j).error(f"expected 'DIM, factor', got {item!r}")
            dim, factor = parts[0].upper(), integer(parts[1], sm_at / str(oa_dim) / j)
            if dim not in op.bounds or factor <= 1:
                continue  # ZigZag ignores unrollings of dimensions the layer does not have
            if oa_dim not in core.array_dims:
                raise (sm_at / str(oa_dim)).error(f"the imported array has no dimension {oa_dim!r} of size > 1")
            level, axis = core.array_dims[str(oa_dim)]
            prev = out.setdefault(level, {}).get(dim)
            axis = axis if prev is None or prev[1] == axis else BOTH_AXES
            out[level][dim] = ((prev[0] if prev else 1) * min(factor, op.bound(dim)), axis)
    return out


def _loops(entry: dict[str, Any], op: Operator, spatial: dict[str, int], at: Where) -> list[tuple[str, int]]:
    """Temporal loops innermost first, covering every dimension (padded where an unrolling does not divide)."""
    left = {d: math.ceil(b / spatial.get(d, 1)) for d, b in op.dims}
    if "temporal_ordering" not in entry:
        return [(d, left[d]) for d in reversed(op.dim_names) if left[d] > 1]
    loops = []
    t_at = at / "temporal_ordering"
    for i, item in enumerate(list_at(entry["temporal_ordering"], t_at)):
        pair = list_at(item, t_at / i)
        if len(pair) != 2 or str(pair[0]).upper() not in op.bounds:
            raise (t_at / i).error(f"expected [DIM, size] with a dimension of {', '.join(op.dim_names)}")
        loops.append((str(pair[0]).upper(), integer(pair[1], t_at / i)))
    for d in op.dim_names:
        got = math.prod(f for x, f in loops if x == d)
        if got < left[d]:
            raise t_at.error(f"its {d} loops cover {got} x {spatial.get(d, 1)} (unrolled) of {op.bound(d)}")
    return loops


def _fits(spec: ArchSpec, op: Operator, level: int, tiles: dict[str, int]) -> bool:
    lv = spec.levels[level]
    if lv.capacity is None:
        return True
    sizes = {d: min(tiles[d], b) for d, b in op.dims}
    used = {t.role: t.size(sizes) * spec.capacity_units_of(lv, t.role) for t in op.tensors if t.role in lv.keeps}
    if isinstance(lv.capacity, dict):
        return all(used[r] <= lv.capacity_for(r) for r in used)
    return sum(used.values()) <= lv.capacity_for("input")


def _all_fit(spec: ArchSpec, op: Operator, factors: list[dict[str, int]], from_level: int) -> bool:
    """Every level from ``from_level`` up holds its tiles (``factors``: per level, dim -> temporal x spatial)."""
    tiles = {d: 1 for d in op.dim_names}
    for i, f in enumerate(factors):
        tiles = {d: tiles[d] * f.get(d, 1) for d in op.dim_names}
        if i >= from_level and not _fits(spec, op, i, tiles):
            return False
    return True


def zigzag_mapping(data: object, origin: str, op: Operator, core: ImportedZigzag) -> Mapping:
    """The dnnmap mapping of ``op`` that the ZigZag mapping file gives for it (module docstring)."""
    entry, at = mapping_entry(data, op.name, origin)
    unroll = _unrollings(entry, op, core, at)
    spatial = {d: math.prod(u[d][0] for u in unroll.values() if d in u) for d in op.dim_names}
    loops = _loops(entry, op, spatial, at)
    spec = core.spec
    temporal: list[list[tuple[str, int]]] = [[] for _ in spec.levels]
    factors = [{d: f for d, (f, _) in unroll.get(i, {}).items()} for i in range(len(spec.levels))]
    level = 0
    for dim, factor in loops:
        while level < len(spec.levels) - 1:
            trial = [dict(f) for f in factors]
            trial[level][dim] = trial[level].get(dim, 1) * factor
            if _all_fit(spec, op, trial, level):
                break
            level += 1
        temporal[level].append((dim, factor))
        factors[level][dim] = factors[level].get(dim, 1) * factor
    levels = []
    for i, placed in enumerate(temporal):
        merged: dict[str, int] = {}
        for d, f in placed:
            merged[d] = merged.get(d, 1) * f
        order = tuple(dict.fromkeys(d for d, _ in reversed(placed)))
        u = unroll.get(i, {})
        levels.append(LevelMapping(tuple(merged.items()), order, tuple((d, f) for d, (f, _) in u.items()),
                                   tuple((d, a) for d, (_, a) in u.items())))
    return Mapping(tuple(levels), layer=op.name, notes=(f"imported from ZigZag mapping {origin}",))
