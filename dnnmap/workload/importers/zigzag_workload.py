"""ZigZag workload YAML (a list of layers) -> a dnnmap :class:`Network` and the layers' operand precisions.

Each layer gives an ``equation`` such as ``O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]``,
``dimension_relations`` (``ix=2*ox+1*fx``: strides and dilations), ``loop_dims``/``loop_sizes`` and
``operand_precision``. Dimension names are kept (upper case, as ZigZag's mapping files write them), the
operand ``W`` is the weight, ``I`` the input and the left-hand side the output. Layers without
multiplications (``Pooling``, ``Add``: a ``+`` in the equation or a 0-bit ``W``) are skipped with a note.
Every imported layer reads its own network input (``<layer>_input``), sized by its relations; ZigZag's
``padding`` is kept as an attribute (its input extents are the relations', as ZigZag's own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dnnmap.errors import InputFileError
from dnnmap.fileio import load_data
from dnnmap.workload.importers.timeloop_yaml import (
    Where,
    integer,
    list_at,
    mapping_at,
    names_at,
)
from dnnmap.workload.ir import Axis, Layer, Network, Operator, Role, Tensor
from dnnmap.workload.validate import validate_network

_OPERAND = r"([A-Za-z_]\w*)((?:\[\s*\w*\s*\])+)"
_EQUATION = re.compile(rf"^\s*{_OPERAND}\s*\+?=\s*{_OPERAND}\s*([*+])\s*{_OPERAND}\s*$")
_INDEX = re.compile(r"\[\s*(\w*)\s*\]")
_TERM = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)\s*$")
_ROLES: dict[str, Role] = {"W": "weight", "I": "input"}


@dataclass(frozen=True)
class ZigzagWorkload:
    """The imported network, each layer's operand precisions (bits), the bits of its final outputs (ZigZag's
    ``O_final``, the output's precision when not given) and notes on skipped layers."""

    network: Network
    precision: dict[str, dict[Role, int]]
    notes: tuple[str, ...]
    final_output: dict[str, int]


def _relations(raw: object, at: Where) -> dict[str, tuple[tuple[str, int], ...]]:
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for i, rel in enumerate(list_at(raw if raw is not None else [], at)):
        left, _, right = rel.partition("=") if isinstance(rel, str) else ("", "", "")
        terms = [_TERM.match(t) for t in right.split("+")]
        if not left.strip() or not all(terms):
            raise (at / i).error(f"expected 'index=c1*dim1+c2*dim2', got {rel!r}")
        out[left.strip().lower()] = tuple((m.group(2).upper(), int(m.group(1) or 1)) for m in terms if m)
    return out


def _axes(indices: str, dims: dict[str, int], rel: dict[str, tuple[tuple[str, int], ...]],
          at: Where) -> tuple[Axis, ...]:
    axes = []
    for idx in _INDEX.findall(indices):
        terms = ((idx.upper(), 1),) if idx.upper() in dims else rel.get(idx.lower())
        if terms is None or any(d not in dims for d, _ in terms):
            raise at.error(f"index {idx!r} is neither a loop dimension ({', '.join(dims)}) nor defined by "
                           "dimension_relations over them")
        axes.append(Axis(idx.upper(), terms))
    return tuple(axes)


