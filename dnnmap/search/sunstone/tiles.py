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

from functools import lru_cache

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.space import divisors, factor_candidates, touched_lower
from dnnmap.search.sunstone.placement import free_placement, relevance
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


class Capacity:
    """Fit test of tiles at every level: per capacity partition (role or whole level), the sum of the
    kept tensors' footprints (in words or bits), against the capacity one buffer offers."""

    def __init__(self, op: Operator, arch: ArchSpec, keeps: np.ndarray) -> None:
        self.op = op
        self.relevant = relevance(op)
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
        if cover.ndim == 3:
            words = np.stack([touched_lower(self.op, cover[:, j], contiguous=True)[:, j]
                              for j in range(cover.shape[1])], axis=1)
        else:
            words = touched_lower(self.op, cover, contiguous=True)
        return (words @ spec[0] <= spec[1]).all(axis=1)

    def fits_placed(self, level: int, inner: np.ndarray, factors: np.ndarray, order: np.ndarray | None) -> np.ndarray:
        """Tiles ``inner x factors`` (factors: the level's temporal factors, (n, D)) that fit ``level`` with the
        shared boundary or, given the level's loop ``order``, with each tensor's free placement."""
        shared = self.fits(level, factors * inner[None, :])
        if order is None or self.levels[level] is None:
            return shared
        _, inside = free_placement(self.relevant, order, factors)
        return shared | self.fits(level, inside * inner[None, None, :])


def maximal_mask(limits: tuple[int, ...], fits: np.ndarray, caps: tuple[int, ...] | None = None) -> np.ndarray:
    """Of the lattice of ``limits`` (as :func:`divisor_lattice` orders it), the fitting tiles none of
    whose one-dimension growths to the next value (divisor or, with ``caps``, ceil split) fits
    (Observation 4's survivors)."""
    shape = tuple(len(v) for v in values(limits, caps))
    grid = fits.reshape(shape)
    grown_fits = np.zeros(shape, dtype=bool)
    for d in range(len(shape)):
        if shape[d] > 1:
            dst = (slice(None),) * d + (slice(0, shape[d] - 1),)
            src = (slice(None),) * d + (slice(1, None),)
            grown_fits[dst] |= grid[src]
    return (grid & ~grown_fits).reshape(-1)


class TileTree:
    """Maximal tiles of one level over one inner coverage, for any divisor-closed sub-box of ``residual``;
    given the level's loop ``order`` (``--placement``), a tile fits when it does with each tensor's free
    placement (:meth:`Capacity.fits_placed`).

    The fit of every tile of the ``residual`` lattice is computed once; a sub-box (what an
    unrolling leaves, ``residual // spatial``) is a sub-lattice of it, so its fits are gathered and
    only the maximality test (Fig. 9's pruning) runs per sub-box."""

    def __init__(self, capacity: Capacity, level: int, inner: np.ndarray, residual: tuple[int, ...],
                 order: np.ndarray | None = None) -> None:
        self.residual = residual
        self.capacity, self.level, self.inner, self.order = capacity, level, inner, order
        self.fits = capacity.fits_placed(level, inner, divisor_lattice(residual), order).reshape(
            tuple(len(divisors(n)) for n in residual))
        self._index = [{d: k for k, d in enumerate(divisors(n))} for n in residual]
        self._done: dict[tuple, tuple[np.ndarray, int]] = {}

    def maximal(self, limits: tuple[int, ...], caps: tuple[int, ...] | None = None,
                maximal_only: bool = True) -> tuple[np.ndarray, int]:
        """Maximal fitting tiles dividing ``limits`` (or, with ``caps``, ceil splits of it padding each
        dimension to at most its cap) and the number of fitting ones (the tree's nodes); ``maximal_only=False``:
        every fitting tile (Observation 4 off, a diagnostic of the walk's losses)."""
        if caps is not None and all(c <= n and r % n == 0 for c, n, r in zip(caps, limits, self.residual)):
            caps = None  # no room to pad and a divisor sub-box: the divisor sub-lattice
        key = (limits, caps, maximal_only)
        if key not in self._done:
            lattice, fits = self._fits(limits) if caps is None else self._fits_padded(limits, caps)
            keep = maximal_mask(limits, fits, caps) if maximal_only else fits
            self._done[key] = lattice[keep], int(fits.sum())
        return self._done[key]

    def _fits_padded(self, limits: tuple[int, ...], caps: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The ceil-split lattice is not a sub-lattice of ``residual``'s divisors: its fits are computed anew."""
        lattice = divisor_lattice(limits, caps)
        return lattice, self.capacity.fits_placed(self.level, self.inner, lattice, self.order)

    def _fits(self, limits: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        fits = self.fits
        for d, (n, r) in enumerate(zip(limits, self.residual)):
            if n != r:  # the divisors of n among those of r (the other axes are taken whole)
                fits = fits.take([self._index[d][x] for x in divisors(n)], axis=d)
        return divisor_lattice(limits), fits.reshape(-1)


def maximal_tiles(op: Operator, arch: ArchSpec, level: int, keeps: np.ndarray, inner: np.ndarray,
                  limits: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Maximal tiles (factors per dimension, dividing ``limits``) of ``level`` over the ``inner`` coverage
    (D,) already fixed below it, and the number of fitting tiles the tree visits (Fig. 9)."""
    return TileTree(Capacity(op, arch, keeps), level, inner, limits).maximal(limits)
