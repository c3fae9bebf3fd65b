"""Maximal-tile search of one memory level (RTML Sec. 3.2.7, Observation 4, Fig. 9).

The tile tree starts at the all-ones tile; a child grows one dimension to its next larger
divisor. A node with a child that still fits is pruned (Observation 4: enlarging any
dimension of a fitting tile lowers the accesses to the level above), so the survivors are the
*maximal* fitting tiles. We compute the same set without walking the tree: the whole divisor
lattice is laid out as one mixed-radix array, every tile's footprint is computed at once, and a
fitting tile is maximal when none of its one-step neighbours fits (the tree's pruning rule).

Imperfect factorization (``caps``, docs/search.md): a dimension's values are then the ceil splits
of :func:`dnnmap.search.space.factor_candidates` (divisors and the factors that pad the
dimension up to its cap), a child grows it to the next such value, and the same maximality test
runs over that lattice.

Footprints are the exact sizes of each tensor axis' index set, as the cost model counts a tile's
words (docs/cost-model.md section 4): a single-dimension axis holds its coverage, a sliding-window
axis ``stride*p + dilation*r`` the Minkowski sum of its terms' progressions (a strided window with
gaps holds fewer words than its interval hull: a stride-2 1x1 convolution's 14 rows of outputs read
14 input rows, not 27), counted by :func:`dnnmap.search.space.touched_lower` (``contiguous``); dimensions
of bound 1 never move an axis. Summed per capacity partition of the level (``keeps``, per-role capacities, bits,
buffering). The earlier hull over-estimate judged such tiles not to fit and lost mappings (issue 9:
ResNet-18 ``layer3.0.downsample.0``); the cost model checks every finished mapping anyway.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.space import divisors, factor_candidates, touched_lower
from dnnmap.search.sunstone.placement import free_placement, leading_loops, placement_subsets, relevance
from dnnmap.workload.ir import Operator


def values(limits: tuple[int, ...], caps: tuple[int, ...] | None) -> list[tuple[int, ...]]:
    """Per dimension, the factor values of the lattice: divisors of ``limits[d]`` (``caps`` None), else
    its ceil splits padding it to at most ``caps[d]``."""
    if caps is None:
        return [divisors(int(n)) for n in limits]
    return [factor_candidates(int(n), int(c)) for n, c in zip(limits, caps)]


@lru_cache(maxsize=8192)
def divisor_lattice(limits: tuple[int, ...], caps: tuple[int, ...] | None = None) -> np.ndarray:
    """Every tile whose dimension ``d`` divides ``limits[d]`` (or, with ``caps``, is one of its ceil
    splits): (n, D), last dimension fastest (read-only)."""
    out = np.ones((1, 0), dtype=np.int64)
    for vals in values(limits, caps):
        divs = np.array(vals, dtype=np.int64)
        out = np.concatenate([np.repeat(out, len(divs), axis=0), np.tile(divs, len(out))[:, None]], axis=1)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def _positions(n: int) -> np.ndarray:
    """Each value ``0..n``'s index among the divisors of ``n`` (-1: not a divisor; read-only)."""
    position = np.full(n + 1, -1, dtype=np.int64)
    position[list(divisors(n))] = np.arange(len(divisors(n)))
    position.setflags(write=False)
    return position


def lattice_index(residual: tuple[int, ...], tiles: np.ndarray) -> np.ndarray | None:
    """Each row of ``tiles`` (n, D)'s index in :func:`divisor_lattice` of ``residual``; None where some row does not
    lie in it (a dimension that does not divide its residual's)."""
    if (tiles > np.array(residual)[None, :]).any():
        return None
    index = sum(steps[tiles[:, d]] for d, steps in enumerate(_steps(residual)))
    return None if (index < 0).any() else index


