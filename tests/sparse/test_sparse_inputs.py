"""Sparsity inputs (docs/sparse.md): densities on layers, the architecture's sparsity block, the sparse
operand's metadata cost, and the errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.sparsity import layer_densities, sparse_operand
from dnnmap.arch.spec import load_arch, parse_arch
from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.workload import ops, zoo
from dnnmap.workload.sparsity import (apply_densities, measured_density, op_densities, parse_density_options,
                                      with_densities)


def _arch(sparsity: dict | None, word_bits: int = 16) -> object:
    data = {"name": "s", "clock_mhz": 100.0, "word_bits": word_bits,
            "levels": [{"name": "PE"}, {"name": "GLB"}, {"name": "DRAM", "read_energy": 1.0}]}
    if sparsity is not None:
        data["sparsity"] = sparsity
    return parse_arch(data)


def test_density_options_parse_and_refuse_bad_values() -> None:
    assert parse_density_options(["weights=0.1", " dO = 0.5"]) == {"weights": 0.1, "dO": 0.5}
    for bad in ["weights", "=0.1", "W=abc", "W=0", "W=1.5", "W=-0.2", "W=nan"]:
        with pytest.raises(DnnmapError, match="--density"):
            parse_density_options([bad])


def test_densities_by_role_and_by_name() -> None:
    net = zoo.get("resnet18")
    out = apply_densities(net, {"weights": 0.2})
    conv = next(layer.op for layer in out.layers if layer.op.kind == "conv2d")
    assert op_densities(conv) == {"W": 0.2}
    out = apply_densities(net, {"weights": 0.2, "W": 0.3})  # a tensor name overrides its role
    assert op_densities(next(layer.op for layer in out.layers if layer.op.kind == "conv2d")) == {"W": 0.3}
    with pytest.raises(DnnmapError, match="names no input tensor.*W"):
        apply_densities(net, {"Wx": 0.5})
    with pytest.raises(DnnmapError, match="output cannot be sparse"):
        with_densities(conv, {"O": 0.5})


def test_arch_sparsity_block_is_validated() -> None:
    with pytest.raises(InputFileError, match="sparsity.format"):
        _arch({"format": "coo"})
    with pytest.raises(InputFileError, match="no level 'RF'"):
        _arch({"decompress_below": "RF"})
    with pytest.raises(InputFileError, match="density"):
        _arch({"density": {"weight": 0.0}})
    with pytest.raises(InputFileError, match="output"):
        _arch({"density": {"output": 0.5}})
    with pytest.raises(InputFileError, match="output"):
        _arch({"roles": ["output"]})
    with pytest.raises(InputFileError, match="unknown field"):
        _arch({"densty": {"weight": 0.5}})


def test_metadata_cost_per_format() -> None:
    op = ops.conv2d("c", 8, 4, (6, 6), 3)  # W: (G, K, C, R, S) = (1, 4, 8, 3, 3), rows of S = 3
    op = with_densities(op, {"W": 0.25})
    bitmap = sparse_operand(op, _arch({}))
    assert bitmap is not None and bitmap.skip_zeros and all(bitmap.compressed)
    assert bitmap.word_factor == pytest.approx(0.25 + 1 / 16)
    assert bitmap.compressed_words(dense=64, nonzero=16) == pytest.approx(16 + 4)
    csr = sparse_operand(op, _arch({"format": "csr", "index_bits": 4, "pointer_bits": 12, "decompress_below": "GLB"},
                                   word_bits=8))
    assert csr is not None and not csr.skip_zeros and csr.compressed == (False, True, True)
    assert csr.word_factor == pytest.approx(0.25 * (1 + 4 / 8) + 12 / (3 * 8))


def test_dense_cases_and_two_sparse_operands() -> None:
    op = ops.matmul("mm", 4, 4, 4)
    assert sparse_operand(op, _arch({})) is None  # no density given
    assert sparse_operand(with_densities(op, {"W": 0.5}), load_arch("eyeriss")) is None  # dense hardware
    assert sparse_operand(with_densities(op, {"I": 0.5}), _arch({"roles": ["weight"]})) is None
    default = _arch({"density": {"weight": 0.3}})
    assert layer_densities(op, default) == {"I": 1.0, "W": 0.3}
    assert sparse_operand(op, default).density == 0.3  # type: ignore[union-attr]
    assert sparse_operand(with_densities(op, {"W": 1.0}), default) is None  # the layer's own value wins
    with pytest.raises(DnnmapError, match="one sparse operand"):
        sparse_operand(with_densities(op, {"W": 0.5, "I": 0.5}), _arch({}))


def test_measured_density() -> None:
    w = np.zeros((4, 5))
    w[0, :3] = 1.5
    assert measured_density(w) == pytest.approx(3 / 20)
    assert measured_density(np.zeros(8)) == pytest.approx(1 / 8)


def test_onnx_weights_give_measured_densities(tmp_path) -> None:
    """A pruned ONNX model's conv and Gemm initializers set the layers' weight densities; a dense one none."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, numpy_helper

    from dnnmap.workload.importers import load_network

    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 3, 3, 3)).astype(np.float32)
    w[np.abs(w) < np.quantile(np.abs(w), 0.75)] = 0  # 25% kept
    fw = rng.normal(size=(10, 8 * 30 * 30)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Flatten", ["c"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(nodes, "pruned", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT,
                                                                             [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(fw, "fw")])
    path = tmp_path / "pruned.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    conv, fc = load_network(path).layers
    assert op_densities(conv.op) == {"W": pytest.approx(np.count_nonzero(w) / w.size)}
    assert op_densities(fc.op) == {}  # dense trained weights: no density below 1


def test_role_aliases_in_training_passes() -> None:
    """``weights`` names the forward weights W in every pass that reads them, never the weight-update pass's
    role-weight tensor dO (a gradient); tensor names reach the passes directly."""
    from dnnmap.workload.training import training_network

    net = training_network(zoo.get("lenet5"), ("forward", "backward", "weight-update"))
    out = apply_densities(net, {"weights": 0.2, "dO": 0.5})
    by_pass = {}
    for layer in out.layers:
        if layer.op.kind.startswith("conv2d"):
            by_pass.setdefault(layer.op.attr("pass") or "forward", op_densities(layer.op))
    assert by_pass["forward"] == {"W": 0.2}
    assert by_pass["backward"] == {"W": 0.2, "dO": 0.5}
    assert by_pass["weight-update"] == {"dO": 0.5}
