"""Timeloop problem YAML (v0.2-v0.4) -> a dnnmap :class:`Operator` (and a one-layer network).

A Timeloop problem names its dimensions, its data spaces with their projections (each axis a sum
of ``[dimension]`` or ``[dimension, coefficient]`` terms, or in v0.4 a string such as
``"[ C, Hstride*Q + Hdilation*S ]"``), the bounds (``problem.instance`` or, in v0.2, keys beside
``shape``) and coefficient values. The read-write data space is the output. Of the read-only ones,
a name saying weight/filter makes a weight and input/ifmap an input; otherwise the first one with a
sliding-window axis (else the first listed) is the input and the others weights. Data-space and
dimension names are kept, so Timeloop mappings name the same loops and tensors.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from dnnmap import limits
from dnnmap.errors import DnnmapNote, InputFileError
from dnnmap.workload.importers.timeloop_yaml import (
    Where,
    list_at,
    load_timeloop_files,
    mapping_at,
    names_at,
    plain_integer,
    role_from_name,
)
from dnnmap.workload.ir import Axis, Layer, Network, Operator, Role, Tensor

_CNN_DIMS = frozenset("RSPQCN")
_INPUT_SIZES = ("H", "W", "Hpad", "Wpad")  # Timeloop's CNN-layer problems also state the input size and padding
_TERM = re.compile(r"^\s*(?:([A-Za-z_]\w*|\d+)\s*\*\s*)?([A-Za-z_]\w*|\d+)\s*$")


def _coefficients(shape: dict[str, Any], instance: dict[str, Any], where: Where, instance_at: Where
                  ) -> dict[str, int]:
    """Coefficient name -> value: the instance's, else the declared default (1 without one)."""
    values: dict[str, int] = {}
    for i, c in enumerate(list_at(shape.get("coefficients") or [], where / "coefficients")):
        at = where / "coefficients" / i
        c = mapping_at(c, at)
        name = c.get("name")
        if not isinstance(name, str):
            raise (at / "name").error("a coefficient needs a name")
        given = name in instance
        values[name] = plain_integer(instance[name] if given else c.get("default", 1),
                                     instance_at / name if given else at / "default", 1, limits.MAX_DIM)
    return values


def _term(term: object, dims: tuple[str, ...], coefs: dict[str, int], where: Where) -> tuple[str, int]:
    """``[dim]``, ``[dim, coef]`` or ``"coef*dim"`` -> (dim, integer coefficient)."""
    if isinstance(term, str):
        m = _TERM.match(term)
        if not m:
            raise where.error(f"cannot read the projection term {term!r}")
        parts = [p for p in m.groups() if p is not None]
    elif isinstance(term, list) and 1 <= len(term) <= 2 and all(isinstance(p, (str, int)) for p in term):
        parts = [str(p) for p in term]
    else:
        raise where.error(f"a projection term is [dimension] or [dimension, coefficient], got {term!r}")
    dim = [p for p in parts if p in dims]
    rest = [p for p in parts if p not in dims]
    if len(dim) != 1:
        raise where.error(f"term {term!r} must name exactly one of the dimensions {list(dims)}")
    coef = 1
    for p in rest:
        if p.isdigit():
            coef *= int(p)
        elif p in coefs:
            coef *= coefs[p]
        else:
            raise where.error(f"unknown coefficient {p!r} in term {term!r}; declare it under shape.coefficients")
    if not 1 <= coef <= limits.MAX_DIM:
        raise where.error(f"coefficient of {dim[0]} must be in 1..{limits.MAX_DIM:,} (the limit of an axis "
                          f"coefficient), got {coef:,}")
    return dim[0], coef


