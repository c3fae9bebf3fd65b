"""Mapping files: YAML/JSON round trip, with the operator embedded so a file is self-contained."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from dnnmap.errors import InputFileError
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.workload.ir import Axis, Operator, Tensor


def operator_to_dict(op: Operator) -> dict[str, Any]:
    """A plain-data form of an operator (dims, tensors with affine axes, attributes)."""
    return {
        "name": op.name,
        "kind": op.kind,
        "dims": {d: b for d, b in op.dims},
        "tensors": [
            {"name": t.name, "role": t.role,
             "axes": [{"name": a.name, "terms": {d: c for d, c in a.terms}} for a in t.axes]}
            for t in op.tensors
        ],
        "attrs": {k: list(v) if isinstance(v, tuple) else v for k, v in op.attrs},
        **({"connectivity": [list(c) for c in op.connectivity]} if op.connectivity is not None else {}),
    }


def operator_from_dict(d: dict[str, Any], origin: str = "<operator>") -> Operator:
    try:
        tensors = tuple(
            Tensor(t["name"], t["role"], tuple(Axis(a["name"], tuple((k, int(v)) for k, v in a["terms"].items()))
                                               for a in t["axes"]))
            for t in d["tensors"]
        )
        attrs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in (d.get("attrs") or {}).items())
        conn = d.get("connectivity")
        return Operator(str(d["name"]), str(d["kind"]), tuple((k, int(v)) for k, v in d["dims"].items()),
                        tensors, attrs, tuple(tuple(c) for c in conn) if conn is not None else None)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise InputFileError(f"{origin}: invalid operator description ({type(err).__name__}: {err}); "
                             "expected fields name, kind, dims, tensors[name, role, axes[name, terms]]") from err


def mapping_to_dict(m: Mapping, level_names: list[str], op: Operator | None = None) -> dict[str, Any]:
    levels = {}
    for name, lm in zip(level_names, m.levels):
        entry: dict[str, Any] = {}
        if any(f > 1 for _, f in lm.temporal):
            entry["temporal"] = {d: f for d, f in lm.temporal if f > 1}
        if lm.order:
            entry["order"] = list(lm.order)
        if any(f > 1 for _, f in lm.spatial):
            entry["spatial"] = {d: f for d, f in lm.spatial if f > 1}
        if any(a for _, a in lm.spatial_axis):
            entry["spatial_axis"] = {d: a for d, a in lm.spatial_axis}
        if lm.keeps is not None:
            entry["keeps"] = list(lm.keeps)
        levels[name] = entry
    out: dict[str, Any] = {"layer": m.layer, "arch": m.arch, "levels": levels}
    if m.layouts:
        out["layouts"] = {t: list(ax) for t, ax in m.layouts}
    if op is not None:
        out["operator"] = operator_to_dict(op)
    return out


def mapping_from_dict(d: dict[str, Any], level_names: list[str] | None = None,
                      origin: str = "<mapping>") -> Mapping:
    if not isinstance(d, dict) or "levels" not in d:
        raise InputFileError(f"{origin}: a mapping file needs a 'levels' section (level name -> loops)")
    raw = d["levels"]
    if not isinstance(raw, dict):
        raise InputFileError(f"{origin}: field 'levels' must map level names to their loops")
    names = level_names or list(raw)
    unknown = [n for n in raw if n not in names]
    if unknown:
        raise InputFileError(f"{origin}: field 'levels': unknown level(s) {unknown}; the architecture has {names}")
    allowed = {"temporal", "order", "spatial", "spatial_axis", "keeps"}
    levels = []
    for name in names:
        e = raw.get(name) or {}
        bad = set(e) - allowed
        if bad:
            raise InputFileError(f"{origin}: field 'levels.{name}': unknown key(s) {sorted(bad)}; "
                                 f"allowed: {sorted(allowed)}")
        try:
            levels.append(LevelMapping(
                temporal=tuple((k, int(v)) for k, v in (e.get("temporal") or {}).items()),
                order=tuple(e.get("order") or ()),
                spatial=tuple((k, int(v)) for k, v in (e.get("spatial") or {}).items()),
                spatial_axis=tuple((k, int(v)) for k, v in (e.get("spatial_axis") or {}).items()),
                keeps=tuple(e["keeps"]) if e.get("keeps") is not None else None,
            ))
        except (TypeError, ValueError, AttributeError) as err:
            raise InputFileError(f"{origin}: field 'levels.{name}': {err}") from err
    layouts = tuple((t, tuple(ax)) for t, ax in (d.get("layouts") or {}).items())
    return Mapping(tuple(levels), layouts, str(d.get("layer", "")), str(d.get("arch", "")))


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and rename (nothing half-written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_mapping(path: str | Path, m: Mapping, level_names: list[str], op: Operator | None = None) -> None:
    data = mapping_to_dict(m, level_names, op)
    p = Path(path)
    text = json.dumps(data, indent=2) if p.suffix.lower() == ".json" else yaml.safe_dump(data, sort_keys=False)
    write_atomic(p, text)


def load_mapping_file(path: str | Path) -> tuple[Mapping, Operator | None, dict[str, Any]]:
    """Read a mapping file; returns the mapping (levels in file order), the embedded operator if any, raw data."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"{p}: mapping file not found")
    try:
        data = json.loads(p.read_text()) if p.suffix.lower() == ".json" else yaml.safe_load(p.read_text())
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise InputFileError(f"{p}: cannot parse: {err}") from err
    m = mapping_from_dict(data, None, str(p))
    op = operator_from_dict(data["operator"], f"{p}: field 'operator'") if data.get("operator") else None
    return m, op, data
