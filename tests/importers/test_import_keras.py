"""Keras front end: keras.applications architectures (weights never initialized) against the zoo, layer coverage, files.

Needs ``pip install 'dnnmap[keras]'`` (tensorflow-cpu); skipped with that hint otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
keras = pytest.importorskip("keras", reason="Keras not installed; run: pip install 'dnnmap[keras]'")
layers = keras.layers
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # keras calls np.array(copy=False)

from keras_models import application, small_model  # noqa: E402
from network_compare import assert_same_network  # noqa: E402

from dnnmap.errors import InputFileError  # noqa: E402
from dnnmap.workload import ops, zoo  # noqa: E402
from dnnmap.workload.importers import (  # noqa: E402
    UnsupportedOperatorsError,
    import_keras_model,
    load_network,
    save_network,
)

APPLICATIONS = {  # keras.applications builder -> zoo name (Keras ResNet50 is v1: stride on the first 1x1)
    "VGG16": "vgg16", "MobileNetV2": "mobilenetv2", "InceptionV3": "inceptionv3", "ResNet50": "resnet50_v1",
}


@pytest.mark.parametrize("app", sorted(APPLICATIONS))
def test_keras_application_matches_zoo(app: str) -> None:
    model = application(app)
    result = import_keras_model(model, label=app)
    assert_same_network(result.network, zoo.get(APPLICATIONS[app]))
    n_bn = sum(type(layer).__name__ == "BatchNormalization" for layer in model.layers)
    assert len(result.report.folded_batchnorms) == n_bn
    assert any("assumed 1" in line for line in result.report.lines())


def test_layer_coverage_and_fusion() -> None:
    result = import_keras_model(small_model())
    net = result.network
    by_name = {layer.name: layer for layer in net.layers}
    assert net.inputs == (("img", (1, 3, 32, 32)),)
    assert by_name["stem"].op == ops.conv2d("stem", 3, 8, 32, 3, 2, (0, 0, 1, 1))
    assert by_name["stem"].fused == ("relu",)
    assert by_name["dw"].op.kind == "conv2d" and by_name["dw"].op.bounds["G"] == 8  # multiplier 2: K=2 per group
    assert by_name["dw"].output_shape == (1, 16, 16, 16) and by_name["dw"].fused == ("relu6",)
    assert by_name["add"].inputs == ("stem", "project")
    depthwise, pointwise = by_name["sep/conv_0"], by_name["sep"]
    assert depthwise.op.kind == "depthwise" and depthwise.fused == ()
    assert pointwise.op.kind == "pointwise" and pointwise.inputs == ("sep/conv_0",) and pointwise.fused == ("relu",)
    assert by_name["pool"].output_shape == by_name["avgpool"].output_shape == (1, 16, 8, 8)
    assert by_name["avgpool"].op.attr("padding") == (0, 0, 1, 1)
    assert by_name["cat"].output_shape == (1, 32, 8, 8)
    assert by_name["fc"].inputs == ("gap",) and by_name["fc"].fused == ("softmax",)
    assert [(f.node, f.into) for f in result.report.folded_batchnorms] == [("dw_bn", "dw")]


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_keras_files_import_and_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"small{suffix}"
    small_model().save(path)
    net = load_network(path)
    assert net.source == f"keras:small{suffix}"
    assert net.macs == import_keras_model(small_model()).network.macs
    assert load_network(save_network(net, tmp_path / "small.yaml")) == net


def test_input_shape_option_changes_resolution() -> None:
    inp = keras.Input((None, None, 3), name="img")
    out = layers.Conv2D(4, 3, padding="same", name="conv")(inp)
    model = keras.Model(inp, out)
    with pytest.raises(InputFileError, match=r"input 'img' has dynamic dimensions \(None, None, None, 3\).*"
                                             r"--input-shape img=1x224x224x3"):
        import_keras_model(model)
    net = import_keras_model(model, input_shapes={"img": (2, 64, 48, 3)}).network
    assert net.inputs == (("img", (2, 3, 64, 48)),) and net.layers[0].output_shape == (2, 4, 64, 48)


def test_unsupported_layers_listed_then_skipped() -> None:
    inp = keras.Input((16, 16, 3), name="img")
    x = layers.Conv2D(4, 3, padding="same", name="conv")(inp)
    x = layers.UpSampling2D(name="up1")(x)
    x = layers.Conv2D(4, 3, padding="same", name="conv2")(x)
    x = layers.UpSampling2D(name="up2")(x)
    x = layers.Cropping2D(1, name="crop")(x)
    model = keras.Model(inp, x)
    with pytest.raises(UnsupportedOperatorsError, match=r"3 node\(s\) of 2 unsupported .*Cropping2D x1 \(crop\); "
                                                        r"UpSampling2D x2 \(up1, up2\)"):
        import_keras_model(model, label="up.keras")
    result = import_keras_model(model, skip_unsupported=True)
    assert [layer.name for layer in result.network.layers] == ["conv", "conv2"]
    assert result.network.layer("conv2").output_shape == (1, 4, 32, 32)


def test_not_a_keras_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.keras"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(InputFileError, match=r"broken.keras: cannot load the Keras model"):
        load_network(bad)


def _resident_mb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))


def test_applications_leave_their_weights_uninitialized() -> None:
    """VGG16's 138 M parameters (0.55 GB, 1.4 GB resident while initialized, kept by TensorFlow's allocator) are
    never allocated, also not when a later model's construction ends a Keras scope (which runs deferred
    initializers still registered)."""
    before = _resident_mb()
    model = application("VGG16")
    assert model.count_params() == 138_357_544
    layers.Lambda(lambda t: keras.ops.sum(t, axis=-1))(keras.Input((4, 4, 3)))  # enters and leaves a Keras scope
    assert _resident_mb() - before < 200
