"""Model zoo: MAC totals against published figures, layer counts, shapes, and DAG consistency."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from dnnmap.workload import ops, zoo
from dnnmap.workload.ir import Layer, Network
from dnnmap.workload.zoo import mobile, nve

CONV_KINDS = ("conv2d", "pointwise", "depthwise")
BRIEF_NAMES = ("lenet5", "alexnet", "vgg16", "vgg16_e", "resnet18", "resnet50", "mobilenetv2",
               "squeezenet1_0", "squeezenet1_1", "inceptionv3", "nve_face", "nve_speed")
ALL_NAMES = (*BRIEF_NAMES, "resnet50_v1")


# ---- generic consistency check -------------------------------------------------------

def _window_ok(size: int, pad_begin: int, pad_end: int, stride: int, extent: int) -> bool:
    """The accessed input extent fits the padded map and no further full window would (floor mode)."""
    padded = size + pad_begin + pad_end
    return pad_begin >= 0 and padded - stride < extent <= padded


def layer_problems(layer: Layer, shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """Disagreements between ``layer`` and the output shapes of the layers it reads."""
    op, out = layer.op, layer.output_shape
    ins = [shapes[s] for s in layer.inputs]
    b = op.bounds
    problems = []
    batch = b.get("N", b.get("B"))
    if out[0] != batch or any(s[0] != batch for s in ins):
        problems.append(f"batch {batch} vs output {out} / inputs {ins}")
    if op.kind in (*CONV_KINDS, "fc"):
        (n, c, h, w), = ins
        if op.kind == "fc":
            expect_c, expect_hw = c * h * w, (1, 1)
        else:
            expect_c, expect_hw = c, (h, w)
        if op.attr("in_channels") != expect_c or b["G"] * b["C"] != expect_c or op.attr("in_hw") != expect_hw:
            problems.append(f"reads {ins[0]} but is built for C={op.attr('in_channels')} HW={op.attr('in_hw')}")
        if out != (n, b["G"] * b["K"], b["P"], b["Q"]):
            problems.append(f"output shape {out} vs loop bounds {b}")
        if op.connectivity is not None:
            if len(op.connectivity) != out[1]:
                problems.append("connectivity has one entry per output map")
            for maps in op.connectivity:
                if not maps or list(maps) != sorted(set(maps)) or maps[-1] >= expect_c:
                    problems.append(f"connection list {maps} must be sorted input maps < {expect_c}")
    elif op.kind in ("pool_max", "pool_avg"):
        (n, c, h, w), = ins
        if b["G"] != c or op.attr("in_hw") != (h, w) or out != (n, c, b["P"], b["Q"]):
            problems.append(f"pool over {ins[0]} gives {out} with bounds {b}")
    elif op.kind == "add":
        if len(ins) < 2 or any(s != out for s in ins) or b["G"] != out[1]:
            problems.append(f"add of {ins} -> {out}")
    elif op.kind == "concat":
        if len(ins) < 2 or sum(s[1] for s in ins) != out[1] or any(s[2:] != out[2:] for s in ins) \
                or b["G"] != out[1]:
            problems.append(f"concat of {ins} -> {out}")
    else:
        problems.append(f"unexpected kind {op.kind}")
    if op.kind in (*CONV_KINDS, "pool_max", "pool_avg") and not problems:
        (_, _, h, w), = ins
        pt, pl, pb, pr = op.attr("padding")
        sh, sw = op.attr("stride")
        eh, ew = op.tensor("I").shape(b)[-2:]
        if not (_window_ok(h, pt, pb, sh, eh) and _window_ok(w, pl, pr, sw, ew)):
            problems.append(f"window {eh}x{ew} does not tile {h}x{w} padded {op.attr('padding')} stride {sh}x{sw}")
    if math.prod(op.output.shape(b)) != math.prod(out):
        problems.append(f"output tensor {op.output.shape(b)} holds a different element count than {out}")
    return problems


def consistency_problems(net: Network) -> list[str]:
    """All shape disagreements in ``net`` plus structural faults (dangling layers, several sinks)."""
    shapes = dict(net.inputs)
    problems = []
    for layer in net.layers:
        problems += [f"{layer.name}: {p}" for p in layer_problems(layer, shapes)]
        shapes[layer.name] = layer.output_shape
    sinks = [layer.name for layer in net.layers if not net.consumers(layer.name)]
    if sinks != [net.layers[-1].name]:
        problems.append(f"expected a single sink (the classifier/last layer), got {sinks}")
    return problems


@pytest.fixture(scope="module", params=ALL_NAMES)
def network(request: pytest.FixtureRequest) -> Network:
    return zoo.get(request.param)


def test_every_briefed_model_is_registered():
    assert set(BRIEF_NAMES) <= set(zoo.names())


def test_layer_inputs_agree_with_producer_outputs(network: Network):
    assert consistency_problems(network) == []


def test_graph_is_a_dag(network: Network):
    g = network.to_networkx()
    assert nx.is_directed_acyclic_graph(g)
    assert g.number_of_nodes() == len(network.layers) + len(network.inputs)


def test_consistency_check_catches_a_wrong_producer_shape():
    net = zoo.get("resnet18")
    shapes = dict(net.inputs) | {layer.name: layer.output_shape for layer in net.layers}
    layer = net.layer("layer2.0.conv1")
    assert layer_problems(layer, shapes) == []
    shapes["layer1.1.add"] = (1, 64, 28, 28)
    assert layer_problems(layer, shapes)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_batch_is_honoured(name: str):
    one, two = zoo.get(name), zoo.get(name, batch=2)
    assert two.macs == 2 * one.macs
    assert all(layer.output_shape[0] == 2 for layer in two.layers)
    assert consistency_problems(two) == []


# ---- MACs against published figures -------------------------------------------------

PUBLISHED_MACS = {
    "alexnet": 0.72e9,  # two-tower AlexNet
    "vgg16": 15.5e9,
    "vgg16_e": 19.6e9,  # configuration E (VGG19)
    "resnet18": 1.82e9,
    "resnet50": 4.1e9,  # v1.5
    "resnet50_v1": 3.8e9,  # He et al. 2016, Table 1
    "mobilenetv2": 0.30e9,
    "squeezenet1_0": 0.82e9,  # 224x224 (torchvision)
    "squeezenet1_1": 0.35e9,
    "inceptionv3": 5.7e9,
}


@pytest.mark.parametrize("name,published", sorted(PUBLISHED_MACS.items()))
def test_macs_within_two_percent_of_published(name: str, published: float):
    assert zoo.get(name).macs == pytest.approx(published, rel=0.02)


def test_squeezenet1_0_at_caffe_resolution_matches_084_gmacs():
    assert mobile.squeezenet1_0(resolution=227).macs == pytest.approx(0.84e9, rel=0.02)


def test_lenet5_macs_exact():
    assert zoo.get("lenet5").macs == 416_520


def test_resnet50_stride_placement():
    v15, v1 = zoo.get("resnet50"), zoo.get("resnet50_v1")
    assert v15.layer("layer4.0.conv2").op.attr("stride") == (2, 2)
    assert v15.layer("layer4.0.conv1").op.attr("stride") == (1, 1)
    # Marvel L14 "CONV5_1_1": stride-2 1x1, 1024 -> 512 channels, 7x7 output (v1 only)
    conv = v1.layer("layer4.0.conv1")
    assert conv.op.attr("stride") == (2, 2) and conv.op.attr("in_channels") == 1024
    assert conv.output_shape == (1, 512, 7, 7)
    assert v1.macs < v15.macs


# ---- NVE networks (thesis Table 1) --------------------------------------------------

# (layer, #maps, W, H, MACs as printed in Table 1, half a unit of its last printed digit)
TABLE1 = {
    "nve_face": [("L1", 4, 638, 358, 32.9e6, 0.05e6), ("L2", 14, 317, 177, 17.95e6, 0.005e6),
                 ("L3", 14, 312, 172, 27e6, 0.5e6), ("L4", 1, 312, 172, 0.75e6, 0.005e6)],
    "nve_speed": [("L1", 6, 637, 357, 49.1e6, 0.05e6), ("L2", 16, 317, 177, 121.2e6, 0.05e6),
                  ("L3", 80, 312, 172, 858.6e6, 0.05e6), ("L4", 1, 312, 172, 4.3e6, 0.05e6)],
}
TABLE1_TOTAL = {"nve_face": (78.6e6, 0.05e6), "nve_speed": (1.03e9, 0.005e9)}


@pytest.mark.parametrize("name", sorted(TABLE1))
def test_nve_layers_match_table1(name: str):
    net = zoo.get(name)
    assert [layer.name for layer in net.layers] == [row[0] for row in TABLE1[name]]
    for layer_name, maps, width, height, macs, tol in TABLE1[name]:
        layer = net.layer(layer_name)
        assert layer.output_shape == (1, maps, height, width)
        assert abs(layer.op.macs - macs) <= tol, (layer_name, layer.op.macs)
    total, tol = TABLE1_TOTAL[name]
    assert abs(net.macs - total) <= tol


def test_nve_macs_follow_the_connection_tables():
    """MAC = sum over output maps of #inputs * outW * outH * kH * kW (the Table 1 formula)."""
    for layers, net in ((nve.FACE_LAYERS, zoo.get("nve_face")), (nve.SPEED_LAYERS, zoo.get("nve_speed"))):
        for spec in layers:
            op = net.layer(spec.name).op
            assert op.connectivity == spec.connectivity
            pairs = sum(len(c) for c in spec.connectivity)
            assert op.macs == pairs * spec.out_width * spec.out_height * spec.kernel ** 2
            assert op.macs < op.iterations or pairs == op.bound("K") * op.bound("C")


