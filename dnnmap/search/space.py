"""The declared mapping space: divisor factorizations of every dimension over temporal and spatial slots,
shrunk by :class:`~dnnmap.search.constraints.Constraints` (fixed factors and tiles, spatial dimensions and
axes, loop orders, bypass, padding, layouts).

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
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from dnnmap import limits
from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.mapping.mapping import BOTH_AXES
from dnnmap.search.constraints import Constraints, LevelConstraints
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


@lru_cache(maxsize=None)
def prime_factors(n: int) -> tuple[int, ...]:
    """The distinct primes dividing ``n``, ascending."""
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    return tuple(out + ([n] if n > 1 else []))


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
    """The declared space for one operator on one architecture, shrunk by ``constraints``.

    Sub-spaces (Timeloop's map space is their product): per dimension a factorization table over the
    slots (:meth:`factor_table`), per level a set of loop orders (:meth:`expand_orders`), the bypass
    (:attr:`keeps`) and the DRAM layouts. ``Constraints()`` gives the whole declared space."""

    op: Operator
    arch: ArchSpec
    constraints: Constraints = field(default_factory=Constraints)

    @property
    def waste(self) -> float | None:
        """Imperfect factorization: padded extent up to (1 + waste) x bound; None = exact."""
        return self.constraints.waste

    @property
    def spatial_slots(self) -> tuple[SpatialSlot, ...]:
        return tuple(SpatialSlot(i, a, size) for i, lv in enumerate(self.arch.levels) if lv.fanout
                     for a, size in enumerate(lv.fanout.shape))

    @property
    def n_slots(self) -> int:
        return len(self.arch.levels) + len(self.spatial_slots)

    def _level(self, i: int) -> LevelConstraints:
        return self.constraints.level(self.arch.levels[i].name)

    def factor_table(self, dim: str) -> np.ndarray:
        """Factorizations of ``dim`` over the slots; spatial slots capped by their size, then every
        constraint on ``dim`` applied (fixed factors, tile, spatial dimensions and axes).

        Imperfect (``waste``): the ceil splits are taken in slot order with the DRAM temporal factor
        last, so it is the one that takes what the others leave. With a tile fixed at a level, the
        slots at and below it split the tile (ceil splits up to the padding) and the slots above split
        ``ceil(bound / product)`` exactly."""
        tiled = [(i, dict(self._level(i).tile)[dim]) for i in range(len(self.arch.levels))
                 if dim in dict(self._level(i).tile)]
        if len(tiled) > 1:
            raise DnnmapError(f"{self.constraints.prefix()}dimension {dim} has a tile at more than one level")
        table = self._tiled_table(dim, *tiled[0]) if tiled else self._whole_table(dim)
        table = table[self._keep_rows(dim, table)]
        if len(table) == 0:
            raise MappingError(f"layer {self.op.name!r}: no factorization of dimension {dim} = "
                               f"{self.op.bound(dim)} satisfies the {self.constraints.name or 'given'} constraints "
                               f"on {self.arch.name!r}")
        return table

    def _whole_table(self, dim: str) -> np.ndarray:
        bound = self.op.bound(dim)
        L = len(self.arch.levels)
        if self.waste is None:
            return ordered_factorizations(bound, self.n_slots)
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
        return table

    def _tiled_table(self, dim: str, level: int, tile: int) -> np.ndarray:
        """Rows whose slots at and below ``level`` split ``tile`` (rows in their lexicographic order) and
        whose slots above split what the tile leaves."""
        L = len(self.arch.levels)
        below = list(range(level + 1)) + [L + k for k, s in enumerate(self.spatial_slots) if s.level <= level]
        above = [s for s in range(self.n_slots) if s not in below]
        if self.waste is None:
            inner = ordered_factorizations(tile, len(below))
        else:
            inner = ceil_factorizations(tile, len(below), padded_cap(tile, self.waste))
        prods = inner.prod(axis=1)
        outer = {int(p): ordered_factorizations(-(-self.op.bound(dim) // int(p)), len(above)) for p in np.unique(prods)}
        counts = np.array([len(outer[int(p)]) for p in prods], dtype=np.int64)
        table = np.ones((int(counts.sum()), self.n_slots), dtype=np.int64)
        table[:, below] = np.repeat(inner, counts, axis=0)
        table[:, above] = np.concatenate([outer[int(p)] for p in prods])
        return table

    def _keep_rows(self, dim: str, table: np.ndarray) -> np.ndarray:
        """Rows within the fan-out sizes and every fixed factor, spatial-dimension and axis constraint."""
        L = len(self.arch.levels)
        keep = np.ones(len(table), dtype=bool)
        for k, slot in enumerate(self.spatial_slots):
            allowed = self._level(slot.level).spatial_dims
            limit = slot.size if allowed is None or dim in allowed else 1
            axis = dict(self._level(slot.level).axes).get(dim)
            keep &= table[:, L + k] <= (limit if axis is None or axis == slot.axis else 1)
        for i in range(L):
            c = self._level(i)
            if dim in dict(c.temporal):
                keep &= table[:, i] == dict(c.temporal)[dim]
            if dim in dict(c.spatial):
                cols = [L + k for k, s in enumerate(self.spatial_slots) if s.level == i]
                keep &= table[:, cols].prod(axis=1) == dict(c.spatial)[dim]
        return keep

    def tables(self) -> list[np.ndarray]:
        return [self.factor_table(d) for d in self.op.dim_names]

    @property
    def keeps(self) -> np.ndarray:
        """(L, T) bool: tensor ``j`` stored at level ``i`` (the architecture's, or the constraints' ``keep``)."""
        keeps = MappingBatch.default_keeps(self.op, self.arch)
        for i in range(len(self.arch.levels)):
            keep = self._level(i).keep
            if keep is not None:
                keeps[i] = [t.role in keep for t in self.op.tensors]
        return keeps

    def to_batch(self, factors: np.ndarray, order: np.ndarray, above: np.ndarray | None = None) -> MappingBatch:
        """Slot factors (B, D, slots), orders (B, L, D) and placements (B, L, T, or None: shared boundaries)
        -> a :class:`MappingBatch` (the space's bypass and layouts)."""
        B, D, _ = factors.shape
        L = len(self.arch.levels)
        temporal = np.transpose(factors[:, :, :L], (0, 2, 1)).copy()
        spatial = np.ones((B, L, D), dtype=np.int64)
        axes = np.zeros((B, L, D), dtype=np.int64)
        for k, slot in enumerate(self.spatial_slots):  # a dimension split on two axes spans both
            f = factors[:, :, L + k]
            axis = np.where(spatial[:, slot.level, :] > 1, BOTH_AXES, slot.axis)
            axes[:, slot.level, :] = np.where(f > 1, axis, axes[:, slot.level, :])
            spatial[:, slot.level, :] *= f
        return MappingBatch(temporal, spatial, order, self.keeps, self.constraints.layouts, axes, above)

    def spatial_legal(self, factors: np.ndarray) -> np.ndarray:
        """Rows whose spatial slot factors fit each fan-out axis; a dim is split on one axis per level unless
        the level's constraints allow ``both_axes``."""
        L = len(self.arch.levels)
        ok = np.ones(factors.shape[0], dtype=bool)
        per_level: dict[int, list[int]] = {}
        for k, slot in enumerate(self.spatial_slots):
            ok &= factors[:, :, L + k].prod(axis=1) <= slot.size
            per_level.setdefault(slot.level, []).append(L + k)
        for level, cols in per_level.items():
            if len(cols) > 1 and not self._level(level).both_axes:  # a dimension may use only one axis of a 2-D fan-out
                ok &= ((factors[:, :, cols] > 1).sum(axis=2) <= 1).all(axis=1)
        return ok

    def order_chain(self, level: int) -> tuple[int, ...]:
        """Dimension indices of the level's constrained relative order, outermost first (those the layer has)."""
        order = self._level(level).order or ()
        return tuple(self.op.dim_names.index(d) for d in order if d in self.op.dim_names)

    def fixed_order(self, level: int) -> tuple[int, ...] | None:
        """The level's one loop order when it is fixed, else None: a constrained order naming every dimension;
        level 0's, whose order no count depends on: its constrained loops first, the others in dimension order."""
        chain = self.order_chain(level)
        if len(chain) == len(self.op.dim_names) or level == 0:
            return chain + tuple(d for d in range(len(self.op.dim_names)) if d not in chain)
        return None

    def placeable(self, level: int) -> np.ndarray:
        """(T,) bool: tensors whose tile the space may place below some of ``level``'s loops (placement on, the
        level keeps the tensor and is not the backing store, which holds whole tensors)."""
        if not self.constraints.placement or level == len(self.arch.levels) - 1:
            return np.zeros(len(self.op.tensors), dtype=bool)
        return self.keeps[level].copy()

    def _level0_free(self) -> bool:
        """Level 0's order is fixed only because no count depends on it; a tensor placed there makes it matter."""
        return bool(self.placeable(0).any()) and len(self.order_chain(0)) < len(self.op.dim_names)

    def level_choices(self, level: int, nontrivial: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Every (loop order, placement) of ``level`` for candidates whose non-trivial loops there are
        ``nontrivial``: orders (n, D) and placements (n, T), each placeable tensor below 0..k of the k loops.

        Lossless pruning as for orders: on level 0 every order but the fixed one is taken only with some
        tensor placed there (otherwise its order changes no count)."""
        D, T = len(self.op.dim_names), len(self.op.tensors)
        fixed = self.fixed_order(level)
        placeable = self.placeable(level)
        aboves = list(itertools.product(*[range(len(nontrivial) + 1) if p else (0,) for p in placeable]))
        if level == 0 and self._level0_free():
            free = level_orders(nontrivial, D, self.order_chain(0))
            pairs = [(fixed, (0,) * T)] + [(o, a) for o in free for a in aboves if any(a)]
        else:
            orders = [fixed] if fixed is not None else level_orders(nontrivial, D, self.order_chain(level))
            pairs = [(o, a) for o in orders for a in aboves]
        return (np.array([o for o, _ in pairs], dtype=np.int64).reshape(-1, D),
                np.array([a for _, a in pairs], dtype=np.int64).reshape(-1, T))

    def choice_count(self, level: int, k: int) -> int:
        """How many (order, placement) pairs :meth:`level_choices` gives a level with ``k`` non-trivial loops
        (a relative order constraint not counted: an upper bound), for the exhaustive size estimate."""
        orders = 1 if self.fixed_order(level) is not None else math.factorial(k)
        places = (k + 1) ** int(self.placeable(level).sum())
        if level == 0 and self._level0_free():
            return 1 + math.factorial(k) * (places - 1)
        return orders * places

    def expand_orders(self, factors: np.ndarray, chunk: int = 200_000):  # noqa: ANN201 - generator of arrays
        """Yield (factors, orders, placements) groups: every candidate paired with every allowed order of the
        non-trivial loops of each level whose order is not fixed (trivial loops innermost: lossless) and, with
        ``placement``, every placement of each kept tensor (:meth:`level_choices`; pieces of at most ``chunk``
        mappings); placements None without it."""
        if len(factors) == 0:
            return
        L = len(self.arch.levels)
        placed = self.constraints.placement
        varied = [lv for lv in range(L) if placed or self.fixed_order(lv) is None]
        nontrivial = factors[:, :, :L] > 1  # (B, D, L)
        keys = np.packbits(nontrivial[:, :, varied].reshape(len(factors), -1), axis=1)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for g in range(inverse.max() + 1):
            rows = np.nonzero(inverse == g)[0]
            mask = nontrivial[rows[0]]
            per_level = [self.level_choices(lv, tuple(np.nonzero(mask[:, lv])[0])) for lv in range(L)]
            pick = np.stack(np.meshgrid(*[np.arange(len(o)) for o, _ in per_level], indexing="ij"), -1).reshape(-1, L)
            combos = np.stack([per_level[lv][0][pick[:, lv]] for lv in range(L)], axis=1)  # (n_orders, L, D)
            if not placed:
                yield np.repeat(factors[rows], len(combos), axis=0), np.tile(combos, (len(rows), 1, 1)), None
                continue
            above = np.stack([per_level[lv][1][pick[:, lv]] for lv in range(L)], axis=1)  # (n_orders, L, T)
            step = max(1, chunk // len(combos))
            for start in range(0, len(rows), step):
                part = rows[start:start + step]
                yield (np.repeat(factors[part], len(combos), axis=0), np.tile(combos, (len(part), 1, 1)),
                       np.tile(above, (len(part), 1, 1)))


def decode(idx: np.ndarray, tables: list[np.ndarray]) -> np.ndarray:
    """Mixed-radix decode of candidate indices into (n, D, slots) factors (one row of each dimension's table)."""
    out = []
    rem = idx.copy()
    for t in reversed(tables):
        out.append(t[rem % len(t)])
        rem //= len(t)
    return np.stack(out[::-1], axis=1)


def level_orders(dims_nontrivial: tuple[int, ...], D: int, chain: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    """All orders of the non-trivial loops of a level (trivial loops appended innermost: lossless) in which
    the loops of ``chain`` that are non-trivial keep its relative order."""
    rest = tuple(d for d in range(D) if d not in dims_nontrivial)
    listed = [d for d in chain if d in dims_nontrivial]
    perms = itertools.permutations(dims_nontrivial)
    if listed:
        perms = (p for p in perms if [d for d in p if d in listed] == listed)
    return [perm + rest for perm in perms]


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
    radix = [int(r) + 1 for r in a.max(axis=0).tolist()] if len(a) else [1] * a.shape[1]
    if math.prod(radix) >= 2 ** 62:
        keys, inverse = np.unique(a, axis=0, return_inverse=True)
        return keys, inverse.reshape(-1)
    weights = [1] * a.shape[1]  # each column's weight: the product of the radices after it
    for k in range(a.shape[1] - 2, -1, -1):
        weights[k] = weights[k + 1] * radix[k + 1]
    weights = np.array(weights, dtype=np.int64)
    _, first, inverse = np.unique(a.astype(np.int64) @ weights, return_index=True, return_inverse=True)
    return a[first], inverse.reshape(-1)


def two_term_values(u: np.ndarray | int, v: np.ndarray | int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) the distinct values of ``u x + v y`` (positive steps ``u``, ``v``, per row or one for all) over ``x < a``,
    ``y < b``: with ``g = gcd(u, v)`` the pairs ``(x, y)`` and ``(x + v / g, y - u / g)`` give one value and the pairs
    of a value form one such chain, so the values are the pairs whose predecessor ``(x - v / g, y + u / g)`` lies
    outside the grid: ``a b - max(0, a - v / g) max(0, b - u / g)``. With unit strides (``u``, ``v`` the coefficients)
    :func:`window_extent` of a two-term axis over contiguous ranges."""
    g = np.gcd(u, v)
    return a * b - np.maximum(0, a - v // g) * np.maximum(0, b - u // g)


@lru_cache(maxsize=256)
def axis_columns(op: Operator) -> tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]:
    """(tensor, dimension columns, coefficients) of every tensor axis."""
    dims = op.dim_names
    return tuple((j, tuple(dims.index(d) for d, _ in a.terms), tuple(c for _, c in a.terms))
                 for j, t in enumerate(op.tensors) for a in t.axes)


@dataclass(frozen=True)
class AxisPlan:
    """A layer's tensor axes grouped for per-row counts over all of them (:func:`touched_lower`, the sumset bound of
    the optimal mapper's bounds): the one-term axes as one product of columns per tensor, the others one by one."""

    tensors: int
    single: tuple[tuple[int, tuple[int, ...]], ...]  # (tensor, dimension columns of its one-term axes)
    multi: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]  # (tensor, columns, coefficients) of the others

    def single_product(self, cover: np.ndarray) -> np.ndarray:
        """(n, T) per tensor the product of ``cover``'s columns of its one-term axes (1 for a tensor without),
        as floats: the counts are integers, so the products are those of the axes one at a time."""
        out = np.ones((cover.shape[0], self.tensors))
        if self.single:
            values = cover.astype(float)
            for t, columns in self.single:
                column = out[:, t]
                for c in columns:
                    column *= values[:, c]
        return out


_AXIS_PLANS: dict[int, tuple[Operator, AxisPlan]] = {}  # by the operator's identity: hashing it costs more than a count


def axis_plan(op: Operator) -> AxisPlan:
    """:class:`AxisPlan` of ``op``, cached per operator object (which the cache keeps, so its id is not reused)."""
    hit = _AXIS_PLANS.get(id(op))
    if hit is None or hit[0] is not op:
        if len(_AXIS_PLANS) >= 256:
            _AXIS_PLANS.clear()
        columns = axis_columns(op)
        single = tuple((t, tuple(index[0] for j, index, _ in columns if j == t and len(index) == 1))
                       for t in range(len(op.tensors)))
        plan = AxisPlan(len(op.tensors), tuple((t, c) for t, c in single if c),
                        tuple(c for c in columns if len(c[1]) > 1))
        hit = _AXIS_PLANS[id(op)] = (op, plan)
    return hit[1]


def touched_lower(op: Operator, cover: np.ndarray, contiguous: bool = False) -> np.ndarray:
    """(n, T) lower bound of the words of each tensor one instance touches when it iterates ``cover``
    (per dimension that many indices). In general an axis touches at least as many elements as its
    largest term alone takes values; when each dimension's indices form one contiguous range (a tile:
    all loops below a level, or the whole layer) the count of a sliding-window axis is exact."""
    plan = axis_plan(op)
    out = plan.single_product(cover)  # a one-term axis: its dimension's count
    for j, index, coefs in plan.multi:
        cols = cover[:, list(index)]
        if contiguous and len(coefs) == 2 and index[0] != index[1] and min(coefs) > 0:
            out[:, j] *= two_term_values(*coefs, cols[:, 0], cols[:, 1])
        elif contiguous:
            keys, inverse = unique_rows(cols)
            exact = np.array([window_extent(coefs, tuple(int(x) for x in k)) for k in keys], dtype=float)
            out[:, j] *= exact[inverse.reshape(-1)]
        else:
            out[:, j] *= cols.max(axis=1)
    return out
