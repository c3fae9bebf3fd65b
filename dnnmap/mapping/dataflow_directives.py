"""A mapping as MAESTRO's data-centric directives (SpatialMap / TemporalMap / Cluster), and back.

Marvel (arXiv 2002.07752, Sec. 3.2) prices its on-chip mappings with MAESTRO (Kwon et al., MICRO
2019) after translating each loop nest into MAESTRO's directives; the paper omits the
translation (digest gap 3). Ours, loop by loop, outermost first:

* every loop of factor > 1 is one directive, in the nest's order: the temporal loops of level
  ``L-1`` (DRAM) in their order, that level's fan-out, then level ``L-2``, ..., level 0;
* a temporal loop is ``TemporalMap(s,s) D``, a spatial loop ``SpatialMap(s,s) D``, where ``s`` is
  the coverage of ``D`` by the loops inside it (the tile each step or each PE gets, and the
  offset to the next one); the trip count is implied, as in MAESTRO: the enclosing size (the
  bound for the outermost directive of ``D``, rounded up: edge tiles are clipped) over ``s``;
* several dimensions split over one fan-out are MAESTRO clusters: ``SpatialMap d1;
  Cluster(n, P); SpatialMap d2`` with ``n`` the PEs the inner spatial loops use;
* convolutions use MAESTRO's names: ``Y'`` / ``X'`` are the output rows / columns (IR ``P`` /
  ``Q``; MAESTRO accepts directives on output coordinates), K, C, R, S, N as in the IR; the
  ``Dimensions`` block gives MAESTRO's input sizes ``Y`` / ``X``;
* what MAESTRO has no directive for is carried in comments it ignores and :func:`parse_directives`
  reads: ``// level NAME`` before each memory level's temporal maps, ``// fan-out NAME axis A``
  before the spatial maps of a fan-out axis, ``// keeps NAME: T ...`` for bypass choices and
  ``// layout T: axes`` for DRAM layouts, ``// note ...`` for the mapping's notes.

So every mapping whose outermost loop of each dimension takes the fewest steps that cover the
bound (every mapping of the core's mappers) prints and parses back to the same mapping.
"""

from __future__ import annotations

import math
import re

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import MappingError
from dnnmap.mapping.mapping import LevelMapping, Mapping, validate_mapping
from dnnmap.workload.ir import Operator
from dnnmap.workload.kinds import kind_of

_CONV_NAMES = {"P": "Y'", "Q": "X'"}


def _names(op: Operator) -> dict[str, str]:
    """IR dimension -> directive name (MAESTRO's for convolution-shaped operators)."""
    conv = {"P", "Q", "R", "S"} <= set(op.dim_names)
    return {d: (_CONV_NAMES.get(d, d) if conv else d) for d in op.dim_names}


def _maestro_type(op: Operator) -> str:
    """MAESTRO's layer type: CONV for convolutions and FC, DSCONV for depthwise, else the kind upper-cased."""
    kind = kind_of(op)
    if kind is not None and kind.conv:
        return "DSCONV" if kind.channelwise else "CONV"
    return op.kind.upper()


def _header(op: Operator) -> list[str]:
    """MAESTRO's layer header: type, stride and dimensions (input sizes Y, X for a convolution)."""
    b = op.bounds
    lines = [f"Type: {_maestro_type(op)}"]
    inputs = [t for t in op.tensors if t.role == "input"]
    dims = [(_names(op)[d], n) for d, n in op.dims if d not in ("P", "Q") or not inputs]
    if inputs and {"P", "Q"} <= set(b):
        axes = {a.name: a for a in inputs[0].axes}
        if "H" in axes and "W" in axes:
            lines.append(f"Stride {{ X: {axes['W'].coef('Q')}, Y: {axes['H'].coef('P')} }}")
            dims += [("Y", axes["H"].extent(b)), ("X", axes["W"].extent(b))]
        else:
            dims += [(_names(op)[d], b[d]) for d in ("P", "Q")]
    lines.append("Dimensions { " + ", ".join(f"{n}: {v}" for n, v in dims) + " }")
    return lines