def test_nve_table1_geometry_reconciles_windows_with_explicit_end_padding():
    face, speed = zoo.get("nve_face"), zoo.get("nve_speed")
    assert face.layer("L2").op.attr("padding") == (0, 0, -2, -2)  # reads 636x356 of 638x358
    assert speed.layer("L1").op.attr("padding") == (0, 0, -2, -2)  # reads 1278x718 of 1280x720
    assert speed.layer("L2").op.attr("padding") == (0, 0, 1, 1)  # needs 638x358, L1 gives 637x357
    assert speed.layer("L3").op.attr("padding") == (0, 0, -1, -1)  # reads 316x176 of 317x177


def test_nve_valid_geometry_chains_unpadded_layers():
    for net in (nve.nve_face(geometry="valid"), nve.nve_speed(geometry="valid")):
        assert consistency_problems(net) == []
        assert all(layer.op.attr("padding") == (0, 0, 0, 0) for layer in net.layers)
    assert nve.nve_speed(geometry="valid").layer("L1").output_shape == (1, 6, 358, 638)
    with pytest.raises(ValueError, match="geometry"):
        nve.nve_face(geometry="same")  # type: ignore[arg-type]


# ---- structure ----------------------------------------------------------------------

@pytest.mark.parametrize("name,convs,depthwise,fcs,adds,concats", [
    ("lenet5", 2, 0, 3, 0, 0),
    ("alexnet", 5, 0, 3, 0, 0),
    ("vgg16", 13, 0, 3, 0, 0),
    ("vgg16_e", 16, 0, 3, 0, 0),
    ("resnet18", 20, 0, 1, 8, 0),
    ("resnet50", 53, 0, 1, 16, 0),
    ("mobilenetv2", 52, 17, 1, 10, 0),
    ("squeezenet1_0", 26, 0, 0, 0, 8),
    ("squeezenet1_1", 26, 0, 0, 0, 8),
    ("inceptionv3", 94, 0, 1, 0, 11),
])
def test_layer_counts(name: str, convs: int, depthwise: int, fcs: int, adds: int, concats: int):
    net = zoo.get(name)
    assert net.count(*CONV_KINDS) == convs
    assert net.count("depthwise") == depthwise
    assert net.count("fc") == fcs
    assert net.count("add") == adds
    assert net.count("concat") == concats


