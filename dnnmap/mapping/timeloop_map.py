"""Timeloop mappings: reading ``mapping:`` (and fully specified constraint) lists into a :class:`Mapping`,
and writing a :class:`Mapping` in Timeloop's map format.

A Timeloop mapping is a list of directives ``{target, type, factors, permutation}``: ``temporal``
loops of a storage level, ``spatial`` loops of the fan-out *below* the target (dnnmap's convention
too), and ``bypass``/``datatype``/``dataspace`` directives with ``keep``/``bypass`` lists of data
spaces. ``factors`` is ``"R3 P16"`` or ``"R=3 P=16"`` (or a list of such items); ``permutation``
lists the loops inner to outer. A spatial directive's ``split`` sends the dimensions at positions
below it to the mesh's X axis and the rest to Y (without ``split``: all to X, or all to Y when the
fan-out is 2-D with one column). Tensor and dimension names are the operator's own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.timeloop import PASS_THROUGH, spatial_placeholder
from dnnmap.errors import InputFileError, MappingError, UnknownNameError
from dnnmap.mapping.io import write_atomic
from dnnmap.mapping.mapping import BOTH_AXES, LevelMapping, Mapping
from dnnmap.workload.importers.timeloop_yaml import Where, base_name, list_at, load_timeloop_files, mapping_at, names_at
from dnnmap.workload.ir import Operator

_FACTOR = re.compile(r"^([A-Za-z_][A-Za-z_]*?)\s*=?\s*(\d+)$")
_KEEP_TYPES = ("bypass", "datatype", "dataspace")
_LIST_KEYS = ("mapping", "mapspace_constraints", "mapspace", "constraints")


def _factors(raw: object, dims: tuple[str, ...], where: Where) -> dict[str, int]:
    items = raw.split() if isinstance(raw, str) else [str(x) for x in list_at(raw, where)]
    out: dict[str, int] = {}
    for item in items:
        m = _FACTOR.match(item.strip())
        if not m or m.group(1) not in dims:
            raise where.error(f"cannot read factor {item!r}; write DIM=N with DIM one of {list(dims)}")
        f = int(m.group(2))
        if f < 1:
            raise where.error(f"factor {item!r}: a mapping needs factors >= 1 (0 leaves the factor free, "
                              "which only the mapper can resolve)")
        out[m.group(1)] = f
    return out


def _permutation(raw: object, dims: tuple[str, ...], where: Where) -> tuple[str, ...]:
    """Inner-to-outer loop names."""
    if isinstance(raw, str):
        text = raw.strip()
        perm = tuple(text.replace(",", " ").split()) if any(c in text for c in " ,") else tuple(text)
    else:
        perm = names_at(raw, where)
    unknown = [d for d in perm if d not in dims]
    if unknown or len(set(perm)) != len(perm):
        raise where.error(f"permutation {raw!r} must list distinct dimensions of {list(dims)}")
    return perm


def _directives(data: dict[str, Any], origin: dict[str, str]) -> tuple[list[Any], Where]:
    for key in _LIST_KEYS:
        if key in data:
            where = Where(origin[key], key)
            raw = data[key]
            if isinstance(raw, dict) and "targets" in raw:
                return list_at(raw["targets"], where / "targets"), where / "targets"
            return list_at(raw, where), where
    files = ", ".join(sorted(set(origin.values()))) or "input"
    raise InputFileError(f"{files}: no 'mapping' (or mapspace constraints) list found")


def mapping_from_timeloop(data: dict[str, Any], origin: dict[str, str], op: Operator, arch: ArchSpec) -> Mapping:
    """The :class:`Mapping` that parsed Timeloop directives describe for ``op`` on ``arch``."""
    directives, where = _directives(data, origin)
    dims = op.dim_names
    L = len(arch.levels)
    temporal: list[dict[str, int]] = [{} for _ in range(L)]
    order: list[tuple[str, ...]] = [() for _ in range(L)]
    spatial: list[dict[str, int]] = [{} for _ in range(L)]
    axis: list[dict[str, int]] = [{} for _ in range(L)]
    keeps: list[set[str] | None] = [None] * L
    tensors = {t.name: t.role for t in op.tensors}
    for i, raw in enumerate(directives):
        at = where / i
        d = mapping_at(raw, at)
        lvl = _target_level(arch, base_name(str(d.get("target", "")))[0], at / "target")
        kind = d.get("type")
        if kind in _KEEP_TYPES:
            default = {t.name for t in op.tensors if t.role in arch.levels[lvl].keeps}
            kept = default if keeps[lvl] is None else keeps[lvl]
            keep = names_at(d.get("keep") or [], at / "keep")
            bypass = names_at(d.get("bypass") or [], at / "bypass")
            unknown = [n for n in (*keep, *bypass) if n not in tensors]
            if unknown:
                raise at.error(f"unknown data space(s) {unknown}; the problem has {list(tensors)}")
            keeps[lvl] = (kept | set(keep)) - set(bypass)
        elif kind in ("temporal", "spatial"):
            factors = _factors(d.get("factors", ""), dims, at / "factors")
            perm = _permutation(d.get("permutation", ""), dims, at / "permutation")
            if kind == "temporal":
                temporal[lvl].update(factors)
                order[lvl] = tuple(reversed(perm))
            else:
                spatial[lvl].update(factors)
                axis[lvl] = _spatial_axes(d, perm, factors, arch, lvl, at)
        else:
            raise (at / "type").error(f"unknown directive type {kind!r}; expected temporal, spatial, "
                                      "bypass, datatype or dataspace")
    levels = tuple(LevelMapping(
        temporal=tuple((dim, temporal[i][dim]) for dim in dims if dim in temporal[i]),
        order=order[i],
        spatial=tuple((dim, spatial[i][dim]) for dim in dims if dim in spatial[i]),
        spatial_axis=tuple((dim, a) for dim, a in axis[i].items() if a and spatial[i].get(dim, 1) > 1),
        keeps=tuple(t.name for t in op.tensors if t.name in keeps[i]) if keeps[i] is not None and i < L - 1 else None,
    ) for i in range(L))
    return Mapping(levels, layer=op.name, arch=arch.name)


def _target_level(arch: ArchSpec, target: str, at: Where) -> int:
    """The level a directive targets: a level's name, or a v0.4 container's name for the placeholder
    level Timeloop puts above the container's fan-out (``PE`` -> ``inter_PE_spatial``)."""
    try:
        return arch.level_index(target)
    except UnknownNameError as err:
        try:
            return arch.level_index(spatial_placeholder(target))
        except UnknownNameError:
            raise at.error(str(err)) from err