@lru_cache(maxsize=1024)
def _steps(residual: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Per dimension of ``residual``, each value ``0..n``'s contribution to a tile's index in :func:`divisor_lattice`:
    its position among the divisors of ``n`` times the dimension's step, or minus the lattice's size where it is no
    divisor (the other dimensions add less than the size, so a sum is negative exactly where some value is off the
    lattice; read-only)."""
    strides = _strides(residual)
    off = -math.prod(len(divisors(n)) for n in residual)
    out = []
    for n, stride in zip(residual, strides.tolist()):
        position = _positions(n)
        steps = np.where(position >= 0, position * stride, off)
        steps.setflags(write=False)
        out.append(steps)
    return tuple(out)


@lru_cache(maxsize=1024)
def _strides(residual: tuple[int, ...]) -> np.ndarray:
    """Each dimension's step in :func:`divisor_lattice` of ``residual`` (the last dimension fastest; read-only)."""
    counts = [len(divisors(n)) for n in residual]
    strides = np.array([math.prod(counts[d + 1:]) for d in range(len(counts))], dtype=np.int64)
    strides.setflags(write=False)
    return strides


@lru_cache(maxsize=64)
def _offsets(residual: tuple[int, ...]) -> np.ndarray:
    """(n, D) each tile of :func:`divisor_lattice` of ``residual``: per dimension, its value's position times the
    dimension's step (a row's sum is its index; 0 where the value is 1, the first divisor; read-only)."""
    strides = _strides(residual)
    counts = np.array([len(divisors(n)) for n in residual], dtype=np.int64)
    offsets = np.arange(math.prod(counts.tolist()), dtype=np.int64)[:, None] // strides % counts * strides
    offsets.setflags(write=False)
    return offsets


class Capacity:
    """Fit test of tiles at every level: per capacity partition (role or whole level), the sum of the
    kept tensors' footprints (in words or bits), against the capacity one buffer offers."""

    def __init__(self, op: Operator, arch: ArchSpec, keeps: np.ndarray) -> None:
        self.op = op
        self.keeps = keeps.astype(bool)
        self.relevant = relevance(op)
        self._lattice: dict[tuple[bytes, tuple[int, ...]], np.ndarray] = {}  # :meth:`_lattice_words`
        self.levels = []
        for i, lv in enumerate(arch.levels):
            if lv.capacity is None:
                self.levels.append(None)
                continue
            weight = np.array([arch.capacity_units_of(lv, t.role) for t in op.tensors],
                              dtype=float) * keeps[i]
            roles = sorted({t.role for j, t in enumerate(op.tensors) if keeps[i, j]}) \
                if isinstance(lv.capacity, dict) else ["input"]
            part = np.array([[weight[j] if (t.role == r or not isinstance(lv.capacity, dict)) else 0.0
                              for r in roles] for j, t in enumerate(op.tensors)])
            self.levels.append((part, np.array([lv.capacity_for(r) for r in roles])))

    def fits(self, level: int, cover: np.ndarray) -> np.ndarray:
        """Rows of ``cover`` whose tile fits ``level``: (n, D), one coverage for every tensor, or (n, T, D),
        tensor ``t``'s own coverage (a per-tensor placement, :func:`.placement.free_placement`)."""
        spec = self.levels[level]
        if spec is None:
            return np.ones(cover.shape[0], dtype=bool)
        return self._within(spec, self._words(cover))

    def _words(self, cover: np.ndarray) -> np.ndarray:
        """(n, T) words of each tensor's tile for a coverage (n, D) or per-tensor coverages (n, T, D)."""
        if cover.ndim == 3:  # the tensors' coverages one after another, each tensor's own words taken
            n, T = cover.shape[:2]
            words = touched_lower(self.op, cover.transpose(1, 0, 2).reshape(n * T, -1), contiguous=True)
            return words.reshape(T, n, T)[np.arange(T), :, np.arange(T)].T
        return touched_lower(self.op, cover, contiguous=True)

    @staticmethod
    def _within(spec: tuple[np.ndarray, np.ndarray], words: np.ndarray) -> np.ndarray:
        """Whether the words (..., T) of each tile fit every capacity partition (sums of whole numbers of units:
        exact in floats)."""
        used = words.reshape(-1, words.shape[-1]) @ spec[0]
        fits = np.ones(len(used), dtype=bool)
        for r in range(used.shape[1]):  # partition by partition: numpy's reduction of a short axis is several times slower
            fits &= used[:, r] <= spec[1][r]
        return fits.reshape(words.shape[:-1])

    def fits_placed(self, level: int, inner: np.ndarray, factors: np.ndarray, order: np.ndarray | None) -> np.ndarray:
        """(S, n): whether the tiles ``inner x factors`` (factors: the level's temporal factors, (n, D)) fit ``level``
        with the shared boundary (row 0) and, given the level's loop ``order``, with each subset of the level's
        kept tensors at its free placement and the others at the boundary (a row per
        :func:`.placement.placement_subsets` entry). One row without ``order``."""
        return self.placed(level, inner, factors, order)[0]

    def placed(self, level: int, inner: np.ndarray, factors: np.ndarray, order: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`fits_placed` and the (n, T) loops above each tensor's tile at its free placement
        (:func:`.placement.free_placement`; zeros with one row of fits: nothing to place)."""
        spec = self.levels[level]
        if order is None or spec is None:
            fits = self.fits(level, factors * inner[None, :])[None, :]
            return fits, np.zeros((len(factors), self.relevant.shape[0]), dtype=np.int64)
        above, inside = free_placement(self.relevant, order, factors)
        shared = self._words(factors * inner[None, :])
        return self._placed_fits(level, shared, self._words(inside * inner[None, None, :])), above

    def placed_lattice(self, level: int, inner: np.ndarray, residual: tuple[int, ...], order: np.ndarray | None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`placed` of every tile of :func:`divisor_lattice` of ``residual``. A tensor's tile at its free
        placement is the tile with the loops above it set to 1, itself a tile of the lattice, so its words are looked
        up among the shared tiles' (:meth:`_lattice_words`: once per inner coverage and residual, for every level and
        order) instead of counted again."""
        lattice = divisor_lattice(residual)
        if order is None or self.levels[level] is None:
            return self.placed(level, inner, lattice, order)
        above, index = self._free_index(order, residual)
        shared = self._lattice_words(inner, residual)
        return self._placed_fits(level, shared, shared[index, np.arange(above.shape[1])[None, :]]), above

    def _free_index(self, order: np.ndarray, residual: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(n, T) each tile of :func:`divisor_lattice` of ``residual``'s loops above each tensor's tile at its free
        placement (:func:`.placement.free_placement`) and that tile's index in the lattice: the tile's own index less
        the offsets of the loops set to 1 (a dimension's offset is 0 where its value is already 1)."""
        lattice, offsets = divisor_lattice(residual), _offsets(residual)
        above = np.zeros((len(lattice), self.relevant.shape[0]), dtype=np.int64)
        index = np.repeat(offsets.sum(axis=1)[:, None], above.shape[1], axis=1)
        for d, take in leading_loops(self.relevant, order, lattice):
            above += take
            index -= take * offsets[:, d, None]
        return above, index

    def _lattice_words(self, inner: np.ndarray, residual: tuple[int, ...]) -> np.ndarray:
        """(n, T) :meth:`_words` of the lattice of ``residual`` over the ``inner`` coverage (memoized; read-only)."""
        key = (inner.tobytes(), residual)
        if key not in self._lattice:
            words = self._words(divisor_lattice(residual) * inner[None, :])
            words.setflags(write=False)
            self._lattice[key] = words
        return self._lattice[key]

    def _placed_fits(self, level: int, shared: np.ndarray, placed: np.ndarray) -> np.ndarray:
        """(S, n) :meth:`fits_placed` from the words (n, T) of each tensor's shared tile and of its tile at its free
        placement."""
        # (S - 1, 1, T): none where the level keeps no tensor
        subsets = np.array(placement_subsets(self.keeps[level]), dtype=bool).reshape(-1, 1, shared.shape[1])
        words = np.concatenate([shared[None], np.where(subsets, placed[None], shared[None])])  # (S, n, T)
        return self._within(self.levels[level], words)


def maximal_mask(limits: tuple[int, ...], fits: np.ndarray, caps: tuple[int, ...] | None = None) -> np.ndarray:
    """Of the lattice of ``limits`` (as :func:`divisor_lattice` orders it), the fitting tiles none of
    whose one-dimension growths to the next value (divisor or, with ``caps``, ceil split) fits
    (Observation 4's survivors); ``fits`` (n,) or (S, n), a row per way of fitting, each judged alone."""
    shape = tuple(len(v) for v in values(limits, caps))
    lead = (slice(None),) * (fits.ndim - 1)
    grid = fits.reshape(fits.shape[:-1] + shape)
    grown_fits = np.zeros(grid.shape, dtype=bool)
    for d in range(len(shape)):
        if shape[d] > 1:
            dst = lead + (slice(None),) * d + (slice(0, shape[d] - 1),)
            src = lead + (slice(None),) * d + (slice(1, None),)
            grown_fits[dst] |= grid[src]
    return (grid & ~grown_fits).reshape(fits.shape)


def maximal_union(limits: tuple[int, ...], fits: np.ndarray, caps: tuple[int, ...] | None = None) -> np.ndarray:
    """:func:`maximal_mask` of each row of ``fits`` (S, n), one per way the tiles may fit (placements), or-ed: a
    tile maximal only with one tensor placed is kept even where another placement lets a larger tile fit (that
    larger tile may place a tensor whose refetches cost more than the room buys)."""
    return maximal_mask(limits, fits[0] if len(fits) == 1 else fits, caps).reshape(-1, fits.shape[-1]).any(axis=0)


@dataclass(frozen=True)
class BoxLayout:
    """The tiles of several divisor sub-boxes of a residual's lattice, one box after another (each box's tiles in
    :func:`divisor_lattice`'s order): their indices into the residual's lattice and, per dimension, the index of
    each tile grown to the box's next divisor there (:func:`maximal_mask`'s neighbours, taken within the box; the
    lattice's size where there is none)."""

    flat: np.ndarray  # (M,) each tile's index in the residual's lattice (int32: a lattice has fewer tiles)
    grown: tuple[np.ndarray, ...]  # per dimension with more than one divisor, (M,) the grown tile's index
    starts: np.ndarray  # (B,) where each box's tiles start


@lru_cache(maxsize=16)
def box_layout(residual: tuple[int, ...], boxes: tuple[tuple[int, ...], ...]) -> BoxLayout:
    """:class:`BoxLayout` of ``boxes`` (each dimension a divisor of ``residual``'s); cached: the placed walk asks for
    the same boxes once per level-0 order, whose tiles fit differently but lie alike."""
    shape = tuple(len(divisors(n)) for n in residual)
    size = math.prod(shape)
    stride = np.cumprod((shape[1:] + (1,))[::-1])[::-1]
    flats, grown = [], [[] for n in shape if n > 1]
    for box in boxes:
        # per dimension, the box's divisors' offsets in the lattice (along that dimension's axis of a D-dim grid)
        # and the step to the next one (``size`` past the last: any tile grown there lands at or past ``size``)
        axes = [np.nonzero(box[d] % np.array(divisors(n), dtype=np.int64) == 0)[0] * stride[d]
                for d, n in enumerate(residual)]
        flat = sum(np.reshape(x, (1,) * d + (-1,) + (1,) * (len(shape) - d - 1)) for d, x in enumerate(axes))
        flat = np.broadcast_to(flat, tuple(len(x) for x in axes)).reshape(-1)
        flats.append(flat)
        growing = (d for d, n in enumerate(shape) if n > 1)
        for out, d in zip(grown, growing):
            step = np.append(np.diff(axes[d]), size)
            out.append(np.minimum(flat + np.broadcast_to(np.reshape(step, (1,) * d + (-1,) + (1,) * (len(shape) - d - 1)),
                                                          tuple(len(x) for x in axes)).reshape(-1), size))
    counts = np.array([len(f) for f in flats], dtype=np.int64)
    return BoxLayout(np.concatenate(flats).astype(np.int32), tuple(np.concatenate(g).astype(np.int32) for g in grown),
                     np.cumsum(counts) - counts)


class TileTree:
    """Maximal tiles of one level over one inner coverage, for any divisor-closed sub-box of ``residual``;
    given the level's loop ``order`` (``--placement``), a tile fits when it does with some subset of the tensors at
    their free placement (:meth:`Capacity.fits_placed`), and it is maximal when it is for one of those ways of fitting
    (:func:`maximal_union`); ``each_way=False``: maximal among the tiles that fit some way (fewer tiles: a tile that
    fits only with one tensor placed is dropped where placing more lets a larger one fit).

    The fit of every tile of the ``residual`` lattice (and its free placements) is computed once; a sub-box (what an
    unrolling leaves, ``residual // spatial``) is a sub-lattice of it, so its fits are gathered and only the
    maximality test (Fig. 9's pruning) runs per sub-box, for the sub-boxes of a step's unrollings together
    (:meth:`maximal_many`); the walk's candidates look their placements up (:meth:`placements`)."""

    def __init__(self, capacity: Capacity, level: int, inner: np.ndarray, residual: tuple[int, ...],
                 order: np.ndarray | None = None, each_way: bool = True) -> None:
        self.residual = residual
        self.capacity, self.level, self.inner, self.order = capacity, level, inner, order
        self.each_way = each_way
        fits, self.above = capacity.placed_lattice(level, inner, residual, order)
        self.fits = fits.reshape((len(fits),) + tuple(len(divisors(n)) for n in residual))
        self._index = [{d: k for k, d in enumerate(divisors(n))} for n in residual]
        self._done: dict[tuple, tuple[np.ndarray, int]] = {}

    def placements(self, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`Capacity.placed` of ``tiles`` (n, D) at this tree's level, inner coverage and order: looked up in the
        residual's lattice where every tile lies in it (the exact walk), else computed (padded tiles)."""
        index = lattice_index(self.residual, tiles)
        if index is None:
            return self.capacity.placed(self.level, self.inner, tiles, self.order)
        return self.fits.reshape(len(self.fits), -1)[:, index], self.above[index]

    def maximal(self, limits: tuple[int, ...], caps: tuple[int, ...] | None = None,
                maximal_only: bool = True) -> tuple[np.ndarray, int]:
        """Maximal fitting tiles dividing ``limits`` (or, with ``caps``, ceil splits of it padding each
        dimension to at most its cap) and the number of fitting ones (the tree's nodes); ``maximal_only=False``:
        every fitting tile (Observation 4 off, a diagnostic of the walk's losses)."""
        return self.maximal_many([limits], [caps], maximal_only)[0]

    def maximal_many(self, limits: list[tuple[int, ...]], caps: list[tuple[int, ...] | None],
                     maximal_only: bool = True) -> list[tuple[np.ndarray, int]]:
        """:meth:`maximal` of each (``limits``, ``caps``) pair; the divisor sub-boxes (no room to pad) are
        judged together (:meth:`_divisor_boxes`: one pass of array operations for all of them)."""
        keys = [(box, self._caps(box, cap), maximal_only) for box, cap in zip(limits, caps)]
        todo = [key for key in dict.fromkeys(keys) if key not in self._done]
        boxes = [box for box, cap, _ in todo if cap is None and box != self.residual]
        if boxes:
            self._done.update(zip(((box, None, maximal_only) for box in boxes),
                                  self._divisor_boxes(boxes, maximal_only)))
        for box, cap, _ in todo:  # the whole residual (the lattice's own fits) and padded boxes: one at a time
            if cap is not None or box == self.residual:
                lattice, fits = (divisor_lattice(box), self.fits.reshape(len(self.fits), -1)) if cap is None \
                    else self._fits_padded(box, cap)
                keep = (maximal_union(box, fits, cap) if self.each_way
                        else maximal_mask(box, fits.any(axis=0), cap)) if maximal_only else fits.any(axis=0)
                self._done[(box, cap, maximal_only)] = lattice[keep], int(fits.any(axis=0).sum())
        return [self._done[key] for key in keys]

    def _divisor_boxes(self, boxes: list[tuple[int, ...]], maximal_only: bool) -> list[tuple[np.ndarray, int]]:
        """:meth:`maximal` of divisor sub-boxes of ``residual`` (each dimension a divisor of its residual), all at
        once over their :func:`box_layout`: ``maximal_union`` of the ways of fitting (``each_way``), else the
        maximality of fitting some way."""
        layout = box_layout(self.residual, tuple(boxes))
        anyway = np.append(self.fits.any(axis=0).reshape(-1), False)  # the last: no next divisor
        fitting = anyway[layout.flat]
        if not maximal_only:
            keep = fitting
        elif self.each_way:
            ways = np.append(self.fits.reshape(len(self.fits), -1), np.zeros((len(self.fits), 1), dtype=bool), axis=1)
            grown = np.zeros((len(ways), len(layout.flat)), dtype=bool)
            for grow in layout.grown:
                grown |= ways[:, grow]
            keep = (ways[:, layout.flat] & ~grown).any(axis=0)
        else:
            keep = self._none_grown(layout, anyway, fitting)
        tiles = divisor_lattice(self.residual)[layout.flat[keep]]
        ends = np.cumsum(np.add.reduceat(keep, layout.starts, dtype=np.int64)).tolist()
        return [(tiles[start:end], count) for start, end, count in zip(
            [0] + ends[:-1], ends, np.add.reduceat(fitting, layout.starts, dtype=np.int64).tolist())]

    @staticmethod
    def _none_grown(layout: BoxLayout, anyway: np.ndarray, fitting: np.ndarray) -> np.ndarray:
        """(M,) the tiles of ``layout`` that fit (``fitting``) and none of whose growths does (``anyway``, with the
        past-the-end entry False): the fitting tiles' rows, narrowed dimension by dimension to those whose growth
        does not fit (fewer look-ups than every tile's growths in every dimension)."""
        rows = np.flatnonzero(fitting)
        for grow in layout.grown:
            rows = rows[~anyway[grow[rows]]]
        keep = np.zeros(len(fitting), dtype=bool)
        keep[rows] = True
        return keep

    def _caps(self, limits: tuple[int, ...], caps: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if caps is not None and all(c <= n and r % n == 0 for c, n, r in zip(caps, limits, self.residual)):
            return None  # no room to pad and a divisor sub-box: the divisor sub-lattice
        return caps

    def lattice_fits(self, limits: tuple[int, ...], caps: tuple[int, ...] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, tuple[int, ...] | None]:
        """The lattice of ``limits`` (and ``caps``, as :meth:`maximal`), its (S, n) fits, one row per way of
        fitting (:meth:`Capacity.fits_placed`), and the caps it was laid out with (None: divisors)."""
        caps = self._caps(limits, caps)
        return (*(self._fits(limits) if caps is None else self._fits_padded(limits, caps)), caps)

    def _fits_padded(self, limits: tuple[int, ...], caps: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The ceil-split lattice is not a sub-lattice of ``residual``'s divisors: its fits are computed anew."""
        lattice = divisor_lattice(limits, caps)
        return lattice, self.capacity.fits_placed(self.level, self.inner, lattice, self.order)

    def _fits(self, limits: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        fits = self.fits
        for d, (n, r) in enumerate(zip(limits, self.residual)):
            if n != r:  # the divisors of n among those of r (the other axes are taken whole)
                fits = fits.take([self._index[d][x] for x in divisors(n)], axis=d + 1)
        return divisor_lattice(limits), fits.reshape(len(fits), -1)


def maximal_tiles(op: Operator, arch: ArchSpec, level: int, keeps: np.ndarray, inner: np.ndarray,
                  limits: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Maximal tiles (factors per dimension, dividing ``limits``) of ``level`` over the ``inner`` coverage
    (D,) already fixed below it, and the number of fitting tiles the tree visits (Fig. 9)."""
    return TileTree(Capacity(op, arch, keeps), level, inner, limits).maximal(limits)