@pytest.mark.parametrize("name,layer,shape", [
    ("alexnet", "conv1", (96, 55, 55)),
    ("alexnet", "pool5", (256, 6, 6)),
    ("vgg16", "block5_pool", (512, 7, 7)),
    ("vgg16_e", "block3_conv4", (256, 56, 56)),
    ("resnet18", "layer4.1.add", (512, 7, 7)),
    ("resnet50", "maxpool", (64, 56, 56)),
    ("resnet50", "layer4.2.add", (2048, 7, 7)),
    ("resnet50", "fc", (1000, 1, 1)),
    ("mobilenetv2", "block_16_project", (320, 7, 7)),
    ("mobilenetv2", "conv_1", (1280, 7, 7)),
    ("squeezenet1_0", "pool1", (96, 54, 54)),
    ("squeezenet1_0", "fire9/concat", (512, 13, 13)),
    ("squeezenet1_1", "pool5", (256, 13, 13)),
    ("squeezenet1_1", "pool10", (1000, 1, 1)),
    ("inceptionv3", "conv2d_4a_3x3", (192, 71, 71)),  # TSO's "5th conv": 80 maps of 73x73 -> 192
    ("inceptionv3", "mixed_5b", (256, 35, 35)),
    ("inceptionv3", "mixed_6a", (768, 17, 17)),
    ("inceptionv3", "mixed_7a", (1280, 8, 8)),
    ("inceptionv3", "mixed_7c", (2048, 8, 8)),
])
def test_output_shapes_at_known_points(name: str, layer: str, shape: tuple[int, ...]):
    assert zoo.get(name).layer(layer).output_shape == (1, *shape)


