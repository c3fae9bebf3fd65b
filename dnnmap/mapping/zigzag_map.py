"""ZigZag mapping YAML -> dnnmap :class:`Mapping` of one layer on an imported ZigZag core.

A ZigZag mapping file is a list of entries named after a layer (or ``default``), each with a
``spatial_mapping`` (array dimension -> ``"DIM, factor"`` unrollings), optionally a
``temporal_ordering`` (``[DIM, size]`` loops, innermost first) and ``memory_operand_links``. The
unrollings go to the fan-out that spans their array dimension (:class:`ImportedZigzag.array_dims`); an
unrolling larger than the layer's dimension is clipped to it, as ZigZag clips it, and one that does not
divide it leaves a padded (imperfect) temporal factor, as ZigZag pads it. Without a ``temporal_ordering``
the loops left by the unrolling run in the layer's dimension order, innermost last.

The loops, innermost first, are allocated to the memories as ZigZag's LOMA allocates them (docs/zigzag.md,
"Mapping file"): memory by memory bottom up, each operand the memory holds takes a prefix of the loops
it has not yet placed, the prefixes chosen together so that their tiles fit the memory and the words
moved from the memory above are fewest. Each operand thus has its own cut in a level's loops, which the
mapping expresses as per-tensor placement (``loops_above``). ``shared_boundary=True`` reads the file
the older way instead: each loop at the lowest level where every tile still fits (one boundary per level).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.zigzag import ImportedZigzag
from dnnmap.mapping.mapping import BOTH_AXES, LevelMapping, Mapping
from dnnmap.workload.importers.timeloop_yaml import Where, integer, list_at, mapping_at
from dnnmap.workload.ir import Axis, Operator, Role, Tensor

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
        size = integer(pair[1], t_at / i)
        if size < 1:
            raise (t_at / i).error(f"a loop's size must be >= 1, got {size}")
        loops.append((str(pair[0]).upper(), size))
    for d in op.dim_names:
        got = math.prod(f for x, f in loops if x == d)
        if got < left[d]:
            raise t_at.error(f"its {d} loops cover {got} x {spatial.get(d, 1)} (unrolled) of {op.bound(d)}")
    return loops


def _window(axis: Axis, sizes: dict[str, int]) -> int:
    """ZigZag's size of a window axis ``c = sa * a + sb * b`` over ``a`` < A, ``b`` < B: the number of distinct
    indices, ``A * B - max(0, B - sa / g) * (A - sb / g)`` with ``g = gcd(sa, sb)`` (a stride-2 window of
    4 outputs and 1 tap: 4 rows, where the interval hull has 7); other axes: the hull."""
    if len(axis.terms) != 2:
        return axis.extent(sizes)
    (a, sa), (b, sb) = axis.terms
    g = math.gcd(sa, sb)
    return sizes[a] * sizes[b] - max(0, sizes[b] - sa // g) * (sizes[a] - sb // g)


def _tile_units(spec: ArchSpec, op: Operator, level: int, tensor: Tensor, sizes: dict[str, int], final: bool) -> int:
    """Capacity units of ``tensor``'s tile over ``sizes`` at ``level``, sized as ZigZag sizes it: window axes
    (input rows and columns) by :func:`_window`, clipped to the tensor's extent, other axes not (a padded
    loop's tile is whole); a final output (no reduction left above the tile) at ``final_output_bits``."""
    lv = spec.levels[level]
    words = math.prod(min(_window(a, sizes), a.extent(op.bounds)) if len(a.terms) > 1 else a.extent(sizes)
                      for a in tensor.axes)
    units = spec.capacity_units_of(lv, tensor.role)
    if final and lv.capacity_unit == "bits" and spec.final_output_bits is not None:
        units = spec.final_output_bits
    return words * units


def _fits(spec: ArchSpec, level: int, used: dict[Role, int]) -> bool:
    """Whether tiles taking ``used`` capacity units per role fit ``level`` (a shared or a per-role capacity)."""
    lv = spec.levels[level]
    if lv.capacity is None:
        return True
    if isinstance(lv.capacity, dict):
        return all(u <= lv.capacity_for(r) for r, u in used.items())
    return sum(used.values()) <= lv.capacity_for("input")


def _all_fit(spec: ArchSpec, op: Operator, factors: list[dict[str, int]], from_level: int) -> bool:
    """Every level from ``from_level`` up holds its tiles (``factors``: per level, dim -> temporal x spatial)."""
    tiles = {d: 1 for d in op.dim_names}
    for i, f in enumerate(factors):
        tiles = {d: tiles[d] * f.get(d, 1) for d in op.dim_names}
        sizes = {d: min(tiles[d], b) for d, b in op.dims}
        used = {t.role: t.size(sizes) * spec.capacity_units_of(spec.levels[i], t.role)
                for t in op.tensors if t.role in spec.levels[i].keeps}
        if i >= from_level and not _fits(spec, i, used):
            return False
    return True


