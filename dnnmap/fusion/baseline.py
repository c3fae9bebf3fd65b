"""The paper's single-layer baseline (``--fuse-baseline paper``): HW-FlowQ's row-stationary schedule with
the off-chip volumes of HW-Flow-Fusion Eq. 1-3.

HW-Flow-Fusion compares fusion against single-layer schedules of its HW-FlowQ mapper: the Eyeriss
row-stationary (RS) dataflow (filter rows and output rows across the PEs, unrolled over input and
output channels, Table 2) and the loop order ``N_ox, N_oy, N_of, B, N_if`` outermost first
(Algorithm 1). Its off-chip traffic is Eq. 2/3:

- ``Input_fetch = (N_if/T_if) * ceil(N_of/T_of) * ceil(N_oy/T_oy) * ceil(N_ox/T_ox)`` tiles of
  ``T_ix * T_iy * T_if`` words: every input tile, halo included (Eq. 1), is fetched again for each
  output-channel tile;
- ``Weight_fetch = (N_of/T_of) * (N_if/T_if) * ceil(N_oy/T_oy) * ceil(N_ox/T_ox)`` tiles of
  ``N_kx * N_ky * T_if * T_of`` words: all weights again for every spatial tile (as printed);
- every output word written once (``Output_fetch = 0``: partial sums stay on chip).

A tile set is legal when Eq. 1's three footprints (largest tile) fit the buffer; the legal set with the
least Eq. 3 volume is kept (fewest tiles on ties). Halos are counted as fetched, clipped at the map's
border (padding is never fetched). Weight-free layers (pooling, the residual add) fetch each input
channel once per spatial tile. ``T_if`` does not change Eq. 3; it only has to fit (``T_if = 1`` is
checked).

The on-chip side is the core mapper's best mapping inside :data:`ROW_STATIONARY`'s constrained space;
the chip boundary's words are replaced by these volumes (:func:`dnnmap.fusion.costing.fused_cost`), as
Eq. 6 replaces them for fused layers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dnnmap.fusion.geometry import AxisWindow, LayerGeometry
from dnnmap.fusion.tile_search import resolution
from dnnmap.fusion.volume import LayerTraffic
from dnnmap.search.marvel.dataflows import Dataflow
from dnnmap.search.space import divisors

BASELINES = ("best", "paper")
ROW_STATIONARY = Dataflow("Eyeriss row-stationary", ("R", "Q", "C", "K"))
"""Table 2's PE set (filter rows ``P_kx``, output rows ``P_oy``) and unrolling (``P_if``, ``P_of``)."""


@dataclass(frozen=True)
class AxisTiles:
    """One spatial axis tiled by ``tile`` outputs: the number of tiles, the input words (rows) all tiles
    fetch together, halos included, and the largest tile's input extent."""

    tile: int
    count: int
    fetched: int
    widest: int


def axis_tiles(window: AxisWindow, out_size: int, in_size: int, tile: int) -> AxisTiles:
    """Eq. 1/2 along one axis: output tiles of ``tile`` and the input rows each reads, clipped at the border."""
    spans = []
    for begin in range(0, out_size, tile):
        end = min(begin + tile, out_size)
        spans.append(min(window.reach(end), in_size) - max(window.start(begin), 0))
    return AxisTiles(tile, len(spans), sum(spans), max(spans))


@dataclass(frozen=True)
class PaperTiling:
    """The baseline's tile set (``T_oy``, ``T_ox``, ``T_of``) and its Eq. 3 traffic."""

    rows: int
    cols: int
    out_channels: int
    traffic: LayerTraffic

    @property
    def words(self) -> int:
        return self.traffic.input_words + self.traffic.weight_words + self.traffic.output_words


def paper_traffic(layer: LayerGeometry, rows: int, cols: int, out_channels: int) -> tuple[int, LayerTraffic]:
    """Eq. 1's footprint (words, largest tile, ``T_if = 1``) and Eq. 2/3's traffic of ``layer`` with output
    tiles of ``rows x cols`` pixels and ``out_channels`` channels (module docstring)."""
    (wy, wx), (oy, ox), (iy, ix) = layer.windows, layer.out_hw, layer.in_hw
    nof, nif = layer.out_channels, layer.in_channels
    ay, ax = axis_tiles(wy, oy, iy, rows), axis_tiles(wx, ox, ix, cols)
    if layer.has_weights:
        footprint = ay.widest * ax.widest + rows * cols * out_channels + wy.kernel * wx.kernel * out_channels
        per_input = nif * ay.fetched * ax.fetched * -(-nof // out_channels)
        weights = layer.weight_words * ay.count * ax.count
    else:  # channel by channel: T_if = T_of, each input channel once per spatial tile
        footprint = (len(layer.inputs) * ay.widest * ax.widest + rows * cols) * out_channels
        per_input = nif * ay.fetched * ax.fetched
        weights = 0
    return footprint, LayerTraffic(tuple(per_input for _ in layer.inputs), weights, nof * oy * ox)


def paper_tiling(layer: LayerGeometry, capacity_words: float) -> PaperTiling | None:
    """The legal Eq. 1 tile set of ``layer`` with the least Eq. 3 volume (module docstring); None if none fits."""
    (oy, ox), nof = layer.out_hw, layer.out_channels
    best: tuple[tuple[int, int], PaperTiling] | None = None
    for ty, tx in itertools.product(resolution(oy), resolution(ox)):
        for tof in divisors(nof):
            footprint, traffic = paper_traffic(layer, ty, tx, tof)
            if footprint > capacity_words:
                continue
            tiling = PaperTiling(ty, tx, tof, traffic)
            key = (tiling.words, -(-oy // ty) * -(-ox // tx) * (nof // tof))
            if best is None or key < best[0]:
                best = (key, tiling)
    return None if best is None else best[1]
