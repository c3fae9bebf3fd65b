"""Choice of a group's tile set: the legal plan with the least off-chip volume (HW-Flow-Fusion Sec. 4.4, G11).

The bottom output tile ``(T_oy, T_ox)`` runs over a *search resolution* (powers of two and the
full size, per axis) and the bottom channel tile ``T_of`` over the divisors of ``N_of`` (only
when the bottom layer is a convolution and the group's only output, G5). A plan is legal when
Eq. 5 + the Eq. 8 reuse buffers, with the largest multi-tile, fit the on-chip buffer.

Because every input and output word moves once (G6), Eq. 6 depends on the tiles only through
the bottom layer's weight re-fetches; among plans of equal volume the one with the fewest
tiles is kept (longest DRAM bursts, Sec. 5.2's remark on small centre tiles), then the smallest
footprint. An MLP may also tile its hidden dimension (``hidden_tile``, :mod:`dnnmap.fusion.mlp`): its weights
then stream once per token tile, so such a plan wins only where the untiled one does not fit; likewise attention
may tile its keys (``key_tile``, :mod:`dnnmap.fusion.online_softmax`): K and V then stream once per query block.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from dnnmap.fusion.buffers import FusionBuffer, fusion_buffer, map_buffers
from dnnmap.fusion.group import FusedGroup
from dnnmap.fusion.mlp import hidden_tiles
from dnnmap.fusion.online_softmax import key_tiles
from dnnmap.fusion.tiling import TilePlan, plan_axis
from dnnmap.fusion.volume import OffChipVolume, compulsory_volume, offchip_volume


@dataclass(frozen=True)
class TileChoice:
    plan: TilePlan
    buffer: FusionBuffer
    volume: OffChipVolume

    @cached_property
    def bound(self) -> OffChipVolume:
        """The proven lower bound on any schedule's off-chip words for the group (``compulsory_volume``)."""
        return compulsory_volume(self.plan.group)

    @property
    def key(self) -> tuple[int, bool, int, int]:
        """Least volume, then untiled keys (the online softmax adds vector work), then fewest steps (tiles times
        hidden or key blocks), then the smallest footprint."""
        return (self.volume.total_words, self.plan.key_tile > 0, self.plan.n_tiles * self.plan.blocks,
                self.buffer.total_words)


def resolution(size: int) -> list[int]:
    """Tile sizes tried along one axis: 1, 2, 4, ... below ``size``, and ``size``."""
    sizes, t = [], 1
    while t < size:
        sizes.append(t)
        t *= 2
    return [*sizes, size]


def channel_tiles(group: FusedGroup) -> list[int]:
    """``T_of`` values for the bottom layer: its divisors when it may slice its weights, else ``N_of``."""
    bottom = group.bottom
    nof = bottom.out_channels
    if not bottom.has_macs or bottom.banded or group.outputs != (bottom.name,):
        return [nof]
    return [d for d in range(1, nof + 1) if nof % d == 0]


def best_tiling(group: FusedGroup, capacity_words: float) -> TileChoice | None:
    """The best legal plan (module docstring), or None when no tile set fits ``capacity_words``."""
    best: TileChoice | None = None
    h, w = group.out_hw
    cols = {tx: plan_axis(group, 1, tx) for tx in resolution(w)}
    for ty in resolution(h):
        rows = plan_axis(group, 0, ty)
        untiled_fits = False  # then no key-tiled plan of these rows can win (its K/V volume is at least as large)
        for cplan in cols.values():
            spatial = TilePlan(group, rows, cplan, group.bottom.out_channels)
            maps = map_buffers(spatial)
            for tof in channel_tiles(group):
                plan = TilePlan(group, rows, cplan, tof)
                buffer = fusion_buffer(plan, maps)
                if buffer.total_words > capacity_words:
                    continue
                untiled_fits = True
                choice = TileChoice(plan, buffer, offchip_volume(plan))
                if best is None or choice.key < best.key:
                    best = choice
            inner = [(h, 0) for h in hidden_tiles(group)] + [(0, k) for k in key_tiles(group) if not untiled_fits]
            for hidden, keys in inner:  # an MLP's hidden blocks (dnnmap.fusion.mlp), attention's key blocks
                plan = TilePlan(group, rows, cplan, group.bottom.out_channels, hidden, keys)
                buffer = fusion_buffer(plan, tuple(replace(m, channels=plan.map_channels(m.map)) for m in maps))
                if buffer.total_words <= capacity_words:
                    choice = TileChoice(plan, buffer, offchip_volume(plan))
                    best = choice if best is None or choice.key < best.key else best
    return best
