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
14 input rows, not 27), taken from a per-axis table (:class:`AxisSizes`); dimensions of bound 1 never
move an axis. Summed per capacity partition of the level (``keeps``, per-role capacities, bits,
buffering). The earlier hull over-estimate judged such tiles not to fit and lost mappings (issue 9:
ResNet-18 ``layer3.0.downsample.0``); the cost model checks every finished mapping anyway.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.space import divisors, factor_candidates
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


class AxisSizes:
    """Exact index-set size of every tensor axis (tensor by tensor) for boxes of coverages (cost model's A_x).

    A single-moving-term axis holds its coverage; a window axis of terms ``c_k * d_k`` holds
    ``|{sum_k c_k i_k : 0 <= i_k < n_k}|``, tabulated per axis over the extents ``n_k`` (Python-int
    bitsets, grown on demand to the largest coverage asked). An axis whose table would exceed
    ``max_table`` entries (three or more long window terms) falls back to its interval hull, an
    over-estimate.
    """

    max_table = 1 << 18

    def __init__(self, op: Operator) -> None:
        bounds = op.bounds
        dims = op.dim_names
        axes = [a for t in op.tensors for a in t.axes]
        self.coef = np.zeros((len(dims), len(axes)), dtype=np.int64)  # hull coefficients; 1 on a lone moving term
        self.windows: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []  # (axis, dims, coefs), >= 2 moving
        for x, a in enumerate(axes):
            moving = sorted((dims.index(d), c) for d, c in a.terms if bounds[d] > 1)
            for d, c in moving:
                self.coef[d, x] = c if len(moving) > 1 else 1
            if len(moving) > 1:
                self.windows.append((x, tuple(d for d, _ in moving), tuple(c for _, c in moving)))
        self.starts = np.cumsum([0] + [len(t.axes) for t in op.tensors[:-1]])
        self._tables: dict[int, np.ndarray] = {}

    def _table(self, x: int, coefs: tuple[int, ...], need: tuple[int, ...]) -> np.ndarray | None:
        table = self._tables.get(x)
        if table is not None and all(n <= s for n, s in zip(need, table.shape)):
            return table
        if table is not None:
            need = tuple(max(n, s) for n, s in zip(need, table.shape))
        if math.prod(need) > self.max_table:
            return None
        table = window_sizes(coefs, need)
        self._tables[x] = table
        return table

    def words(self, cover: np.ndarray) -> np.ndarray:
        """(n, T) words of each tensor in a box of ``cover`` (n, D) iterations."""
        sizes = 1 + (cover - 1) @ self.coef
        for x, dims, coefs in self.windows:
            ext = cover[:, dims]
            table = self._table(x, coefs, tuple(int(e) for e in ext.max(axis=0)))
            if table is not None:
                sizes[:, x] = table[tuple((ext - 1).T)]
        return np.multiply.reduceat(sizes, self.starts, axis=1)


def window_sizes(coefs: tuple[int, ...], extents: tuple[int, ...]) -> np.ndarray:
    """Table ``[n_1 - 1, ..., n_k - 1]`` of ``|{sum_k coefs[k] i_k : 0 <= i_k < n_k}|`` for ``n_k <= extents[k]``."""
    out = np.zeros(extents, dtype=np.int64)

    def fill(k: int, base: int, index: tuple[int, ...]) -> None:
        s = base
        for m in range(extents[k]):
            if m:
                s |= base << (coefs[k] * m)
            if k + 1 == len(coefs):
                out[index + (m,)] = s.bit_count()
            else:
                fill(k + 1, s, index + (m,))

    fill(0, 1, ())
    return out


class Capacity:
    """Fit test of tiles at every level: per capacity partition (role or whole level), the sum of the
    kept tensors' footprints (in words or bits), against the capacity one buffer offers."""

    def __init__(self, op: Operator, arch: ArchSpec, keeps: np.ndarray) -> None:
        self.sizes = AxisSizes(op)
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
        spec = self.levels[level]
        if spec is None:
            return np.ones(cover.shape[0], dtype=bool)
        return (self.sizes.words(cover) @ spec[0] <= spec[1]).all(axis=1)


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
    """Maximal tiles of one level over one inner coverage, for any divisor-closed sub-box of ``residual``.

    The fit of every tile of the ``residual`` lattice is computed once; a sub-box (what an
    unrolling leaves, ``residual // spatial``) is a sub-lattice of it, so its fits are gathered and
    only the maximality test (Fig. 9's pruning) runs per sub-box."""

    def __init__(self, capacity: Capacity, level: int, inner: np.ndarray, residual: tuple[int, ...]) -> None:
        self.residual = residual
        self.capacity, self.level, self.inner = capacity, level, inner
        self.fits = capacity.fits(level, divisor_lattice(residual) * inner[None, :]).reshape(
            tuple(len(divisors(n)) for n in residual))
        self._index = [{d: k for k, d in enumerate(divisors(n))} for n in residual]
        self._done: dict[tuple, tuple[np.ndarray, int]] = {}

    def maximal(self, limits: tuple[int, ...], caps: tuple[int, ...] | None = None) -> tuple[np.ndarray, int]:
        """Maximal fitting tiles dividing ``limits`` (or, with ``caps``, ceil splits of it padding each
        dimension to at most its cap) and the number of fitting ones (the tree's nodes)."""
        if caps is not None and all(c <= n and r % n == 0 for c, n, r in zip(caps, limits, self.residual)):
            caps = None  # no room to pad and a divisor sub-box: the divisor sub-lattice
        key = (limits, caps)
        if key not in self._done:
            self._done[key] = self._maximal(limits) if caps is None else self._maximal_padded(limits, caps)
        return self._done[key]

    def _maximal_padded(self, limits: tuple[int, ...], caps: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """The ceil-split lattice is not a sub-lattice of ``residual``'s divisors: its fits are computed anew."""
        lattice = divisor_lattice(limits, caps)
        fits = self.capacity.fits(self.level, lattice * self.inner[None, :])
        return lattice[maximal_mask(limits, fits, caps)], int(fits.sum())

    def _maximal(self, limits: tuple[int, ...]) -> tuple[np.ndarray, int]:
        fits = self.fits
        for d, (n, r) in enumerate(zip(limits, self.residual)):
            if n != r:  # the divisors of n among those of r (the other axes are taken whole)
                fits = fits.take([self._index[d][x] for x in divisors(n)], axis=d)
        fits = fits.reshape(-1)
        keep = maximal_mask(limits, fits)
        return divisor_lattice(limits)[keep], int(fits.sum())


def maximal_tiles(op: Operator, arch: ArchSpec, level: int, keeps: np.ndarray, inner: np.ndarray,
                  limits: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Maximal tiles (factors per dimension, dividing ``limits``) of ``level`` over the ``inner`` coverage
    (D,) already fixed below it, and the number of fitting tiles the tree visits (Fig. 9)."""
    return TileTree(Capacity(op, arch, keeps), level, inner, limits).maximal(limits)
