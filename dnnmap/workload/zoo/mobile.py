"""MobileNetV2 (Sandler et al. 2018) and SqueezeNet 1.0 / 1.1 (Iandola et al. 2016).

Batch normalisation is folded into the convolutions; ReLU/ReLU6 are epilogues
(``fused``). Residual adds, fire-module concatenations, pools and classifiers are
layers of the DAG.
"""

from __future__ import annotations

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import register

# MobileNetV2 Table 2: (expansion t, output channels c, repeats n, first stride s)
_MOBILENETV2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _inverted_residual(b: NetworkBuilder, prefix: str, expansion: int, out: int, stride: int) -> str:
    """Expand 1x1 (skipped when t=1), depthwise 3x3, linear project 1x1, residual add when shapes allow."""
    src = b.last
    c = b.shape(src)[1]
    if expansion != 1:
        b.conv(f"{prefix}_expand", c * expansion, 1, fused=("relu6",))
    b.depthwise(f"{prefix}_depthwise", 3, stride, padding=1, fused=("relu6",))
    proj = b.conv(f"{prefix}_project", out, 1, fused=())
    if stride == 1 and c == out:
        return b.add(f"{prefix}_add", proj, src)
    return proj


@register("mobilenetv2", "MobileNetV2 1.0 (Sandler et al. 2018), 3x224x224, Keras layer names")
def mobilenetv2(batch: int = 1) -> Network:
    """Width 1.0, 224x224. Names follow Keras ``applications.MobileNetV2`` (lower-cased):
    ``conv1``, ``expanded_conv_depthwise``, ``block_5_expand``, ``block_5_add``, ``conv_1``.
    Stride-2 depthwise convolutions pad 1 on every side (torchvision); Keras pads
    bottom/right only, which gives the same output sizes and MACs."""
    b = NetworkBuilder("mobilenetv2", (batch, 3, 224, 224))
    b.conv("conv1", 32, 3, 2, 1, fused=("relu6",))
    index = 0
    for expansion, out, repeats, first_stride in _MOBILENETV2_STAGES:
        for i in range(repeats):
            prefix = "expanded_conv" if index == 0 else f"block_{index}"
            _inverted_residual(b, prefix, expansion, out, first_stride if i == 0 else 1)
            index += 1
    b.conv("conv_1", 1280, 1, fused=("relu6",))
    b.global_pool("global_average_pooling")
    b.fc("predictions", 1000)
    return b.build(notes=("width multiplier 1.0, BN folded, symmetric padding on stride-2 depthwise convs",))


def _fire(b: NetworkBuilder, name: str, squeeze: int, expand: int) -> str:
    """Fire module: 1x1 squeeze, then parallel 1x1 and 3x3 (pad 1) expands concatenated."""
    sq = b.conv(f"{name}/squeeze1x1", squeeze, 1)
    e1 = b.conv(f"{name}/expand1x1", expand, 1, src=sq)
    e3 = b.conv(f"{name}/expand3x3", expand, 3, padding=1, src=sq)
    return b.concat(f"{name}/concat", e1, e3)


# (squeeze, expand) of fire2..fire9 (identical in v1.0 and v1.1)
_FIRES = ((16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256), (64, 256))


def squeezenet(name: str, version: str, batch: int = 1, resolution: int = 224) -> Network:
    """SqueezeNet with ceil-mode 3x3/2 max-pools and Caffe layer names (``fire2/squeeze1x1``).

    v1.0: conv1 96x7x7/2, pools after conv1, fire4 and fire8.
    v1.1: conv1 64x3x3/2, pools after conv1, fire3 and fire5.
    ``resolution`` is 224 as in torchvision and the ONNX model zoo (0.82 / 0.35 G MACs);
    the original Caffe release of v1.0 takes 227x227 (0.83 G MACs).
    """
    pools = {"1_0": (96, 7, {4, 8}), "1_1": (64, 3, {3, 5})}
    if version not in pools:
        raise ValueError(f"{name}: SqueezeNet version must be '1_0' or '1_1', got {version!r}")
    stem, stem_kernel, pool_after = pools[version]
    b = NetworkBuilder(name, (batch, 3, resolution, resolution))
    b.conv("conv1", stem, stem_kernel, 2)
    b.pool("pool1", 3, 2, ceil_mode=True)
    for index, (squeeze, expand) in enumerate(_FIRES, start=2):
        _fire(b, f"fire{index}", squeeze, expand)
        if index in pool_after:
            b.pool(f"pool{index}", 3, 2, ceil_mode=True)
    b.conv("conv10", 1000, 1)
    b.global_pool("pool10")
    return b.build(notes=(f"{resolution}x{resolution} input; ceil-mode max-pools (Caffe/torchvision); dropout omitted",))


@register("squeezenet1_0", "SqueezeNet 1.0: conv1 96x7x7/2, 8 fire modules, conv10, 3x224x224")
def squeezenet1_0(batch: int = 1, resolution: int = 224) -> Network:
    return squeezenet("squeezenet1_0", "1_0", batch, resolution)


@register("squeezenet1_1", "SqueezeNet 1.1: conv1 64x3x3/2, early pools, 8 fire modules, conv10, 3x224x224")
def squeezenet1_1(batch: int = 1, resolution: int = 224) -> Network:
    return squeezenet("squeezenet1_1", "1_1", batch, resolution)
