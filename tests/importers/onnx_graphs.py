"""Small hand-built ONNX models for the importer tests (onnx.helper only, no framework)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def ints(name: str, *values: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def scalar(name: str, value: float, dtype: type = np.float32) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, dtype), name)


def model(nodes: list[onnx.NodeProto], initializers: list[onnx.TensorProto], input_shape: list[int | str],
          output: str = "y", input_name: str = "x", opset: int = 17, extra_domains: tuple[str, ...] = ()
          ) -> onnx.ModelProto:
    x = helper.make_tensor_value_info(input_name, TensorProto.FLOAT, input_shape)
    y = helper.make_tensor_value_info(output, TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "test", [x], [y], initializers)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in extra_domains]
    return helper.make_model(graph, opset_imports=opsets)


def save(m: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(m.SerializeToString())
    return path


def conv_relu_model(input_shape: list[int | str] = (1, 3, 32, 32)) -> onnx.ModelProto:
    """conv(3->8, 3x3, pad 1) -> BN -> relu -> global avg pool -> flatten -> gemm(8->10)."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    inits = [weight("w", 8, 3, 3, 3), *(weight(n, 8) for n in "sbmv"), weight("fw", 10, 8), weight("fb", 10)]
    return model(nodes, inits, list(input_shape))
