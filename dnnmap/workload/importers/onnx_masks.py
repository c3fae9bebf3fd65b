"""Attention masks an ONNX graph builds at runtime from its inputs (docs/import.md "Transformer blocks").

A ``Where(condition, scores, fill)`` whose condition is not a constant but is computed only from graph
inputs and constants - comparisons of positions (``arange(t)[:, None] >= positions``), a padding mask
given as an input, and the casts, reshapes and logic between them - applies a mask exactly as a constant
condition does: it is fused onto the scores' producer, and the nodes that build the condition are not
layers. A condition that reads any layer's result is not such a mask (its ``Where`` stays unsupported).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import onnx

COMPARISONS = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not", "Xor"})
MASK_OPS = COMPARISONS | frozenset({"Cast", "Unsqueeze", "Squeeze", "Reshape", "Expand", "Slice", "Transpose",
                                    "Identity", "Range", "Add", "Sub", "Mul", "Neg", "Where", "Gather"})


@dataclass(frozen=True)
class RuntimeMasks:
    """Folded ``Where`` conditions, the nodes building them (by first output) and the graph inputs they read."""

    conditions: frozenset[str] = frozenset()
    builders: frozenset[str] = frozenset()
    sources: tuple[str, ...] = ()
    ops: Counter[str] = field(default_factory=Counter)

    def note(self) -> str | None:
        if not self.conditions:
            return None
        built = ", ".join(f"{op} x{n}" for op, n in sorted(self.ops.items())) or "none"
        return (f"{len(self.conditions)} mask(s) computed at runtime from input(s) {', '.join(self.sources)} "
                f"(nodes: {built}) applied as fused masks, as constant masks are (no layer)")


def runtime_masks(nodes: Iterable[onnx.NodeProto], static: set[str], graph_inputs: set[str]) -> RuntimeMasks:
    """The ``Where`` conditions computed from graph inputs only, whose building nodes feed nothing else."""
    nodes = list(nodes)
    node_of = {o: n for n in nodes for o in n.output if o}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    conditions: set[str] = set()
    builders: dict[str, onnx.NodeProto] = {}
    sources: set[str] = set()
    for where in (n for n in nodes if n.op_type == "Where" and n.input[0] not in static):
        found = _builders(where.input[0], node_of, static, graph_inputs)
        if found is None:
            continue
        members, reads = found
        outputs = {o for n in members for o in n.output if o}
        inside = {id(n) for n in members}
        escapes = any(id(r) not in inside and not (r.op_type == "Where" and r.input[0] == o and o not in r.input[1:])
                      for o in outputs for r in readers.get(o, []))
        if escapes:
            continue
        conditions.add(where.input[0])
        builders.update({n.output[0]: n for n in members})
        sources |= reads
    return RuntimeMasks(frozenset(conditions), frozenset(builders), tuple(sorted(sources)),
                        Counter(n.op_type for n in builders.values()))


def _builders(tensor: str, node_of: dict[str, onnx.NodeProto], static: set[str],
              graph_inputs: set[str]) -> tuple[list[onnx.NodeProto], set[str]] | None:
    """The nodes computing ``tensor`` from graph inputs and constants through :data:`MASK_OPS`, and the graph
    inputs they read; ``None`` if it depends on any other node."""
    members: dict[str, onnx.NodeProto] = {}
    reads: set[str] = set()
    stack = [tensor]
    while stack:
        name = stack.pop()
        if name in static or name in members:
            continue
        if name in graph_inputs:
            reads.add(name)
            continue
        node = node_of.get(name)
        if node is None or node.op_type not in MASK_OPS or node.domain not in ("", "ai.onnx"):
            return None
        members.update({o: node for o in node.output if o})
        stack.extend(i for i in node.input if i)
    return list({id(n): n for n in members.values()}.values()), reads