def _split_top(text: str) -> list[str]:
    """Split ``"[ C, R + P ]"`` into its comma-separated axis expressions."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    return [part.strip() for part in body.split(",") if part.strip()]


def _axes(projection: object, dims: tuple[str, ...], coefs: dict[str, int], where: Where) -> tuple[Axis, ...]:
    if isinstance(projection, str):
        raw_axes: list[Any] = [[t for t in expr.split("+")] for expr in _split_top(projection)]
    else:
        raw_axes = list_at(projection, where)
    axes = []
    for i, raw in enumerate(raw_axes):
        at = where / i
        terms_raw = list_at(raw, at) if not isinstance(raw, str) else [raw]
        if not terms_raw:
            raise at.error("an axis needs at least one term")
        terms = tuple(_term(t, dims, coefs, at / j) for j, t in enumerate(terms_raw))
        if len({d for d, _ in terms}) != len(terms):
            raise at.error("a dimension appears twice in one axis")
        name = terms[0][0] if len(terms) == 1 else "_".join(d for d, _ in terms)
        axes.append(Axis(name, terms))
    if not axes:
        raise where.error("a data space needs at least one axis")
    return tuple(axes)


def _roles(spaces: list[tuple[str, tuple[Axis, ...], bool]], where: Where) -> list[Role]:
    outputs = [i for i, (_, _, rw) in enumerate(spaces) if rw]
    if len(outputs) != 1:
        raise where.error(f"exactly one data space must be read-write (the output), found {len(outputs)}")
    roles: list[Role | None] = ["output" if rw else None for _, _, rw in spaces]
    for i, (name, _, rw) in enumerate(spaces):
        if not rw:
            named = role_from_name(name)
            roles[i] = named if named in ("input", "weight") else None
    if "input" not in roles:
        free = [i for i, r in enumerate(roles) if r is None]
        sliding = [i for i in free if any(len(a.terms) > 1 for a in spaces[i][1])]
        if free:
            roles[(sliding or free)[0]] = "input"
    return [r if r is not None else "weight" for r in roles]


def _check_instance_keys(instance: dict[str, Any], dims: tuple[str, ...], coefs: list[str], inline: bool,
                         where: Where) -> None:
    """Every key of the instance is a dimension or a coefficient: an unknown dimension is refused, not
    ignored. Accepted besides: empty ``densities`` (dense), and the input sizes of Timeloop's CNN-layer
    problems (``H``, ``W``, ``Hpad``, ``Wpad``: the input follows from the projections), with a note."""
    unread = []
    for key, value in instance.items():
        if key in dims or key in coefs or (inline and key in ("shape", "version")):
            continue
        if key == "densities":
            if mapping_at(value, where / key):
                raise (where / key).error("densities are not read from a Timeloop problem; give them to "
                                          "`dnnmap map --density TENSOR=D`")
        elif key in _INPUT_SIZES and _CNN_DIMS <= set(dims):
            plain_integer(value, where / key, 0, limits.MAX_DIM)
            unread.append(key)
        else:
            raise (where / key).error(f"unknown dimension {key!r}; the problem's dimensions are {list(dims)}"
                                      + (f" and its coefficients {coefs}" if coefs else ""))
    if unread:
        warnings.warn(DnnmapNote(f"{where.file}: {', '.join(unread)} not read: the input's size follows from the "
                                 "projections and bounds"), stacklevel=2)


def operator_from_problem(data: dict[str, Any], origin: str) -> Operator:
    """The operator a parsed Timeloop problem describes."""
    where = Where(origin, "problem")
    problem = mapping_at(data.get("problem"), where)
    shape_at = where / "shape"
    shape = problem.get("shape")
    if isinstance(shape, str):
        raise shape_at.error(f"a built-in shape ({shape!r}) is not supported; give the shape inline "
                             "(dimensions, coefficients, data-spaces)")
    shape = mapping_at(shape, shape_at)
    dims = names_at(shape.get("dimensions"), shape_at / "dimensions")
    if len(set(dims)) != len(dims) or not dims:
        raise (shape_at / "dimensions").error("dimension names must be distinct and at least one")
    inline = "instance" not in problem  # v0.2: the bounds beside 'shape'
    instance_at = where if inline else where / "instance"
    instance = mapping_at(problem.get("instance", problem), instance_at)
    bounds = []
    for d in dims:
        if d not in instance:
            raise instance_at.error(f"no bound given for dimension {d}")
        bounds.append((d, plain_integer(instance[d], instance_at / d, 1, limits.MAX_DIM)))
    coefs = _coefficients(shape, instance, shape_at, instance_at)
    _check_instance_keys(instance, dims, list(coefs), inline, instance_at)
    key = "data-spaces" if "data-spaces" in shape else "data_spaces"
    spaces_at = shape_at / key
    spaces = []
    for i, ds in enumerate(list_at(shape.get(key), spaces_at)):
        at = spaces_at / i
        ds = mapping_at(ds, at)
        name = ds.get("name")
        if not isinstance(name, str) or not name:
            raise (at / "name").error("a data space needs a name")
        if "projection" not in ds:
            raise at.error(f"data space {name!r} has no projection")
        rw = ds.get("read-write", ds.get("read_write", False))
        spaces.append((name, _axes(ds["projection"], dims, coefs, at / "projection"), bool(rw)))
    if len({n for n, _, _ in spaces}) != len(spaces):
        raise spaces_at.error("data-space names must be distinct")
    roles = _roles(spaces, spaces_at)
    tensors = tuple(Tensor(name, role, axes) for (name, axes, _), role in zip(spaces, roles))
    name = str(shape.get("name") or Path(origin).stem)
    kind = "conv2d" if _CNN_DIMS <= set(dims) else "einsum"
    try:
        return Operator(name, kind, tuple(bounds), tensors, (("source", "timeloop"),))
    except ValueError as err:
        raise where.error(str(err)) from err


def load_timeloop_problem(path: str | Path) -> Operator:
    """The operator of the Timeloop problem file ``path``."""
    data, origin = load_timeloop_files([path])
    if "problem" not in data:
        raise InputFileError(f"{path}: no top-level 'problem' key; this is not a Timeloop problem file")
    return operator_from_problem(data, origin["problem"])


def problem_network(op: Operator) -> Network:
    """A one-layer network holding ``op`` (what ``dnnmap map`` reads)."""
    inp = next(t for t in op.tensors if t.role == "input")
    input_name = f"{op.name}_input"
    layer = Layer(op, (input_name,), op.output.shape(op.bounds))
    return Network(op.name, (layer,), ((input_name, inp.shape(op.bounds)),), source="timeloop")