def format_directives(m: Mapping, op: Operator, arch: ArchSpec) -> str:
    """``m`` as a MAESTRO layer with a ``Dataflow`` block (module docstring)."""
    validate_mapping(m, op, arch)
    names = _names(op)
    inside = {d: 1 for d in op.dim_names}  # coverage of the loops printed so far, built innermost first
    blocks: list[list[str]] = []
    for i, (lv, lm) in enumerate(zip(arch.levels, m.levels)):
        spatial = _spatial_lines(lv.name, lm, op, names, inside) if lv.fanout is not None else []
        temporal = []
        for d in reversed(lm.full_order(op.dim_names)):  # innermost first
            if lm.t(d) > 1:
                temporal.insert(0, f"TemporalMap({inside[d]},{inside[d]}) {names[d]};")
                inside[d] *= lm.t(d)
        blocks.append([f"// level {lv.name}"] + temporal + spatial)
    for d, b in op.dims:
        outer = _outermost_size(m, d)
        if outer is not None and m.total(d) != outer * math.ceil(b / outer):
            raise MappingError(f"layer {op.name!r}: the outermost loop of {d} takes {m.total(d) // outer} steps of "
                               f"{outer}, more than the {math.ceil(b / outer)} that cover {b}; MAESTRO's directives "
                               "cannot express the extra steps")
    body = [line for block in reversed(blocks) for line in block]
    extra = [f"// keeps {lv.name}: {' '.join(lm.keeps)}" for lv, lm in zip(arch.levels, m.levels)
             if lm.keeps is not None]
    extra += [f"// layout {t}: {' '.join(axes)}" for t, axes in m.layouts]
    extra += [f"// note {n}" for n in m.notes]
    header = [f"// dnnmap mapping of {op.name or 'layer'} on {arch.name} (dnnmap/mapping/dataflow_directives.py)"]
    layer = (["Network dnnmap {", f"Layer {op.name or 'layer'} {{"] + [f"  {x}" for x in _header(op)]
             + ["  Dataflow {"] + [f"    {x}" for x in body + extra] + ["  }", "}", "}"])
    return "\n".join(header + layer)


def _spatial_lines(level: str, lm: LevelMapping, op: Operator, names: dict[str, str],
                   inside: dict[str, int]) -> list[str]:
    """One fan-out's spatial loops, outermost first (by axis, then dimension order), a Cluster of the PEs
    the inner ones use between consecutive maps; ``inside`` grows by their factors."""
    axes = dict(lm.spatial_axis)
    loops = sorted(((axes.get(d, 0), k, d, lm.s(d)) for k, d in enumerate(op.dim_names) if lm.s(d) > 1))
    lines: list[str] = []
    last_axis = None
    for j, (ax, _, d, f) in enumerate(loops):
        if j:
            lines.append(f"Cluster({math.prod(x[3] for x in loops[j:])},P);")
        if ax != last_axis:
            lines.append(f"// fan-out {level} axis {ax}")
            last_axis = ax
        lines.append(f"SpatialMap({inside[d]},{inside[d]}) {names[d]};")
    for _, _, d, f in loops:
        inside[d] *= f
    return lines


def _outermost_size(m: Mapping, dim: str) -> int | None:
    """Coverage inside the outermost loop of ``dim`` with factor > 1 (None if it has none)."""
    for i in range(len(m.levels) - 1, -1, -1):
        lm = m.levels[i]
        if lm.t(dim) > 1:
            return m.coverage(dim, i) // lm.t(dim)
        if lm.s(dim) > 1:
            return m.coverage(dim, i - 1) if i > 0 else 1
    return None


_MAP = re.compile(r"^(TemporalMap|SpatialMap)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*([A-Za-z_][\w']*)\s*;$")
_CLUSTER = re.compile(r"^Cluster\s*\(\s*(\d+)\s*,\s*P\s*\)\s*;$")
_LEVEL = re.compile(r"^//\s*level\s+(\S+)$")
_FANOUT = re.compile(r"^//\s*fan-out\s+(\S+)\s+axis\s+(\d+)$")
_KEEPS = re.compile(r"^//\s*keeps\s+(\S+):\s*(.*)$")
_LAYOUT = re.compile(r"^//\s*layout\s+(\S+):\s*(.*)$")
_NOTE = re.compile(r"^//\s*note\s(.*)$")
_DIMS = re.compile(r"^Dimensions\s*\{(.*)\}$")


