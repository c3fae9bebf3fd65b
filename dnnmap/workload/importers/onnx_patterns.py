"""Decomposed transformer functions in an ONNX graph: layer norm, RMS norm, GELU, SiLU and rotary embeddings
written as element-wise ops (as ``torch.onnx.export`` writes hand-written modules, e.g. the original BERT's
LayerNorm, Llama's RMSNorm, ``x * 0.5 * (1 + erf(x / sqrt 2))``, GPT-2's tanh GELU, ``x * sigmoid(x)``,
Llama's ``x * cos + rotate_half(x) * sin`` with constant cos/sin tables, and GPT-NeoX's partial rotary
``cat(rotary(x[..., :r]), x[..., r:])``).

A *cluster* is the set of element-wise and reduction nodes that, through each other and constants, read one
activation tensor only (its *root*). A cluster whose results leave it through exactly one tensor is one
function of its root; its multiset of op types names the function (:func:`classify`). Clusters that match no
function are left alone: their nodes are translated one by one, as any other node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import onnx

ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Erf", "Tanh", "Sigmoid",
                         "ReduceMean", "Cast", "Neg", "Slice", "Concat"})
# Llama's apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, rotate_half = cat(-x[half:], x[:half])
ROTARY = Counter({"Slice": 2, "Neg": 1, "Concat": 1, "Mul": 2, "Add": 1})
# GPT-NeoX's and Phi's partial rotary: cat(rotary(x[..., :r]), x[..., r:]): two more slices, one more concat
PARTIAL_ROTARY = ROTARY + Counter({"Slice": 2, "Concat": 1})


@dataclass(frozen=True)
class Pattern:
    """A decomposed function: ``kind`` (a vector kind of docs/ir.md) of tensor ``root``, written by ``output``."""

    kind: str
    root: str
    output: str  # the output tensor of the cluster's last node
    members: frozenset[str]  # first output tensor of every node of the cluster, the last one included
    rotated: str | None = None  # a partial rotary's rotated part (its Add), before the pass-through is appended


def classify(op_types: Iterable[str]) -> str | None:
    """The function a cluster of these ONNX op types computes, or ``None``.

    layer norm: two means (of x and of the squared deviation), a subtraction, a power, a square root;
    RMS norm: one mean of a power, a square root, no subtraction; GELU: erf (exact form) or tanh and a power
    (tanh approximation); SiLU: one sigmoid and one product; rotary: two slices (the halves), a negation and a
    concat (``rotate_half``), two products (by cos and sin) and their sum, or all that on the first ``r`` dims
    of the last axis, with two slices and a concat more (a partial rotary) - slices and concats join no other
    function. Casts (to float32 and back) are not members: they
    pass their input's root on and stay layout nodes.
    """
    ops = Counter(op_types)
    if ops["Slice"] or ops["Concat"]:
        return "rotary" if ops in (ROTARY, PARTIAL_ROTARY) else None
    if ops["ReduceMean"] == 2 and ops["Sub"] >= 1 and ops["Pow"] == 1 and ops["Sqrt"] == 1:
        return "layernorm"
    if ops["ReduceMean"] == 1 and ops["Sub"] == 0 and ops["Pow"] == 1 and ops["Sqrt"] == 1:
        return "rmsnorm"
    if ops["Erf"] == 1 and ops["Mul"] >= 1 and not ops["ReduceMean"]:
        return "gelu"
    if ops["Tanh"] == 1 and ops["Pow"] == 1 and not ops["ReduceMean"]:
        return "gelu"
    if ops == Counter({"Sigmoid": 1, "Mul": 1}):
        return "silu"
    return None


def find_patterns(nodes: Iterable[onnx.NodeProto], static: set[str], graph_outputs: set[str]) -> dict[str, Pattern]:
    """Recognised decomposed functions, keyed by the first output of each member node."""
    nodes = list(nodes)
    root: dict[str, str] = {}
    op_of: dict[str, str] = {}
    cast_of: dict[str, str] = {}  # cast output -> its input
    for node in nodes:
        if node.op_type not in ELEMENTWISE or node.domain not in ("", "ai.onnx") or node.output[0] in static:
            continue
        roots = {root.get(i, i) for i in node.input if i and i not in static}
        if len(roots) == 1:
            root[node.output[0]] = roots.pop()
            if node.op_type == "Cast":  # a layout: not counted; a member only between members
                cast_of[node.output[0]] = node.input[0]
            else:
                op_of[node.output[0]] = node.op_type
    clusters: dict[str, list[str]] = {}
    for out in (o for o in root if o in op_of or cast_of.get(o) in op_of):
        clusters.setdefault(root[out], []).append(out)
    readers: dict[str, set[str]] = {}
    for node in nodes:
        for i in node.input if node.output[0] not in static else ():  # a Shape of a member reads no values
            readers.setdefault(i, set()).add(node.output[0])
    found: dict[str, Pattern] = {}
    for r, outs in clusters.items():
        members = frozenset(outs)
        leaving = [o for o in outs if o in graph_outputs or readers.get(o, set()) - members]
        kind = classify(op_of[o] for o in outs if o in op_of)
        if len(leaving) != 1 or kind is None or leaving[0] not in op_of:
            continue
        partial = Counter(op_of[o] for o in outs if o in op_of) == PARTIAL_ROTARY
        pattern = Pattern(kind, r, leaving[0], members,
                          next(o for o in outs if op_of.get(o) == "Add") if partial else None)
        if kind == "silu" and r not in _inputs_of(nodes, leaving[0]):
            continue  # sigmoid(x) * y is a gate, not x * sigmoid(x)
        found.update({o: pattern for o in outs})
    return found


def _inputs_of(nodes: list[onnx.NodeProto], output: str) -> tuple[str, ...]:
    return next(tuple(n.input) for n in nodes if n.output[0] == output)
