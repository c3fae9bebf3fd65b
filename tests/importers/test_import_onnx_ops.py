"""ONNX operators on hand-built graphs: shapes, padding forms, folding, fusion, quantized ops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx_graphs import conv_relu_model, ints, model, save, scalar, weight

from dnnmap.workload import ops
from dnnmap.workload.importers import UnsupportedOperatorsError, import_model, load_network


def test_conv_bn_relu_gemm_pipeline(tmp_path: Path) -> None:
    result = import_model(save(conv_relu_model(), tmp_path / "m.onnx"))
    net = result.network
    assert [layer.op.kind for layer in net.layers] == ["conv2d", "pool_avg", "fc"]
    conv, gap, fc = net.layers
    assert conv.op == ops.conv2d("conv", 3, 8, 32, 3, 1, 1)
    assert conv.fused == ("relu",) and conv.inputs == ("x",)
    assert gap.op.bounds["R"] == 32 and gap.output_shape == (1, 8, 1, 1)
    assert fc.op.bounds["C"] == 8 and fc.op.bounds["K"] == 10 and fc.output_shape == (1, 10, 1, 1)
    assert fc.inputs == ("gap",)  # flatten removed and rewired
    assert [(f.node, f.into) for f in result.report.folded_batchnorms] == [("bn", "conv")]
    assert [(f.node, f.op_type, f.into) for f in result.report.fused_activations] == [("relu", "relu", "conv")]
    assert [r.op_type for r in result.report.removed] == ["Flatten"]
    assert net.macs == 8 * 3 * 32 * 32 * 9 + 8 * 10
    assert net.notes == result.report.lines() and any("batch-norm" in line for line in net.notes)


@pytest.mark.parametrize("attrs, expected_padding, expected_pq", [
    ({"pads": [1, 2, 3, 4]}, (1, 2, 3, 4), (32 + 4 - 2, 32 + 6 - 2)),
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (0, 0, 1, 1), (16, 16)),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 1, 0, 0), (16, 16)),
    ({"auto_pad": "SAME_UPPER"}, (1, 1, 1, 1), (32, 32)),
    ({"auto_pad": "VALID", "strides": [2, 2]}, (0, 0, 0, 0), (15, 15)),
    ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, (2, 2, 2, 2), (32, 32)),
])
def test_conv_padding_forms(tmp_path: Path, attrs: dict, expected_padding: tuple, expected_pq: tuple) -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", **attrs)]
    net = load_network(save(model(nodes, [weight("w", 8, 3, 3, 3)], [1, 3, 32, 32]), tmp_path / "m.onnx"))
    op = net.layers[0].op
    assert op.attr("padding") == expected_padding
    assert (op.bounds["P"], op.bounds["Q"]) == expected_pq


def test_grouped_and_depthwise_conv(tmp_path: Path) -> None:
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="grouped", group=4, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w2"], ["y"], name="dw", group=16, strides=[2, 2], pads=[1, 1, 1, 1])]
    net = load_network(save(model(nodes, [weight("w1", 16, 2, 3, 3), weight("w2", 16, 1, 3, 3)], [1, 8, 16, 16]),
                            tmp_path / "m.onnx"))
    grouped, dw = net.layers
    assert grouped.op.kind == "conv2d" and grouped.op.bounds["G"] == 4 and grouped.op.bounds["C"] == 2
    assert dw.op.kind == "depthwise" and dw.output_shape == (1, 16, 8, 8)


def test_explicit_pad_is_folded_into_conv(tmp_path: Path) -> None:
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
             helper.make_node("Conv", ["p", "w"], ["y"], name="conv", strides=[2, 2])]
    inits = [ints("pads", 0, 0, 0, 0, 0, 0, 1, 1), weight("w", 8, 3, 3, 3)]
    result = import_model(save(model(nodes, inits, [1, 3, 32, 32]), tmp_path / "m.onnx"))
    (conv,) = result.network.layers
    assert conv.op.attr("padding") == (0, 0, 1, 1) and conv.op.attr("in_hw") == (32, 32)
    assert conv.output_shape == (1, 8, 16, 16) and conv.inputs == ("x",)
    assert [(f.node, f.into) for f in result.report.folded_pads] == [("pad", "conv")]


def test_pools_and_ceil_mode(tmp_path: Path) -> None:
    nodes = [helper.make_node("MaxPool", ["x"], ["a"], name="max", kernel_shape=[3, 3], strides=[2, 2],
                              ceil_mode=1),
             helper.make_node("AveragePool", ["a"], ["y"], name="avg", kernel_shape=[2, 2], strides=[2, 2])]
    net = load_network(save(model(nodes, [], [1, 4, 112, 112]), tmp_path / "m.onnx"))
    mx, avg = net.layers
    assert mx.op.kind == "pool_max" and mx.output_shape == (1, 4, 56, 56)
    assert avg.op.kind == "pool_avg" and avg.output_shape == (1, 4, 28, 28)


def test_residual_add_concat_and_shared_activation(tmp_path: Path) -> None:
    """Relu after a node with two consumers stays an element-wise layer; Add/Concat are layers."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Add", ["r", "s"], ["a"], name="add"),
             helper.make_node("Concat", ["a", "x"], ["y"], name="cat", axis=1)]
    net = load_network(save(model(nodes, [weight("w", 3, 3, 3, 3)], [1, 3, 8, 8]), tmp_path / "m.onnx"))
    kinds = {layer.name: (layer.op.kind, layer.fused, layer.inputs) for layer in net.layers}
    assert kinds["relu"] == ("identity", ("relu",), ("conv",))
    assert kinds["sig"] == ("identity", ("sigmoid",), ("conv",))
    assert kinds["add"] == ("add", (), ("relu", "sig"))
    assert kinds["cat"] == ("concat", (), ("add", "x")) and net.layer("cat").output_shape == (1, 6, 8, 8)
    assert net.layer("relu").op.macs == 0


