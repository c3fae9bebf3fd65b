"""TensorFlow SavedModel front end: Keras 3 exports (``model.export``) and hand-written tf.Module graphs.

Needs ``pip install 'dnnmap[keras]'`` (tensorflow-cpu); skipped with that hint otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow", reason="TensorFlow not installed; run: pip install 'dnnmap[keras]'")
keras = pytest.importorskip("keras", reason="Keras not installed; run: pip install 'dnnmap[keras]'")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from keras_models import small_model  # noqa: E402
from network_compare import assert_same_network  # noqa: E402

from dnnmap.errors import InputFileError  # noqa: E402
from dnnmap.workload import ops, zoo  # noqa: E402
from dnnmap.workload.importers import (  # noqa: E402
    UnsupportedOperatorsError,
    import_keras_model,
    import_model,
    load_network,
    save_network,
)

SPEC = tf.TensorSpec((None, 16, 16, 3), tf.float32, name="x")


def _export(model: keras.Model, path: Path) -> Path:
    model.export(str(path), verbose=False)
    return path


@pytest.fixture(scope="module")
def small_savedmodel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _export(small_model(dilated=True), tmp_path_factory.mktemp("savedmodel") / "small")


def test_keras_export_equals_the_keras_front_end(small_savedmodel: Path) -> None:
    """Two front ends, one model: the SavedModel's TensorFlow ops give the layers the Keras layers give."""
    result = import_model(small_savedmodel)
    assert_same_network(result.network, import_keras_model(small_model(dilated=True)).network)
    net = result.network
    assert net.source == "savedmodel:small" and net.inputs == (("img", (1, 3, 32, 32)),)
    dilated = next(layer for layer in net.layers if layer.name.endswith("dilated_1/convolution"))
    assert dilated.op.attr("dilation") == (2, 2) and dilated.op.attr("padding") == (2, 2, 2, 2)
    report = result.report
    assert [(f.op_type, f.into.split("/")[1]) for f in report.folded_batchnorms] == [
        ("Mul+AddV2 (per-channel scale and shift)", "dw_1")]
    assert len(report.folded_biases) == 6  # one per conv/dense layer (the separable conv's after its pointwise half)
    assert [f.into.split("/")[1] for f in report.folded_pads] == ["stem_1"]
    assert any("assumed 1" in line for line in report.lines())


def test_round_trip_through_network_file(small_savedmodel: Path, tmp_path: Path) -> None:
    net = load_network(small_savedmodel)
    assert load_network(save_network(net, tmp_path / "small.yaml")) == net


