"""Networks and helpers of the NMP target tests (tests/nmp)."""

from __future__ import annotations

import numpy as np

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


def random_network(seed: int) -> Network:
    """A small random chain (seeded) of the layers the NMP target runs, every channel count in 1..9 (below,
    equal to and above the 8 TLTs of a TLE and the 4 TLEs) on maps of 4..9 pixels: 3x3 convolutions
    (padded or not, stride 1 or 2), pointwise, depthwise 3x3, max and average pooling, a residual add, a
    concat of two pointwise branches, and an FC head half of the time."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(4, 10))
    b = NetworkBuilder(f"random{seed}", (1, int(rng.integers(1, 10)), size, size))

    def chans() -> int:
        return int(rng.integers(1, 10))

    for i in range(int(rng.integers(3, 6))):
        _, c, h, _ = b.shape(b.last)
        kind = rng.choice(["conv", "pointwise", "depthwise", "max", "avg", "add", "concat"])
        stride = 2 if h >= 6 and rng.random() < 0.3 else 1
        name = f"{kind}{i}"
        if kind == "conv":
            b.conv(name, chans(), 3, stride=stride, padding=1 if h < 5 or rng.random() < 0.5 else 0)
        elif kind == "pointwise":
            b.conv(name, chans(), 1)
        elif kind == "depthwise":
            b.depthwise(name, 3, stride=stride, padding=1)
        elif kind in ("max", "avg") and h >= 2:
            b.pool(name, 2, 2, mode=str(kind))
        elif kind == "add":
            src = b.last
            b.add(name, src, b.conv(f"{name}_res", c, 3, padding=1, fused=()), fused=("relu",))
        elif kind == "concat":
            src = b.last
            b.concat(name, b.conv(f"{name}_a", chans(), 1, src=src), b.conv(f"{name}_b", chans(), 1, src=src))
    if rng.random() < 0.5:
        b.fc("fc", chans())
    return b.build()
