"""Off-chip volume of a fused group: HW-Flow-Fusion Eq. 6, with the digest's gaps G5 and G6 settled.

Eq. 6: ``Total = Input_buffer^top * Input_fetch + sum_m Weight_buffer^m + Output_buffer^bottom *
Output_write``. Our reading (docs/fusion.md):

- **G6 (top-layer halo): each input word is fetched once.** The top layer gets a reuse buffer
  like every other layer (Fig. 8 stores the top-level overlaps too, and Eq. 8 is charged for it
  in the fusion buffer), so ``Input_buffer^top * Input_fetch`` counts only the new multi-tiles:
  ``N_iy * N_ix * N_if`` of every external input map (unpadded; padding is never fetched).
- **G5 (weights): every weight is fetched once, except the bottom layer's** when it tiles its
  output channels (``T_of < N_of``) to fit the buffer: then every bottom tile streams all its
  ``ceil(N_of / T_of)`` weight slices again, ``Weight_buffer^bottom * Weight_fetch^bottom`` =
  ``W_bottom * tiles``. Upstream layers keep ``T_of = N_of`` (Sec. 3.4 rule 2). A banded layer's weights
  (attention's K/V, :mod:`dnnmap.fusion.attention`) are fetched once per tile row that reads them (once per
  tile, i.e. per query block, when the keys are tiled); with an
  MLP's hidden dimension tiled (:mod:`dnnmap.fusion.mlp`) every weight is fetched once per tile.
- Every group output word is written once (``Output_write`` counts whole maps, no partial sums:
  ``T_if = N_if``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.fusion.geometry import AxisWindow, LayerGeometry
from dnnmap.fusion.group import FusedGroup
from dnnmap.fusion.tiling import TilePlan


@dataclass(frozen=True)
class OffChipVolume:
    """Eq. 6 in words, by term."""

    input_words: int
    weight_words: int
    output_words: int

    @property
    def total_words(self) -> int:
        return self.input_words + self.weight_words + self.output_words

    def bytes(self, word_bytes: float) -> float:
        return self.total_words * word_bytes


def offchip_volume(plan: TilePlan) -> OffChipVolume:
    """Eq. 6 for ``plan`` (readings G5/G6 in the module docstring)."""
    group = plan.group
    inputs = sum(group.maps[m].words for m in group.external_inputs)
    weights = sum(weight_fetch_words(plan, g) for g in group.layers)
    outputs = sum(group.maps[m].words for m in group.outputs)
    return OffChipVolume(inputs, weights, outputs)


def weight_fetch_words(plan: TilePlan, layer: LayerGeometry) -> int:
    """Words of ``layer``'s weights fetched over the run: once; every tile for a bottom layer that tiles ``T_of``
    (G5); a banded layer's (attention's K/V) slices once per tile row that reads them; every weight once per tile
    when the plan tiles an MLP's hidden dimension (each hidden block's slices stream through)."""
    if plan.hidden_tile:
        return layer.weight_words * plan.n_tiles
    if layer.banded:  # with the keys tiled, every query block of the band streams every key block again
        refetch = plan.cols.n_tiles if plan.key_tile else 1
        return refetch * sum(layer.slice_words(plan.rows.new(layer.name, i)) for i in range(plan.rows.n_tiles))
    if layer is plan.group.bottom and plan.out_channel_tile < layer.out_channels:
        return layer.weight_words * plan.n_tiles
    return layer.weight_words


def _rows_read(window: AxisWindow, n_out: int, n_in: int) -> np.ndarray:
    """(n_in,) bool: the input rows some output's window reads (clipped at the border; padding is not a row)."""
    read = np.zeros(n_in, dtype=bool)
    for o in range(n_out):
        start = window.start(o)
        read[max(0, start):max(0, min(n_in, start + window.kernel))] = True
    return read


def compulsory_volume(group: FusedGroup) -> OffChipVolume:
    """A lower bound on the off-chip words of *any* schedule of the group, whatever its tiles and mappings.

    Each word below lives only off chip before the group runs, or must be there after it, so it crosses the
    chip boundary at least once: every pixel of an external input map that some group layer's window reads
    (all its channels; a strided window that skips pixels does not need them), every weight of every layer,
    and every word of every group output. Eq. 6 (:func:`offchip_volume`) is never below this; it is above it
    when the bottom layer re-fetches its weight slices (``T_of < N_of``) or a stride skips input pixels."""
    inputs = 0
    for m in group.external_inputs:
        info = group.maps[m]
        read = np.zeros(info.hw, dtype=bool)
        for g in group.consumers(m):
            rows, cols = (_rows_read(w, n_out, n_in) for w, n_out, n_in in zip(g.windows, g.out_hw, info.hw))
            read |= np.outer(rows, cols)
        inputs += int(read.sum()) * info.channels
    weights = sum(g.weight_words for g in group.layers)
    outputs = sum(group.maps[m].words for m in group.outputs)
    return OffChipVolume(inputs, weights, outputs)


@dataclass(frozen=True)
class LayerTraffic:
    """A layer's part of Eq. 6: the words fetched for each of its input maps (in the order of its inputs;
    an external input is charged to its first reader, an on-chip map is 0), its weights, its group outputs."""

    input_fetch: tuple[int, ...]
    weight_words: int
    output_words: int
    extra_operations: int = 0  # operations the fused schedule adds on the layer's unit (online softmax rescaling)

    @property
    def input_words(self) -> int:
        return sum(self.input_fetch)


def traffic_by_layer(plan: TilePlan) -> dict[str, LayerTraffic]:
    """Eq. 6 split over the group's layers (an external input is charged to its first reader)."""
    group = plan.group
    charged: set[str] = set()
    out: dict[str, LayerTraffic] = {}
    for g in group.layers:
        fetch = []
        for m in g.inputs:
            fresh = m in group.external_inputs and m not in charged
            charged.add(m)
            fetch.append(group.maps[m].words if fresh else 0)
        weights = weight_fetch_words(plan, g)
        written = group.maps[g.name].words if g.name in group.outputs else 0
        extra = online_softmax_operations(plan) if plan.key_tile and g.kind == "softmax" else 0
        out[g.name] = LayerTraffic(tuple(fetch), weights, written, extra)
    return out


def online_softmax_operations(plan: TilePlan) -> int:
    """Vector operations attention with its keys tiled adds to its softmax (:mod:`dnnmap.fusion.online_softmax`): at
    every key block after a row's first, ``exp`` of the rescale factor, the rescale of the running sum and of the
    row's ``d`` accumulated outputs; at the end, the division of the ``d`` outputs by the sum."""
    bottom = plan.group.bottom
    rows, dim = bottom.out_hw[0] * bottom.out_hw[1], bottom.out_channels
    return rows * ((plan.blocks - 1) * (dim + 2) + dim)
