"""The declared mapping space: divisor factorizations of every dimension over temporal and spatial slots.

Slots are the temporal factor of each level (innermost first) followed by one spatial
factor per fan-out axis. A candidate assigns every dimension an ordered factorization of
its bound over the slots (exact divisors), every level a loop order, and is legal when the
spatial factors on each fan-out axis multiply to at most the axis size. Capacity is
checked by the cost model.

With ``waste`` set (imperfect factorization, docs/search.md) a dimension's factors may multiply
to more than its bound, up to ``floor((1 + waste) * bound)``: each factor is a *ceil split*
(:func:`factor_candidates`) of what the factors before it leave, so the edge tiles are the only
padding. ``waste=0`` is exactly the divisor space.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dnnmap import limits
from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.errors import DnnmapError
from dnnmap.workload.ir import Operator


@lru_cache(maxsize=4096)
def ordered_factorizations(n: int, k: int) -> np.ndarray:
    """All ``k``-tuples of positive integers whose product is ``n`` (rows of an int64 array)."""
    if k == 1:
        return np.array([[n]], dtype=np.int64)
    rows = []
    for d in range(1, n + 1):
        if n % d == 0:
            for rest in ordered_factorizations(n // d, k - 1):
                rows.append((d, *rest))
    return np.array(rows, dtype=np.int64)


def padded_cap(bound: int, waste: float | None) -> int:
    """Largest padded extent allowed for a dimension of ``bound`` iterations (``bound`` when exact)."""
    return bound if waste is None else max(bound, int(math.floor((1.0 + waste) * bound + 1e-9)))


@lru_cache(maxsize=16384)
def factor_candidates(n: int, cap: int | None = None) -> tuple[int, ...]:
    """Factors ``f`` (ascending) a residual of ``n`` iterations may be split by, with the padded extent
    ``f * ceil(n / f)`` at most ``cap`` (default ``n``: exactly the divisors of ``n``).

    Only ``f = ceil(n / k)`` for ``k = 1..n`` are candidates: it is the smallest factor leaving ``k``
    outer steps, and any larger factor with ``k`` steps covers the same iterations with a larger,
    more padded tile. Every divisor ``d`` is one (``k = n / d``), with no padding."""
    cap = n if cap is None else cap
    if cap <= n:
        return divisors(n)
    k = np.arange(1, n + 1, dtype=np.int64)
    f = np.unique(-(-n // k))
    keep = f * -(-n // f) <= cap
    return tuple(int(x) for x in f[keep])


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """The divisors of ``n``, ascending."""
    k = np.arange(1, n + 1, dtype=np.int64)
    return tuple(int(x) for x in k[n % k == 0])


@lru_cache(maxsize=4096)
def ceil_factorizations(n: int, k: int, cap: int) -> np.ndarray:
    """All ``k``-tuples built by ceil splits of ``n`` (``f_1`` a candidate of ``n``, ``f_2`` of
    ``ceil(n / f_1)``, ..., the last one what is left) whose product is at most ``cap`` (rows of an
    int64 array). ``cap == n`` gives :func:`ordered_factorizations`."""
    if k == 1:
        return np.array([[n]], dtype=np.int64)
    parts = []
    for f in factor_candidates(n, cap):
        rest = ceil_factorizations(-(-n // f), k - 1, cap // f)
        parts.append(np.concatenate([np.full((len(rest), 1), f, dtype=np.int64), rest], axis=1))
    return np.concatenate(parts, axis=0)


@lru_cache(maxsize=65536)
def count_ceil_factorizations(n: int, k: int, cap: int) -> int:
    """Rows :func:`ceil_factorizations` would build (without building them)."""
    if k == 1:
        return 1
    return sum(count_ceil_factorizations(-(-n // f), k - 1, cap // f) for f in factor_candidates(n, cap))


@dataclass(frozen=True)
class SpatialSlot:
    level: int
    axis: int
    size: int


@dataclass(frozen=True)
class MapSpace:
    """Slots and constraints of the declared space for one operator on one architecture."""

    op: Operator
    arch: ArchSpec
    spatial_dims: tuple[str, ...] | None = None  # None = every dimension may be spatial
    waste: float | None = None  # imperfect factorization: padded extent up to (1 + waste) x bound; None = exact

    @property
    def spatial_slots(self) -> tuple[SpatialSlot, ...]:
        return tuple(SpatialSlot(i, a, size) for i, lv in enumerate(self.arch.levels) if lv.fanout
                     for a, size in enumerate(lv.fanout.shape))

    @property
    def n_slots(self) -> int:
        return len(self.arch.levels) + len(self.spatial_slots)

    def factor_table(self, dim: str) -> np.ndarray:
        """Factorizations of ``dim`` over the slots; spatial slots capped by their size (and the dim filter).

        Imperfect (``waste``): the ceil splits are taken in slot order with the DRAM temporal factor
        last, so it is the one that takes what the others leave."""
        bound = self.op.bound(dim)
        L = len(self.arch.levels)
        if self.waste is None:
            table = ordered_factorizations(bound, self.n_slots)
        else:
            chain = [s for s in range(self.n_slots) if s != L - 1] + [L - 1]
            cap = padded_cap(bound, self.waste)
            rows = count_ceil_factorizations(bound, self.n_slots, cap)
            if rows > limits.MAX_SPLITS:
                raise DnnmapError(f"layer {self.op.name!r}: dimension {dim} = {bound:,} has {rows:,} imperfect splits "
                                  f"over {self.n_slots} loop slots with {self.waste:.0%} padding (limit "
                                  f"{limits.MAX_SPLITS:,}); use --mapper sunstone, which does not tabulate them")
            built = ceil_factorizations(bound, self.n_slots, cap)
            table = np.empty_like(built)
            table[:, chain] = built
        keep = np.ones(len(table), dtype=bool)
        for k, slot in enumerate(self.spatial_slots):
            limit = slot.size if (self.spatial_dims is None or dim in self.spatial_dims) else 1
            keep &= table[:, L + k] <= limit
        return table[keep]

    def tables(self) -> list[np.ndarray]:
        return [self.factor_table(d) for d in self.op.dim_names]

    def to_batch(self, factors: np.ndarray, order: np.ndarray) -> MappingBatch:
        """Slot factors (B, D, slots) and orders (B, L, D) -> a :class:`MappingBatch` (default bypass)."""
        B, D, _ = factors.shape
        L = len(self.arch.levels)
        temporal = np.transpose(factors[:, :, :L], (0, 2, 1)).copy()
        spatial = np.ones((B, L, D), dtype=np.int64)
        axes = np.zeros((B, L, D), dtype=np.int64)
        for k, slot in enumerate(self.spatial_slots):
            f = factors[:, :, L + k]
            spatial[:, slot.level, :] *= f
            axes[:, slot.level, :] = np.where(f > 1, slot.axis, axes[:, slot.level, :])
        return MappingBatch(temporal, spatial, order, MappingBatch.default_keeps(self.op, self.arch), (), axes)

    def spatial_legal(self, factors: np.ndarray) -> np.ndarray:
        """Rows whose spatial slot factors fit each fan-out axis; a dim is split on one axis per level."""
        L = len(self.arch.levels)
        ok = np.ones(factors.shape[0], dtype=bool)
        per_level: dict[int, list[int]] = {}
        for k, slot in enumerate(self.spatial_slots):
            ok &= factors[:, :, L + k].prod(axis=1) <= slot.size
            per_level.setdefault(slot.level, []).append(L + k)
        for cols in per_level.values():
            if len(cols) > 1:  # a dimension may use only one axis of a 2-D fan-out
                ok &= ((factors[:, :, cols] > 1).sum(axis=2) <= 1).all(axis=1)
        return ok


def level_orders(dims_nontrivial: tuple[int, ...], D: int) -> list[tuple[int, ...]]:
    """All orders of the non-trivial loops of a level (trivial loops appended innermost: lossless)."""
    rest = tuple(d for d in range(D) if d not in dims_nontrivial)
    return [perm + rest for perm in itertools.permutations(dims_nontrivial)]


@lru_cache(maxsize=65536)
def window_extent(coefs: tuple[int, ...], extents: tuple[int, ...]) -> int:
    """Distinct values of ``sum(c * i)`` with each ``i`` in ``0 .. n - 1`` (one axis over contiguous ranges)."""
    values = np.zeros(1, dtype=np.int64)
    for c, n in zip(coefs, extents):
        values = np.unique((values[:, None] + c * np.arange(n)[None, :]).reshape(-1))
    return len(values)


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, axis=0, return_inverse=True)`` for a non-negative integer (n, k) array, through one
    mixed-radix integer per row (much faster than the row-wise sort) when the radices fit in 62 bits."""
    radix = a.max(axis=0).astype(object) + 1 if len(a) else np.ones(a.shape[1], dtype=object)
    if math.prod(int(r) for r in radix) >= 2 ** 62:
        keys, inverse = np.unique(a, axis=0, return_inverse=True)
        return keys, inverse.reshape(-1)
    weights = np.array([math.prod(int(r) for r in radix[k + 1:]) for k in range(a.shape[1])], dtype=np.int64)
    _, first, inverse = np.unique(a.astype(np.int64) @ weights, return_index=True, return_inverse=True)
    return a[first], inverse.reshape(-1)


