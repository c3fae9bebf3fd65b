"""Clear errors for malformed, dynamic and unsupported models; fuzzed bytes never escape as tracebacks."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
import numpy as np
from onnx import helper, numpy_helper
from onnx_graphs import conv_relu_model, ints, model, save, weight

from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.workload.importers import UnsupportedOperatorsError, import_model, load_network


def _unsupported_model():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1"),
             helper.make_node("Resize", ["c", "", "scales"], ["u"], name="up1"),
             helper.make_node("Conv", ["u", "w2"], ["c2"], name="conv2"),
             helper.make_node("Resize", ["c2", "", "scales"], ["u2"], name="up2"),
             helper.make_node("Frobnicate", ["u2"], ["f"], name="custom", domain="my.ops"),
             helper.make_node("Relu", ["f"], ["y"], name="relu")]
    scales = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    return model(nodes, [weight("w", 4, 3, 1, 1), weight("w2", 4, 4, 1, 1), scales], [1, 3, 8, 8],
                 extra_domains=("my.ops",))


def test_unsupported_ops_are_all_listed(tmp_path: Path) -> None:
    path = save(_unsupported_model(), tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorsError) as info:
        load_network(path)
    msg = str(info.value)
    assert str(path) in msg and "3 node(s) of 2 unsupported operator type(s)" in msg
    assert "Resize x2 (up1, up2)" in msg and "my.ops:Frobnicate x1 (custom)" in msg
    assert "--skip-unsupported" in msg and "Conv" in msg  # tells the way out and what is supported
    assert isinstance(info.value, InputFileError)


def test_skip_unsupported_keeps_going_and_reports(tmp_path: Path) -> None:
    """Skipped nodes are bypassed; shapes downstream stay the file's (shape inference ran on the full graph)."""
    path = save(_unsupported_model(), tmp_path / "m.onnx")
    result = import_model(path, skip_unsupported=True)
    net = result.network
    assert [layer.name for layer in net.layers] == ["conv1", "conv2"]
    assert net.layer("conv2").inputs == ("conv1",) and net.layer("conv2").output_shape == (1, 4, 16, 16)
    assert sorted((s.node, s.op_type) for s in result.report.skipped) == [
        ("custom", "my.ops:Frobnicate"), ("up1", "Resize"), ("up2", "Resize")]
    assert any("skipped 3 unsupported" in line for line in result.report.lines())
    # conv2's loop nest reads the 16x16 map the file declares; past the skipped Resize its producer writes 8x8
    assert result.report.bridged == ("after skipping 'up1', 'conv2' reads 'conv1' [1, 4, 8, 8] but its loop nest "
                                     "keeps its input [1, 4, 16, 16] from the file: the sizes differ and the "
                                     "skipped work is not counted",)
    assert result.report.bridged[0] in net.notes


def test_skipping_a_size_change_is_stated(tmp_path: Path) -> None:
    """A skipped reduction over the channels before an FC: the FC keeps its 16 inputs but its producer writes a
    4x4x4 map; the note names both (a skipped node that keeps the size, an Erf, gets none)."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1"),
             helper.make_node("Erf", ["c"], ["e"], name="erf"),
             helper.make_node("ReduceMean", ["e", "axes"], ["m"], name="mean", keepdims=0),
             helper.make_node("Flatten", ["m"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fw"], ["y"], name="fc", transB=1)]
    inits = [weight("w", 4, 3, 1, 1), ints("axes", 1), weight("fw", 10, 16)]
    result = import_model(save(model(nodes, inits, [1, 3, 4, 4], opset=18), tmp_path / "m.onnx"),
                          skip_unsupported=True)
    assert [layer.name for layer in result.network.layers] == ["conv1", "fc"]
    assert result.network.layer("fc").op.bounds["C"] == 16 and result.network.layer("fc").inputs == ("conv1",)
    assert [s.node for s in result.report.skipped] == ["erf", "mean"]
    assert result.report.bridged == ("after skipping 'mean', 'fc' reads 'conv1' [1, 4, 4, 4] but its loop nest keeps "
                                     "its input [1, 16] from the file: the sizes differ and the skipped work is not "
                                     "counted",)


def test_dynamic_input_needs_a_shape(tmp_path: Path) -> None:
    path = save(conv_relu_model(["batch", 3, "h", "w"]), tmp_path / "m.onnx")
    with pytest.raises(InputFileError, match=r"input 'x' has dynamic or unknown dimensions \(batch, 3, h, w\).*"
                                             r"--input-shape x=1x3x224x224"):
        load_network(path)
    net = load_network(path, input_shapes={"x": (2, 3, 64, 48)})
    assert net.inputs == (("x", (2, 3, 64, 48)),)
    assert net.layers[0].output_shape == (2, 8, 64, 48) and net.layers[-1].output_shape == (2, 10, 1, 1)


@pytest.mark.parametrize("shapes, message", [
    ({"image": (1, 3, 8, 8)}, r"unknown input\(s\) image; the model's inputs are: x"),
    ({"x": (1, 3, 8)}, r"has 3 dimensions, but the input has 4"),
    ({"x": (1, 4, 8, 8)}, r"conflicts with the model's fixed shape \(batch, 3, h, w\)"),
])
def test_bad_input_shape_options(tmp_path: Path, shapes: dict, message: str) -> None:
    path = save(conv_relu_model(["batch", 3, "h", "w"]), tmp_path / "m.onnx")
    with pytest.raises(InputFileError, match=message):
        load_network(path, input_shapes=shapes)


def test_missing_initializer(tmp_path: Path) -> None:
    m = conv_relu_model()
    del m.graph.initializer[0]  # the conv weight "w"
    with pytest.raises(InputFileError, match=r"m.onnx: node 'conv' \(Conv\) reads 'w', which is neither .*missing "
                                             r"initializer"):
        load_network(save(m, tmp_path / "m.onnx"))


def test_inconsistent_channel_counts(tmp_path: Path) -> None:
    m = conv_relu_model()
    m.graph.initializer[0].dims[1] = 5  # weight expects 5 input channels, the input has 3
    with pytest.raises(InputFileError, match=r"inconsistent"):
        load_network(save(m, tmp_path / "m.onnx"))


def test_inconsistent_declared_shapes(tmp_path: Path) -> None:
    m = conv_relu_model()
    del m.graph.output[0].type.tensor_type.shape.dim[:]
    for d in (1, 11):
        m.graph.output[0].type.tensor_type.shape.dim.add().dim_value = d
    with pytest.raises(InputFileError, match=r"m.onnx: inconsistent model: ONNX shape inference failed"):
        load_network(save(m, tmp_path / "m.onnx"))


@pytest.mark.parametrize("content, message", [
    (b"", "file is empty"),
    (b"this is not a model\n", "not an ONNX model"),
    (b"\x08\x07\x12\x04test", "no graph nodes"),  # a valid ModelProto with only ir_version and producer
])
def test_not_onnx(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=message):
        load_network(path)


def test_error_chains_the_original_exception(tmp_path: Path) -> None:
    """The short message is for the user; the parser's own exception stays attached as the cause."""
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"this is not a model\n")
    with pytest.raises(InputFileError) as info:
        load_network(path)
    cause = info.value.__cause__
    assert cause is not None and not isinstance(cause, DnnmapError)
    assert str(cause) in str(info.value)  # the protobuf parser's error, quoted in the short message


