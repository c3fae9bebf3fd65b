"""A frozen TensorFlow GraphDef rebuilt for translation: concrete input shapes, weights as typed placeholders.

TensorFlow's own shape inference (run when the GraphDef is imported into a ``tf.Graph``)
then gives every tensor a concrete shape. Constants larger than ``SMALL_CONSTANT``
elements (the weights) are declared as placeholders of their dtype and shape so they
are not copied; small ones (paddings, axes, reshape targets) keep their values.

TensorFlow builds a dilated convolution on the CPU as ``SpaceToBatchND`` -> convolution
-> ``BatchToSpaceND``; that chain is rewritten into the one convolution it computes
(dilation = block size, padding = the space-to-batch padding less the crops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dnnmap.errors import InputFileError
from dnnmap.workload.importers.channels_last import DeclaredShape, InputShapes, Shape, resolve_input_shapes
from dnnmap.workload.importers.tf_savedmodel import FrozenSignature, first_line

SMALL_CONSTANT = 64
CONVS = ("Conv2D", "DepthwiseConv2dNative")


@dataclass(frozen=True)
class ConcreteGraph:
    graph: Any  # tf.Graph, operations in topological order
    weights: frozenset[str]  # names of the placeholders standing for large constants
    inputs: tuple[tuple[str, Shape], ...]  # the model's inputs (placeholder names) and their channels-last shapes
    outputs: tuple[str, ...]  # the signature's output tensors
    notes: tuple[str, ...]  # assumptions (an unspecified batch taken as 1)


def node_name(tensor: str) -> str:
    """``name`` of a GraphDef input reference ``name``, ``name:1`` or ``^name``."""
    return tensor.lstrip("^").split(":")[0]


def concrete_graph(tf: Any, frozen: FrozenSignature, input_shapes: InputShapes | None) -> ConcreteGraph:
    light, weights = _without_weights(tf, frozen.graph_def)
    placeholders = [n for n in light.node if n.op == "Placeholder" and n.name not in weights]
    declared: dict[str, DeclaredShape] = {}
    for node in placeholders:
        shape = tf.TensorShape(node.attr["shape"].shape)
        if shape.rank is None:
            raise InputFileError(f"{frozen.path}: input {node.name!r} of signature {frozen.signature!r} has an "
                                 "unknown rank; export the model with a fixed input rank")
        declared[node.name] = tuple(shape.as_list())
    notes: list[str] = []
    shapes = resolve_input_shapes(frozen.path, declared, input_shapes or {}, notes)
    for node in placeholders:
        node.attr["shape"].shape.CopyFrom(tf.TensorShape(shapes[node.name]).as_proto())
    renamed = _undo_space_to_batch(tf, light)
    outputs = tuple(f"{renamed[node_name(t)]}:0" if node_name(t) in renamed else t for t in frozen.outputs)
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.graph_util.import_graph_def(light, name="")
    except Exception as exc:  # ValueError from shape inference (e.g. an --input-shape a Reshape cannot take)
        raise InputFileError(f"{frozen.path}: inconsistent shapes: TensorFlow shape inference failed for the "
                             f"input shape(s) {shapes}: {first_line(exc)}") from exc
    return ConcreteGraph(graph, frozenset(weights), tuple(shapes.items()), outputs, tuple(notes))


def _without_weights(tf: Any, graph_def: Any) -> tuple[Any, set[str]]:
    """A copy of ``graph_def`` whose large constants are placeholders of the same dtype and shape."""
    light = tf.compat.v1.GraphDef()
    light.versions.CopyFrom(graph_def.versions)
    light.library.CopyFrom(graph_def.library)
    weights = set()
    for node in graph_def.node:
        tensor = node.attr["value"].tensor if node.op == "Const" else None
        dims = [d.size for d in tensor.tensor_shape.dim] if tensor is not None else []
        if tensor is not None and math.prod(dims) > SMALL_CONSTANT:
            placeholder = light.node.add(name=node.name, op="Placeholder")
            placeholder.attr["dtype"].type = tensor.dtype
            placeholder.attr["shape"].shape.CopyFrom(tensor.tensor_shape)
            weights.add(node.name)
        else:
            light.node.add().CopyFrom(node)
    return light, weights


def _undo_space_to_batch(tf: Any, graph_def: Any) -> dict[str, str]:
    """Rewrite each SpaceToBatchND -> Conv2D/DepthwiseConv2dNative -> BatchToSpaceND chain into a dilated conv;
    returns the removed BatchToSpaceND nodes -> the convolution now computing their output."""
    nodes = {n.name: n for n in graph_def.node}
    uses: dict[str, int] = {}
    for node in graph_def.node:
        for ref in node.input:
            if not ref.startswith("^"):
                uses[node_name(ref)] = uses.get(node_name(ref), 0) + 1
    renamed: dict[str, str] = {}
    removed: set[str] = set()
    for b2s in [n for n in graph_def.node if n.op == "BatchToSpaceND"]:
        conv = nodes.get(node_name(b2s.input[0]))
        s2b = nodes.get(node_name(conv.input[0])) if conv is not None and conv.op in CONVS else None
        if s2b is None or s2b.op != "SpaceToBatchND" or uses.get(s2b.name) != 1 or uses.get(conv.name) != 1:
            continue
        values = [_constant(tf, nodes.get(node_name(ref))) for ref in (s2b.input[1], s2b.input[2], b2s.input[1],
                                                                        b2s.input[2])]
        if any(v is None for v in values) or list(conv.attr["strides"].list.i) != [1, 1, 1, 1]:
            continue
        block, paddings, block_again, crops = values
        padding = (paddings - crops).reshape(-1).tolist() if paddings.shape == crops.shape == (2, 2) else []
        if (block.tolist() != block_again.tolist() or len(block) != 2 or conv.attr["padding"].s != b"VALID"
                or not padding or min(padding) < 0):
            continue
        conv.input[0] = s2b.input[0]
        conv.attr["dilations"].list.i[:] = [1, *block.tolist(), 1]
        conv.attr["padding"].s = b"EXPLICIT"
        conv.attr["explicit_paddings"].list.i[:] = [0, 0, *padding, 0, 0]
        for node in graph_def.node:
            node.input[:] = [("^" if ref.startswith("^") else "") + conv.name if node_name(ref) == b2s.name else ref
                             for ref in node.input]
        renamed[b2s.name] = conv.name
        removed.update((s2b.name, b2s.name))
    kept = [n for n in graph_def.node if n.name not in removed]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    return renamed


def _constant(tf: Any, node: Any) -> Any:
    """The value of a ``Const`` node as a NumPy array, else ``None``."""
    return tf.make_ndarray(node.attr["value"].tensor) if node is not None and node.op == "Const" else None
