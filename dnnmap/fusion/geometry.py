"""Per-layer geometry of a fusable layer in HW-Flow-Fusion's notation (Table 1).

A layer of a fused group is described by what the tile equations need: the sliding window
along each spatial axis (kernel ``Nkx``/``Nky``, stride ``S``, leading padding ``P`` -- the
padding of HW-Flow-Fusion Eq. 10), the channel counts ``Nif``/``Nof``, the spatial sizes of
its input and output maps (unpadded), and the weight volume of Eq. 1's ``Weight_buffer``.

Fusable kinds: dense 2-D convolution (``conv2d``, ``pointwise``; groups 1, batch 1), max and
average pooling, and the element-wise residual ``add`` (a 1x1 window of stride 1 over each of
its inputs). Anything else ends a fusion sequence (Sec. 4.4).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import DnnmapError
from dnnmap.workload.ir import Layer
from dnnmap.workload.kinds import KINDS, ConvGeometry, subset

# HW-Flow-Fusion's tile equations (Sec. 4) cover dense 2-D convolutions, pooling and the residual add; FC,
# depthwise (grouped), mul, concat, matmul and einsum end a fusion sequence.
FUSABLE_KINDS = subset("conv2d", "pointwise", "pool_max", "pool_avg", "add")


class FusionError(DnnmapError):
    """A fusion request that cannot be honoured (unfusable layer, illegal group, no tile fits)."""


@dataclass(frozen=True)
class AxisWindow:
    """The sliding window of one spatial axis: output ``o`` reads inputs ``[S*o - pad, S*o - pad + kernel)``."""

    kernel: int
    stride: int
    pad: int

    def reach(self, out_end: int) -> int:
        """End (exclusive) of the input rows needed for outputs ``[0, out_end)`` (Eq. 4's ``(T-1)*S + N_k``)."""
        return self.stride * (out_end - 1) + self.kernel - self.pad

    def start(self, out_begin: int) -> int:
        """First input row read by output ``out_begin``."""
        return self.stride * out_begin - self.pad


@dataclass(frozen=True)
class LayerGeometry:
    """One fusable layer: windows per axis (y, x), channels, map sizes, weights, operations."""

    name: str
    kind: str
    inputs: tuple[str, ...]
    windows: tuple[AxisWindow, AxisWindow]  # (y, x)
    in_channels: int
    out_channels: int
    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    weight_words: int
    macs: int  # HW-Flow-Fusion Eq. 13's compute_standard (0 for pooling and add)
    operations: int  # loop iterations (comparisons / additions for pooling and add, G9)
    relu: bool

    @property
    def has_weights(self) -> bool:
        return self.weight_words > 0


def layer_geometry(layer: Layer) -> LayerGeometry:
    """The geometry of ``layer``; :class:`FusionError` when its kind cannot be fused."""
    op = layer.op
    if op.kind not in FUSABLE_KINDS:
        raise FusionError(f"layer {op.name!r} ({op.kind}) cannot be fused; fusable kinds: {sorted(FUSABLE_KINDS)}")
    g = ConvGeometry.of(op)
    if g.batch != 1:
        raise FusionError(f"layer {op.name!r}: fusion is modelled at batch size 1 (HW-Flow-Fusion Sec. 5)")
    relu = "relu" in layer.fused
    if KINDS[op.kind].conv and g.groups != 1:
        raise FusionError(f"layer {op.name!r}: grouped convolutions are not fusable here (groups={g.groups})")
    windows = (AxisWindow(g.kernel[0], g.stride[0], g.padding[0]), AxisWindow(g.kernel[1], g.stride[1], g.padding[1]))
    weights = g.out_channels * g.in_per_group * g.kernel[0] * g.kernel[1] if KINDS[op.kind].weights else 0
    return LayerGeometry(op.name, op.kind, layer.inputs, windows, g.in_channels, g.out_channels, g.in_hw, g.out_hw,
                         weights, op.macs, op.iterations, relu)
