"""The declared mapping space: divisor factorizations of every dimension over temporal and spatial slots.

Slots are the temporal factor of each level (innermost first) followed by one spatial
factor per fan-out axis. A candidate assigns every dimension an ordered factorization of
its bound over the slots (exact divisors), every level a loop order, and is legal when the
spatial factors on each fan-out axis multiply to at most the axis size. Capacity is
checked by the cost model.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
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

    @property
    def spatial_slots(self) -> tuple[SpatialSlot, ...]:
        return tuple(SpatialSlot(i, a, size) for i, lv in enumerate(self.arch.levels) if lv.fanout
                     for a, size in enumerate(lv.fanout.shape))

    @property
    def n_slots(self) -> int:
        return len(self.arch.levels) + len(self.spatial_slots)

    def factor_table(self, dim: str) -> np.ndarray:
        """Factorizations of ``dim`` over the slots; spatial slots capped by their size (and the dim filter)."""
        table = ordered_factorizations(self.op.bound(dim), self.n_slots)
        L = len(self.arch.levels)
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