def _shared_segments(spec: ArchSpec, op: Operator, unroll: dict[int, dict[str, tuple[int, int]]],
                     loops: list[tuple[str, int]]) -> list[int]:
    """The older reading: each loop, innermost first, at the lowest level whose tiles (all tensors') still fit;
    the end of each level's segment of ``loops``."""
    factors = [{d: f for d, (f, _) in unroll.get(i, {}).items()} for i in range(len(spec.levels))]
    ends = [0] * len(spec.levels)
    level = 0
    for k, (dim, factor) in enumerate(loops):
        while level < len(spec.levels) - 1:
            trial = [dict(f) for f in factors]
            trial[level][dim] = trial[level].get(dim, 1) * factor
            if _all_fit(spec, op, trial, level):
                break
            level += 1
        factors[level][dim] = factors[level].get(dim, 1) * factor
        ends[level:] = [k + 1] * (len(spec.levels) - level)
    return ends


def _allocate(op: Operator, spec: ArchSpec, unroll: dict[int, dict[str, tuple[int, int]]],
              loops: list[tuple[str, int]], doubled: frozenset[str] = frozenset()) -> dict[str, dict[int, int]]:
    """ZigZag's allocation of ``loops`` (innermost first): tensor -> level keeping it -> how many of the loops
    lie inside its tile there. Per level bottom up, each tensor the level keeps may take any prefix of its
    loops not yet placed whose tile alone fits; of the combinations whose tiles fit together, the one moving
    the fewest words into the level (for each tensor its tile times the iterations of the loops left above)
    wins, the last such combination in ZigZag's order on ties (larger prefixes first); the backing store
    takes every loop left. An output tile is sized at ``final_output_bits`` when no reduction loop or
    unrolling is left above it. Where even the loops already placed do not fit (ZigZag would reject the
    mapping), the tensor takes no loop there. On a level named in ``doubled`` (ZigZag's ``force_double_buffering``)
    a tile counts twice unless it is the tensor's whole remaining tile there (every loop left taken too), in
    the fit test and in the words moved, as ZigZag's ``calc_size_slices`` counts it."""
    spatial = [{d: f for d, (f, _) in unroll.get(i, {}).items()} for i in range(len(spec.levels))]
    last = len(spec.levels) - 1
    cut = {t.name: 0 for t in op.tensors}
    out: dict[str, dict[int, int]] = {t.name: {} for t in op.tensors}
    for level, lv in enumerate(spec.levels):
        kept = [t for t in op.tensors if level == last or t.role in lv.keeps]
        below = {d: math.prod(s.get(d, 1) for s in spatial[:level + 1]) for d in op.dim_names}
        above = {d for s in spatial[level + 1:] for d, f in s.items() if f > 1}
        options: list[list[tuple[int, int, int]]] = []  # per tensor: (prefix end, size, words moved)
        for t in kept:
            rest = loops[cut[t.name]:]
            final = t.role == "output" and not ({d for d, _ in rest} | above) - t.dims
            sizes, choices = dict(below), []
            for d, f in loops[:cut[t.name]]:
                sizes[d] *= f
            whole = dict(sizes)
            for d, f in rest:
                whole[d] *= f
            whole_units = _tile_units(spec, op, level, t, whole, final)
            for k in range(len(rest) + 1):
                if k:
                    sizes[rest[k - 1][0]] *= rest[k - 1][1]
                size = _tile_units(spec, op, level, t, sizes, final)
                if lv.name in doubled and size < whole_units:
                    size *= 2
                if choices and not _fits(spec, level, {t.role: size}):
                    break
                left = math.prod(f for _, f in rest[k:])
                choices.append((cut[t.name] + k, size, 0 if level == last else left * size))
            options.append(choices[-1:] if level == last else choices)
        combos = itertools.product(*options)
        best = next(combos)  # every tensor taking no loop: kept even where it does not fit
        fewest = sum(c[2] for c in best)
        for combo in combos:
            moved = sum(c[2] for c in combo)
            if moved <= fewest and _fits(spec, level, {t.role: c[1] for t, c in zip(kept, combo)}):
                best, fewest = combo, moved
        for t, (end, _, _) in zip(kept, best):
            cut[t.name] = end
            out[t.name][level] = end
    return out