@lru_cache(maxsize=256)
def _axis_columns(op: Operator) -> tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]:
    """(tensor, dimension columns, coefficients) of every tensor axis."""
    dims = op.dim_names
    return tuple((j, tuple(dims.index(d) for d, _ in a.terms), tuple(c for _, c in a.terms))
                 for j, t in enumerate(op.tensors) for a in t.axes)


def touched_lower(op: Operator, cover: np.ndarray, contiguous: bool = False) -> np.ndarray:
    """(n, T) lower bound of the words of each tensor one instance touches when it iterates ``cover``
    (per dimension that many indices). In general an axis touches at least as many elements as its
    largest term alone takes values; when each dimension's indices form one contiguous range (a tile:
    all loops below a level, or the whole layer) the count of a sliding-window axis is exact."""
    out = np.ones((cover.shape[0], len(op.tensors)), dtype=float)
    for j, index, coefs in _axis_columns(op):
        cols = cover[:, list(index)]
        if contiguous and len(coefs) > 1:
            keys, inverse = unique_rows(cols)
            exact = np.array([window_extent(coefs, tuple(int(x) for x in k)) for k in keys], dtype=float)
            out[:, j] *= exact[inverse.reshape(-1)]
        else:
            out[:, j] *= cols.max(axis=1)
    return out
