"""Fusion buffer (HW-Flow-Fusion Eq. 5) with the reuse buffers of Eq. 8, and the baseline's Eq. 9.

Eq. 5: ``Fusion buffer = sum_m Input_buffer^m + sum_m Weight_buffer^m + Output_buffer^bottom``,
each intermediate map counted once (it is one layer's output and the next one's input).
``Input_buffer^m = T_iy * T_ix * N_if`` is taken with the **largest** multi-tile window any
consumer of the map reads (Sec. 4.2: legality is checked with the largest tile); all weights
are resident, except the bottom layer's, of which one ``T_of`` slice is (digest G5), and a banded layer's
(attention's K/V), of which the largest tile row's slices are. With an MLP's hidden dimension tiled
(:mod:`dnnmap.fusion.mlp`), a hidden map holds one block of channels and each weight one block's slice; with
attention's keys tiled (:mod:`dnnmap.fusion.attention`) the score and probability maps hold one key block, K and V
one key block of the band, and the output block two more words per query row (running max and sum).

Eq. 8 (horizontal processing, Fig. 9's row-major order): ``reuse_x = (N_ix - T_ix) *
(N_ky - S_y) * N_if`` -- the ``N_ky - S_y`` rows the next tile row reads again, outside the
current window. Here the kept rows ``R_y`` are measured on the tile plan (for a chain they are
exactly ``N_ky - S_y``, because multi-tiling makes every layer produce only new rows; for a map
read by several layers of a residual block they are the rows between the earliest and the
latest reader, the skip connection's buffer). When ``R_y`` exceeds the window height, the kept
rows span the whole width, so the term is ``max(R_y * (N_ix - T_ix), R_y * N_ix - T_iy * T_ix)``
times ``N_if``, which is Eq. 8 whenever ``T_iy >= R_y``.

Eq. 9 is the extra storage of Alwani et al.'s model [12], which also keeps the sequential
overlap: ``overhead_y = (T_iy - (N_ky - S_y)) * (N_kx - S_x) * N_if`` for horizontal processing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.fusion.geometry import LayerGeometry
from dnnmap.fusion.tiling import AxisPlan, TilePlan


@dataclass(frozen=True)
class MapBuffer:
    """On-chip storage of one map read inside the group (Eq. 5's input buffer plus Eq. 8's reuse buffer)."""

    map: str
    channels: int
    width: int  # N_ix (unpadded)
    window: tuple[int, int]  # largest (T_iy, T_ix) read at one tile
    reuse_rows: int  # R_y: rows kept for the next tile row
    overlap_x: int  # N_kx - S_x of the map's consumers (for Eq. 9)

    @property
    def input_words(self) -> int:
        return self.window[0] * self.window[1] * self.channels

    @property
    def reuse_words(self) -> int:
        ty, tx = self.window
        r = self.reuse_rows
        return max(r * (self.width - tx), r * self.width - ty * tx, 0) * self.channels

    @property
    def alwani_overhead_words(self) -> int:
        """Eq. 9 ``overhead_y``: the sequential overlap the baseline [12] stores in addition."""
        return max(self.window[0] - self.reuse_rows, 0) * self.overlap_x * self.channels


@dataclass(frozen=True)
class FusionBuffer:
    """Eq. 5 plus the Eq. 8 reuse buffers of a tile plan, in words."""

    maps: tuple[MapBuffer, ...]
    weight_words: int
    output_words: int

    @property
    def eq5_words(self) -> int:
        return sum(m.input_words for m in self.maps) + self.weight_words + self.output_words

    @property
    def reuse_words(self) -> int:
        return sum(m.reuse_words for m in self.maps)

    @property
    def total_words(self) -> int:
        return self.eq5_words + self.reuse_words

    @property
    def alwani_reuse_words(self) -> int:
        """Eq. 8 + Eq. 9: the reuse storage of the baseline [12] for the same tiles."""
        return self.reuse_words + sum(m.alwani_overhead_words for m in self.maps)


def map_buffers(plan: TilePlan) -> tuple[MapBuffer, ...]:
    """The input and reuse buffer of every map read inside the group (they depend on the spatial tiles only)."""
    return tuple(_map_buffer(plan, m) for m in plan.group.maps if plan.group.consumers(m))


def fusion_buffer(plan: TilePlan, maps: tuple[MapBuffer, ...] | None = None) -> FusionBuffer:
    """Eq. 5 + Eq. 8 for ``plan`` (largest multi-tile of every map); ``maps`` when already computed
    for the same spatial tiles."""
    group = plan.group
    maps = map_buffers(plan) if maps is None else maps
    weights = sum(resident_weight_words(plan, g) for g in group.layers)
    return FusionBuffer(maps, weights, _output_words(plan))


def resident_weight_words(plan: TilePlan, layer: LayerGeometry) -> int:
    """Weight words ``layer`` holds at most: all of them; one ``T_of`` slice for the bottom layer (G5); for a
    banded layer (attention's K/V) the slices of its largest tile row (one key block of them when the keys are
    tiled); with an MLP's hidden dimension tiled, one
    hidden block's slice (every weight of the MLP reads or writes the hidden channels)."""
    if plan.hidden_tile:
        return layer.weight_words * plan.hidden_tile // plan.group.bottom.in_channels
    if layer.banded:
        band = max(layer.slice_words(plan.rows.new(layer.name, i)) for i in range(plan.rows.n_tiles))
        keys = plan.group.bottom.in_channels
        return band * plan.key_tile // keys if plan.key_tile else band  # keys tiled: one key block of K or V
    if layer is plan.group.bottom:
        return layer.weight_words * plan.out_channel_tile // layer.out_channels
    return layer.weight_words