def test_missing_file_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="no such file"):
        load_network(tmp_path / "absent.onnx")
    (tmp_path / "model.pt").write_bytes(b"x")
    with pytest.raises(InputFileError, match=r"unknown model format '.pt'; expected .onnx"):
        load_network(tmp_path / "model.pt")


def _outcome(path: Path, reference) -> str:
    try:
        net = load_network(path)
    except DnnmapError as exc:
        assert str(path) in str(exc), f"error does not name the file: {exc}"
        return "error"
    return "same" if net == reference else "different"


def test_fuzz_truncation(tmp_path: Path) -> None:
    """Every prefix of a model either is rejected with a clear error or (cut in trailing metadata) imports fine."""
    data = conv_relu_model().SerializeToString()
    reference = load_network(save(conv_relu_model(), tmp_path / "ref.onnx"))
    rng = random.Random(1)
    cuts = sorted({*rng.sample(range(1, len(data)), min(150, len(data) - 1)), 1, len(data) - 1})
    outcomes = []
    for cut in cuts:
        path = tmp_path / "cut.onnx"
        path.write_bytes(data[:cut])
        outcomes.append(_outcome(path, reference))
    assert "different" not in outcomes and outcomes.count("error") >= len(cuts) - 5


def test_fuzz_corrupted_bytes(tmp_path: Path) -> None:
    """Random byte flips: any outcome but an unexpected exception (an import may legitimately succeed)."""
    data = bytearray(conv_relu_model().SerializeToString())
    rng = random.Random(2)
    reference = load_network(save(conv_relu_model(), tmp_path / "ref.onnx"))
    outcomes = []
    for _ in range(200):
        corrupted = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupted[rng.randrange(len(corrupted))] = rng.randrange(256)
        path = tmp_path / "bad.onnx"
        path.write_bytes(bytes(corrupted))
        outcomes.append(_outcome(path, reference))
    assert outcomes.count("error") > 20


def test_unknown_shape_behind_custom_op(tmp_path: Path) -> None:
    """A custom op hides its output shape: the conv behind it is listed too (unknown rank), and skipping both
    leaves nothing to import, which is an error rather than an empty network."""
    nodes = [helper.make_node("Frobnicate", ["x"], ["f"], name="custom", domain="my.ops"),
             helper.make_node("Conv", ["f", "w"], ["y"], name="conv")]
    path = save(model(nodes, [weight("w", 4, 3, 1, 1)], [1, 3, 8, 8], extra_domains=("my.ops",)), tmp_path / "m.onnx")
    with pytest.raises(UnsupportedOperatorsError, match=r"Conv \(unknown rank\) x1 \(conv\); my.ops:Frobnicate x1"):
        load_network(path)
    with pytest.raises(InputFileError, match=r"m.onnx: no layer with a loop nest is left"):
        load_network(path, skip_unsupported=True)


def test_tensorflow_formats_without_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keras files and SavedModel directories name the file and the extra to install when TensorFlow is absent."""
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # a None entry makes the import fail, installed or not
    monkeypatch.setitem(sys.modules, "keras", None)
    saved = tmp_path / "exported"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"\x08\x01")
    (tmp_path / "m.keras").write_bytes(b"PK")
    for path in (saved, tmp_path / "m.keras"):
        with pytest.raises(InputFileError, match=rf"^{path}: importing Keras and TensorFlow models needs "
                                                 r"TensorFlow/Keras: pip install 'dnnmap\[keras\]'"):
            load_network(path)
