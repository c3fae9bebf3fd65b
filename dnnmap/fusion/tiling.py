"""Bottom-up tile propagation and multi-tiling with zero recomputation.

HW-Flow-Fusion Eq. 4 propagates the bottom layer's output tile upward:
``T_o^m = T_i^(m-1) = (T_o^(m-1) - 1) * S^(m-1) + N_k^(m-1)``. Eq. 10-12 then split every
upstream map into *multi-tiles* that cover only pixels not produced before, so nothing is
recomputed (Eq. 13: the MAC count equals the unfused one).

Both are computed here per spatial axis from the bottom tile grid. Bottom tile ``t`` (in
row-major order, Fig. 9) needs, of every map, the rows ``[0, hi_m(t))``, where
``hi_m(t) = max over consumers c of min(N_m, S_c * (hi_c(t) - 1) + N_k,c - P_c)`` (Eq. 4 with
the padding ``P`` of Eq. 10 and clipped at the map's border). Tile ``t`` then produces exactly
the new rows ``[hi_m(t-1), hi_m(t))``: the first, middle and last of these widths are Eq. 10's
``X_1 = T_ix - P_x``, ``X_2 = T_ix - (N_kx - S_x)`` and ``X_3`` (the remainder, digest G7). The
last tile always ends at the border, so pixels no consumer reads (a stride larger than the
kernel) are still computed once, as in the unfused network. A 2-D multi-tile is the product of
a row interval and a column interval, which gives Eq. 11's nine shapes and Eq. 12's repetitions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from dnnmap.fusion.geometry import FusionError, LayerGeometry
from dnnmap.fusion.group import FusedGroup

Interval = tuple[int, int]


@dataclass(frozen=True)
class AxisPlan:
    """One spatial axis (0 = y/rows, 1 = x/columns) of a group's tile schedule."""

    axis: int
    tile: int  # the bottom output tile (T_oy or T_ox)
    n_tiles: int
    hi: dict[str, tuple[int, ...]]  # map -> end of the rows needed (= produced) by tile t, t = 0..n-1

    def new(self, map_name: str, t: int) -> Interval:
        """Rows of ``map_name`` first produced (or fetched) at tile ``t``: its multi-tile along this axis."""
        hi = self.hi[map_name]
        return (hi[t - 1] if t else 0, hi[t])

    def window(self, consumer: LayerGeometry, map_name: str, t: int, size: int) -> Interval:
        """Rows of ``map_name`` that ``consumer`` reads at tile ``t`` (empty when it produces nothing new)."""
        begin, end = self.new(consumer.name, t)
        if begin == end:
            return (0, 0)
        w = consumer.windows[self.axis]
        return (min(max(w.start(begin), 0), size), min(max(w.reach(end), 0), size))

    def widths(self, map_name: str) -> tuple[int, ...]:
        return tuple(e - b for b, e in (self.new(map_name, t) for t in range(self.n_tiles)))

    def multi_tiles(self, map_name: str) -> tuple[tuple[int, int], ...]:
        """Eq. 10/12 along this axis: (width, repetitions) for the first, middle and last multi-tiles."""
        return compress_widths(self.widths(map_name))


