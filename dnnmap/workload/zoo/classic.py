"""LeNet-5, AlexNet, VGG16 (configuration D) and VGG16-E (configuration E).

Batch normalisation does not occur in these networks; local response normalisation
(AlexNet) is a per-position cross-channel scaling without weights and is recorded as
an element-wise epilogue (``fused``) of the convolution it follows, like ReLU.
"""

from __future__ import annotations

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import register


@register("lenet5", "LeNet-5 (LeCun et al. 1998): 2 conv + 3 FC on 1x32x32")
def lenet5(batch: int = 1) -> Network:
    b = NetworkBuilder("lenet5", (batch, 1, 32, 32))
    b.conv("conv1", 6, 5)
    b.pool("pool1", 2, mode="avg")
    b.conv("conv2", 16, 5)
    b.pool("pool2", 2, mode="avg")
    b.fc("fc1", 120, fused=("relu",))
    b.fc("fc2", 84, fused=("relu",))
    b.fc("fc3", 10)
    return b.build()


@register("alexnet", "AlexNet (Krizhevsky et al. 2012), original two-tower form: grouped conv2/4/5, 3x227x227")
def alexnet(batch: int = 1) -> Network:
    """The two-GPU AlexNet as in Caffe's ``bvlc_alexnet``: conv2, conv4 and conv5 are
    grouped (groups=2, one group per tower), conv3 and the FC layers see both towers.
    227x227 input without padding in conv1 gives the paper's 55x55 first map."""
    b = NetworkBuilder("alexnet", (batch, 3, 227, 227))
    b.conv("conv1", 96, 11, stride=4, fused=("relu", "lrn"))
    b.pool("pool1", 3, 2)
    b.conv("conv2", 256, 5, padding=2, groups=2, fused=("relu", "lrn"))
    b.pool("pool2", 3, 2)
    b.conv("conv3", 384, 3, padding=1)
    b.conv("conv4", 384, 3, padding=1, groups=2)
    b.conv("conv5", 256, 3, padding=1, groups=2)
    b.pool("pool5", 3, 2)
    b.fc("fc6", 4096, fused=("relu",))
    b.fc("fc7", 4096, fused=("relu",))
    b.fc("fc8", 1000)
    return b.build(notes=("two-tower AlexNet (Caffe bvlc_alexnet shapes); LRN folded into conv1/conv2 epilogues",))


def _vgg(name: str, convs_per_block: tuple[int, ...], batch: int) -> Network:
    """VGG (Simonyan & Zisserman 2015, Table 1): 3x3 s1 p1 convs, 2x2 s2 max-pools, 3 FC.

    Layer names follow Keras ``applications.VGG16/VGG19`` (``block3_conv2``, ``fc1``, ``predictions``).
    """
    widths = (64, 128, 256, 512, 512)
    b = NetworkBuilder(name, (batch, 3, 224, 224))
    for block, (width, convs) in enumerate(zip(widths, convs_per_block, strict=True), start=1):
        for i in range(1, convs + 1):
            b.conv(f"block{block}_conv{i}", width, 3, padding=1)
        b.pool(f"block{block}_pool", 2, 2)
    b.fc("fc1", 4096, fused=("relu",))
    b.fc("fc2", 4096, fused=("relu",))
    b.fc("predictions", 1000)
    return b.build()


@register("vgg16", "VGG16 (configuration D): 13 conv + 3 FC, 3x224x224")
def vgg16(batch: int = 1) -> Network:
    return _vgg("vgg16", (2, 2, 3, 3, 3), batch)


@register("vgg16_e", "VGG configuration E (16 conv + 3 FC; a.k.a. VGG19), the 'VGG16-E' of HW-Flow-Fusion")
def vgg16_e(batch: int = 1) -> Network:
    """Configuration E; HW-Flow-Fusion numbers its convolutions CONV1..CONV16 and pools
    POOL1..POOL4 in network order (CONV9 follows POOL3, CONV13 follows POOL4)."""
    return _vgg("vgg16_e", (2, 2, 4, 4, 4), batch)