def parse_directives(text: str, op: Operator, arch: ArchSpec) -> Mapping:
    """The mapping of ``op`` on ``arch`` that ``text`` (written by :func:`format_directives`) describes.

    Raises :class:`MappingError` naming the line for an unknown dimension or level, a map whose size
    does not divide the enclosing one, a Cluster that does not match the maps it groups, or a
    ``Dimensions`` block that is not ``op``'s."""
    by_name = {v: k for k, v in _names(op).items()}
    level_of = {lv.name: i for i, lv in enumerate(arch.levels)}
    loops: list[tuple[int, str, str, int, int, int]] = []  # (line, kind, dim, size, level, axis)
    keeps: dict[int, tuple[str, ...]] = {}
    layouts: list[tuple[str, tuple[str, ...]]] = []
    notes: list[str] = []
    clusters: list[tuple[int, int, int]] = []  # (line, PEs, index into loops of the next map)
    level, axis, fan_level = None, 0, None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"directives line {no} ({line!r})"
        if m := _DIMS.match(line):
            _check_dimensions(m.group(1), op, where)
        elif m := _LEVEL.match(line):
            level, fan_level = _level(m.group(1), level_of, where), None
        elif m := _FANOUT.match(line):
            fan_level, axis = _level(m.group(1), level_of, where), int(m.group(2))
        elif m := _KEEPS.match(line):
            keeps[_level(m.group(1), level_of, where)] = tuple(m.group(2).split())
        elif m := _LAYOUT.match(line):
            layouts.append((m.group(1), tuple(m.group(2).split())))
        elif m := _NOTE.match(line):
            notes.append(m.group(1))
        elif m := _CLUSTER.match(line):
            clusters.append((no, int(m.group(1)), len(loops)))
        elif m := _MAP.match(line):
            kind, size, offset, name = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
            if name not in by_name:
                raise MappingError(f"{where}: unknown dimension {name!r}; layer {op.name!r} has "
                                   f"{', '.join(by_name)}")
            if size != offset or size < 1:
                raise MappingError(f"{where}: size and offset must be equal and >= 1 (tiles without overlap)")
            at = fan_level if kind == "SpatialMap" else level
            if at is None:
                raise MappingError(f"{where}: a {kind} before any '// level' or '// fan-out' marker")
            loops.append((no, kind, by_name[name], size, at, axis))
    for no, pes, nxt in clusters:
        inner = math.prod(_factor(loops, j, op) for j in range(nxt, len(loops))
                          if loops[j][1] == "SpatialMap" and loops[j][4] == loops[nxt][4])
        if pes != inner:
            raise MappingError(f"directives line {no}: Cluster({pes},P) groups {inner} PEs of the spatial maps "
                               "after it")
    return _mapping(loops, keeps, tuple(layouts), tuple(notes), op, arch)


def _level(name: str, level_of: dict[str, int], where: str) -> int:
    if name not in level_of:
        raise MappingError(f"{where}: unknown level {name!r}; levels are {', '.join(level_of)}")
    return level_of[name]


def _check_dimensions(body: str, op: Operator, where: str) -> None:
    expected = dict(x.split(": ") for x in _header(op)[-1][len("Dimensions { "):-2].split(", "))
    given = {}
    for part in filter(None, (p.strip() for p in body.split(","))):
        key, _, value = part.partition(":")
        given[key.strip()] = value.strip()
    if given != expected:
        raise MappingError(f"{where}: dimensions {given} are not those of layer {op.name!r}: {expected}")


def _factor(loops: list[tuple[int, str, str, int, int, int]], j: int, op: Operator) -> int:
    """Trip count of loop ``j``: the size of the enclosing map of its dimension (the bound, rounded up to
    whole tiles, for the outermost) over its own size."""
    no, _, d, size, _, _ = loops[j]
    outer = next((loops[k][3] for k in range(j - 1, -1, -1) if loops[k][2] == d), None)
    if outer is None:
        return math.ceil(op.bound(d) / size)
    if outer % size or outer == size:
        raise MappingError(f"directives line {no}: size {size} of {d} does not split the enclosing size {outer} "
                           "into two or more whole tiles")
    return outer // size


def _mapping(loops: list[tuple[int, str, str, int, int, int]], keeps: dict[int, tuple[str, ...]],
             layouts: tuple[tuple[str, tuple[str, ...]], ...], notes: tuple[str, ...], op: Operator,
             arch: ArchSpec) -> Mapping:
    temporal: list[dict[str, int]] = [{} for _ in arch.levels]
    spatial: list[dict[str, int]] = [{} for _ in arch.levels]
    order: list[list[str]] = [[] for _ in arch.levels]
    axes: list[dict[str, int]] = [{} for _ in arch.levels]
    for j, (no, kind, d, size, at, ax) in enumerate(loops):
        target = spatial if kind == "SpatialMap" else temporal
        if d in target[at]:
            raise MappingError(f"directives line {no}: {d} is mapped twice at level {arch.levels[at].name}")
        target[at][d] = _factor(loops, j, op)
        if kind == "SpatialMap":
            axes[at][d] = ax
        else:
            order[at].append(d)
    for d, _ in op.dims:
        last = [lp for lp in loops if lp[2] == d]
        if last and last[-1][3] != 1:
            raise MappingError(f"directives line {last[-1][0]}: the innermost map of {d} has size {last[-1][3]}, "
                               "expected 1 (the loops must cover every iteration)")
    levels = tuple(LevelMapping(tuple(temporal[i].items()), tuple(order[i]), tuple(spatial[i].items()),
                                tuple(axes[i].items()) if arch.levels[i].fanout and
                                len(arch.levels[i].fanout.shape) > 1 else (), keeps.get(i))
                   for i in range(len(arch.levels)))
    m = Mapping(levels, layouts, op.name, arch.name, notes)
    validate_mapping(m, op, arch)
    return m