def compress_widths(widths: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Run-length encoding of consecutive equal widths, e.g. (9, 8, 8, 8, 7) -> ((9, 1), (8, 3), (7, 1))."""
    runs: list[list[int]] = []
    for w in widths:
        if runs and runs[-1][0] == w:
            runs[-1][1] += 1
        else:
            runs.append([w, 1])
    return tuple((w, n) for w, n in runs)


def plan_axis(group: FusedGroup, axis: int, tile: int) -> AxisPlan:
    """Propagate the bottom tile ``tile`` of ``axis`` through the group, last layer first (Eq. 4)."""
    size = group.out_hw[axis]
    if not 1 <= tile <= size:
        raise FusionError(f"tile {tile} outside 1..{size} on axis {'yx'[axis]}")
    n = -(-size // tile)
    hi: dict[str, tuple[int, ...]] = {}
    for name in reversed(list(group.maps)):
        hi[name] = _map_hi(group, axis, name, tile, n, hi)
    return AxisPlan(axis, tile, n, hi)


def _map_hi(group: FusedGroup, axis: int, name: str, tile: int, n: int,
            hi: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Cumulative rows of ``name`` needed by tiles 0..n-1 (monotone, last = the whole map)."""
    size = group.maps[name].hw[axis]
    need = [0] * n
    if name in group.outputs:
        need = [min(size, (t + 1) * tile) for t in range(n)]
    for c in group.consumers(name):
        w = c.windows[axis]
        need = [max(v, min(size, max(0, w.reach(h)))) for v, h in zip(need, hi[c.name])]
    out: list[int] = []
    for v in need[:-1]:
        out.append(max(v, out[-1] if out else 0))
    return (*out, size)


@dataclass(frozen=True)
class TilePlan:
    """The 2-D schedule of a group: row and column plans plus the bottom layer's channel tile (G5)."""

    group: FusedGroup
    rows: AxisPlan
    cols: AxisPlan
    out_channel_tile: int  # T_of of the bottom layer; N_of everywhere else (Sec. 3.4 rule 2)
    hidden_tile: int = 0  # an MLP's hidden block (dnnmap.fusion.mlp); 0: the hidden dimension is not tiled
    key_tile: int = 0  # attention's key block (dnnmap.fusion.attention, online softmax); 0: keys are not tiled

    def map_channels(self, map_name: str) -> int:
        """Channels of ``map_name`` held at once: a hidden block for an MLP's hidden maps, a key block for
        attention's score and probability maps, else all of them."""
        inner = map_name in self.group.names and map_name != self.group.bottom.name
        block = self.hidden_tile or self.key_tile
        return block if inner and block else self.group.maps[map_name].channels

    @property
    def blocks(self) -> int:
        """Inner blocks every tile runs: the MLP's hidden blocks or attention's key blocks (1 when untiled)."""
        if self.hidden_tile:
            return self.group.bottom.in_channels // self.hidden_tile
        return -(-self.group.bottom.in_channels // self.key_tile) if self.key_tile else 1  # the last may be short

    @property
    def n_tiles(self) -> int:
        return self.rows.n_tiles * self.cols.n_tiles

    def tiles(self) -> list[tuple[int, int]]:
        """Bottom tiles in execution order: left to right, top to bottom (Fig. 9)."""
        return [(i, j) for i in range(self.rows.n_tiles) for j in range(self.cols.n_tiles)]

    def new_box(self, map_name: str, i: int, j: int) -> tuple[Interval, Interval]:
        return self.rows.new(map_name, i), self.cols.new(map_name, j)

    def window_box(self, consumer: LayerGeometry, map_name: str, i: int, j: int) -> tuple[Interval, Interval]:
        hw = self.group.maps[map_name].hw
        return (self.rows.window(consumer, map_name, i, hw[0]), self.cols.window(consumer, map_name, j, hw[1]))

    @cached_property
    def multi_tile_sets(self) -> dict[str, Counter[tuple[int, int]]]:
        """Eq. 11/12 per map: multi-tile shape (rows, cols) -> repetitions."""
        out: dict[str, Counter[tuple[int, int]]] = {}
        for m in self.group.maps:
            sets: Counter[tuple[int, int]] = Counter()
            for hy, ry in self.rows.multi_tiles(m):
                for wx, rx in self.cols.multi_tiles(m):
                    if hy and wx:
                        sets[(hy, wx)] += ry * rx
            out[m] = sets
        return out

    def multi_tile_macs(self, layer: LayerGeometry) -> int:
        """Eq. 13's compute_multi: ``N_of * N_if * N_kx * N_ky * sum(Tile_n * Repetitions_n)``."""
        pixels = sum(h * w * reps for (h, w), reps in self.multi_tile_sets[layer.name].items())
        if not layer.has_macs:
            return 0
        ky, kx = (w.kernel for w in layer.windows)
        return layer.out_channels * layer.in_channels * ky * kx * pixels


def plan_tiles(group: FusedGroup, toy: int, tox: int, tof: int | None = None, hidden: int = 0,
               keys: int = 0) -> TilePlan:
    """The tile plan for bottom output tile ``toy x tox``, bottom channel tile ``tof`` (default N_of), an MLP's
    hidden block ``hidden`` and attention's key block ``keys`` (0: not tiled; :mod:`dnnmap.fusion.mlp`,
    :mod:`dnnmap.fusion.attention`)."""
    nof = group.bottom.out_channels
    tof = nof if tof is None else tof
    if hidden:
        problem = hidden_chain_problem(group)
        if problem or group.bottom.in_channels % hidden or tof < nof:
            raise FusionError(f"group {list(group.names)}: cannot tile its hidden dimension by {hidden}: "
                              f"{problem or 'the block must divide the hidden size and T_of must be N_of'}")
    if keys:
        problem = key_tile_problem(group, keys)
        if problem:
            raise FusionError(f"group {list(group.names)}: cannot tile its keys by {keys}: {problem}")
    if not 1 <= tof <= nof:
        raise FusionError(f"output-channel tile {tof} outside 1..{nof}")
    if tof < nof and group.bottom.banded:
        raise FusionError(f"layer {group.bottom.name!r} reads one weight slice per head; tile its heads (rows), "
                          "not its output channels")
    if tof < nof and not group.bottom.has_macs:
        raise FusionError(f"layer {group.bottom.name!r} has no MACs; only a convolution or projection may tile T_of")
    if tof < nof and group.outputs != (group.bottom.name,):
        raise FusionError(f"group {list(group.names)}: T_of < N_of needs the bottom layer's map to be the "
                          "group's only output")
    return TilePlan(group, plan_axis(group, 0, toy), plan_axis(group, 1, tox), tof, hidden, keys)


CHANNELWISE_KINDS = ("gelu", "silu", "swiglu")  # an activation computes each hidden channel from the same channel


def powers_of_two_below(n: int) -> list[int]:
    """1, 2, 4, ... below ``n``: the block sizes the tile search tries for a dimension it splits into blocks."""
    return [1 << k for k in range(max(n - 1, 0).bit_length())]


def hidden_chain_problem(group: FusedGroup) -> str | None:
    """Why the group's hidden dimension cannot be tiled (None when it can): it must be an MLP whose up-projections
    read maps from outside, whose activations are channel-wise, whose down-projection (the bottom layer, without
    ReLU) reads the hidden map and writes the group's only output."""
    bottom, hidden = group.bottom, group.bottom.in_channels
    if (group.layout != "tokens" or bottom.kind != "matmul" or bottom.relu or group.outputs != (bottom.name,)
            or not all(src in group.names for src in bottom.inputs)):
        return "it must end in a projection of the hidden map that writes the group's only output"
    for g in group.layers[:-1]:
        if g.out_channels != hidden:
            return f"layer {g.name!r} does not write the {hidden} hidden channels"
        inside = [src in group.names for src in g.inputs]
        if (any(inside) if g.kind == "matmul" else g.kind not in CHANNELWISE_KINDS or not all(inside)):
            return f"layer {g.name!r} ({g.kind}) is not an up-projection or a channel-wise activation"
    return None


def key_tile_problem(group: FusedGroup, block: int) -> str | None:
    """Why attention's keys cannot be tiled by ``block`` (None when they can): the group must be exactly a
    ``scores, softmax, values`` run on head maps and the block smaller than the keys (the values' input channels;
    the last block holds the remainder)."""
    kinds = tuple(g.kind for g in group.layers)
    if (group.layout != "heads" or kinds != ("einsum", "softmax", "einsum") or not group.bottom.banded
            or group.outputs != (group.bottom.name,)):
        return "only a whole attention (scores, softmax, values) writing only its output streams its keys"
    keys = group.bottom.in_channels
    if not 1 <= block < keys:
        return f"the key block must be smaller than the {keys} keys"
    return None