@pytest.mark.parametrize("low, high, expected", [(0.0, 6.0, "relu6"), (0.0, None, "relu"), (-1.0, 1.0, "clip")])
def test_clip_names(tmp_path: Path, low: float, high: float | None, expected: str) -> None:
    inits = [weight("w", 4, 3, 1, 1), scalar("lo", low)] + ([scalar("hi", high)] if high is not None else [])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Clip", ["c", "lo", "hi" if high is not None else ""], ["y"], name="clip")]
    net = load_network(save(model(nodes, inits, [1, 3, 8, 8]), tmp_path / "m.onnx"))
    assert net.layers[0].fused == (expected,)


def test_softmax_dropout_reshape_squeeze_identity(tmp_path: Path) -> None:
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
             helper.make_node("Identity", ["g"], ["i"], name="id"),
             helper.make_node("Squeeze", ["i", "axes"], ["s"], name="sq"),
             helper.make_node("Dropout", ["s"], ["d"], name="drop"),
             helper.make_node("MatMul", ["d", "w"], ["m"], name="mm"),
             helper.make_node("Unsqueeze", ["m", "axes"], ["u"], name="unsq"),
             helper.make_node("Reshape", ["u", "shape"], ["r"], name="reshape"),
             helper.make_node("Softmax", ["r"], ["y"], name="softmax")]
    inits = [ints("axes", 2, 3), weight("w", 16, 5), ints("shape", 1, 5)]
    result = import_model(save(model(nodes, inits, [1, 16, 4, 4]), tmp_path / "m.onnx"))
    gap, fc = result.network.layers
    assert fc.op.kind == "fc" and fc.inputs == ("gap",) and fc.fused == ("softmax",)
    assert sorted(r.op_type for r in result.report.removed) == ["Dropout", "Identity", "Reshape", "Squeeze",
                                                                 "Unsqueeze"]


def test_transposed_constant_weight_and_bias_mul(tmp_path: Path) -> None:
    nodes = [helper.make_node("Transpose", ["wt"], ["w"], name="wT", perm=[1, 0]),
             helper.make_node("Flatten", ["x"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "w"], ["m"], name="fc"),
             helper.make_node("Mul", ["m", "scale"], ["y"], name="scale")]
    inits = [weight("wt", 7, 48), scalar("scale", 2.0)]
    net = load_network(save(model(nodes, inits, [1, 3, 4, 4]), tmp_path / "m.onnx"))
    (fc,) = net.layers
    assert fc.op.bounds["C"] == 48 and fc.op.bounds["K"] == 7 and fc.fused == ("mul_const",)


def test_qdq_and_qlinear_conv(tmp_path: Path) -> None:
    q = [scalar("sc", 0.1), numpy_helper.from_array(np.array(0, np.uint8), "zp")]
    qw = numpy_helper.from_array(np.zeros((8, 3, 3, 3), np.uint8), "qw")
    nodes = [helper.make_node("QuantizeLinear", ["x", "sc", "zp"], ["xq"], name="quant"),
             helper.make_node("QLinearConv", ["xq", "sc", "zp", "qw", "sc", "zp", "sc", "zp"], ["cq"], name="qconv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["cq", "sc", "zp"], ["c"], name="dequant"),
             helper.make_node("DequantizeLinear", ["qw2", "sc", "zp"], ["w2"], name="dequant_w"),
             helper.make_node("Conv", ["c", "w2"], ["y"], name="conv")]
    qw2 = numpy_helper.from_array(np.zeros((4, 8, 1, 1), np.uint8), "qw2")
    net = load_network(save(model(nodes, [*q, qw, qw2], [1, 3, 8, 8]), tmp_path / "m.onnx"))
    assert [(layer.name, layer.op.kind, layer.output_shape) for layer in net.layers] == [
        ("qconv", "conv2d", (1, 8, 8, 8)), ("conv", "pointwise", (1, 4, 8, 8))]
    assert net.layer("conv").inputs == ("qconv",)


def test_batchnorm_without_preceding_conv_stays_elementwise(tmp_path: Path) -> None:
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], name="bn"),
             helper.make_node("Conv", ["bn", "w"], ["y"], name="conv")]
    inits = [*(weight(n, 3) for n in "sbmv"), weight("w", 4, 3, 1, 1)]
    result = import_model(save(model(nodes, inits, [1, 3, 8, 8]), tmp_path / "m.onnx"))
    assert result.report.folded_batchnorms == ()
    bn = result.network.layer("bn")
    assert bn.op.kind == "identity" and bn.fused == ("batchnorm",) and bn.inputs == ("x",)


