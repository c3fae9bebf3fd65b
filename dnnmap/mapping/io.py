"""Mapping files: YAML/JSON round trip, with the operator embedded so a file is self-contained.

Reading goes through one strict schema (:class:`MappingFileSpec`): factors are integers (not
``2.5``, ``'2'`` or ``true``), loop orders and ``keeps`` are lists (a string is not split into
characters), layouts map tensor names to lists of axis names; the embedded operator must be a
consistent loop nest within :mod:`dnnmap.limits`. Every problem names the file and field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from dnnmap import limits
from dnnmap.errors import InputFileError
from dnnmap.fileio import as_tuples, at_line, int_choice, load_data, write_text_atomic, yaml_line
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.workload.importers.netfile import Attrs
from dnnmap.workload.ir import Axis, Operator, Tensor
from dnnmap.workload.validate import operator_problem

Positive = Annotated[StrictInt, Field(ge=1, le=limits.MAX_DIM)]
Name = Annotated[StrictStr, Field(min_length=1, max_length=200)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class AxisSpec(_Spec):
    name: Name
    terms: dict[Name, Positive] = Field(min_length=1)


class TensorSpec(_Spec):
    name: Name
    role: Literal["input", "weight", "output"]
    axes: tuple[AxisSpec, ...] = Field(max_length=limits.MAX_TENSOR_AXES)


class OperatorSpec(_Spec):
    name: StrictStr
    kind: Name
    dims: dict[Name, Positive] = Field(min_length=1, max_length=limits.MAX_TENSOR_AXES)
    tensors: tuple[TensorSpec, ...] = Field(min_length=1, max_length=limits.MAX_TENSOR_AXES)
    attrs: Attrs = Field(default_factory=dict)
    connectivity: tuple[tuple[Annotated[StrictInt, Field(ge=0)], ...], ...] | None = None


class LevelSpec(_Spec):
    temporal: dict[Name, Positive] = Field(default_factory=dict)
    order: tuple[Name, ...] = ()
    spatial: dict[Name, Positive] = Field(default_factory=dict)
    # 0: x, 1: y, 2: both axes (BOTH_AXES); int_choice: Literal[0, 1, 2] would accept 1.0
    spatial_axis: dict[Name, int_choice(0, 1, 2)] = Field(default_factory=dict)  # type: ignore[valid-type]
    keeps: tuple[Name, ...] | None = None
    # per-tensor placement: tensor -> the level's non-trivial loops (outermost first) above its tile
    loops_above: dict[Name, Annotated[StrictInt, Field(ge=0, le=limits.MAX_TENSOR_AXES)]] = Field(
        default_factory=dict)


class MappingFileSpec(_Spec):
    layer: StrictStr = ""
    arch: StrictStr = ""
    levels: dict[Name, LevelSpec | None]
    layouts: dict[Name, tuple[Name, ...]] = Field(default_factory=dict)
    operator: OperatorSpec | None = None


def _shown(value: Any) -> str:
    """A rejected input as the user wrote it (sequences as lists), shortened."""
    def plain(v: Any) -> Any:
        return [plain(x) for x in v] if isinstance(v, tuple) else v
    return f"{type(plain(value)).__name__} {plain(value)!r:.40}"


def _field(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "[" not in str(part) and str(part) not in ("int", "str", "none", "function-after"):
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _validation_message(origin: str, what: str, err: ValidationError) -> str:
    problems = []
    for e in err.errors()[:4]:
        got = f", got {_shown(e['input'])}" if e["type"] != "missing" else ""
        msg = "unknown field" if e["type"] == "extra_forbidden" else e["msg"]
        problems.append(f"field '{_field(e['loc'])}'{at_line(yaml_line(origin, e['loc']))}: {msg}{got}")
    more = f" (and {err.error_count() - 4} more)" if err.error_count() > 4 else ""
    return f"{origin}: invalid {what}: " + "; ".join(problems) + more


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


def _operator(spec: OperatorSpec, origin: str) -> Operator:
    tensors = tuple(Tensor(t.name, t.role, tuple(Axis(a.name, tuple(a.terms.items())) for a in t.axes))
                    for t in spec.tensors)
    attrs = tuple((k, as_tuples(v)) for k, v in spec.attrs.items())
    try:
        op = Operator(spec.name, spec.kind, tuple(spec.dims.items()), tensors, attrs, spec.connectivity)
    except ValueError as err:
        raise InputFileError(f"{origin}: {err}") from err
    problem = operator_problem(op)
    if problem:
        raise InputFileError(f"{origin}: operator {op.name!r} ({op.kind}): {problem}")
    return op


def operator_from_dict(d: Any, origin: str = "<operator>") -> Operator:
    """The operator of a plain-data description (:func:`operator_to_dict`), strictly validated."""
    try:
        spec = OperatorSpec.model_validate(as_tuples(d), strict=True)
    except ValidationError as err:
        raise InputFileError(_validation_message(origin, "operator description", err)) from err
    return _operator(spec, origin)


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
        if any(n > 0 for _, n in lm.loops_above):
            entry["loops_above"] = {t: n for t, n in lm.loops_above if n > 0}
        levels[name] = entry
    out: dict[str, Any] = {"layer": m.layer, "arch": m.arch, "levels": levels}
    if m.layouts:
        out["layouts"] = {t: list(ax) for t, ax in m.layouts}
    if op is not None:
        out["operator"] = operator_to_dict(op)
    return out


def _file_spec(d: Any, origin: str) -> MappingFileSpec:
    if not isinstance(d, dict) or "levels" not in d:
        raise InputFileError(f"{origin}: a mapping file needs a 'levels' section (level name -> loops)")
    try:
        return MappingFileSpec.model_validate(as_tuples(d), strict=True)
    except ValidationError as err:
        raise InputFileError(_validation_message(origin, "mapping file", err)) from err


def _mapping(spec: MappingFileSpec, level_names: list[str] | None, origin: str) -> Mapping:
    names = level_names or list(spec.levels)
    unknown = [n for n in spec.levels if n not in names]
    if unknown:
        raise InputFileError(f"{origin}: field 'levels': unknown level(s) {unknown}; the architecture has {names}")
    levels = []
    for name in names:
        e = spec.levels.get(name) or LevelSpec()
        if len(set(e.order)) != len(e.order):
            raise InputFileError(f"{origin}: field 'levels.{name}.order': lists a dimension twice: {list(e.order)}")
        if e.keeps is not None and len(set(e.keeps)) != len(e.keeps):
            raise InputFileError(f"{origin}: field 'levels.{name}.keeps': lists a tensor twice: {list(e.keeps)}")
        idle = [d for d in e.spatial_axis if e.spatial.get(d, 1) == 1]
        if idle:
            raise InputFileError(f"{origin}: field 'levels.{name}.spatial_axis.{idle[0]}': {idle[0]} has no spatial "
                                 f"factor at {name} (spatial: {dict(e.spatial) or 'none'}); an axis places a "
                                 "spatial loop")
        levels.append(LevelMapping(tuple(e.temporal.items()), e.order, tuple(e.spatial.items()),
                                   tuple(e.spatial_axis.items()), e.keeps,
                                   tuple((t, n) for t, n in e.loops_above.items() if n > 0)))
    for d in {d for e in spec.levels.values() if e for d in (*e.temporal, *e.spatial)}:
        total = math.prod(e.temporal.get(d, 1) * e.spatial.get(d, 1) for e in spec.levels.values() if e)
        if total > limits.MAX_DIM:
            raise InputFileError(f"{origin}: field 'levels': the factors of {d} multiply to {total:,}, beyond the "
                                 f"largest loop bound {limits.MAX_DIM:,}")
    return Mapping(tuple(levels), tuple(spec.layouts.items()), spec.layer, spec.arch)


def _check_names(m: Mapping, op: Operator, origin: str) -> None:
    """Names in the mapping that the operator does not have (tensors, dimensions) are file errors."""
    tensors, dims = [t.name for t in op.tensors], set(op.dim_names)
    for tname in dict(m.layouts):
        if tname not in tensors:
            raise InputFileError(f"{origin}: field 'layouts.{tname}': operator {op.name!r} has no tensor {tname!r}; "
                                 f"tensors: {', '.join(tensors)}")
    for lm in m.levels:
        for d in (*dict(lm.temporal), *dict(lm.spatial), *lm.order, *dict(lm.spatial_axis)):
            if d not in dims:
                raise InputFileError(f"{origin}: field 'levels': unknown dimension {d!r}; operator {op.name!r} has "
                                     f"{', '.join(op.dim_names)}")
        unknown = [t for t in (*(lm.keeps or ()), *dict(lm.loops_above)) if t not in tensors]
        if unknown:
            raise InputFileError(f"{origin}: field 'levels': keeps or places unknown tensor(s) {unknown}; tensors: "
                                 f"{', '.join(tensors)}")


def mapping_from_dict(d: Any, level_names: list[str] | None = None, origin: str = "<mapping>",
                      op: Operator | None = None) -> Mapping:
    """The mapping in a parsed mapping file, levels in ``level_names`` order (default: file order); names
    are checked against ``op`` when given."""
    m = _mapping(_file_spec(d, origin), level_names, origin)
    if op is not None:
        _check_names(m, op, origin)
    return m


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and rename (nothing half-written, usual permissions)."""
    write_text_atomic(path, text)


def save_mapping(path: str | Path, m: Mapping, level_names: list[str], op: Operator | None = None) -> None:
    data = mapping_to_dict(m, level_names, op)
    p = Path(path)
    text = json.dumps(data, indent=2) if p.suffix.lower() == ".json" else yaml.safe_dump(data, sort_keys=False)
    write_atomic(p, text)


def load_mapping_file(path: str | Path) -> tuple[Mapping, Operator | None, dict[str, Any]]:
    """Read a mapping file; returns the mapping (levels in file order), the embedded operator if any, raw data."""
    p = Path(path)
    data = load_data(p, "mapping file")
    spec = _file_spec(data, str(p))
    op = _operator(spec.operator, f"{p}: field 'operator'") if spec.operator is not None else None
    m = _mapping(spec, None, str(p))
    if op is not None:
        _check_names(m, op, str(p))
    return m, op, data
