"""Attention masks an ONNX graph builds at runtime from its inputs (docs/import.md "Transformer blocks").

Two ways of applying a mask built when the model runs only from graph inputs and constants - comparisons of
positions (``arange(t)[:, None] >= positions``), a padding mask given as an input, and the casts, reshapes,
logic and arithmetic between them - are folded as a constant mask is:

- ``Where(condition, scores, fill)`` (or ``Where(condition, fill, scores)``, as ``masked_fill`` writes it) with
  a computed condition: fused onto the scores' producer as ``mask``;
- an *additive* mask added to the attention scores (Hugging Face's BERT ``(1 - attention_mask) * -10000``, a
  ``[batch, 1, q, k]`` mask ``masked_fill``-ed or ``Where``-d to 0 / -inf): an ``Add`` whose sum reaches a
  ``Softmax`` and whose other operand is a layer's result; fused onto the scores as ``add_mask``, as a constant
  additive mask is (``add_const``).

The nodes building such a mask are not layers. A mask that reads any layer's result, or whose building nodes
feed anything else, is not folded (its nodes are translated one by one).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import onnx

COMPARISONS = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not", "Xor"})
MASK_OPS = COMPARISONS | frozenset({"Cast", "Unsqueeze", "Squeeze", "Reshape", "Expand", "Slice", "Transpose",
                                    "Identity", "Range", "Add", "Sub", "Mul", "Neg", "Where", "Gather", "Trilu"})
# what the scores pass through between an additive mask and their Softmax (other masks, scales, layouts)
TO_SOFTMAX = frozenset({"Add", "Where", "Mul", "Div", "Cast", "Reshape", "Transpose", "Identity"})
SOFTMAX_DEPTH = 6


@dataclass(frozen=True)
class RuntimeMasks:
    """Folded ``Where`` conditions and additive masks, the nodes building them (by first output) and the graph
    inputs they read."""

    conditions: frozenset[str] = frozenset()
    additive: frozenset[str] = frozenset()
    builders: frozenset[str] = frozenset()
    sources: tuple[str, ...] = ()
    ops: Counter[str] = field(default_factory=Counter)

    @property
    def tensors(self) -> frozenset[str]:
        """Every folded mask tensor: not an activation of the node applying it."""
        return self.conditions | self.additive

    def note(self) -> str | None:
        if not self.tensors:
            return None
        built = ", ".join(f"{op} x{n}" for op, n in sorted(self.ops.items())) or "none"
        kinds = [f"{len(self.conditions)} Where condition(s)"] * bool(self.conditions) + [
            f"{len(self.additive)} additive mask(s)"] * bool(self.additive)
        return (f"{' and '.join(kinds)} computed at runtime from input(s) {', '.join(self.sources)} "
                f"(nodes: {built}) applied as fused masks, as constant masks are (no layer)")


def runtime_masks(nodes: Iterable[onnx.NodeProto], static: set[str], graph_inputs: set[str]) -> RuntimeMasks:
    """The ``Where`` conditions and additive masks computed from graph inputs only, whose building nodes feed
    nothing else."""
    nodes = list(nodes)
    node_of = {o: n for n in nodes for o in n.output if o}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    uses = [(n, n.input[0]) for n in nodes if n.op_type == "Where" and n.input[0] not in static]
    for add in (n for n in nodes if n.op_type == "Add" and all(i not in static for i in n.input)):
        if not _feeds_softmax(add.output[0], readers):  # first: the residual stream is long to walk back
            continue
        built = [i for i in add.input if _builders(i, node_of, static, graph_inputs) is not None]
        if len(built) == 1:
            uses.append((add, built[0]))
    applied = {(id(n), tensor) for n, tensor in uses}
    conditions: set[str] = set()
    additive: set[str] = set()
    builders: dict[str, onnx.NodeProto] = {}
    sources: set[str] = set()
    for node, tensor in uses:
        found = _builders(tensor, node_of, static, graph_inputs)
        if found is None:
            continue
        members, reads = found
        inside = {id(n) for n in members}
        if any(id(r) not in inside and (id(r), o) not in applied
               for n in members for o in n.output if o for r in readers.get(o, [])):
            continue  # a building node feeds something else: a computation, not a mask
        (conditions if node.op_type == "Where" else additive).add(tensor)
        builders.update({n.output[0]: n for n in members})
        sources |= reads
    conditions = {c for c in conditions  # a Where building an additive mask is not a mask of its own
                  if not any(n.op_type == "Where" and n.output[0] in builders for n in readers.get(c, []))}
    return RuntimeMasks(frozenset(conditions), frozenset(additive), frozenset(builders), tuple(sorted(sources)),
                        Counter(n.op_type for n in builders.values()))


def _feeds_softmax(tensor: str, readers: dict[str, list[onnx.NodeProto]]) -> bool:
    """``tensor`` reaches a ``Softmax`` through :data:`TO_SOFTMAX` nodes only: it is attention scores."""
    frontier = [tensor]
    for _ in range(SOFTMAX_DEPTH):
        nxt = []
        for name in frontier:
            for r in readers.get(name, []):
                if r.op_type == "Softmax":
                    return True
                if r.op_type in TO_SOFTMAX:
                    nxt.extend(o for o in r.output if o)
        frontier = nxt
    return False


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