def test_residual_and_concat_nodes_join_branches():
    r50 = zoo.get("resnet50")
    assert r50.layer("layer1.0.add").inputs == ("layer1.0.conv3", "layer1.0.downsample.0")
    assert r50.layer("layer1.1.add").inputs == ("layer1.1.conv3", "layer1.0.add")
    mb = zoo.get("mobilenetv2")
    assert mb.layer("block_2_add").inputs == ("block_2_project", "block_1_project")
    sq = zoo.get("squeezenet1_0")
    assert sq.layer("fire2/concat").inputs == ("fire2/expand1x1", "fire2/expand3x3")
    inc = zoo.get("inceptionv3")
    assert len(inc.layer("mixed_7c").inputs) == 6
    assert inc.consumers("mixed_6e") == [f"mixed_7a/{n}" for n in ("branch3x3_1", "branch7x7x3_1", "maxpool")]


def test_inception_factorised_kernels():
    net = zoo.get("inceptionv3")
    op = net.layer("mixed_6b/branch7x7_2").op
    assert (op.bound("R"), op.bound("S")) == (1, 7) and op.attr("padding") == (0, 3, 0, 3)
    op = net.layer("mixed_6b/branch7x7_3").op
    assert (op.bound("R"), op.bound("S")) == (7, 1) and op.attr("padding") == (3, 0, 3, 0)


def test_alexnet_towers_are_grouped():
    net = zoo.get("alexnet")
    assert [net.layer(f"conv{i}").op.bound("G") for i in range(1, 6)] == [1, 2, 1, 2, 2]


def test_unknown_model_lists_known_names():
    with pytest.raises(zoo.UnknownModelError, match="resnet50"):
        zoo.get("resnet51")
    assert zoo.get("VGG16-E").name == "vgg16_e"


@pytest.mark.parametrize("kernel,stride,padding", [(3, 2, 0), (3, 2, 1), (1, 2, 0), (2, 2, 1), (3, 3, 1)])
def test_ceil_mode_pool_matches_pytorch_rule(kernel: int, stride: int, padding: int):
    """out = ceil((h + 2p - k) / s) + 1, minus one if the last window starts in the end padding."""
    for h in range(max(kernel - 2 * padding, 1), 40):
        expected = -(-(h + 2 * padding - kernel) // stride) + 1
        if (expected - 1) * stride >= h + padding:
            expected -= 1
        assert ops.pool("p", 1, h, kernel, stride, padding, ceil_mode=True).bound("P") == expected, h


# ---- cross-check against Keras (slow, optional) -------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("keras_name,zoo_name", [("InceptionV3", "inceptionv3"), ("MobileNetV2", "mobilenetv2"),
                                                  ("ResNet50", "resnet50_v1"), ("VGG16", "vgg16"),
                                                  ("VGG19", "vgg16_e")])
def test_conv_shapes_match_keras_applications(keras_name: str, zoo_name: str):
    tf = pytest.importorskip("tensorflow")
    from collections import Counter

    model = getattr(tf.keras.applications, keras_name)(weights=None)
    conv_types = (tf.keras.layers.Conv2D, tf.keras.layers.DepthwiseConv2D)
    keras = Counter((tuple(k.kernel_size), k.input.shape[-1], k.output.shape[-1], tuple(k.strides),
                     tuple(k.output.shape[1:3])) for k in model.layers if isinstance(k, conv_types))
    ours = Counter(((x.op.bound("R"), x.op.bound("S")), x.op.attr("in_channels"), x.output_shape[1],
                    x.op.attr("stride"), x.output_shape[2:]) for x in zoo.get(zoo_name).layers
                   if x.op.kind in CONV_KINDS)
    assert ours == keras