def _map_buffer(plan: TilePlan, name: str) -> MapBuffer:
    group = plan.group
    info = group.maps[name]
    consumers = group.consumers(name)
    hy = _largest_hull(plan.rows, plan, name, info.hw[0])
    hx = _largest_hull(plan.cols, plan, name, info.hw[1])
    overlap_x = max(max(c.windows[1].kernel - c.windows[1].stride, 0) for c in consumers)
    return MapBuffer(name, plan.map_channels(name), info.hw[1], (hy, hx), _reuse_rows(plan, name), overlap_x)


def _largest_hull(axis: AxisPlan, plan: TilePlan, name: str, size: int) -> int:
    """Largest extent, over the tiles of one axis, of the union hull of every consumer's window and of
    the rows produced at that tile (which a stride larger than the kernel may leave unread)."""
    best = 0
    for t in range(axis.n_tiles):
        spans = [axis.window(c, name, t, size) for c in plan.group.consumers(name)] + [axis.new(name, t)]
        spans = [s for s in spans if s[1] > s[0]]
        if spans:
            best = max(best, max(e for _, e in spans) - min(b for b, _ in spans))
    return best


def _reuse_rows(plan: TilePlan, name: str) -> int:
    """Rows produced by tile row ``i`` that a later tile row still reads: ``max_i hi(i) - min_c lo_c(>i)``."""
    rows, size = plan.rows, plan.group.maps[name].hw[0]
    n = rows.n_tiles
    later_start = [size] * (n + 1)  # later_start[t]: first row any consumer reads at tile rows >= t
    for t in range(n - 1, -1, -1):
        spans = [rows.window(c, name, t, size) for c in plan.group.consumers(name)]
        starts = [b for b, e in spans if e > b]
        later_start[t] = min([later_start[t + 1], *starts])
    return max([0] + [rows.hi[name][i] - later_start[i + 1] for i in range(n - 1)])


ONLINE_SOFTMAX_STATE = 2
"""Words per query row that attention with its keys tiled keeps beside its output block: the running max and sum."""


def _output_words(plan: TilePlan) -> int:
    """Output_buffer^bottom: the largest new block of each map written out and not read inside the group (with
    attention's keys tiled: the unnormalised output accumulator and each row's running max and sum)."""
    group = plan.group
    words = 0
    for name in group.outputs:
        if group.consumers(name):
            continue  # held by its MapBuffer until the last reader, written out from there
        channels = plan.out_channel_tile if name == group.bottom.name else group.maps[name].channels
        hy = max(plan.rows.widths(name))
        hx = max(plan.cols.widths(name))
        words += hy * hx * (channels + (ONLINE_SOFTMAX_STATE if plan.key_tile else 0))
    return words