def _layer(raw: object, at: Where, notes: list[str]) -> tuple[Operator, dict[Role, int], int] | None:
    layer = mapping_at(raw, at)
    name = str(layer.get("name") or f"Layer{layer.get('id', at.path)}")  # ZigZag's own default name
    eq_at = at / "equation"
    eq = layer.get("equation")
    m = _EQUATION.match(eq) if isinstance(eq, str) else None
    if m is None:
        raise eq_at.error(f"expected 'O[..]+=A[..]*B[..]', got {eq!r}")
    out_name, out_idx, a_name, a_idx, op, b_name, b_idx = m.groups()
    prec_at = at / "operand_precision"
    precision = mapping_at(layer.get("operand_precision"), prec_at)
    if op == "+" or layer.get("operator_type") in ("Pooling", "Add") or precision.get("W") == 0:
        notes.append(f"layer {name!r} ({layer.get('operator_type', op)}): no multiplications, skipped")
        return None
    if {a_name, b_name} != set(_ROLES):
        raise eq_at.error(f"the right-hand operands must be W and I, got {a_name} and {b_name}")
    loop_dims = names_at(layer.get("loop_dims"), at / "loop_dims")
    sizes = list_at(layer.get("loop_sizes"), at / "loop_sizes")
    if len(sizes) != len(loop_dims):
        raise (at / "loop_sizes").error(f"{len(sizes)} sizes for {len(loop_dims)} loop_dims")
    dims = {d.upper(): integer(s, at / "loop_sizes" / i) for i, (d, s) in enumerate(zip(loop_dims, sizes))}
    if any(s < 1 for s in dims.values()):
        raise (at / "loop_sizes").error("loop sizes must be >= 1")
    rel = _relations(layer.get("dimension_relations"), at / "dimension_relations")
    bits: dict[Role, int] = {}
    for operand, role in (("I", "input"), ("W", "weight"), (out_name, "output")):
        bits[role] = integer(precision.get(operand), prec_at / operand)
        if not 1 <= bits[role] <= 1024:
            raise (prec_at / operand).error(f"must be 1..1024 bits, got {bits[role]}")
    final = integer(precision.get(f"{out_name}_final", bits["output"]), prec_at / f"{out_name}_final")
    if not 1 <= final <= 1024:
        raise (prec_at / f"{out_name}_final").error(f"must be 1..1024 bits, got {final}")
    tensors = (Tensor(a_name, _ROLES[a_name], _axes(a_idx, dims, rel, eq_at)),
               Tensor(b_name, _ROLES[b_name], _axes(b_idx, dims, rel, eq_at)),
               Tensor(out_name, "output", _axes(out_idx, dims, rel, eq_at)))
    kind = {"Conv": "conv2d", "Gemm": "matmul", "MatMul": "matmul"}.get(str(layer.get("operator_type")), "einsum")
    attrs: tuple[tuple[str, object], ...] = (("source", "zigzag"),)
    if "padding" in layer:
        attrs += (("padding", str(layer["padding"])),)
    try:
        return Operator(name, kind, tuple(dims.items()), tensors, attrs), bits, final
    except ValueError as err:
        raise at.error(str(err)) from err


def workload_from_zigzag(data: object, origin: str) -> ZigzagWorkload:
    """The network of a parsed ZigZag workload file."""
    where = Where(origin)
    notes: list[str] = []
    layers: list[Layer] = []
    inputs: list[tuple[str, tuple[int, ...]]] = []
    precision: dict[str, dict[Role, int]] = {}
    final_output: dict[str, int] = {}
    for i, raw in enumerate(list_at(data, where)):
        got = _layer(raw, where / i, notes)
        if got is None:
            continue
        op, bits, final_output[op.name] = got
        if op.name in precision:
            raise (where / i / "name").error(f"layer name {op.name!r} is given twice")
        inp = op.tensors[[t.role for t in op.tensors].index("input")]
        inputs.append((f"{op.name}_input", inp.shape(op.bounds)))
        layers.append(Layer(op, (inputs[-1][0],), op.output.shape(op.bounds)))
        precision[op.name] = bits
    if not layers:
        raise InputFileError(f"{origin}: no layer with multiplications to import")
    return ZigzagWorkload(Network(Path(origin).stem, tuple(layers), tuple(inputs), source="zigzag",
                                  notes=tuple(notes)), precision,
                          tuple(notes), final_output)


def load_zigzag_workload(path: str | Path) -> ZigzagWorkload:
    """Read a ZigZag workload YAML file."""
    workload = workload_from_zigzag(load_data(path, "ZigZag workload file"), str(path))
    validate_network(workload.network, str(path))
    return workload


def final_output_bits(workload: ZigzagWorkload) -> int:
    """Bits of the final outputs for the whole network (the widest any layer uses)."""
    return max(workload.final_output.values())


def common_precision(workload: ZigzagWorkload) -> tuple[dict[Role, int], list[str]]:
    """One word width per role for the whole network (the widest any layer uses) and a note where layers differ."""
    widths: dict[Role, int] = {r: max(p[r] for p in workload.precision.values()) for r in ("input", "weight", "output")}
    differ = [r for r in widths if len({p[r] for p in workload.precision.values()}) > 1]
    notes = [f"layers use different {r} precisions; the spec takes the widest, {widths[r]} bits" for r in differ]
    return widths, notes
