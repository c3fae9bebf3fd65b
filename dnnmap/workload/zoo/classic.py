"""LeNet-5, AlexNet, VGG16 and VGG16-E."""

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