def _spatial_axes(d: dict[str, Any], perm: tuple[str, ...], factors: dict[str, int], arch: ArchSpec, lvl: int,
                  at: Where) -> dict[str, int]:
    fanout = arch.levels[lvl].fanout
    if "split" in d:
        split = d["split"]
        if not isinstance(split, int) or isinstance(split, bool) or split < 0:
            raise (at / "split").error(f"split must be a non-negative integer, got {split!r}")
        listed = list(perm) + [dim for dim in factors if dim not in perm]
        return {dim: int(k >= split) for k, dim in enumerate(listed)}
    to_y = fanout is not None and len(fanout.shape) == 2 and fanout.shape[0] == 1
    return dict.fromkeys(factors, int(to_y))


def load_timeloop_mapping(paths: list[str | Path], op: Operator, arch: ArchSpec) -> Mapping:
    """Read a Timeloop mapping (or fully specified constraints) file for ``op`` on ``arch``."""
    data, origin = load_timeloop_files(paths)
    return mapping_from_timeloop(data, origin, op, arch)


def _perm_text(loops: list[str]) -> str | list[str]:
    return "".join(loops) if all(len(d) == 1 for d in loops) else loops


def mapping_to_timeloop(m: Mapping, op: Operator, arch: ArchSpec) -> dict[str, Any]:
    """Timeloop's ``mapping:`` list for ``m`` (levels outermost first)."""
    dims = op.dim_names
    entries: list[dict[str, Any]] = []
    last = len(arch.levels) - 1
    for i in range(last, -1, -1):
        lm, name = m.levels[i], arch.levels[i].name
        placed = [t for t, n in lm.loops_above if n > 0]
        if placed:
            raise MappingError(f"level {name}: {', '.join(placed)} placed below some of the level's loops "
                               "(loops_above, per-tensor placement) has no Timeloop mapping: Timeloop puts "
                               "every tensor a level keeps at the same tiling boundary")
        if name == PASS_THROUGH and not arch.levels[i].keeps and all(
                lm.t(d) == 1 and lm.s(d) == 1 for d in dims):
            continue  # the importer's stand-in below a one-level design: Timeloop has no such level
        entries.append({"target": name, "type": "temporal",
                        "factors": " ".join(f"{d}={lm.t(d)}" for d in dims),
                        "permutation": _perm_text(list(reversed(lm.full_order(dims))))})
        if any(f > 1 for _, f in lm.spatial):
            axes = dict(lm.spatial_axis)
            if BOTH_AXES in axes.values():
                raise MappingError(f"level {name}: a dimension split over both fan-out axes has no Timeloop "
                                   "spatial mapping (one axis per dimension)")
            x = [d for d in dims if axes.get(d, 0) == 0]
            y = [d for d in dims if axes.get(d, 0) == 1]
            entry: dict[str, Any] = {"target": name, "type": "spatial",
                                     "factors": " ".join(f"{d}={lm.s(d)}" for d in dims),
                                     "permutation": _perm_text(x + y)}
            if y:
                entry["split"] = len(x)
            entries.append(entry)
        if i < last:
            kept = m.kept_tensors(i, op, arch)
            entries.append({"target": name, "type": "datatype", "keep": list(kept),
                            "bypass": [t.name for t in op.tensors if t.name not in kept]})
    return {"mapping": entries}


def save_timeloop_mapping(path: str | Path, m: Mapping, op: Operator, arch: ArchSpec) -> None:
    """Write ``m`` as a Timeloop map YAML file (atomically)."""
    text = yaml.safe_dump(mapping_to_timeloop(m, op, arch), sort_keys=False)
    write_atomic(Path(path), text)
