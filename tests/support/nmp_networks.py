"""Networks and helpers of the NMP target tests (tests/nmp)."""

from __future__ import annotations

from dnnmap.targets.nmp.compiler import NmpCompiled, weights_image
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network


def tiny_resnet() -> Network:
    """A ResNet-style network: 3x3 stem, an identity basic block, a strided block with a 1x1 projection,
    global average pooling and an FC layer."""
    b = NetworkBuilder("tiny_resnet", (1, 3, 16, 16))
    stem = b.conv("stem", 8, 3, padding=1)
    b.conv("b1_conv1", 8, 3, padding=1)
    c2 = b.conv("b1_conv2", 8, 3, padding=1, fused=())
    x = b.add("b1_add", stem, c2, fused=("relu",))
    b.conv("b2_conv1", 16, 3, stride=2, padding=1, src=x)
    c2 = b.conv("b2_conv2", 16, 3, padding=1, fused=())
    proj = b.conv("b2_proj", 16, 1, stride=2, src=x, fused=())
    b.add("b2_add", proj, c2, fused=("relu",))
    b.global_pool("gap")
    b.fc("fc", 10)
    return b.build()


def weights(c: NmpCompiled) -> bytes:
    """The weights segment (weights.bin) of a compiled network."""
    return weights_image(c.memory, c.quant, c.layers)


def mobile_block() -> Network:
    """A MobileNet-style stem and block: strided conv, depthwise 3x3, pointwise 1x1, strided depthwise."""
    b = NetworkBuilder("mobile_block", (1, 3, 16, 16))
    b.conv("c1", 32, 3, stride=2, padding=1)
    b.depthwise("dw", 3)
    b.conv("pw", 16, 1, fused=())
    b.depthwise("dw2", 3, stride=2, padding=0)
    return b.build()


def inception_block() -> Network:
    """An Inception/SqueezeNet-style block: relu6 stem, two branches (1x1 and 3x3) concatenated, a padded
    3x3 max pool of the non-negative concat, a 1x1 convolution."""
    b = NetworkBuilder("inception_block", (1, 4, 12, 12))
    b.conv("stem", 8, 3, padding=1, fused=("relu6",))
    left = b.conv("left", 6, 1, src="stem")
    right = b.conv("right", 10, 3, padding=1, src="stem")
    b.concat("cat", left, right)
    b.pool("pool", 3, 1, padding=1)
    b.conv("head", 8, 1, fused=())
    return b.build()
