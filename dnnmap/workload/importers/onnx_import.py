"""ONNX front end: parse, check, infer shapes (the ``onnx`` package) and translate nodes to a SourceGraph.

Constant sub-graphs (initializers, ``Constant``, ``Shape`` and every node whose inputs
are all constant, e.g. a ``Transpose`` or ``DequantizeLinear`` of weights) only describe
weights, so they are dropped and their shapes used; only their small results (slice bounds,
expand targets: :mod:`onnx_constants`) are evaluated, for shape inference. Weight
values are read only for densities and small constants (:mod:`onnx_weights`); weights in
external data files that cannot be read leave them unknown, with one :class:`DnnmapNote`.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from dnnmap.errors import DnnmapNote, InputFileError
from dnnmap.fileio import read_bytes
from dnnmap.workload.importers.graph import (
    InputShapes,
    NotConstantError,
    SourceGraph,
    SourceNode,
    check_input_names,
    same_padding_2d,
    translate_node,
    unique_name,
    zero_stuffed_window,
)
from dnnmap.workload.importers.onnx_constants import small_static_values
from dnnmap.workload.importers.onnx_masks import COMPARISONS, runtime_masks
from dnnmap.workload.importers.onnx_patterns import Pattern, find_patterns
from dnnmap.workload.importers.onnx_weights import ModelWeights
from dnnmap.workload.sparsity import measured_density

STATIC_SOURCES = frozenset({"Constant", "ConstantOfShape", "Shape", "Size"})
ACTIVATIONS = {
    "Relu": "relu", "LeakyRelu": "leaky_relu", "PRelu": "prelu", "Sigmoid": "sigmoid", "Tanh": "tanh",
    "HardSigmoid": "hard_sigmoid", "HardSwish": "hard_swish", "LogSoftmax": "log_softmax",
    "Elu": "elu", "Selu": "selu", "Softplus": "softplus", "Clip": "clip", "LRN": "lrn", "Neg": "neg",
}
# layouts (docs/import.md "Transformer blocks"): a consumer reads its producer's words in another order or view
PASSTHROUGH = frozenset({"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Dropout", "QuantizeLinear",
                         "DequantizeLinear", "Cast", "Transpose", "Split", "Expand"})
REPEATS = frozenset({"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Identity", "Cast", "Expand"})
VECTOR_OPS = {"LayerNormalization": "layernorm", "RMSNormalization": "rmsnorm", "Gelu": "gelu"}
SMALL_CONSTANT = 64  # initializers up to this many elements keep their values for shape inference
CONSTANT_ROUNDS = 3  # rounds of evaluating small static tensors and inferring shapes again
PROTOBUF_LIMIT = 2**31 - 1  # the largest serialized protobuf message (bigger models keep weights outside)
BINARY = {"Add": "add", "Sum": "add", "Sub": "add", "Mul": "mul", "Div": "mul"}
REDUCTIONS = {"ReduceMean": "avg", "ReduceMax": "max"}  # over H and W of an (N, C, H, W) map: a global pool


def read_model(path: Path) -> onnx.ModelProto:
    """Parse ``path`` as an ONNX protobuf; any failure is an :class:`InputFileError` naming the file."""
    data = read_bytes(path, "ONNX model", limit=PROTOBUF_LIMIT)  # special files refused before opening
    if not data:
        raise InputFileError(f"{path}: file is empty, expected an ONNX model")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError, or RuntimeWarning-like errors from its C++ parser
        raise InputFileError(f"{path}: not an ONNX model, or the file is truncated or corrupted "
                             f"(protobuf parse failed: {exc})") from exc
    if not model.HasField("graph") or not model.graph.node:
        raise InputFileError(f"{path}: not an ONNX model, or the file is truncated: it has no graph nodes")
    if not model.opset_import:
        raise InputFileError(f"{path}: ONNX model declares no opset_import (truncated or corrupted file?)")
    return model


class OnnxFrontEnd:
    """Translate one ONNX model (shapes already inferred) into a :class:`SourceGraph`."""

    def __init__(self, path: Path, model: onnx.ModelProto, input_shapes: InputShapes | None) -> None:
        self.path = path
        self.graph = model.graph
        self.initializers = {t.name: t for t in self.graph.initializer}
        self.weights = ModelWeights(path, self.initializers)
        self.constants: dict[str, onnx.NodeProto] = {}
        self.graph_inputs = self._input_shapes(input_shapes or {})
        self._check_references()
        for vi in self.graph.input:
            if vi.name in self.graph_inputs:
                _set_shape(vi, self.graph_inputs[vi.name])
        self.static = self._static_tensors()
        self.values: dict[str, np.ndarray] = {}  # small static tensors the graph computes (onnx_constants)
        self.shapes = self._infer_shapes(model)
        self.producer: dict[str, str] = {n: n for n in self.graph_inputs}
        self.taken: set[str] = set(self.graph_inputs)
        self.node_of = {o: n for n in self.graph.node for o in n.output if o}
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
        self.patterns = find_patterns(self.graph.node, self.static, {o.name for o in self.graph.output})
        self.masks = runtime_masks(self.graph.node, self.static, set(self.graph_inputs))
        # results that become network inputs (embedding lookups, caches with rows appended): name -> shape
        self.derived_inputs: dict[str, tuple[int, ...]] = {}
        self.derived_notes: list[str] = []

    # ---- checks ------------------------------------------------------------------
    def _input_shapes(self, overrides: InputShapes) -> dict[str, tuple[int, ...]]:
        inputs = [vi for vi in self.graph.input if vi.name not in self.initializers]
        check_input_names(str(self.path), overrides, [vi.name for vi in inputs])
        shapes = {}
        for vi in inputs:
            if not vi.type.HasField("tensor_type"):
                raise InputFileError(f"{self.path}: graph input {vi.name!r} is not a tensor; only tensor inputs "
                                     "are supported")
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else d.dim_param or "?"
                    for d in vi.type.tensor_type.shape.dim]
            if vi.name in overrides:
                given = tuple(int(x) for x in overrides[vi.name])
                if vi.type.tensor_type.HasField("shape") and len(given) != len(dims):
                    raise InputFileError(f"{self.path}: --input-shape {vi.name}={'x'.join(map(str, given))} has "
                                         f"{len(given)} dimensions, but the input has {len(dims)}: {_fmt(dims)}")
                clash = [(d, g) for d, g in zip(dims, given) if isinstance(d, int) and d != g]
                if clash or any(g < 1 for g in given):
                    raise InputFileError(f"{self.path}: --input-shape {vi.name}={'x'.join(map(str, given))} "
                                         f"conflicts with the model's fixed shape {_fmt(dims)}")
                shapes[vi.name] = given
            elif not vi.type.tensor_type.HasField("shape") or any(not isinstance(d, int) for d in dims):
                raise InputFileError(
                    f"{self.path}: input {vi.name!r} has dynamic or unknown dimensions {_fmt(dims)}; give a fixed "
                    f"shape with --input-shape {vi.name}=1x3x224x224 (input_shapes={{'{vi.name}': (1, 3, 224, 224)}})")
            else:
                shapes[vi.name] = tuple(dims)
        if not shapes:
            raise InputFileError(f"{self.path}: the ONNX graph has no inputs besides its initializers")
        return shapes

    def _check_references(self) -> None:
        defined = set(self.graph_inputs) | set(self.initializers)
        for node in self.graph.node:
            for name in node.input:
                if name and name not in defined:
                    raise InputFileError(
                        f"{self.path}: node {node.name or node.output[0]!r} ({node.op_type}) reads {name!r}, which is "
                        "neither a graph input, an initializer nor the output of an earlier node (missing "
                        "initializer, truncated file or unsorted graph)")
            if node.op_type == "Constant" and node.output:
                self.constants[node.output[0]] = node
            defined.update(o for o in node.output if o)
        missing = [o.name for o in self.graph.output if o.name not in defined]
        if missing:
            raise InputFileError(f"{self.path}: graph output(s) {', '.join(missing)} are produced by no node")

    def _infer_shapes(self, model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
        """Shapes of every tensor; small static tensors the graph computes (slice bounds, expand targets) are
        evaluated and given to shape inference as constants, a few rounds while new ones become known."""
        light = _without_weights(model, self.weights)
        known = {name: value for name in (*self.initializers, *self.constants)
                 if (value := self._small_constant(name)) is not None}
        shapes = self._inferred(light)
        for _ in range(CONSTANT_ROUNDS):
            new = small_static_values(model, {**known, **self.values}, shapes, self.static, SMALL_CONSTANT)
            if not new:
                break
            self.values.update(new)
            shapes = self._inferred(_with_values(light, self.values))
        return shapes

    def _small_constant(self, name: str) -> np.ndarray | None:
        """The value of a small initializer or ``Constant`` output (at most SMALL_CONSTANT elements)."""
        size = math.prod(self.initializers[name].dims) if name in self.initializers else None
        if size is not None and size > SMALL_CONSTANT:
            return None
        try:
            value = self.constant(name)
        except (NotConstantError, ValueError, KeyError, TypeError):  # unreadable or malformed: the nodes reading
            return None  # it report a malformed one (translate_node), as without this evaluation
        return value if value is not None and value.size <= SMALL_CONSTANT else None

    def _inferred(self, light: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
        try:
            inferred = shape_inference.infer_shapes(light, check_type=True, strict_mode=True, data_prop=True)
        except Exception as exc:  # onnx raises InferenceError / ValidationError subclasses of Exception
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputFileError(f"{self.path}: inconsistent model: ONNX shape inference failed: {first}") from exc
        shapes: dict[str, tuple[int, ...]] = {}
        for vi in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                dims = vi.type.tensor_type.shape.dim
                if all(d.HasField("dim_value") for d in dims):
                    shapes[vi.name] = tuple(int(d.dim_value) for d in dims)
        for t in self.graph.initializer:
            shapes[t.name] = tuple(int(d) for d in t.dims)
        for name, value in self.values.items():
            shapes[name] = tuple(value.shape)
        return shapes

    def _static_tensors(self) -> set[str]:
        static = set(self.initializers)
        for node in self.graph.node:
            if node.op_type in STATIC_SOURCES or all(not i or i in static for i in node.input):
                static.update(node.output)
        return static

    # ---- helpers -----------------------------------------------------------------
    def shape(self, tensor: str) -> tuple[int, ...]:
        return self.shapes.get(tensor, ())

    def constant(self, tensor: str) -> np.ndarray | None:
        """Value of an initializer or ``Constant`` output, ``None`` for an absent optional input."""
        if not tensor:
            return None
        if tensor in self.initializers:
            value = self.weights.value(tensor)
            if value is None:
                raise NotConstantError(f"input {tensor!r} is unknown: {self.weights.unreadable[tensor]}")
            return value
        if tensor in self.values:
            return self.values[tensor]
        if tensor in self.constants:
            attr = self.constants[tensor].attribute[0]
            return np.asarray(numpy_helper.to_array(attr.t) if attr.name == "value" else
                              helper.get_attribute_value(attr))
        raise NotConstantError(f"input {tensor!r} is computed, not a constant")

    # ---- translation -------------------------------------------------------------
    def translate(self) -> SourceGraph:
        nodes = []
        for node in self.graph.node:
            if all(o in self.static for o in node.output if o):
                continue
            pattern = self.patterns.get(node.output[0])
            if pattern is not None and pattern.output != node.output[0]:
                continue  # an inner node of a decomposed function, translated with its last node
            if node.output[0] in self.masks.builders:
                continue  # builds a mask at runtime from the inputs: fused where it is applied (onnx_masks)
            name = unique_name(node.name or node.output[0], self.taken)
            if self._is_embedding(node):
                self._embed(node, name)
                continue
            if self._appends_rows(node):
                self._append(node, name)
                continue
            if pattern is not None and pattern.rotated is not None:
                nodes.append(self._partial_rotary(node, name, pattern))
                continue
            activations = [pattern.root] if pattern else [
                i for i in node.input if i and i not in self.static and i not in self.masks.tensors]
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            op_type = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"
            if pattern:
                op, source_op, fields = "vector", f"decomposed {pattern.kind} ({len(pattern.members)} nodes)", {
                    "kind": pattern.kind}
            else:
                op, source_op, fields = translate_node(f"{self.path}: node {name!r} ({node.op_type})", op_type,
                                                       lambda: self._translate(node, attrs, activations))
            nodes.append(SourceNode(
                name=name, op=op, source_op=source_op,
                inputs=tuple(self.producer[i] for i in activations),
                input_shapes=tuple(self.shape(i) for i in activations),
                output_shape=self.shape(node.output[0]) if node.output else (),
                attrs=fields))
            for out in node.output:
                self.producer[out] = name
        outputs = tuple(dict.fromkeys(self.producer[o.name] for o in self.graph.output if o.name in self.producer))
        read = {src for n in nodes for src in n.inputs}
        inputs = [(n, s) for n, s in self.graph_inputs.items() if n in read or n in outputs]
        return SourceGraph(self.path.stem, str(self.path), (*inputs, *self.derived_inputs.items()), tuple(nodes),
                           outputs, notes=self._notes())

    # ---- transformer blocks (docs/import.md "Transformer blocks") -------------------------
    def _notes(self) -> tuple[str, ...]:
        notes = list(self.derived_notes)
        if self.masks.note():
            notes.append(self.masks.note())
        kinds = Counter(p.kind for p in {id(p): p for p in self.patterns.values()}.values())
        if kinds:
            notes.append("recognised decomposed functions as one layer each: "
                         + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())))
        return tuple(notes)

    def _is_embedding(self, node: onnx.NodeProto) -> bool:
        """A Gather of rows of a constant 2-D table by computed indices (token ids)."""
        return (node.op_type == "Gather" and node.input[0] in self.static and node.input[1] not in self.static
                and len(self.shape(node.input[0])) == 2 and int(_attr(node, "axis", 0)) == 0)

    def _embed(self, node: onnx.NodeProto, name: str) -> None:
        """The lookup's result becomes a network input (hidden states ``[N, 1, tokens, features]`` as the zoo's)."""
        shape = self.shape(node.output[0])
        self.derived_inputs[name] = (shape[0], 1, *shape[1:]) if len(shape) == 3 else shape
        self.derived_notes.append(f"embedding lookup {name!r}: a table lookup without MACs; its result "
                                  f"{list(self.derived_inputs[name])} is the network's input")
        self.producer[node.output[0]] = name

    def _is_held(self, tensor: str) -> bool:
        """``tensor`` is a constant or a graph input (through layouts): rows held in memory, not computed here."""
        return tensor in self.static or (self._through_layouts(tensor)[0] is None and tensor not in self.initializers)

    def _appends_rows(self, node: onnx.NodeProto) -> bool:
        """A ``Concat`` along a row axis (tokens: not the last axis, nor axis 1 of a 4-D tensor unless it is K or
        V of attention, a ``[batch, tokens, heads, head_dim]`` cache, rather than a map's channels) of held rows
        (a KV cache input, ViT's constant class token) and rows computed here (this step's K/V, the patches)."""
        shape = self.shape(node.output[0])
        if node.op_type != "Concat" or len(shape) < 3:
            return False
        axis = int(_attr(node, "axis", 0)) % len(shape)
        parts = [i for i in node.input if i]
        held = [i for i in parts if self._is_held(i)]
        return (axis != len(shape) - 1 and 0 < len(held) < len(parts)
                and ((len(shape), axis) != (4, 1) or self._is_attention_operand(node.output[0])))

    def _is_attention_operand(self, tensor: str) -> bool:
        """``tensor`` is K or V of attention in a ``[batch, tokens, heads, head_dim]`` layout: it reaches the
        second operand of a product of two activations through layouts that include a Transpose."""
        stack = [(tensor, False)]
        while stack:
            name, transposed = stack.pop()
            for reader in self.readers.get(name, []):
                if (reader.op_type == "MatMul" and transposed and reader.input[1] == name
                        and reader.input[0] not in self.static):
                    return True
                if reader.op_type in REPEATS:
                    stack.append((reader.output[0], transposed or reader.op_type == "Transpose"))
        return False

    def _append(self, node: onnx.NodeProto, name: str) -> None:
        """The concatenation becomes a network input holding all rows, as the zoo's decode step reads its cache:
        its readers read that input; the layers computing the appended rows write them to it (no consumer)."""
        shape = self.shape(node.output[0])
        self.derived_inputs[name] = shape
        parts = []
        for i in (i for i in node.input if i):
            if self._is_held(i):
                parts.append(f"{'constant' if i in self.static else 'input'} {i!r} {list(self.shape(i))}")
            else:
                source = self._through_layouts(i)[0]
                by = (source.name or source.output[0]) if source else i
                parts.append(f"rows {list(self.shape(i))} computed by {by!r}")
        self.derived_notes.append(
            f"concat {name!r} (axis {_attr(node, 'axis', 0)}) of {', '.join(parts)} is the network input {name!r} "
            f"{list(shape)}; the layers computing its rows write them to it (they have no consumer in the graph)")
        self.producer[node.output[0]] = name

    def _partial_rotary(self, node: onnx.NodeProto, name: str, pattern: Pattern) -> SourceNode:
        """A rotary embedding of the first ``r`` of the ``d`` dims of each head (GPT-NeoX, Phi): one ``rotary``
        layer on ``[..., r]`` that writes its result in place, over the part it read; the pass-through dims
        stay where the producer wrote them, so the readers of the concatenation read the producer's tensor."""
        source, rotated = self.producer[pattern.root], self.shape(pattern.rotated)
        whole = self.shape(pattern.root)
        self.producer[node.output[0]] = source
        if not rotated or not whole or whole[-1] % rotated[-1]:
            dims = f"{rotated[-1]} of {whole[-1]}" if rotated and whole else "an unknown number of"
            return SourceNode(name, "unsupported", f"Concat (partial rotary on {dims} dims: the rotated dims must "
                              "divide the head dim)",
                              (source,), (whole,), self.shape(node.output[0]))
        writer = self._through_layouts(pattern.root)[0]
        by = (writer.name or writer.output[0]) if writer is not None else pattern.root
        self.derived_notes.append(
            f"partial rotary {name!r}: a rotary layer on the first {rotated[-1]} of {whole[-1]} dims of the "
            f"tensor {by!r} writes, in place; its readers read that tensor (the pass-through dims are not copied)")
        return SourceNode(name, "vector", f"decomposed partial rotary ({len(pattern.members)} nodes)", (source,),
                          (rotated,), rotated, {"kind": "rotary"})

    def _through_layouts(self, tensor: str) -> tuple[onnx.NodeProto | None, int]:
        """The first non-layout node producing ``tensor`` through layout ops, and how many times ``tensor``
        repeats the words that node writes (``repeat_kv`` of grouped-query attention expands K/V heads)."""
        source = tensor
        node = self.node_of.get(source)
        while node is not None and node.op_type in REPEATS:
            source = node.input[0]
            node = self.node_of.get(source)
        words, read = math.prod(self.shape(source)), math.prod(self.shape(tensor))
        return node, (read // words if self.shape(source) and self.shape(tensor) and read % words == 0 else 1)

    def _products(self, node: onnx.NodeProto, a_name: str, b_name: str) -> tuple[str, dict]:
        """A product of two activations: attention's QK^T or AV (``ops.attention``), else a batched einsum."""
        a, b = self.shape(a_name), self.shape(b_name)
        if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            return "unsupported", {"reason": "product of two activations of unknown or mismatched shapes"}
        if len(a) == len(b) == 4 and a[:2] == b[:2]:
            _, repeat = self._through_layouts(b_name)
            if a[1] % repeat == 0:
                scores = self._reaches(a_name, "Softmax") is None
                batch, heads, q_len, inner = a
                return "einsum", {"attention": "scores" if scores else "values", "batch": batch, "heads": heads,
                                  "q_len": q_len, "kv_len": b[3] if scores else inner,
                                  "head_dim": inner if scores else b[3], "kv_heads": heads // repeat}
        return "einsum", _batched_einsum(a, b)

    def _reaches(self, tensor: str, op_type: str) -> onnx.NodeProto | None:
        """The ``op_type`` node producing ``tensor`` through layouts and casts, if any."""
        source, _ = self._through_layouts(tensor)
        return source if source is not None and source.op_type == op_type else None

    def _translate(self, node: onnx.NodeProto, attrs: dict[str, Any],
                   activations: list[str]) -> tuple[str, dict[str, Any]]:
        if node.domain not in ("", "ai.onnx"):
            return "unsupported", {}
        op = node.op_type
        if op in PASSTHROUGH:
            return "passthrough", {}
        if op in ACTIVATIONS:
            return "eltwise_unary", {"function": self._activation(node, attrs)}
        handler = HANDLERS.get(op)
        if handler is None:
            return "unsupported", {}
        return handler(self, node, attrs, activations)

    def _activation(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> str:
        if node.op_type != "Clip":
            return ACTIVATIONS[node.op_type]
        inputs = list(node.input) + ["", ""]
        if any(bound in self.weights.unreadable for bound in inputs[1:3]):
            return "clip"  # bounds in an unreadable external data file: a clip of unknown range
        low = attrs.get("min", self.constant(inputs[1]))
        high = attrs.get("max", self.constant(inputs[2]))
        if low is not None and float(low) == 0.0:
            return "relu" if high is None else ("relu6" if float(high) == 6.0 else "clip")
        return "clip"

    def _conv_operands_problem(self, x: tuple[int, ...], w: tuple[int, ...], w_name: str) -> str | None:
        """Why a (transposed) convolution of input shape ``x`` by weight ``w_name`` (shape ``w``) is unsupported,
        or ``None``: it must be 2-D with constant weights."""
        if len(x) != 4 or len(w) != 4:
            return f"{max(len(x), len(w)) - 2}-D" if x and w else "unknown rank"
        if w_name not in self.static:
            return "non-constant weights"
        return None

    def _weight_density(self, name: str) -> dict[str, float]:
        """``{"weight_density": d}``, the measured share of non-zeros of a floating-point weight initializer
        (a pruned model's sparsity, docs/sparse.md), or nothing for other weights, for an all-zero
        initializer (a placeholder without trained values, as exported without weights) and for weights whose
        external data cannot be read (dense, as the note says)."""
        values = self.weights.value(name) if name in self.initializers else None
        if values is None or not np.issubdtype(values.dtype, np.floating) or not values.any():
            return {}
        return {"weight_density": measured_density(values)}

    def _conv(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        x_name, w_name = (node.input[0], node.input[3]) if node.op_type == "QLinearConv" else node.input[:2]
        x, w = self.shape(x_name), self.shape(w_name)
        reason = self._conv_operands_problem(x, w, w_name)
        if reason:
            return "unsupported", {"reason": reason}
        groups = int(attrs.get("group", 1))
        if w[1] * groups != x[1]:
            raise InputFileError(f"{self.path}: node {node.name!r} ({node.op_type}): inconsistent shapes: input "
                                 f"{x_name!r} has {x[1]} channels but weight {w_name!r} {w} with group={groups} "
                                 f"expects {w[1] * groups}")
        kernel = tuple(attrs.get("kernel_shape", w[2:]))
        window = _window(attrs, x[2:], kernel)
        return "conv", {**window, "groups": groups, "out_channels": w[0], **self._weight_density(w_name)}

    def _conv_transpose(self, node: onnx.NodeProto, attrs: dict[str, Any],
                        activations: list[str]) -> tuple[str, dict]:
        """A direct convolution over the zero-stuffed input (:func:`zero_stuffed_window`); weight (C, K/group, R, S)."""
        x, w = self.shape(node.input[0]), self.shape(node.input[1])
        reason = self._conv_operands_problem(x, w, node.input[1])
        if reason:
            return "unsupported", {"reason": reason}
        if "output_shape" in attrs or _text(attrs.get("auto_pad", b"NOTSET")) not in ("NOTSET", "VALID"):
            return "unsupported", {"reason": "output_shape or auto_pad SAME; export with explicit pads"}
        groups = int(attrs.get("group", 1))
        if w[0] != x[1]:
            raise InputFileError(f"{self.path}: node {node.name!r} (ConvTranspose): inconsistent shapes: input "
                                 f"{node.input[0]!r} has {x[1]} channels but weight {node.input[1]!r} {w} expects "
                                 f"{w[0]}")
        window = _window(attrs, x[2:], tuple(attrs.get("kernel_shape", w[2:])))
        output_padding = tuple(int(p) for p in attrs.get("output_padding", (0, 0)))
        stuffed = zero_stuffed_window(x[2:], window["kernel"], window["stride"], window["padding"], output_padding,
                                      window["dilation"])
        if stuffed is None:
            return "unsupported", {"reason": "pads larger than dilation * (kernel - 1)"}
        stuffed_hw, padding = stuffed
        return "conv", {**window, "stride": (1, 1), "padding": padding, "groups": groups, "out_channels": w[1] * groups,
                        "stuffed_hw": stuffed_hw}

    def _pool(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        x = self.shape(node.input[0])
        kernel = tuple(attrs["kernel_shape"])
        if len(kernel) != 2:
            return "unsupported", {"reason": f"{len(kernel)}-D"}
        if any(d != 1 for d in attrs.get("dilations", (1, 1))):
            return "unsupported", {"reason": "dilated pooling"}
        window = _window(attrs, x[2:], kernel)
        del window["dilation"]
        mode = "max" if node.op_type == "MaxPool" else "avg"
        return "pool", {**window, "mode": mode, "ceil_mode": bool(attrs.get("ceil_mode", 0))}

    def _global_pool(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        return "global_pool", {"mode": "max" if node.op_type == "GlobalMaxPool" else "avg"}

    def _reduce(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        """``ReduceMean`` / ``ReduceMax`` over the two spatial axes of an (N, C, H, W) map (either keepdims; axes
        as an attribute, or as an input from opset 18 on: ``torch.onnx.export(dynamo=True)`` writes
        ``AdaptiveAvgPool2d(1)`` so) is the global pool; other reductions (a LayerNorm's mean over the features
        outside a recognised decomposition) stay unsupported."""
        rank = len(self.shape(node.input[0]))
        axes = attrs.get("axes")
        if axes is None and len(node.input) > 1:
            axes = self.constant(node.input[1])
        if axes is None or not np.asarray(axes).size:  # no axes: all of them, or none with noop_with_empty_axes
            return "unsupported", {"reason": "over every axis, or none"}
        spatial = sorted({int(a) % rank for a in np.asarray(axes).reshape(-1)}) if rank else []
        if rank != 4 or spatial != [2, 3]:
            return "unsupported", {"reason": f"over axes {spatial} of a rank-{rank} tensor; only H and W of an "
                                             "(N, C, H, W) map, a global pool"}
        return "global_pool", {"mode": REDUCTIONS[node.op_type]}

    def _gemm(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        b_name = node.input[1]
        if b_name in self.static and node.input[0] not in self.static and not attrs.get("transA", 0):
            b = self.shape(b_name)
            return "fc", {"out_features": b[0] if attrs.get("transB", 0) else b[1], **self._weight_density(b_name)}
        return "unsupported", {"reason": "transposed or non-constant operands"}

    def _matmul(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        a_name, b_name = (node.input[0], node.input[3]) if node.op_type == "QLinearMatMul" else node.input[:2]
        b = self.shape(b_name)
        if node.op_type == "MatMul" and a_name not in self.static and b_name not in self.static:
            return self._products(node, a_name, b_name)
        if b_name not in self.static or len(b) != 2 or a_name in self.static:
            return "unsupported", {"reason": "constant first operand or batched constant second operand"}
        return ("fc" if len(self.shape(a_name)) == 2 else "matmul"), {"out_features": b[1],
                                                                      **self._weight_density(b_name)}

    def _binary(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        if len(activations) >= 2:
            return BINARY[node.op_type], {}
        if node.op_type == "Add" and any(i in self.masks.additive for i in node.input):
            return "eltwise_unary", {"function": "add_mask"}  # fused as a constant additive mask (onnx_masks)
        constant = next((self.shape(i) for i in node.input if i not in activations), ())
        if node.op_type == "Add" and self._is_bias(activations[0], constant):
            return "bias", {}
        scalar = math.prod(constant) == 1 and node.op_type in ("Mul", "Div")
        return "eltwise_unary", {"function": f"{node.op_type.lower()}_const", **({"scalar": True} if scalar else {})}

    def _is_bias(self, tensor: str, constant: tuple[int, ...]) -> bool:
        """A per-feature constant (one value per output column) added to a matrix product's result."""
        producer = self.node_of.get(tensor)
        return (producer is not None and producer.op_type in ("MatMul", "Gemm") and len(constant) == 1
                and constant[0] == self.shape(tensor)[-1] and producer.input[1] in self.static)

    def _softmax(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        """A softmax of a 2-D (classifier) output fuses as an activation; over the rows of a higher-rank tensor
        (attention scores) it is a ``softmax`` vector layer. Only the last axis."""
        rank = len(self.shape(node.input[0]))
        if rank == 2:
            return "eltwise_unary", {"function": "softmax"}
        if int(attrs.get("axis", -1)) % max(rank, 1) != rank - 1:
            return "unsupported", {"reason": f"axis {attrs.get('axis')} is not the last of a rank-{rank} tensor"}
        return "vector", {"kind": "softmax"}

    def _vector(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        """LayerNormalization, RMSNormalization (last axis) and Gelu: vector layers."""
        rank = len(self.shape(node.input[0]))
        if "axis" in attrs and int(attrs["axis"]) % max(rank, 1) != rank - 1:
            return "unsupported", {"reason": f"normalizes from axis {attrs['axis']}, not over the last axis only"}
        return "vector", {"kind": VECTOR_OPS[node.op_type]}

    def _where(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        """``Where(mask, x, fill)`` (or ``Where(mask, fill, x)``, ``masked_fill``) with a constant fill and a mask
        that is constant or computed from the graph's inputs only (:mod:`onnx_masks`): a mask applied to ``x``
        (fused, as an additive mask), not a layer."""
        if len(activations) != 1 or activations[0] not in node.input[1:]:
            return "unsupported", {"reason": "condition computed from layer results, or fill computed"}
        return "eltwise_unary", {"function": "mask"}

    def _slice(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        """A part of one computed tensor read in place (GPT-2's fused QKV split by slicing, one rotary half): a
        layout when it is an equal part (its readers read the whole through it, as a ``Split``'s do)."""
        whole, part = math.prod(self.shape(node.input[0])), math.prod(self.shape(node.output[0]))
        if activations != [node.input[0]]:
            return "unsupported", {"reason": "computed bounds"}
        if not self.shape(node.input[0]) or not self.shape(node.output[0]) or not part or whole % part:
            return "unsupported", {"reason": f"takes {part} of {whole} elements, not an equal part"}
        return "passthrough", {}

    def _gather(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        """Constant indices into an activation (``unbind`` of a fused QKV): a layout; embeddings: translate()."""
        if node.input[1] in self.static:
            return "passthrough", {}
        return "unsupported", {"reason": "computed indices into a computed or non-2-D tensor"}

    def _concat(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        rank = len(self.shape(node.output[0]))
        axis = int(attrs["axis"])
        if rank in (2, 4) and axis % rank == 1 and len(activations) == len([i for i in node.input if i]):
            return "concat", {}
        if rank >= 3 and all(i in activations for i in node.input if i):
            return "unsupported", {"reason": f"axis {axis} of a rank-{rank} tensor joins tensors all computed here "
                                             "(not a cache or constant rows, nor channels): a copy with no layer "
                                             "kind, e.g. a rotate_half outside the rotary pattern"}
        return "unsupported", {"reason": f"axis {axis} of a rank-{rank} tensor"}

    def _batchnorm(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        return "batchnorm", {}

    def _pad(self, node: onnx.NodeProto, attrs: dict[str, Any], activations: list[str]) -> tuple[str, dict]:
        mode = _text(attrs.get("mode", b"constant"))
        if mode != "constant":
            return "unsupported", {"reason": f"{mode} mode"}
        inputs = list(node.input) + ["", "", ""]
        pads = attrs.get("pads")
        if pads is None:
            pads = self.constant(inputs[1])
        rank = len(self.shape(node.input[0]))
        pads = [int(p) for p in np.asarray(pads).reshape(-1)]
        axes = self.constant(inputs[3])
        if axes is not None:  # opset 18: pads only for the listed axes
            full = [0] * (2 * rank)
            for i, axis in enumerate(int(a) % rank for a in np.asarray(axes).reshape(-1)):
                full[axis], full[axis + rank] = pads[i], pads[i + len(pads) // 2]
            pads = full
        if rank != 4 or len(pads) != 8 or any(pads[i] for i in (0, 1, 4, 5)) or min(pads) < 0:
            return "unsupported", {"reason": "only non-negative H/W padding of 4-D maps"}
        return "pad", {"padding": (pads[2], pads[3], pads[6], pads[7])}


def _text(value: str | bytes) -> str:
    """A string attribute (onnx.helper returns bytes)."""
    return value.decode() if isinstance(value, bytes) else value


def _window(attrs: dict[str, Any], spatial: tuple[int, ...], kernel: tuple[int, ...]) -> dict[str, Any]:
    """Kernel, stride, dilation and explicit (top, left, bottom, right) padding, resolving ``auto_pad``."""
    stride = tuple(int(s) for s in attrs.get("strides", (1, 1)))
    dilation = tuple(int(d) for d in attrs.get("dilations", (1, 1)))
    auto_pad = _text(attrs.get("auto_pad", b"NOTSET"))
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        padding = same_padding_2d(spatial, kernel, stride, dilation, auto_pad == "SAME_UPPER")
    elif auto_pad == "VALID":
        padding = (0, 0, 0, 0)
    elif auto_pad in ("NOTSET", ""):
        padding = tuple(int(p) for p in attrs.get("pads", (0, 0, 0, 0)))
    else:
        raise ValueError(f"auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got {auto_pad!r}")
    if len(padding) != 4 or len(stride) != 2 or len(dilation) != 2:
        raise ValueError(f"expected 2-D pads/strides/dilations, got pads={padding}, strides={stride}, "
                         f"dilations={dilation}")
    return {"kernel": (int(kernel[0]), int(kernel[1])), "stride": stride, "padding": padding,
            "dilation": dilation}


def _attr(node: onnx.NodeProto, name: str, default: Any) -> Any:
    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


def _batched_einsum(a: tuple[int, ...], b: tuple[int, ...]) -> dict[str, Any]:
    """``A[..., m, k] x B[..., k, n]`` with numpy broadcasting of the leading (batch) axes as an einsum: an
    operand whose batch axis is 1 (broadcast) does not carry that axis' letter (each of its words is reused)."""
    lead = max(len(a), len(b)) - 2
    if lead > 8:
        raise ValueError(f"{lead} batch axes; at most 8")
    letters = "abcdefgh"[:lead]
    pad_a, pad_b = ((1,) * (lead - len(s) + 2) + tuple(s[:-2]) for s in (a, b))
    sizes = {"m": a[-2], "k": a[-1], "n": b[-1]}
    spec_a = spec_b = ""
    for letter, x, y in zip(letters, pad_a, pad_b):
        if x != y and 1 not in (x, y):
            raise ValueError(f"batch axes of {a} and {b} do not broadcast")
        if max(x, y) > 1:
            sizes[letter] = max(x, y)
            spec_a += letter if x > 1 else ""
            spec_b += letter if y > 1 else ""
    out = "".join(c for c in letters if c in sizes)
    return {"expr": f"{spec_a}mk,{spec_b}kn->{out}mn", "sizes": sizes}


def _without_weights(model: onnx.ModelProto, weights: ModelWeights) -> onnx.ModelProto:
    """A copy whose large initializers are declared as typed inputs: shape inference then skips copying weights.

    Small initializers (reshape targets, pads, axes) keep their values for data propagation, read in from
    external data by ``weights`` (onnx never opens those files); unreadable ones become typed inputs too.
    """
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    graph, src = light.graph, model.graph
    graph.name = src.name
    graph.node.extend(src.node)
    graph.input.extend(src.input)
    graph.output.extend(src.output)
    graph.value_info.extend(src.value_info)
    declared = {vi.name for vi in src.input}
    for t in src.initializer:
        small = weights.inline(t.name) if math.prod(t.dims) <= SMALL_CONSTANT else None
        if small is not None:
            graph.initializer.append(small)
        elif t.name not in declared:
            graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return light


def _with_values(light: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """``light`` with the nodes computing ``values`` replaced by those values as initializers."""
    model = onnx.ModelProto()
    model.CopyFrom(light)
    kept = [n for n in model.graph.node if not all(not o or o in values for o in n.output)]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(v), k) for k, v in values.items())
    return model


def _set_shape(vi: onnx.ValueInfoProto, shape: tuple[int, ...]) -> None:
    vi.type.tensor_type.shape.ClearField("dim")
    for d in shape:
        vi.type.tensor_type.shape.dim.add().dim_value = d


def _fmt(dims: list[Any]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


Handler = Callable[[OnnxFrontEnd, onnx.NodeProto, dict[str, Any], list[str]], tuple[str, dict[str, Any]]]
HANDLERS: dict[str, Handler] = {
    "Conv": OnnxFrontEnd._conv, "QLinearConv": OnnxFrontEnd._conv, "ConvTranspose": OnnxFrontEnd._conv_transpose,
    "MaxPool": OnnxFrontEnd._pool, "AveragePool": OnnxFrontEnd._pool,
    "GlobalAveragePool": OnnxFrontEnd._global_pool, "GlobalMaxPool": OnnxFrontEnd._global_pool,
    **{op: OnnxFrontEnd._reduce for op in REDUCTIONS},
    "Gemm": OnnxFrontEnd._gemm, "MatMul": OnnxFrontEnd._matmul, "QLinearMatMul": OnnxFrontEnd._matmul,
    **{op: OnnxFrontEnd._binary for op in BINARY},
    "Concat": OnnxFrontEnd._concat, "BatchNormalization": OnnxFrontEnd._batchnorm, "Pad": OnnxFrontEnd._pad,
    "Softmax": OnnxFrontEnd._softmax, **{op: OnnxFrontEnd._vector for op in VECTOR_OPS},
    "Where": OnnxFrontEnd._where, "Gather": OnnxFrontEnd._gather, "Slice": OnnxFrontEnd._slice,
}
SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(
    (set(HANDLERS) - set(REDUCTIONS)) | {f"{op} (over H and W)" for op in REDUCTIONS} | set(ACTIVATIONS) | PASSTHROUGH | {"Constant", "Shape"}
    | {f"{op} (decomposed)" for op in ("LayerNorm", "RMSNorm", "GELU", "SiLU", "rotary", "partial rotary")}
    | {f"{op} (building a Where mask from inputs)" for op in COMPARISONS}))


def load_onnx_graph(path: Path, input_shapes: InputShapes | None = None) -> SourceGraph:
    """Read, check and translate ``path``; constant weight sub-graphs are dropped. Weights that cannot be read
    (external data files missing or broken) give one :class:`DnnmapNote` warning saying how many and why."""
    front_end = OnnxFrontEnd(path, read_model(path), input_shapes)
    graph = front_end.translate()
    note = front_end.weights.note()
    if note:
        warnings.warn(DnnmapNote(note), stacklevel=2)
    return graph
