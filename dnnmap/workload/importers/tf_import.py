"""TensorFlow SavedModel front end (optional extra ``dnnmap[keras]``): translate the frozen serving graph.

The graph (see :mod:`tf_savedmodel` and :mod:`tf_graph`) is walked in topological order;
each TensorFlow op becomes a :class:`SourceNode` with NCHW shapes. Constants and every op
computed from constants only (variable reads, the batch-norm's ``Rsqrt`` of the variance,
``Shape`` of an activation) are weights and dropped, as in the ONNX front end. TensorFlow
splits what other formats keep together, and the pieces are put back:

* ``BiasAdd`` becomes a ``bias`` node that the clean-up folds into its convolution;
* Keras 3 writes an inference batch-norm as ``x * scale + shift`` with per-channel
  constants (``tf.nn.batch_normalization``): such a ``Mul`` whose only consumer is an
  ``Add``/``AddV2`` of another per-channel constant becomes one ``batchnorm`` node (named
  after the ``Mul``), folded like ``FusedBatchNormV3`` and the other formats' batch-norms;
* ``Mean``/``Max`` over the two spatial axes is a global pooling.

Node names lose the ``StatefulPartitionedCall/`` prefix the inlined serving function adds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dnnmap.workload.importers.channels_last import InputShapes, Shape, nchw, tensorflow_module
from dnnmap.workload.importers.graph import (
    NotConstantError,
    Padding,
    SourceGraph,
    SourceNode,
    named_padding,
    translate_node,
    unique_name,
)
from dnnmap.workload.importers.tf_graph import ConcreteGraph, concrete_graph
from dnnmap.workload.importers.tf_savedmodel import read_savedmodel

STATIC_SOURCES = frozenset({"Const", "Shape", "ShapeN", "Size", "Rank"})
PASSTHROUGH = frozenset({"Identity", "Reshape", "Squeeze", "ExpandDims", "StopGradient", "Snapshot", "Cast",
                         "EnsureShape", "CheckNumerics", "PreventGradient"})
ACTIVATIONS = {"Relu": "relu", "Relu6": "relu6", "LeakyRelu": "leaky_relu", "Elu": "elu", "Selu": "selu",
               "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus", "Softsign": "softsign",
               "Softmax": "softmax", "LogSoftmax": "log_softmax"}
BINARY = {  # op -> (op of two feature maps, function name when one operand is a constant)
    "AddV2": ("add", "add_const"), "Add": ("add", "add_const"), "Sub": ("add", "sub_const"),
    "Mul": ("mul", "mul_const"), "RealDiv": ("mul", "div_const"), "Maximum": ("add", "max_const"),
    "Minimum": ("add", "min_const")}
SHIFTS = ("Add", "AddV2")
POOLS = {"MaxPool": "max", "AvgPool": "avg"}
REDUCTIONS = {"Mean": "avg", "Max": "max"}
BATCHNORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
CALL_PREFIX = re.compile(r"^((Stateful)?PartitionedCall/)+")


class TfFrontEnd:
    """Translate one frozen TensorFlow graph with concrete shapes into a :class:`SourceGraph`."""

    def __init__(self, tf: Any, path: str, concrete: ConcreteGraph) -> None:
        self.tf = tf
        self.path = path
        self.concrete = concrete
        self.static = self._static_ops()
        self.merged: set[str] = set()  # shift ops of scale-and-shift batch-norms, merged into their Mul
        self.producer: dict[str, str] = {}  # tensor name -> source node name
        self.taken: set[str] = set()

    def _static_ops(self) -> set[str]:
        static = set(self.concrete.weights)
        for op in self.concrete.graph.get_operations():
            if op.type in STATIC_SOURCES or (op.type != "Placeholder" and all(t.op.name in static for t in op.inputs)):
                static.add(op.name)
        return static

    # ---- helpers -----------------------------------------------------------------
    def shape(self, tensor: Any) -> Shape:
        """Concrete channels-last shape of ``tensor``; ``()`` when TensorFlow could not infer it."""
        return tuple(tensor.shape.as_list()) if tensor.shape.is_fully_defined() else ()

    def value(self, tensor: Any) -> Any:
        """The value of a tensor computed from small constants only (paddings, axes), as a NumPy array."""
        value = self.tf.get_static_value(tensor)
        if value is None:
            raise NotConstantError(f"input {tensor.name!r} is computed, not a constant")
        return value

    def activations(self, op: Any) -> list[Any]:
        return [t for t in op.inputs if t.op.name not in self.static]

    # ---- translation -------------------------------------------------------------
    def translate(self) -> SourceGraph:
        inputs = dict(self.concrete.inputs)
        nodes = []
        for op in self.concrete.graph.get_operations():
            if op.name in inputs:
                self.producer[op.outputs[0].name] = unique_name(op.name, self.taken)
                continue
            if op.name in self.static:
                continue
            activations = self.activations(op)
            if op.name in self.merged:
                self.producer[op.outputs[0].name] = self.producer[activations[0].name]
                continue
            name = unique_name(CALL_PREFIX.sub("", op.name), self.taken)
            kind, source_op, fields = translate_node(f"{self.path}: node {name!r} ({op.type})", op.type,
                                                     lambda: self._translate(op, activations))
            nodes.append(SourceNode(
                name=name, op=kind, source_op=source_op,
                inputs=tuple(self.producer[t.name] for t in activations),
                input_shapes=tuple(nchw(self.shape(t)) for t in activations),
                output_shape=nchw(self.shape(op.outputs[0])) if op.outputs else (), attrs=fields))
            for t in op.outputs:
                self.producer[t.name] = name
        outputs = tuple(dict.fromkeys(self.producer[t] for t in self.concrete.outputs if t in self.producer))
        graph_inputs = tuple((self.producer[f"{name}:0"], nchw(shape)) for name, shape in self.concrete.inputs)
        return SourceGraph(Path(self.path).name, self.path, graph_inputs, tuple(nodes), outputs,
                           self.concrete.notes)

    def _translate(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        if op.type in PASSTHROUGH:
            return "passthrough", {}
        if op.type in ACTIVATIONS:
            return "eltwise_unary", {"function": ACTIVATIONS[op.type]}
        if "data_format" in op.node_def.attr and op.get_attr("data_format") != b"NHWC":
            return "unsupported", {"reason": f"data_format {op.get_attr('data_format').decode()}"}
        handler = HANDLERS.get(op.type)
        return handler(self, op, activations) if handler else ("unsupported", {})

    def _window(self, op: Any, spatial: Shape, kernel: tuple[int, int], stride: tuple[int, int],
                dilation: tuple[int, int] = (1, 1)) -> Padding | None:
        """(top, left, bottom, right) padding of a SAME / VALID / EXPLICIT window op; ``None`` if another mode."""
        mode = op.get_attr("padding").decode()
        if mode == "EXPLICIT":
            pads = op.get_attr("explicit_paddings")  # (before, after) per NHWC axis
            return (pads[2], pads[4], pads[3], pads[5])
        return named_padding(mode, (spatial[0], spatial[1]), kernel, stride, dilation)

    def _conv(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        x, w = op.inputs[0], op.inputs[1]
        xs, ws = self.shape(x), self.shape(w)
        if w.op.name not in self.static:
            return "unsupported", {"reason": "non-constant filter"}
        if len(xs) != 4 or len(ws) != 4:
            return "unsupported", {"reason": "unknown shape"}
        strides, dilations = op.get_attr("strides"), op.get_attr("dilations")
        if strides[0] != 1 or strides[3] != 1 or dilations[0] != 1 or dilations[3] != 1:
            return "unsupported", {"reason": "stride or dilation along batch or channels"}
        kernel, stride, dilation = (ws[0], ws[1]), (strides[1], strides[2]), (dilations[1], dilations[2])
        padding = self._window(op, xs[1:3], kernel, stride, dilation)
        if op.type == "DepthwiseConv2dNative":  # filter (R, S, C, multiplier)
            groups, out_channels = xs[3], ws[2] * ws[3]
        else:  # Conv2D filter (R, S, C / groups, K); TensorFlow's shape inference checked that C / groups divides C
            groups, out_channels = xs[3] // ws[2], ws[3]
        return "conv", {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation,
                        "groups": groups, "out_channels": out_channels}

    def _matmul(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        a, b = op.inputs[0], op.inputs[1]
        transpose_a, transpose_b = (op.get_attr(k) for k in (("transpose_a", "transpose_b") if op.type == "MatMul"
                                                             else ("adj_x", "adj_y")))
        bs = self.shape(b)
        if b.op.name not in self.static or a.op.name in self.static or transpose_a or len(bs) != 2:
            return "unsupported", {"reason": "transposed or constant input, or a product of two activations"}
        return ("fc" if len(self.shape(a)) == 2 else "matmul"), {"out_features": bs[0] if transpose_b else bs[1]}

    def _bias(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        return "bias", {}

    def _batchnorm(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        if op.get_attr("is_training"):
            return "unsupported", {"reason": "training mode"}
        return "batchnorm", {}

    def _binary(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        two, one = BINARY[op.type]
        if len(activations) >= 2:
            return two, {}
        shift = self._batchnorm_shift(op, activations)
        if shift is not None:
            self.merged.add(shift.name)
            return "batchnorm", {"source_op": f"{op.type}+{shift.type} (per-channel scale and shift)"}
        return "eltwise_unary", {"function": one}

    def _batchnorm_shift(self, op: Any, activations: list[Any]) -> Any:
        """The add of ``x * scale + shift`` (both per-channel constants) when ``op`` is its Mul, else ``None``."""
        if op.type != "Mul" or not self._per_channel(op, activations[0]):
            return None
        consumers = op.outputs[0].consumers()
        shift = consumers[0] if len(consumers) == 1 else None
        if shift is None or shift.type not in SHIFTS or len(self.activations(shift)) != 1:
            return None
        return shift if self._per_channel(shift, op.outputs[0]) else None

    def _per_channel(self, op: Any, x: Any) -> bool:
        """Whether the constant operand of ``op`` holds one value per channel (last axis) of ``x``."""
        xs = self.shape(x)
        constant = next(self.shape(t) for t in op.inputs if t.op.name in self.static)
        return (bool(xs) and bool(constant) and len(constant) <= len(xs)
                and math.prod(constant) == constant[-1] == xs[-1])

    def _pool(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        ksize, strides = op.get_attr("ksize"), op.get_attr("strides")
        if len(ksize) != 4 or ksize[0] != 1 or ksize[3] != 1 or strides[0] != 1 or strides[3] != 1:
            return "unsupported", {"reason": "window along batch or channels"}
        kernel, stride = (ksize[1], ksize[2]), (strides[1], strides[2])
        padding = self._window(op, self.shape(op.inputs[0])[1:3], kernel, stride)
        return "pool", {"mode": POOLS[op.type], "kernel": kernel, "stride": stride, "padding": padding,
                        "ceil_mode": False}

    def _reduce(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        rank = len(self.shape(op.inputs[0]))
        axes = sorted({int(a) % rank for a in self.value(op.inputs[1]).reshape(-1)}) if rank else []
        if rank == 4 and axes == [1, 2]:
            return "global_pool", {"mode": REDUCTIONS[op.type]}
        return "unsupported", {"reason": f"over axes {axes} of a rank-{rank} tensor; only H and W"}

    def _concat(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        rank = len(self.shape(op.outputs[0]))
        axis = int(self.value(op.inputs[-1]))
        if rank in (2, 4) and axis % rank == rank - 1 and len(activations) == len(op.inputs) - 1:
            return "concat", {}
        return "unsupported", {"reason": f"axis {axis} of a rank-{rank} tensor"}

    def _pad(self, op: Any, activations: list[Any]) -> tuple[str, dict[str, Any]]:
        pads = self.value(op.inputs[1]).tolist()
        if len(pads) != 4 or any(pads[0]) or any(pads[3]) or min(min(p) for p in pads) < 0:
            return "unsupported", {"reason": "only non-negative H/W padding of 4-D maps"}
        return "pad", {"padding": (pads[1][0], pads[2][0], pads[1][1], pads[2][1])}


Handler = Callable[[TfFrontEnd, Any, list[Any]], tuple[str, dict[str, Any]]]
HANDLERS: dict[str, Handler] = {
    "Conv2D": TfFrontEnd._conv, "DepthwiseConv2dNative": TfFrontEnd._conv,
    "MatMul": TfFrontEnd._matmul, "BatchMatMulV2": TfFrontEnd._matmul, "BatchMatMulV3": TfFrontEnd._matmul,
    "BiasAdd": TfFrontEnd._bias, **{op: TfFrontEnd._batchnorm for op in BATCHNORMS},
    **{op: TfFrontEnd._binary for op in BINARY}, **{op: TfFrontEnd._pool for op in POOLS},
    **{op: TfFrontEnd._reduce for op in REDUCTIONS}, "ConcatV2": TfFrontEnd._concat,
    "Pad": TfFrontEnd._pad, "PadV2": TfFrontEnd._pad,
}
SUPPORTED_TF_OPS: tuple[str, ...] = tuple(sorted(
    {*HANDLERS, *ACTIVATIONS, *PASSTHROUGH, "Placeholder", "Const", "Shape"}))


def load_savedmodel_graph(path: Path, input_shapes: InputShapes | None = None) -> SourceGraph:
    """Load, freeze and translate the SavedModel directory ``path``."""
    tf = tensorflow_module("tensorflow", path)
    return TfFrontEnd(tf, str(path), concrete_graph(tf, read_savedmodel(tf, path), input_shapes)).translate()