def test_conv_transpose_without_torch(tmp_path: Path) -> None:
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1])]
    result = import_model(save(model(nodes, [weight("w", 3, 4, 3, 3)], [1, 3, 8, 8]), tmp_path / "m.onnx"))
    (up,) = result.network.layers
    assert up.op == ops.conv2d("up", 3, 4, 15, 3, 1, (1, 1, 2, 2)) and up.output_shape == (1, 4, 16, 16)
    assert [s.node for s in result.report.zero_stuffed] == ["up"]


@pytest.mark.parametrize("attrs, reason", [
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, r"output_shape or auto_pad SAME; export with explicit pads"),
    ({"output_shape": [16, 16], "strides": [2, 2]}, r"output_shape or auto_pad SAME; export with explicit pads"),
    ({"pads": [3, 3, 3, 3]}, r"pads larger than dilation \* \(kernel - 1\)"),
])
def test_conv_transpose_refusals(tmp_path: Path, attrs: dict, reason: str) -> None:
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", **attrs)]
    path = save(model(nodes, [weight("w", 3, 4, 3, 3)], [1, 3, 8, 8]), tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorsError, match=rf"ConvTranspose \({reason}\) x1 \(up\)"):
        load_network(path)


def test_pad_before_conv_transpose_is_not_folded(tmp_path: Path) -> None:
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
             helper.make_node("ConvTranspose", ["p", "w"], ["y"], name="up", strides=[2, 2])]
    path = save(model(nodes, [ints("pads", 0, 0, 1, 1, 0, 0, 1, 1), weight("w", 3, 4, 3, 3)], [1, 3, 8, 8]),
                tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorsError, match=r"Pad \(before a transposed convolution\) x1 \(pad\)"):
        load_network(path)


@pytest.mark.parametrize("op, mode", [("ReduceMean", "avg"), ("ReduceMax", "max")])
@pytest.mark.parametrize("opset, axes, keepdims", [
    (13, [2, 3], 1),  # axes as an attribute (opsets up to 17)
    (18, [-1, -2], 1),  # axes as an input (opset 18), negative and unordered as dynamo writes them
    (18, [3, 2], 0),
])
def test_spatial_reduction_is_the_global_pool(tmp_path: Path, op: str, mode: str, opset: int, axes: list[int],
                                              keepdims: int) -> None:
    """``AdaptiveAvgPool2d(1)`` exported by ``torch.onnx.export(dynamo=True)`` (ReduceMean over H and W) imports as
    the GlobalAveragePool of the TorchScript export does: the same layers, shapes and MACs."""
    inputs, inits, attrs = ["r", "axes"], [ints("axes", *axes)], {}
    if opset == 13:
        inputs, inits, attrs = ["r"], [], {"axes": axes}
    reduce = helper.make_node(op, inputs, ["g"], name="reduce", keepdims=keepdims, **attrs)
    reference = conv_relu_model().graph  # conv -> bn -> relu -> GlobalAveragePool -> flatten -> gemm
    nodes = [*reference.node[:3], reduce, *reference.node[4:]]
    result = import_model(save(model(nodes, [*reference.initializer, *inits], [1, 3, 32, 32], opset=opset),
                               tmp_path / "m.onnx"))
    conv, pool, fc = result.network.layers
    assert pool.op == ops.pool("reduce", 8, 32, 32, 1, 0, mode) and pool.output_shape == (1, 8, 1, 1)
    assert pool.inputs == ("conv",) and fc.inputs == ("reduce",) and fc.op.bounds["C"] == 8
    if mode == "avg":
        gap = load_network(save(conv_relu_model(), tmp_path / "gap.onnx"))
        assert [(x.op.kind, x.op.dims, x.output_shape, x.fused) for x in result.network.layers] == [
            (x.op.kind, x.op.dims, x.output_shape, x.fused) for x in gap.layers]
        assert result.network.macs == gap.macs


@pytest.mark.parametrize("axes, shape, reason", [
    ([1], [1, 8, 4, 4], r"over axes \[1\] of a rank-4 tensor; only H and W"),  # over the channels
    ([-1], [1, 6, 16], r"over axes \[2\] of a rank-3 tensor"),  # a LayerNorm's mean over the features, alone
    ([], [1, 8, 4, 4], r"over every axis, or none"),
])
def test_other_reductions_stay_unsupported(tmp_path: Path, axes: list[int], shape: list[int], reason: str) -> None:
    nodes = [helper.make_node("ReduceMean", ["x", "axes"] if axes else ["x"], ["y"], name="mean")]
    path = save(model(nodes, [ints("axes", *axes)] if axes else [], shape, opset=18), tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorsError, match=rf"ReduceMean \({reason}.*\) x1 \(mean\)"):
        load_network(path)
