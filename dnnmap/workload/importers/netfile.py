"""The project's own network file: a readable YAML (or JSON) dump of the workload IR that round-trips exactly.

Example (one layer)::

    format: dnnmap-network
    version: 1
    name: resnet18
    source: onnx:resnet18.onnx
    notes: []
    inputs: {input: [1, 3, 224, 224]}
    layers:
    - name: conv1
      kind: conv2d
      inputs: [input]
      output_shape: [1, 64, 112, 112]
      fused: [relu]
      dims: {N: 1, G: 1, K: 64, C: 3, P: 112, Q: 112, R: 7, S: 7}
      tensors:
      - {name: I, role: input, axes: [N, G, C, H=2*P+R, W=2*Q+S]}
      - {name: W, role: weight, axes: [G, K, C, R, S]}
      - {name: O, role: output, axes: [N, G, K, P, Q]}
      attrs: {stride: [2, 2], padding: [3, 3, 3, 3], ...}

An axis is written ``NAME=c1*D1+c2*D2`` (coefficient 1 omitted), or just ``D`` when the
axis is the single dimension of the same name. ``connectivity`` appears only on
sparsely connected layers.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from dnnmap import limits
from dnnmap.errors import InputFileError
from dnnmap.fileio import as_tuples, int_choice, load_data, write_text_atomic
from dnnmap.workload.ir import Axis, Layer, Network, Operator, Phase, Tensor
from dnnmap.workload.validate import validate_network

FORMAT = "dnnmap-network"
VERSION = 1
NETFILE_SUFFIXES = (".yaml", ".yml", ".json")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_AXIS = re.compile(rf"^\s*(?:({_NAME})\s*=)?\s*((?:\d+\s*\*\s*)?{_NAME}(?:\s*\+\s*(?:\d+\s*\*\s*)?{_NAME})*)\s*$")
_TERM = re.compile(rf"^\s*(?:(\d+)\s*\*\s*)?({_NAME})\s*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


Size = Annotated[StrictInt, Field(ge=1, le=limits.MAX_ITERATIONS)]
Shape = Annotated[list[Size], Field(min_length=1, max_length=8)]
Name = Annotated[StrictStr, Field(min_length=1, max_length=500)]
MAX_ATTR_DEPTH = 3  # list nesting of an attribute value: densities are [[TENSOR, DENSITY], ...]


def _attr_depth(value: Any) -> int:
    """List nesting of an attribute value; a mapping (which the IR's hashable attributes cannot hold) is
    refused."""
    if isinstance(value, dict):
        raise ValueError("attribute values are numbers, strings, booleans or lists of them, not mappings")
    if isinstance(value, (list, tuple)):
        return 1 + max((_attr_depth(v) for v in value), default=0)
    return 0


def _check_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    for key, value in attrs.items():
        try:
            depth = _attr_depth(value)
        except ValueError as err:
            raise ValueError(f"attribute {key!r}: {err}") from None
        if depth > MAX_ATTR_DEPTH:
            raise ValueError(f"attribute {key!r} nests lists more than {MAX_ATTR_DEPTH} deep")
    return attrs


Attrs = Annotated[dict[Name, Any], AfterValidator(_check_attrs)]  # an operator's attributes (also mapping files)


class TensorSpec(_Strict):
    name: Name
    role: Literal["input", "weight", "output"]
    axes: Annotated[list[Annotated[StrictStr, Field(max_length=200)]], Field(max_length=limits.MAX_TENSOR_AXES)]


class LayerSpec(_Strict):
    name: Name
    kind: Name
    inputs: Annotated[list[Name], Field(min_length=1)]
    output_shape: Shape
    fused: list[StrictStr] = Field(default_factory=list)
    dims: Annotated[dict[Name, Annotated[StrictInt, Field(ge=1, le=limits.MAX_DIM)]],
                    Field(min_length=1, max_length=limits.MAX_TENSOR_AXES)]
    tensors: Annotated[list[TensorSpec], Field(min_length=2, max_length=limits.MAX_TENSOR_AXES)]
    attrs: Attrs = Field(default_factory=dict)
    connectivity: list[list[Annotated[StrictInt, Field(ge=0)]]] | None = None


class PhaseSpec(_Strict):
    """A transformer network's inference phase (dnnmap.workload.ir.Phase)."""

    name: Literal["prefill", "decode"]
    tokens: Annotated[StrictInt, Field(ge=1, le=limits.MAX_DIM)]
    cached: Annotated[StrictInt, Field(ge=0, le=limits.MAX_DIM)] = 0


class NetworkSpec(_Strict):
    format: Literal["dnnmap-network"]
    version: int_choice(1)  # type: ignore[valid-type]
    name: StrictStr
    source: StrictStr = "file"
    notes: list[StrictStr] = Field(default_factory=list)
    inputs: Annotated[dict[Name, Shape], Field(min_length=1)]
    layers: Annotated[list[LayerSpec], Field(min_length=1)]
    phase: PhaseSpec | None = None


# ---- writing ---------------------------------------------------------------------
class _Flow(dict):
    """A mapping written on one line (``{N: 1, K: 64}``) in YAML."""


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml when available: 5x faster
    pass


_Dumper.add_representer(_Flow, lambda d, data: d.represent_mapping("tag:yaml.org,2002:map", data, flow_style=True))


def format_axis(axis: Axis) -> str:
    if len(axis.terms) == 1 and axis.terms[0] == (axis.name, 1):
        return axis.name
    return axis.name + "=" + "+".join(d if c == 1 else f"{c}*{d}" for d, c in axis.terms)


def _plain(value: Any) -> Any:
    """Tuples to lists, recursively (YAML/JSON have no tuples)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return _Flow((k, _plain(v)) for k, v in value.items())
    return value


def network_to_dict(network: Network) -> dict[str, Any]:
    layers = []
    for layer in network.layers:
        op = layer.op
        entry: dict[str, Any] = {
            "name": op.name, "kind": op.kind, "inputs": list(layer.inputs),
            "output_shape": list(layer.output_shape), "fused": list(layer.fused), "dims": _Flow(op.dims),
            "tensors": [_Flow(name=t.name, role=t.role, axes=[format_axis(a) for a in t.axes]) for t in op.tensors],
            "attrs": _Flow((k, _plain(v)) for k, v in op.attrs),
        }
        if op.connectivity is not None:
            entry["connectivity"] = _plain(op.connectivity)
        layers.append(entry)
    return {"format": FORMAT, "version": VERSION, "name": network.name, "source": network.source,
            "notes": list(network.notes), "inputs": _Flow((n, list(s)) for n, s in network.inputs), "layers": layers,
            **({"phase": {"name": p.name, "tokens": p.tokens, "cached": p.cached}}
               if (p := network.phase) is not None else {})}


def dumps(network: Network, fmt: Literal["yaml", "json"] = "yaml") -> str:
    data = network_to_dict(network)
    if fmt == "json":
        return json.dumps(data, indent=1) + "\n"
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=120)


def save_network(network: Network, path: str | os.PathLike[str]) -> Path:
    """Write ``network`` to ``path`` (.yaml/.yml or .json) atomically: a temp file renamed into place."""
    path = Path(path)
    if path.suffix.lower() not in NETFILE_SUFFIXES:
        raise InputFileError(f"{path}: network files must end in {', '.join(NETFILE_SUFFIXES)}")
    text = dumps(network, "json" if path.suffix.lower() == ".json" else "yaml")
    try:
        write_text_atomic(path, text, make_parents=False)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot write network file: {exc.strerror or exc}") from exc
    return path


# ---- reading ---------------------------------------------------------------------
def parse_axis(text: str, where: str) -> Axis:
    m = _AXIS.match(text)
    if not m:
        raise InputFileError(f"{where}: cannot parse axis {text!r}; write NAME=2*P+R or a single dimension like N")
    terms = []
    for part in m.group(2).split("+"):
        coef, dim = _TERM.match(part).groups()  # type: ignore[union-attr]
        terms.append((dim, int(coef) if coef else 1))
    name = m.group(1) or (terms[0][0] if len(terms) == 1 else None)
    if name is None or (m.group(1) is None and terms[0][1] != 1):
        raise InputFileError(f"{where}: axis {text!r} needs a name: write NAME={m.group(2)}")
    return Axis(name, tuple(terms))


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _problem(error: Any, data: Any) -> str:
    """One schema error: where (a layer also by name), what, and the value the file gives."""
    loc = error["loc"]
    layer = ""
    if len(loc) > 1 and loc[0] == "layers" and isinstance(loc[1], int):
        entry = data["layers"][loc[1]]
        name = entry.get("name") if isinstance(entry, dict) else None
        layer = f" (layer {name!r})" if isinstance(name, str) else ""
    got = "" if error["type"] == "missing" else f", got {type(error['input']).__name__} {error['input']!r:.40}"
    why = " (a resource limit, docs/robustness.md)" if error["type"] == "less_than_equal" else ""
    return f"{_loc(loc) or 'top level'}: {error['msg']}{got}{why}{layer}"


def network_from_dict(data: Any, path: str) -> Network:
    try:
        spec = NetworkSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_problem(e, data) for e in exc.errors()[:5])
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise InputFileError(f"{path}: not a valid dnnmap network file: {problems}{more}") from exc
    layers = []
    for i, ls in enumerate(spec.layers):
        where = f"{path}: layers[{i}] ({ls.name})"
        try:
            tensors = tuple(Tensor(t.name, t.role, tuple(parse_axis(a, f"{where}.tensors.{t.name}") for a in t.axes))
                            for t in ls.tensors)
            connectivity = None if ls.connectivity is None else tuple(tuple(c) for c in ls.connectivity)
            op = Operator(ls.name, ls.kind, tuple(ls.dims.items()), tensors,
                          tuple((k, as_tuples(v)) for k, v in ls.attrs.items()), connectivity)
        except ValueError as exc:
            raise InputFileError(f"{where}: {exc}") from exc
        layers.append(Layer(op, tuple(ls.inputs), tuple(ls.output_shape), tuple(ls.fused)))
    try:
        phase = None if spec.phase is None else Phase(spec.phase.name, spec.phase.tokens, spec.phase.cached)
        network = Network(spec.name, tuple(layers), tuple((n, tuple(s)) for n, s in spec.inputs.items()),
                          spec.source, tuple(spec.notes), phase)
    except ValueError as exc:
        raise InputFileError(f"{path}: {exc}") from exc
    return validate_network(network, path)


def load_netfile(path: Path) -> Network:
    return network_from_dict(load_data(path, "network file"), str(path))
