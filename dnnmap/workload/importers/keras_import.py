"""Keras front end (optional extra ``dnnmap[keras]``): walk a functional/sequential model's layer graph.

Shapes are recomputed layer by layer with ``compute_output_shape`` for the concrete input
shape (so ``input_shapes`` may change the resolution), then transposed from NHWC to the
IR's NCHW. ``input_shapes`` are given in the model's own layout (``1x224x224x3`` for
channels-last). An unspecified batch is taken as 1 and said so in the report; any
other unspecified dimension needs ``input_shapes``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dnnmap.errors import InputFileError
from dnnmap.fileio import open_regular
from dnnmap.workload.importers.channels_last import (
    InputShapes,
    Shape,
    nchw,
    pair,
    resolve_input_shapes,
    tensorflow_module,
)
from dnnmap.workload.importers.graph import SourceGraph, SourceNode, named_padding, unique_name

PASSTHROUGH = frozenset({"Flatten", "Reshape", "Dropout", "SpatialDropout2D", "GaussianNoise", "GaussianDropout",
                         "AlphaDropout", "ActivityRegularization", "Identity", "InputLayer"})
UNARY = {"Rescaling": "rescaling", "Normalization": "normalization", "Softmax": "softmax", "ELU": "elu",
         "PReLU": "prelu", "LeakyReLU": "leaky_relu"}
MERGE = {"Add": "add", "Subtract": "add", "Average": "add", "Maximum": "add", "Minimum": "add", "Multiply": "mul"}
POOLS = {"MaxPooling2D": "max", "AveragePooling2D": "avg"}
GLOBAL_POOLS = {"GlobalAveragePooling2D": "avg", "GlobalMaxPooling2D": "max"}
CONVS = ("Conv2D", "DepthwiseConv2D", "SeparableConv2D")
SUPPORTED_LAYERS: tuple[str, ...] = tuple(sorted(
    {*CONVS, "Dense", "BatchNormalization", "Concatenate", "Activation", "ReLU", "ZeroPadding2D", *PASSTHROUGH,
     *UNARY, *MERGE, *POOLS, *GLOBAL_POOLS} - {"InputLayer"}))


def read_keras_model(path: Path) -> Any:
    keras = tensorflow_module("keras", path)
    with open_regular(path, "Keras model"):  # a FIFO, device or socket refused before Keras opens it
        pass
    try:
        return keras.models.load_model(path, compile=False)
    except Exception as exc:  # keras raises ValueError/TypeError/OSError... for unreadable or custom-layer files
        first = " ".join(str(exc).split())[:400]
        raise InputFileError(f"{path}: cannot load the Keras model: {first}") from exc


def _input_name(tensor: Any) -> str:
    """The InputLayer's name (``input_layer``); the tensor's own name is an auto-numbered ``keras_tensor_N``."""
    return tensor._keras_history[0].name


class KerasFrontEnd:
    def __init__(self, model: Any, path: str, input_shapes: InputShapes | None) -> None:
        self.path = path
        self.model = getattr(model, "_functional", None) or model
        if not hasattr(self.model, "_nodes_by_depth"):
            raise InputFileError(f"{path}: the Keras model is not built (a Sequential model without an Input); "
                                 "build it with keras.Input(shape=...) first")
        self.notes: list[str] = []
        declared = {_input_name(t): tuple(t.shape) for t in self.model.inputs}
        self.inputs = resolve_input_shapes(path, declared, input_shapes or {}, self.notes)
        self.shapes: dict[int, Shape] = {}  # id(KerasTensor) -> concrete channels-last shape
        self.producer: dict[int, str] = {}  # id(KerasTensor) -> source node name
        self.taken: set[str] = set()

    def translate(self) -> SourceGraph:
        nodes: list[SourceNode] = []
        for t in self.model.inputs:
            self.shapes[id(t)] = self.inputs[_input_name(t)]
            self.producer[id(t)] = unique_name(_input_name(t), self.taken)
        for depth in sorted(self.model._nodes_by_depth, reverse=True):
            for node in self.model._nodes_by_depth[depth]:
                layer = node.operation
                if type(layer).__name__ == "InputLayer":
                    continue
                nodes.extend(self._translate(layer, node))
        outputs = tuple(self.producer[id(t)] for t in self.model.outputs)
        graph_inputs = tuple((self.producer[id(t)], nchw(self.inputs[_input_name(t)])) for t in self.model.inputs)
        return SourceGraph(self.model.name, self.path, graph_inputs, tuple(nodes), outputs, tuple(self.notes))

    def _translate(self, layer: Any, node: Any) -> list[SourceNode]:
        ins = list(node.input_tensors)
        in_shapes = [self.shapes[id(t)] for t in ins]
        kind = type(layer).__name__
        cfg = layer.get_config()
        name = unique_name(layer.name, self.taken)
        try:
            out_shape = tuple(layer.compute_output_shape(in_shapes[0] if len(in_shapes) == 1 else in_shapes))
        except Exception as exc:  # layers reject impossible input shapes with ValueError and friends
            raise InputFileError(f"{self.path}: layer {layer.name!r} ({kind}): inconsistent shapes: input(s) "
                                 f"{in_shapes}: {' '.join(str(exc).split())[:300]}") from exc
        if cfg.get("data_format", "channels_last") != "channels_last":
            ops = [("unsupported", {"reason": "channels_first"})]
        else:
            handler = HANDLERS.get(kind)
            ops = handler(self, cfg, in_shapes, out_shape) if handler else [("unsupported", {})]
        sources = [self.producer[id(t)] for t in ins]
        result = []
        for i, (op, attrs) in enumerate(ops):
            last = i == len(ops) - 1
            node_name = name if last else unique_name(f"{name}/{op}_{i}", self.taken)
            shape = out_shape if last else attrs.pop("output_shape")
            fused = attrs.pop("fused", ())
            label = f"{kind} ({attrs.pop('reason')})" if "reason" in attrs else kind
            result.append(SourceNode(node_name, op, label, tuple(sources), tuple(nchw(s) for s in in_shapes),
                                     nchw(shape), attrs))
            result.extend(self._activation(node_name, f, shape, label) for f in fused)
            sources, in_shapes = [result[-1].name], [shape]
        for t in node.output_tensors:
            self.shapes[id(t)] = out_shape
            self.producer[id(t)] = result[-1].name
        return result

    def _activation(self, producer: str, function: str, shape: Shape, label: str) -> SourceNode:
        return SourceNode(unique_name(f"{producer}/{function}", self.taken), "eltwise_unary", f"{label} activation",
                          (producer,), (nchw(shape),), nchw(shape), {"function": function})

    # ---- layer handlers: list of (semantic op, attrs); extra attrs "fused", "output_shape" -------------------
    def _conv(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        kind = cfg.get("_kind")
        kernel, stride = pair(cfg["kernel_size"]), pair(cfg["strides"])
        dilation = pair(cfg.get("dilation_rate", 1))
        if len(ins[0]) != 4:
            return [("unsupported", {"reason": f"rank-{len(ins[0])} input"})]
        _, h, w, c = ins[0]
        padding = named_padding(cfg["padding"], (h, w), kernel, stride, dilation)
        if padding is None:
            return [("unsupported", {"reason": f"padding {cfg['padding']!r}"})]
        window = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
        fused = _activation_names(cfg)
        if kind == "Conv2D":
            return [("conv", {**window, "groups": int(cfg.get("groups", 1)), "out_channels": int(cfg["filters"]),
                              "fused": fused})]
        depth_out = c * int(cfg.get("depth_multiplier", 1))
        depthwise = {**window, "groups": c, "out_channels": depth_out}
        if kind == "DepthwiseConv2D":
            return [("conv", {**depthwise, "fused": fused})]
        pointwise = {"kernel": (1, 1), "stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1,
                     "out_channels": int(cfg["filters"]), "fused": fused}
        return [("conv", {**depthwise, "output_shape": (*out[:3], depth_out)}), ("conv", pointwise)]

    def _dense(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        op = "fc" if len(ins[0]) == 2 else "matmul"
        return [(op, {"out_features": int(cfg["units"]), "fused": _activation_names(cfg)})]

    def _pool(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        kernel = pair(cfg["pool_size"])
        stride = pair(cfg["strides"] or kernel)
        padding = named_padding(cfg["padding"], ins[0][1:3], kernel, stride) or (0, 0, 0, 0)
        return [("pool", {"mode": POOLS[cfg["_kind"]], "kernel": kernel, "stride": stride, "padding": padding,
                          "ceil_mode": False})]

    def _global_pool(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        return [("global_pool", {"mode": GLOBAL_POOLS[cfg["_kind"]]})]

    def _merge(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        return [(MERGE[cfg["_kind"]], {})]

    def _concat(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        rank = len(out)
        if rank in (2, 4) and int(cfg["axis"]) % rank == rank - 1:
            return [("concat", {})]
        return [("unsupported", {"reason": f"axis {cfg['axis']} of a rank-{rank} tensor"})]

    def _batchnorm(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        axis = cfg["axis"][0] if isinstance(cfg["axis"], (list, tuple)) else cfg["axis"]
        if int(axis) % len(ins[0]) != len(ins[0]) - 1:
            return [("unsupported", {"reason": f"axis {axis}"})]
        return [("batchnorm", {})]

    def _activation_layer(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        names = _activation_names(cfg)
        return [("eltwise_unary", {"function": names[0]})] if names else [("passthrough", {})]

    def _relu(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        top, slope = cfg.get("max_value"), float(cfg.get("negative_slope") or 0.0)
        function = "leaky_relu" if slope else ("relu6" if top is not None and float(top) == 6.0 else
                                               "relu" if top is None else "clip")
        return [("eltwise_unary", {"function": function})]

    def _unary(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        return [("eltwise_unary", {"function": UNARY[cfg["_kind"]]})]

    def _zero_padding(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        (top, bottom), (left, right) = (pair(p) for p in cfg["padding"])
        return [("pad", {"padding": (top, left, bottom, right)})]

    def _passthrough(self, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        return [("passthrough", {})]


def _activation_names(cfg: dict) -> tuple[str, ...]:
    act = cfg.get("activation", "linear")
    name = act if isinstance(act, str) else (act.get("config") or {}).get("name", str(act))
    return () if name in ("linear", None) else (str(name),)


def _with_kind(kind: str, method: Callable) -> Callable:
    def handler(self: KerasFrontEnd, cfg: dict, ins: list[Shape], out: Shape) -> list[tuple[str, dict]]:
        return method(self, {**cfg, "_kind": kind}, ins, out)
    return handler


HANDLERS: dict[str, Callable] = {
    **{k: _with_kind(k, KerasFrontEnd._conv) for k in CONVS},
    "Dense": KerasFrontEnd._dense,
    **{k: _with_kind(k, KerasFrontEnd._pool) for k in POOLS},
    **{k: _with_kind(k, KerasFrontEnd._global_pool) for k in GLOBAL_POOLS},
    **{k: _with_kind(k, KerasFrontEnd._merge) for k in MERGE},
    **{k: _with_kind(k, KerasFrontEnd._unary) for k in UNARY},
    "Concatenate": KerasFrontEnd._concat, "BatchNormalization": KerasFrontEnd._batchnorm,
    "Activation": KerasFrontEnd._activation_layer, "ReLU": KerasFrontEnd._relu,
    "ZeroPadding2D": KerasFrontEnd._zero_padding,
    **{k: KerasFrontEnd._passthrough for k in PASSTHROUGH},
}


def keras_graph(model: Any, path: str, input_shapes: InputShapes | None = None) -> SourceGraph:
    """Translate an in-memory ``keras.Model``; ``path`` names it in messages."""
    return KerasFrontEnd(model, path, input_shapes).translate()


def load_keras_graph(path: Path, input_shapes: InputShapes | None = None) -> SourceGraph:
    return keras_graph(read_keras_model(path), str(path), input_shapes)