class OpsModule(tf.Module):
    """TensorFlow ops Keras does not write: explicit padding, FusedBatchNormV3, a Conv2D ``dilations`` attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.w1 = tf.Variable(tf.zeros((3, 3, 3, 8)))
        self.bn = [tf.Variable(tf.ones((8,))) for _ in range(4)]
        self.w2 = tf.Variable(tf.zeros((3, 3, 8, 8)))
        self.dw = tf.Variable(tf.zeros((3, 3, 8, 2)))
        self.fc = tf.Variable(tf.zeros((24, 5)))
        self.bias = tf.Variable(tf.zeros((5,)))

    @tf.function(input_signature=[SPEC])
    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        c = tf.nn.conv2d(x, self.w1, strides=2, padding=[[0, 0], [1, 2], [0, 1], [0, 0]], name="explicit")
        c = tf.raw_ops.FusedBatchNormV3(x=c, scale=self.bn[0], offset=self.bn[1], mean=self.bn[2],
                                        variance=self.bn[3], is_training=False, name="bn")[0]
        c = tf.nn.relu6(c, name="relu6")
        d = tf.raw_ops.Conv2D(input=c, filter=self.w2, strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 2, 2, 1],
                              name="dilated")
        e = tf.nn.depthwise_conv2d(c, self.dw, strides=[1, 1, 1, 1], padding="SAME", name="depthwise")
        m = tf.nn.max_pool2d(tf.concat([d, e], axis=-1, name="cat"), 3, 2, "SAME", name="pool")
        g = tf.reduce_mean(m, axis=[1, 2], keepdims=True, name="gap")
        f = tf.nn.bias_add(tf.matmul(tf.reshape(g, (-1, 24)), self.fc, name="fc"), self.bias, name="fc_bias")
        return tf.nn.softmax(f * 2.0, name="softmax")


def test_tensorflow_ops(tmp_path: Path) -> None:
    tf.saved_model.save(OpsModule(), str(tmp_path / "ops"))
    result = import_model(tmp_path / "ops")
    by_name = {layer.name: layer for layer in result.network.layers}
    assert list(by_name) == ["explicit", "dilated", "depthwise", "cat", "pool", "gap", "fc"]
    assert by_name["explicit"].op == ops.conv2d("explicit", 3, 8, 16, 3, 2, (1, 0, 2, 1))
    assert by_name["explicit"].output_shape == (1, 8, 9, 8) and by_name["explicit"].fused == ("relu6",)
    assert by_name["dilated"].op == ops.conv2d("dilated", 8, 8, (9, 8), 3, 1, 2, 2)
    assert by_name["depthwise"].op == ops.conv2d("depthwise", 8, 16, (9, 8), 3, 1, 1, groups=8)
    assert by_name["cat"].inputs == ("dilated", "depthwise") and by_name["cat"].output_shape == (1, 24, 9, 8)
    assert by_name["pool"].op == ops.pool("pool", 24, (9, 8), 3, 2, (1, 0, 1, 1))
    assert by_name["gap"].op.kind == "pool_avg" and by_name["gap"].output_shape == (1, 24, 1, 1)
    assert by_name["fc"].op == ops.fully_connected("fc", 24, 5) and by_name["fc"].fused == ("mul_const", "softmax")
    assert [(f.node, f.into) for f in result.report.folded_batchnorms] == [("bn", "explicit")]
    assert [(f.node, f.into) for f in result.report.folded_biases] == [("fc_bias", "fc")]


class UnfoldableModule(tf.Module):
    """A bias add and batch-norms on the graph input: nothing to fold them into, so they stay element-wise; a
    scale and shift is a batch-norm only when both constants are per-channel."""

    @tf.function(input_signature=[SPEC])
    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        b = tf.nn.bias_add(x, tf.zeros((3,)), name="bias")
        n = tf.raw_ops.FusedBatchNormV3(x=b, scale=tf.ones((3,)), offset=tf.zeros((3,)), mean=tf.zeros((3,)),
                                        variance=tf.ones((3,)), is_training=False, name="bn")[0]
        scaled = (n * tf.ones((1, 1, 1, 3)) + tf.zeros((3,))) * 2.0 + 1.0
        return tf.nn.avg_pool2d(scaled, 2, 2, "VALID", name="pool")


def test_unfoldable_bias_and_batchnorm_stay_elementwise(tmp_path: Path) -> None:
    tf.saved_model.save(UnfoldableModule(), str(tmp_path / "m"))
    result = import_model(tmp_path / "m")
    assert [(layer.name, layer.op.kind, layer.fused) for layer in result.network.layers] == [
        ("bias", "identity", ("bias_add", "batchnorm", "batchnorm", "mul_const", "add_const")),
        ("pool", "pool_avg", ())]
    assert result.report.folded_biases == () and result.report.folded_batchnorms == ()


class ResizeModule(tf.Module):
    @tf.function(input_signature=[SPEC])
    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        c = tf.nn.conv2d(x, tf.zeros((1, 1, 3, 4)), 1, "SAME", name="conv")
        u = tf.image.resize(c, (32, 32), name="up1")
        c2 = tf.nn.conv2d(u, tf.zeros((3, 3, 4, 4)), 1, "SAME", name="conv2")
        t = tf.transpose(tf.image.resize(c2, (64, 64), name="up2"), (0, 2, 1, 3), name="flip")
        return tf.nn.relu(t)


def test_unsupported_ops_listed_then_skipped(tmp_path: Path) -> None:
    tf.saved_model.save(ResizeModule(), str(tmp_path / "m"))
    with pytest.raises(UnsupportedOperatorsError, match=r"m: 3 node\(s\) of 2 unsupported operator type\(s\): "
                       r"ResizeBilinear x2 \(up1/ResizeBilinear, up2/ResizeBilinear\); "
                       r"Transpose x1 \(flip\)\. Supported operators: .*Conv2D"):
        load_network(tmp_path / "m")
    result = import_model(tmp_path / "m", skip_unsupported=True)
    assert [layer.name for layer in result.network.layers] == ["conv", "conv2"]
    assert result.network.layer("conv2").output_shape == (1, 4, 32, 32) and result.network.layer("conv2").fused == (
        "relu",)
    assert sorted(s.op_type for s in result.report.skipped) == ["ResizeBilinear", "ResizeBilinear", "Transpose"]


def test_input_shape_option(tmp_path: Path) -> None:
    inp = keras.Input((None, None, 3), name="img")
    path = _export(keras.Model(inp, keras.layers.Conv2D(4, 3, strides=2, padding="same", name="conv")(inp)),
                   tmp_path / "dynamic")
    with pytest.raises(InputFileError, match=r"input 'img' has dynamic dimensions \(None, None, None, 3\).*"
                                             r"--input-shape img=1x224x224x3"):
        load_network(path)
    with pytest.raises(InputFileError, match=r"--input-shape img=1x3x64x48 does not fit the model's input shape"):
        load_network(path, input_shapes={"img": (1, 3, 64, 48)})
    with pytest.raises(InputFileError, match=r"unknown input\(s\) x; the model's inputs are: img"):
        load_network(path, input_shapes={"x": (1, 64, 48, 3)})
    net = load_network(path, input_shapes={"img": (2, 64, 48, 3)})
    assert net.inputs == (("img", (2, 3, 64, 48)),) and net.layers[0].output_shape == (2, 4, 32, 24)


class TwoSignatures(tf.Module):
    @tf.function(input_signature=[SPEC])
    def double(self, x: tf.Tensor) -> tf.Tensor:
        return x * 2.0

    @tf.function(input_signature=[SPEC])
    def square(self, x: tf.Tensor) -> tf.Tensor:
        return x * x


def test_signature_choice(tmp_path: Path) -> None:
    module = TwoSignatures()
    tf.saved_model.save(module, str(tmp_path / "two"), signatures={"double": module.double, "square": module.square})
    with pytest.raises(InputFileError, match=r"two: the SavedModel has 2 signatures \(double, square\) and none "
                                             r"named 'serving_default'"):
        load_network(tmp_path / "two")
    tf.saved_model.save(module, str(tmp_path / "one"), signatures={"square": module.square})
    (layer,) = load_network(tmp_path / "one").layers
    assert layer.op.kind == "mul" and layer.output_shape == (1, 3, 16, 16)
    tf.saved_model.save(tf.Module(), str(tmp_path / "none"))
    with pytest.raises(InputFileError, match=r"none: the SavedModel has no signatures"):
        load_network(tmp_path / "none")


@pytest.mark.parametrize("content, message", [
    (b"", "saved_model.pb is empty"),
    (b"\x08\x01 not a protobuf \xff\xff", "cannot load the TensorFlow SavedModel.*Wire format was corrupt"),
    (b"\x0a\x00", "cannot load the TensorFlow SavedModel.*0 MetaGraphs"),
])
def test_malformed_savedmodel_directory(tmp_path: Path, content: bytes, message: str) -> None:
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(content)
    with pytest.raises(InputFileError, match=rf"^{saved}: {message}"):
        load_network(saved)


def test_directory_without_saved_model_pb(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"a directory without saved_model.pb"):
        load_network(tmp_path)


APPLICATIONS = {"MobileNetV2": "mobilenetv2", "ResNet50": "resnet50_v1", "InceptionV3": "inceptionv3",
                "VGG16": "vgg16"}


@pytest.mark.parametrize("app", [  # 7-17 s each, mostly the export; all but MobileNetV2 only with -m slow (its residual
    # adds, depthwise convs and folded batch-norms are the whole-application case; test_tensorflow_ops has max-pool
    # and explicit padding, test_import_keras the other applications' configurations)
    "MobileNetV2", *(pytest.param(app, marks=pytest.mark.slow) for app in ("ResNet50", "InceptionV3", "VGG16"))])
def test_keras_application_export_matches_zoo(tmp_path: Path, app: str) -> None:
    model = getattr(keras.applications, app)(weights=None, classifier_activation=None)
    n_bn = sum(type(layer).__name__ == "BatchNormalization" for layer in model.layers)
    result = import_model(_export(model, tmp_path / app))
    assert_same_network(result.network, zoo.get(APPLICATIONS[app]))
    assert len(result.report.folded_batchnorms) == n_bn and result.report.skipped == ()
