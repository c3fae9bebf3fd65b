"""The face- and speed-sign-detection ConvNets of the NVE code-generation thesis (Appendix A, Table 1).

Each layer merges convolution and subsampling into one strided convolution (the XML
``kernel``/``sub`` fields), reads a sparse set of input maps per output map (the
``outNet`` lists, kept as the operator's ``connectivity``) and ends in the sigmoid
lookup of the NVE activation stage (NVE Eq. 2.2). Frames are 1280x720 (W x H).

Geometry switch (``docs/zoo.md``): the thesis's XML gives every layer's *output* size
and its DSL reads a window of ``(out-1)*sub + kernel`` input pixels, which does not
always match the size the previous layer produced (face L2 reads 636x356 of L1's
638x358; speed L1 reads 1278x718 of the frame, speed L2 needs 638x358 of L1's 637x357,
speed L3 reads 316x176 of L2's 317x177).

* ``"table1"`` (default, registered): the XML/Table 1 output sizes, so every layer's
  MACs equal Table 1. The difference between the window a layer reads and its
  producer's map is explicit bottom/right padding: negative = trailing rows/columns
  the layer does not read, positive = zero padding (only speed L2: one row and column).
* ``"valid"``: unpadded floor-mode convolutions chained from the 1280x720 frame; sizes
  are self-consistent but MACs deviate from Table 1 (face 79.05 M, speed 1.041 G).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import register

Geometry = Literal["table1", "valid"]
FRAME_WIDTH, FRAME_HEIGHT = 1280, 720


@dataclass(frozen=True)
class NveLayer:
    """One ``layerDescriptor`` of the thesis XML (sizes as W x H, like the thesis)."""

    name: str
    out_width: int
    out_height: int
    kernel: int
    sub: int
    connectivity: tuple[tuple[int, ...], ...]

    @property
    def maps(self) -> int:
        return len(self.connectivity)


def _all(n: int) -> tuple[int, ...]:
    return tuple(range(n))


FACE_LAYERS = (
    NveLayer("L1", 638, 358, 6, 2, ((0,),) * 4),
    NveLayer("L2", 317, 177, 4, 2, ((0,), (0,), (1,), (1,), (2,), (2,), (3,), (3,),
                                   (0, 1), (1, 2), (2, 3), (0, 2), (1, 3), (0, 3))),
    NveLayer("L3", 312, 172, 6, 1, tuple((i,) for i in range(14))),
    NveLayer("L4", 312, 172, 1, 1, (_all(14),)),
)

SPEED_LAYERS = (
    NveLayer("L1", 637, 357, 6, 2, ((0,),) * 6),
    NveLayer("L2", 317, 177, 6, 2, ((0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 5), (0, 4, 5), (0, 1, 5),
                                   (0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (0, 3, 4, 5), (0, 1, 4, 5),
                                   (0, 1, 2, 5), (0, 1, 3, 4), (1, 2, 4, 5), (0, 2, 3, 5), _all(6))),
    NveLayer("L3", 312, 172, 5, 1, (tuple(range(8)),) * 40 + (tuple(range(8, 16)),) * 40),
    NveLayer("L4", 312, 172, 1, 1, (_all(80),)),
)


def build_nve(name: str, layers: tuple[NveLayer, ...], batch: int = 1, geometry: Geometry = "table1") -> Network:
    """A 4-layer NVE ConvNet on a 1x720x1280 frame (see module docstring for ``geometry``)."""
    if geometry not in ("table1", "valid"):
        raise ValueError(f"{name}: geometry must be 'table1' or 'valid', got {geometry!r}")
    b = NetworkBuilder(name, (batch, 1, FRAME_HEIGHT, FRAME_WIDTH))
    for layer in layers:
        padding: tuple[int, int, int, int] = (0, 0, 0, 0)
        if geometry == "table1":
            _, _, h, w = b.shape(b.last)
            window_h = (layer.out_height - 1) * layer.sub + layer.kernel
            window_w = (layer.out_width - 1) * layer.sub + layer.kernel
            padding = (0, 0, window_h - h, window_w - w)
        b.conv(layer.name, layer.maps, layer.kernel, layer.sub, padding, fused=("sigmoid",),
               connectivity=layer.connectivity)
    sizes = ", ".join(f"{lay.name} {lay.out_width}x{lay.out_height}" for lay in layers)
    return b.build(notes=(f"NVE thesis Appendix A / Table 1 ({sizes}); geometry={geometry}",))


@register("nve_face", "NVE thesis face detector: 4 sparse conv layers on a 1280x720 frame (Table 1: 78.6 M MACs)")
def nve_face(batch: int = 1, geometry: Geometry = "table1") -> Network:
    return build_nve("nve_face", FACE_LAYERS, batch, geometry)


@register("nve_speed", "NVE thesis speed-sign detector: 4 sparse conv layers on a 1280x720 frame (Table 1: 1.03 G MACs)")
def nve_speed(batch: int = 1, geometry: Geometry = "table1") -> Network:
    return build_nve("nve_speed", SPEED_LAYERS, batch, geometry)
