"""Tiny-YOLO-v2 (Redmon & Farhadi 2017, Darknet ``yolov2-tiny-voc.cfg``), the YOLO-style detector of TSO's Table I.

TSO evaluates a YOLO-based Brazilian license-plate detector whose layers it does not list (its IFMs
"range from 102x102 to 416x416"); this is the public network of that family closest to it: a 416x416
input, nine 3x3/1x1 convolutions (batch norm folded, leaky ReLU as the epilogue) and six 2x2 max
pools, the last with stride 1 (Darknet pads it on the bottom/right so the map stays 13x13), and the
VOC head (125 = 5 anchors x (20 classes + 5)): 3.49 GMACs, Darknet's 6.97 BFLOPs.
"""

from __future__ import annotations

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import register

LEAKY = ("leaky_relu",)


@register("tiny_yolov2", "Tiny-YOLO-v2 VOC (Darknet yolov2-tiny-voc): 9 conv + 6 max-pool on 3x416x416")
def tiny_yolov2(batch: int = 1) -> Network:
    b = NetworkBuilder("tiny_yolov2", (batch, 3, 416, 416))
    for i, width in enumerate((16, 32, 64, 128, 256), start=1):
        b.conv(f"conv{i}", width, 3, padding="same", fused=LEAKY)
        b.pool(f"pool{i}", 2, 2)
    b.conv("conv6", 512, 3, padding="same", fused=LEAKY)
    b.pool("pool6", 2, 1, padding=(0, 0, 1, 1))
    b.conv("conv7", 1024, 3, padding="same", fused=LEAKY)
    b.conv("conv8", 1024, 3, padding="same", fused=LEAKY)
    b.conv("conv9", 125, 1, fused=())
    return b.build(notes=("Darknet yolov2-tiny-voc shapes; the stride-1 max pool pads bottom/right by 1",))
