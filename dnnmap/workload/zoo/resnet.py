"""ResNet-18 and ResNet-50 (He et al. 2016), torchvision layer names.

Batch normalisation is folded into the preceding convolution (inference form); ReLU is
an epilogue (``fused``) of the convolution or of the residual ``add`` it follows. The
residual additions, projection shortcuts (``downsample.0``), the stem max-pool, the
global average pool and the classifier are all layers of the DAG.

Stride placement in the first bottleneck of stages 2-4 is a switch: ``"3x3"`` (ResNet
v1.5, torchvision, ~4.1 G MACs; registered as ``resnet50``) or ``"1x1"`` (the original
v1 / Caffe / Keras ``ResNet50`` placement on the first 1x1 convolution, ~3.9 G MACs;
registered as ``resnet50_v1``; Marvel's layer CONV5_1_1 -- a stride-2 1x1 from 1024
to 512 channels -- exists only in this form).
"""

from __future__ import annotations

from typing import Literal

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import register

StridePlacement = Literal["3x3", "1x1"]
_WIDTHS = (64, 128, 256, 512)


def _basic_block(b: NetworkBuilder, prefix: str, width: int, stride: int) -> str:
    """Two 3x3 convolutions plus the identity (or 1x1 projection) shortcut."""
    src = b.last
    b.conv(f"{prefix}.conv1", width, 3, stride, 1)
    main = b.conv(f"{prefix}.conv2", width, 3, 1, 1, fused=())
    return _residual_add(b, prefix, src, main, width, stride)


def _bottleneck(b: NetworkBuilder, prefix: str, width: int, stride: int, stride_on: StridePlacement) -> str:
    """1x1 reduce, 3x3, 1x1 expand (4x width) plus the shortcut."""
    src = b.last
    out = 4 * width
    s1, s3 = (stride, 1) if stride_on == "1x1" else (1, stride)
    b.conv(f"{prefix}.conv1", width, 1, s1, 0)
    b.conv(f"{prefix}.conv2", width, 3, s3, 1)
    main = b.conv(f"{prefix}.conv3", out, 1, 1, 0, fused=())
    return _residual_add(b, prefix, src, main, out, stride)


def _residual_add(b: NetworkBuilder, prefix: str, src: str, main: str, channels: int, stride: int) -> str:
    """``main + shortcut`` (ReLU fused): the block input, or a strided 1x1 projection when the
    shape changes."""
    shortcut = src
    if stride != 1 or b.shape(src)[1] != channels:
        shortcut = b.conv(f"{prefix}.downsample.0", channels, 1, stride, 0, src=src, fused=())
    return b.add(f"{prefix}.add", main, shortcut, fused=("relu",))


def resnet(name: str, blocks: tuple[int, int, int, int], bottleneck: bool, batch: int = 1,
           stride_on: StridePlacement = "3x3") -> Network:
    """ImageNet ResNet on 3x224x224: 7x7/2 stem, 3x3/2 max-pool, four stages, avg-pool, FC-1000."""
    b = NetworkBuilder(name, (batch, 3, 224, 224))
    b.conv("conv1", 64, 7, 2, 3)
    b.pool("maxpool", 3, 2, 1)
    for stage, (width, count) in enumerate(zip(_WIDTHS, blocks, strict=True), start=1):
        for i in range(count):
            stride = 2 if stage > 1 and i == 0 else 1
            prefix = f"layer{stage}.{i}"
            if bottleneck:
                _bottleneck(b, prefix, width, stride, stride_on)
            else:
                _basic_block(b, prefix, width, stride)
    b.global_pool("avgpool")
    b.fc("fc", 1000)
    notes = (f"stride of the first block of stages 2-4 on the {stride_on} convolution",) if bottleneck else ()
    return b.build(notes=notes)


@register("resnet18", "ResNet-18: basic blocks [2,2,2,2], 3x224x224")
def resnet18(batch: int = 1) -> Network:
    return resnet("resnet18", (2, 2, 2, 2), bottleneck=False, batch=batch)


@register("resnet50", "ResNet-50 v1.5 (stride on the 3x3 conv, torchvision): bottlenecks [3,4,6,3], 3x224x224")
def resnet50(batch: int = 1) -> Network:
    return resnet("resnet50", (3, 4, 6, 3), bottleneck=True, batch=batch, stride_on="3x3")


@register("resnet50_v1", "ResNet-50 v1 (stride on the first 1x1 conv, Caffe/Keras): bottlenecks [3,4,6,3]")
def resnet50_v1(batch: int = 1) -> Network:
    return resnet("resnet50_v1", (3, 4, 6, 3), bottleneck=True, batch=batch, stride_on="1x1")
