"""Small constant tensors an ONNX export computes in the graph, evaluated so shape inference can use them.

``torch.onnx.export`` writes the starts and ends of a ``Slice`` (rotary halves, a fused QKV split by
slicing) as ``Unsqueeze`` of ``Constant``, and an ``expand(batch, -1, -1)`` (ViT's class token) as
``Shape`` -> ``Equal`` -> ``Where`` -> ``Expand``; ONNX shape inference propagates values through few of
these, so the sliced or expanded shapes stay unknown. :func:`small_static_values` runs such nodes (the
``onnx`` reference evaluator; ``Shape`` and ``Size`` from inferred shapes) when each result is known to
hold at most ``limit`` elements: weights and large masks are never computed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

NOT_EVALUATED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                           "Bernoulli", "If", "Loop", "Scan"})


def small_static_values(model: onnx.ModelProto, known: Mapping[str, np.ndarray],
                        shapes: Mapping[str, tuple[int, ...]], static: set[str],
                        limit: int) -> dict[str, np.ndarray]:
    """Values of static node outputs (``static``: computed from constants and shapes only) whose inferred
    shape has at most ``limit`` elements, from the ``known`` values and inferred ``shapes``; new ones only."""
    values: dict[str, np.ndarray] = {}
    batch: list[onnx.NodeProto] = []
    available = set(known)
    for node in model.graph.node:
        outputs = [o for o in node.output if o]
        if (not outputs or any(o not in static or o in known for o in outputs) or node.op_type in NOT_EVALUATED
                or node.domain not in ("", "ai.onnx")):
            continue
        if any(o not in shapes or math.prod(shapes[o]) > limit for o in outputs):
            continue
        if node.op_type in ("Shape", "Size"):
            if node.input[0] in shapes:
                values[outputs[0]] = _shape_value(node, shapes[node.input[0]])
                available.add(outputs[0])
            continue
        if all(not i or i in available for i in node.input):
            batch.append(node)
            available.update(outputs)
    if batch:
        values.update(_run(model, batch, {**known, **values}))
    return values


def _shape_value(node: onnx.NodeProto, shape: tuple[int, ...]) -> np.ndarray:
    """``Shape`` (with opset 15's ``start``/``end``) or ``Size`` of a tensor of ``shape``."""
    if node.op_type == "Size":
        return np.asarray(math.prod(shape), dtype=np.int64)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", len(shape))
    return np.asarray(shape[start:end], dtype=np.int64)


def _run(model: onnx.ModelProto, nodes: list[onnx.NodeProto], known: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``nodes`` (topologically ordered) on the ``known`` values; nothing if the evaluator fails on them."""
    produced = {o for n in nodes for o in n.output if o}
    read = {i for n in nodes for i in n.input if i and i not in produced}
    outputs = sorted(produced)
    graph = helper.make_graph(
        nodes, "constants", [], [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializer=[numpy_helper.from_array(np.asarray(known[i]), i) for i in sorted(read)])
    sub = helper.make_model(graph, opset_imports=[o for o in model.opset_import if o.domain in ("", "ai.onnx")],
                            ir_version=model.ir_version)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = ReferenceEvaluator(sub).run(None, {})
    except Exception:  # an operator the reference evaluator lacks or rejects: its shapes stay as inferred
        return {}
    return {name: np.asarray(value) for name, value in zip(outputs, results)}
