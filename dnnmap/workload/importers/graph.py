"""Framework-neutral source graph: what the ONNX and Keras front ends produce and the clean-up rewrites.

Every node has one output. ``inputs`` names the producing nodes or graph inputs of the
activation (non-constant) operands; weights, biases and other constants are already
reduced to attributes. Shapes are NCHW (Keras front end transposes NHWC).

Semantic ops (``SourceNode.op``) and their attributes:

=============  =============================================================================
conv           kernel (r, s), stride (h, w), padding (top, left, bottom, right), dilation, groups, out_channels
fc             out_features (input flattened to (N, features))
matmul         out_features (input (..., M, K) times a (K, out_features) operand)
pool           mode (max/avg), kernel, stride, padding, ceil_mode
global_pool    mode
add, mul       element-wise over two or more feature maps
concat         along channels
eltwise_unary  function (relu, clip, sigmoid, softmax, bias_add, scale, batchnorm, ...): fusable
batchnorm      folded into the producing conv/fc, or becomes ``eltwise_unary`` batchnorm
pad            padding (top, left, bottom, right): folded into the consuming conv/pool
passthrough    reshape/flatten/identity/dropout/squeeze/quantize: no loop-nest meaning, removed
unsupported    reason: listed in one error, or skipped with ``skip_unsupported``
=============  =============================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

SEMANTIC_OPS = frozenset({"conv", "fc", "matmul", "pool", "global_pool", "add", "mul", "concat", "eltwise_unary",
                          "batchnorm", "pad", "passthrough", "unsupported"})


@dataclass(frozen=True)
class SourceNode:
    name: str
    op: str
    source_op: str  # framework op type, for messages and the report
    inputs: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    fused: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.op not in SEMANTIC_OPS:
            raise ValueError(f"node {self.name!r}: unknown semantic op {self.op!r}")

    def with_(self, **changes: Any) -> SourceNode:
        return replace(self, **changes)


@dataclass(frozen=True)
class SourceGraph:
    """Nodes in topological order; ``path`` is the file they came from (for messages)."""

    name: str
    path: str
    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    nodes: tuple[SourceNode, ...]
    outputs: tuple[str, ...] = ()  # names of nodes whose results leave the graph
    notes: tuple[str, ...] = ()  # assumptions the front end made (e.g. an unspecified batch taken as 1)

    def consumers(self) -> dict[str, list[SourceNode]]:
        out: dict[str, list[SourceNode]] = {}
        for node in self.nodes:
            for src in node.inputs:
                out.setdefault(src, []).append(node)
        return out

    def with_nodes(self, nodes: list[SourceNode] | tuple[SourceNode, ...]) -> SourceGraph:
        return replace(self, nodes=tuple(nodes))


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``... whichever is not in ``taken``; the result is added to ``taken``."""
    base = base or "node"
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1, extra_at_end: bool = True) -> tuple[int, int]:
    """(begin, end) padding of TensorFlow/ONNX "SAME": output ``ceil(size / stride)``; odd totals pad the end
    (``SAME_UPPER``, TensorFlow) or the beginning (``SAME_LOWER``)."""
    total = max(0, (-(-size // stride) - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small, large = total // 2, total - total // 2
    return (small, large) if extra_at_end else (large, small)