def _segments(spec: ArchSpec, cuts: dict[str, dict[int, int]], n: int) -> tuple[list[int], list[str]]:
    """The end of each level's segment of the ``n`` loops such that each tensor's cut at a level keeping it
    lies in the level's segment, and the notes on the cuts that cannot: top down, a level's segment ends at
    its largest cut but not above the smallest cut of the level above it, so a tensor kept in a level below
    another tensor's level (tpu_like's weight register below its output register) keeps only the loops
    that fit under the other's cut. ``cuts`` is lowered in place to what the mapping expresses."""
    ends, notes = [n] * len(spec.levels), []
    for level in range(len(spec.levels) - 2, -1, -1):
        here = [c[level] for c in cuts.values() if level in c]
        up = [c[level + 1] for c in cuts.values() if level + 1 in c]
        ends[level] = min([ends[level + 1], max(here, default=ends[level + 1]), *up])
        for t, c in cuts.items():
            if c.get(level, 0) > ends[level]:
                notes.append(f"{t} in {spec.levels[level].name}: ZigZag keeps the {c[level]} innermost loops there, "
                             f"dnnmap {ends[level]}: {spec.levels[level + 1].name} lies above it and keeps "
                             f"{ends[level]} for its operands")
                c[level] = ends[level]
    return ends, notes


def _level_mappings(spec: ArchSpec, loops: list[tuple[str, int]], ends: list[int],
                    unroll: dict[int, dict[str, tuple[int, int]]],
                    cuts: dict[str, dict[int, int]]) -> tuple[tuple[LevelMapping, ...], list[str]]:
    """Each level's loops (its segment of ``loops``; a dimension looped twice in a segment is one loop at its
    outer place) and each tensor's ``loops_above``: the level's loops whose outer place lies above its cut;
    and a note for each tensor whose cut a merged loop straddles (its tile loses the loop's inner part)."""
    levels, notes, start = [], [], 0
    for i, end in enumerate(ends):
        placed = loops[start:end]
        merged: dict[str, int] = {}
        inner: dict[str, int] = {}
        outer: dict[str, int] = {}
        for k, (d, f) in enumerate(placed, start):
            merged[d] = merged.get(d, 1) * f
            inner.setdefault(d, k)
            outer[d] = k
        order = tuple(sorted(merged, key=lambda d: -outer[d]))
        above = tuple((t, n) for t, c in cuts.items() if i in c
                      and (n := sum(1 for d in order if merged[d] > 1 and outer[d] >= c[i])) > 0)
        notes += [f"{t} in {spec.levels[i].name}: its boundary lies between two {d} loops, one {d} loop here; "
                  f"the tile holds no {d} of this level" for t, c in cuts.items() if i in c
                  for d in order if inner[d] < c[i] <= outer[d]]
        u = unroll.get(i, {})
        levels.append(LevelMapping(tuple(merged.items()), order, tuple((d, f) for d, (f, _) in u.items()),
                                   tuple((d, a) for d, (_, a) in u.items()), loops_above=above))
        start = end
    return tuple(levels), notes


def _read(data: object, origin: str, op: Operator,
          core: ImportedZigzag) -> tuple[dict[int, dict[str, tuple[int, int]]], list[tuple[str, int]]]:
    """The unrollings (level -> dim -> (factor, axis)) and the temporal loops (innermost first) of ``op``'s entry."""
    entry, at = mapping_entry(data, op.name, origin)
    unroll = _unrollings(entry, op, core, at)
    spatial = {d: math.prod(u[d][0] for u in unroll.values() if d in u) for d in op.dim_names}
    return unroll, _loops(entry, op, spatial, at)


def zigzag_allocation(data: object, origin: str, op: Operator, core: ImportedZigzag) -> dict[str, list[int]]:
    """ZigZag's allocation of ``op``'s loops as ZigZag reports it (its ``temporal_mapping`` per operand): tensor ->
    how many of the loops, innermost first, each memory keeping it takes, its memories innermost first."""
    cuts = _allocate(op, core.spec, *_read(data, origin, op, core), core.double_buffered)
    ends = {t: [c[lv] for lv in sorted(c)] for t, c in cuts.items()}
    return {t: [b - a for a, b in zip([0, *e], e)] for t, e in ends.items()}


def zigzag_mapping(data: object, origin: str, op: Operator, core: ImportedZigzag,
                   shared_boundary: bool = False) -> Mapping:
    """The dnnmap mapping of ``op`` that the ZigZag mapping file gives for it (module docstring)."""
    unroll, loops = _read(data, origin, op, core)
    spec = core.spec
    notes = [f"imported from ZigZag mapping {origin}"]
    if shared_boundary:
        ends, cuts = _shared_segments(spec, op, unroll, loops), {}
    else:
        cuts = {t: {lv: c for lv, c in per.items() if lv < len(spec.levels) - 1}
                for t, per in _allocate(op, spec, unroll, loops, core.double_buffered).items()}
        ends, lowered = _segments(spec, cuts, len(loops))
        notes += lowered
    levels, merged = _level_mappings(spec, loops, ends, unroll, cuts)
    return Mapping(levels, layer=op.name, notes=tuple(notes + merged))
