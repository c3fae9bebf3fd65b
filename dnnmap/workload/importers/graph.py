"""Framework-neutral source graph: what the ONNX, Keras and SavedModel front ends produce and the clean-up rewrites.

Every node has one output. ``inputs`` names the producing nodes or graph inputs of the
activation (non-constant) operands; weights, biases and other constants are already
reduced to attributes. Shapes are NCHW (the Keras and SavedModel front ends transpose NHWC).

Semantic ops (``SourceNode.op``) and their attributes:

=============  =============================================================================
conv           kernel (r, s), stride (h, w), padding (top, left, bottom, right), dilation, groups, out_channels;
               optional stuffed_hw (H, W): a transposed convolution lowered to this direct convolution over its
               input zero-stuffed to H x W (see :func:`zero_stuffed_window`); no pad folds into it
fc             out_features (input flattened to (N, features))
matmul         out_features (input (..., M, K) times a (K, out_features) operand)
pool           mode (max/avg), kernel, stride, padding, ceil_mode
global_pool    mode
add, mul       element-wise over two or more feature maps
concat         along channels
eltwise_unary  function (relu, clip, sigmoid, softmax, bias_add, scale, batchnorm, mask, ...): fusable;
               scalar=True for a product by (or quotient by) one constant, which may also move onto a linear consumer
vector         kind (softmax, layernorm, rmsnorm, gelu, silu, swiglu): a transformer vector layer over the last axis
einsum         a product of two activations: attention (scores / values with batch, heads, q_len, kv_len,
               head_dim, kv_heads: ``ops.attention``) or expr and sizes (a broadcasting batched matmul)
bias           constant per-channel add (TensorFlow BiasAdd): folded into the producing conv/fc/matmul, or
               becomes ``eltwise_unary`` bias_add
batchnorm      folded into the producing conv/fc/matmul, or becomes ``eltwise_unary`` batchnorm
pad            padding (top, left, bottom, right): folded into the consuming conv/pool
passthrough    reshape/flatten/transpose/split/slice/expand/identity/dropout/squeeze/quantize: layouts, removed
unsupported    reason: listed in one error, or skipped with ``skip_unsupported``
=============  =============================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dnnmap.errors import InputFileError

SEMANTIC_OPS = frozenset({"conv", "fc", "matmul", "pool", "global_pool", "add", "mul", "concat", "eltwise_unary",
                          "bias", "batchnorm", "pad", "passthrough", "unsupported", "vector", "einsum"})


InputShapes = dict[str, tuple[int, ...]]  # --input-shape overrides: input name -> shape in the model's layout


class NotConstantError(Exception):
    """An operand that must be a literal constant (pads, axes, clip bounds) is computed by the graph; the front
    ends list the node as unsupported with this message."""


def check_input_names(path: str, overrides: InputShapes, names: list[str]) -> None:
    """Every ``--input-shape`` name must be one of the model's inputs ``names``."""
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise InputFileError(f"{path}: --input-shape names unknown input(s) {', '.join(unknown)}; "
                             f"the model's inputs are: {', '.join(names) or '(none)'}")


def translate_node(where: str, source_op: str,
                   translate: Callable[[], tuple[str, dict[str, Any]]]) -> tuple[str, str, dict[str, Any]]:
    """Run a front end's handler for one node: (semantic op, source-op label, attributes).

    A :class:`NotConstantError` makes the node unsupported with its message; a handler
    tripping over malformed attributes is an :class:`InputFileError` naming ``where``; an
    attribute ``source_op`` replaces the label, and an unsupported node's reason is appended.
    """
    try:
        op, attrs = translate()
    except NotConstantError as exc:
        op, attrs = "unsupported", {"reason": str(exc)}
    except (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError) as exc:
        raise InputFileError(f"{where}: malformed attributes or inputs: {exc}") from exc
    source_op = attrs.pop("source_op", source_op)
    if op == "unsupported" and attrs.get("reason"):
        source_op = f"{source_op} ({attrs['reason']})"
    return op, source_op, attrs


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


Pair = tuple[int, int]
Padding = tuple[int, int, int, int]  # (top, left, bottom, right)


def same_padding(size: int, kernel: int, stride: int, dilation: int = 1, extra_at_end: bool = True) -> Pair:
    """(begin, end) padding of TensorFlow/ONNX "SAME": output ``ceil(size / stride)``; odd totals pad the end
    (``SAME_UPPER``, TensorFlow) or the beginning (``SAME_LOWER``)."""
    total = max(0, (-(-size // stride) - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small, large = total // 2, total - total // 2
    return (small, large) if extra_at_end else (large, small)


def same_padding_2d(spatial: Pair, kernel: Pair, stride: Pair, dilation: Pair = (1, 1),
                    extra_at_end: bool = True) -> Padding:
    """"SAME" padding of a 2-D window as (top, left, bottom, right); see :func:`same_padding`."""
    (top, bottom), (left, right) = (same_padding(size, k, s, d, extra_at_end)
                                    for size, k, s, d in zip(spatial, kernel, stride, dilation))
    return (top, left, bottom, right)


def named_padding(mode: str, spatial: Pair, kernel: Pair, stride: Pair, dilation: Pair = (1, 1)) -> Padding | None:
    """Padding of a TensorFlow/Keras ``same``/``valid`` window (either case); ``None`` for any other mode."""
    if mode.lower() == "same":
        return same_padding_2d(spatial, kernel, stride, dilation)
    return (0, 0, 0, 0) if mode.lower() == "valid" else None


def zero_stuffed_window(in_hw: Pair, kernel: Pair, stride: Pair, pads: Padding, output_padding: Pair,
                        dilation: Pair = (1, 1)) -> tuple[Pair, Padding] | None:
    """A transposed convolution as a direct one: (stuffed input size, padding), or ``None`` if pads are too large.

    The input gets ``stride - 1`` zeros between neighbouring pixels (``(H - 1) * stride + 1`` rows), is padded
    by ``dilation * (kernel - 1) - pad`` on each side (plus ``output_padding`` at the bottom/right), and is
    convolved with stride 1 and the spatially flipped kernel (input and output channels swapped): the output has
    the transposed convolution's ``(H - 1) * stride + dilation * (kernel - 1) + 1 - pads + output_padding`` rows.
    """
    top, left, bottom, right = pads
    reach = tuple(d * (k - 1) for k, d in zip(kernel, dilation))
    padding = (reach[0] - top, reach[1] - left, reach[0] - bottom + output_padding[0],
               reach[1] - right + output_padding[1])
    if min(padding) < 0:
        return None
    stuffed = ((in_hw[0] - 1) * stride[0] + 1, (in_hw[1] - 1) * stride[1] + 1)
    return stuffed, padding