def last_reads(plan: TilePlan) -> dict[str, np.ndarray]:
    """Per map and pixel, the last step (``tile * layers + position``) that reads it; -1 if none: the step after
    which the pixel leaves the buffer."""
    group = plan.group
    steps = len(group)
    last = {m: np.full(info.hw, -1, dtype=np.int64) for m, info in group.maps.items()}
    for k, (i, j) in enumerate(plan.tiles()):
        for p, layer in enumerate(group.layers):
            for src in layer.inputs:
                (y0, y1), (x0, x1) = plan.window_box(layer, src, i, j)
                np.maximum(last[src][y0:y1, x0:x1], k * steps + p, out=last[src][y0:y1, x0:x1])
    return last


def produced_tiles(plan: TilePlan, name: str) -> np.ndarray:
    """Per pixel of map ``name``, the bottom tile that produces (or fetches) it; -1 if none."""
    produced = np.full(plan.group.maps[name].hw, -1, dtype=np.int64)
    for k, (i, j) in enumerate(plan.tiles()):
        (y0, y1), (x0, x1) = plan.new_box(name, i, j)
        produced[y0:y1, x0:x1] = k
    return produced


@dataclass(frozen=True)
class OverlapBuffer:
    """The buffer a spatially fused group needs when its sub-arrays overlap with at most ``W`` bottom tiles in
    flight (a step of tile ``t`` starts only once every step of tiles ``<= t - W`` has finished).

    At any moment let ``t`` be the first tile not finished. Every tile before it is done, so a held pixel
    produced (or fetched) before ``t`` is one a step of tile ``t`` or later still reads: ``held[t]``, the
    words the sequential schedule holds between tiles ``t - 1`` and ``t``. Every other held pixel was produced
    by a started step, of tiles ``t .. t + W - 1``: at most their new blocks, ``new[t] + ... + new[t + W - 1]``
    (a block counts from its step's start). Resident weights and the output blocks in flight (one per output
    map: each sub-array computes one block at a time) are ``fixed``. So the buffer never holds more than
    :meth:`words`; with ``W = 1`` this bounds the sequential executor too (tile by tile, every block of the
    tile before any eviction)."""

    held: np.ndarray  # (tiles,) words produced before tile t and read at tile t or later
    new: np.ndarray  # (tiles,) words produced or fetched at tile t
    fixed: int  # resident weights and output blocks

    def words(self, window: int) -> int:
        """The bound with ``window`` tiles in flight."""
        n = len(self.new)
        total = np.concatenate([[0], np.cumsum(self.new)])
        t = np.arange(n)
        return int((self.held + total[np.minimum(t + window, n)] - total[t]).max(initial=0)) + self.fixed

    def window(self, capacity_words: int, most: int) -> int | None:
        """The most tiles in flight, up to ``most``, whose bound fits ``capacity_words``; None if not even one."""
        fitting = [w for w in range(1, max(most, 1) + 1) if self.words(w) <= capacity_words]
        return fitting[-1] if fitting else None


def overlap_buffer(plan: TilePlan) -> OverlapBuffer:
    """:class:`OverlapBuffer` of ``plan`` from each map's producing tile and last reading tile per pixel."""
    group = plan.group
    n, layers = plan.n_tiles, len(group)
    held, new = np.zeros(n + 1, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for m, last in last_reads(plan).items():
        if not group.consumers(m):
            continue
        produced = produced_tiles(plan, m)
        channels = plan.map_channels(m)
        read = np.where(last >= 0, last // layers, -1).ravel()
        made = produced.ravel()
        new += channels * np.bincount(made[made >= 0], minlength=n)
        kept = read > made  # held from the tile after it was made to its last reading tile
        held += channels * (np.bincount(made[kept] + 1, minlength=n + 1) - np.bincount(read[kept] + 1, minlength=n + 2)[:n + 1])
    fixed = sum(resident_weight_words(plan, g) for g in group.layers) + _output_words(plan)
    return OverlapBuffer(np.cumsum(held)[:n], new, fixed)
