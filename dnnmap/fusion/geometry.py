"""Per-layer geometry of a fusable layer in HW-Flow-Fusion's notation (Table 1).

A layer of a fused group is described by what the tile equations need: the sliding window
along each spatial axis (kernel ``Nkx``/``Nky``, stride ``S``, leading padding ``P`` -- the
padding of HW-Flow-Fusion Eq. 10), the channel counts ``Nif``/``Nof``, the spatial sizes of
its input and output maps (unpadded), and the weight volume of Eq. 1's ``Weight_buffer``.

Fusable kinds: dense 2-D convolution (``conv2d``, ``pointwise``; groups 1, batch 1), max and
average pooling, the element-wise residual ``add`` (a 1x1 window of stride 1 over each of
its inputs) and the channel ``concat`` that joins Inception's branches (a 1x1 window over each input,
whose channels it stacks: ``input_channels``). Anything else ends a fusion sequence (Sec. 4.4).

Transformer layers on hidden states ``[1, 1, tokens, features]`` fuse as *token maps*
(:func:`token_geometry`): the features are the channels and the tokens the rows of a one-column map,
so a ``matmul`` is a 1x1 convolution over the tokens (``K`` in, ``N`` out, weights ``K x N``), and
GELU/SiLU/SwiGLU, the norms and the residual ``add`` are 1x1 windows over their inputs (a norm's scale
``gamma`` is one weight per channel; its row of features is a pixel's channels, which a tile never
splits). Attention (scores -> softmax -> values) fuses as *head maps* (:mod:`dnnmap.fusion.attention`). A group is
in one layout (:func:`group_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import DnnmapError
from dnnmap.workload.ir import Layer
from dnnmap.workload.kinds import KINDS, ConvGeometry, subset

# HW-Flow-Fusion's tile equations (Sec. 4) cover dense 2-D convolutions, pooling and the residual add; FC,
# depthwise (grouped), mul, matmul and einsum end a fusion sequence. concat (a copy) fuses like an add.
FUSABLE_KINDS = subset("conv2d", "pointwise", "pool_max", "pool_avg", "add", "concat")
# Token maps: projections (matmul) and the element-wise and per-token kinds on hidden states. softmax (on the
# attention scores, one row per head), the attention einsums and rotary (a head layout) end a sequence.
TOKEN_KINDS = subset("matmul", "gelu", "silu", "swiglu", "layernorm", "rmsnorm", "add")
# Head maps: attention's scores and values einsums and the softmax between them (dnnmap.fusion.attention).
HEAD_KINDS = subset("einsum", "softmax")


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
    rows_per_slice: int = 0  # 0: weights shared by every pixel; r: output row y reads weight slice y // r
    input_channels: tuple[int, ...] = ()  # a concat: the channels of each input, stacked in order

    def channels_of(self, index: int) -> int:
        """Channels of the layer's ``index``-th input map."""
        return self.input_channels[index] if self.input_channels else self.in_channels

    @property
    def has_weights(self) -> bool:
        return self.weight_words > 0

    @property
    def banded(self) -> bool:
        """Its weights are one slice per band of output rows (attention's K or V of a head, read whole by every
        query of the head), held only while a tile row over those rows runs (:mod:`dnnmap.fusion.attention`)."""
        return self.rows_per_slice > 0

    def slices(self, rows: tuple[int, int]) -> range:
        """The weight slices output rows ``[y0, y1)`` read (all of them -- one -- for shared weights)."""
        y0, y1 = rows
        if not self.banded:
            return range(1)
        return range(y0 // self.rows_per_slice, -(-y1 // self.rows_per_slice)) if y1 > y0 else range(0)

    def slice_words(self, rows: tuple[int, int]) -> int:
        """Words of the weight slices output rows ``[y0, y1)`` read (all the weights when they are shared)."""
        if not self.banded:
            return self.weight_words
        per_slice = self.weight_words * self.rows_per_slice // self.out_hw[0]
        return per_slice * len(self.slices(rows))

    @property
    def has_macs(self) -> bool:
        """A convolution or projection: its weights multiply every input channel (only it may slice T_of)."""
        return self.macs > 0


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


def group_layout(layers: list[Layer]) -> str:
    """``heads`` when the layers include attention (an einsum or softmax), ``tokens`` when they include another
    transformer kind (projection or vector kind), else ``maps``."""
    kinds = {layer.op.kind for layer in layers}
    return "heads" if kinds & HEAD_KINDS else "tokens" if kinds & (TOKEN_KINDS - FUSABLE_KINDS) else "maps"


def token_geometry(layer: Layer) -> LayerGeometry:
    """A transformer layer as a token map (module docstring); :class:`FusionError` when it cannot be fused."""
    op = layer.op
    if op.kind not in TOKEN_KINDS:
        raise FusionError(f"layer {op.name!r} ({op.kind}) cannot be fused with transformer layers; fusable "
                          f"kinds: {sorted(TOKEN_KINDS)}")
    b = op.bounds
    if op.kind == "matmul":
        batch, tokens, cin, cout = b["B"], b["M"], b["K"], b["N"]
        weights = cin * cout
    else:
        if b["G"] != 1:
            raise FusionError(f"layer {op.name!r} ({op.kind}) cannot be fused: it has {b['G']} head rows, token "
                              "maps hold hidden states (one row per token)")
        batch, tokens, cin = b["N"], b["P"], b["Q"]
        cout, weights = cin, cin if KINDS[op.kind].weights else 0
    if batch != 1:
        raise FusionError(f"layer {op.name!r}: fusion is modelled at batch size 1 (HW-Flow-Fusion Sec. 5)")
    one = AxisWindow(1, 1, 0)
    return LayerGeometry(op.name, op.kind, layer.inputs, (one, one), cin, cout, (tokens, 1), (tokens, 1), weights,
                         op.macs, op.iterations, "relu" in layer.fused)
