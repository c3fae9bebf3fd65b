"""Uniform random sampling of legal candidates of a :class:`~dnnmap.search.space.MapSpace`, compiled.

A candidate draws, for every dimension, one row of its factorization table (temporal factor
per level, then one spatial factor per fan-out axis) and, for every level, a uniformly random
loop order (Fisher-Yates). Draws whose spatial factors overflow a fan-out axis, or that split
one dimension over both axes of a 2-D fan-out (unless the level's constraints allow ``both_axes``), are
rejected and redrawn - the same space and
distribution as :meth:`MapSpace.spatial_legal` describes. Writing the mapping arrays directly
keeps sampling as cheap as evaluating (docs/search.md). The space's constraints shrink the factor tables
(:meth:`MapSpace.factor_table`); a level's constrained loop order is kept by putting its loops back in that
order on the positions the shuffle gave them. With ``placement`` each tensor a level keeps (not the backing
store) then draws, uniformly, how many of the level's non-trivial loops lie above its tile (0..k); without it
no draw is made, so the candidates are those of the shared-boundary space for the same seed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from dnnmap.cost.batch import MappingBatch
from dnnmap.mapping.mapping import BOTH_AXES
from dnnmap.search.space import MapSpace


_MULT = np.uint64(0x2545F4914F6CDD1D)


@njit(cache=True, inline="always")
def _next(state: np.uint64) -> np.uint64:
    """xorshift64* step (Vigna 2016): a fast, seedable generator for the per-draw indices."""
    state ^= state >> np.uint64(12)
    state ^= state << np.uint64(25)
    state ^= state >> np.uint64(27)
    return state


@njit(cache=True, inline="always")
def _below(state: np.uint64, n: int) -> int:
    """An integer in ``[0, n)`` from the high bits of the generator's output (Lemire's reduction)."""
    return int(((state * _MULT) >> np.uint64(32)) * np.uint64(n) >> np.uint64(32))


@njit(cache=True)
def _sample(rows: np.ndarray, offsets: np.ndarray, L: int, slot_level: np.ndarray, slot_axis: np.ndarray,
            slot_size: np.ndarray, slot_both: np.ndarray, chains: np.ndarray, chain_len: np.ndarray,
            placeable: np.ndarray, n: int, max_draws: int,
            seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Up to ``n`` legal candidates as (temporal, spatial, order, axes, placement) arrays, and the draws made.

    ``chains[j, :chain_len[j]]``: the dimensions whose relative order level ``j`` keeps (outermost first);
    after the shuffle they are put back, in that order, on the positions they drew (uniform over the
    orders that keep it). ``slot_both[k]``: slot ``k``'s level lets a dimension use both its axes.
    ``placeable[j, t]``: tensor ``t``'s tile at level ``j`` draws its placement (all False: none drawn)."""
    state = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
    D = offsets.shape[0] - 1
    S = slot_level.shape[0]
    tf = np.ones((n, L, D), np.int64)
    sf = np.ones((n, L, D), np.int64)
    order = np.empty((n, L, D), np.int64)
    axes = np.zeros((n, L, D), np.int64)
    T = placeable.shape[1]
    above = np.zeros((n, L, T), np.int64)
    pick = np.empty(D, np.int64)
    in_chain = np.zeros((L, D), np.bool_)
    for j in range(L):
        for r in range(chain_len[j]):
            in_chain[j, chains[j, r]] = True
    used = np.empty(S, np.int64)
    count = 0
    drawn = 0
    while count < n and drawn < max_draws:
        drawn += 1
        for k in range(S):
            used[k] = 1
        legal = True
        for d in range(D):  # draw dimension by dimension, rejecting as soon as a fan-out overflows
            state = _next(state)
            row = offsets[d] + _below(state, offsets[d + 1] - offsets[d])
            pick[d] = row
            split_level = -1
            for k in range(S):
                f = rows[row, L + k]
                if f > 1:
                    used[k] *= f
                    if used[k] > slot_size[k] or (split_level == slot_level[k] and not slot_both[k]):
                        legal = False  # overflow, or one dimension on two axes of the same fan-out
                    split_level = slot_level[k]
            if not legal:
                break
        if not legal:
            continue
        for d in range(D):
            row = pick[d]
            for j in range(L):
                tf[count, j, d] = rows[row, j]
            for k in range(S):
                f = rows[row, L + k]
                if f > 1:  # a dimension already split on another axis of the level spans both
                    axes[count, slot_level[k], d] = BOTH_AXES if sf[count, slot_level[k], d] > 1 else slot_axis[k]
                    sf[count, slot_level[k], d] *= f
        for j in range(L):
            for d in range(D):
                order[count, j, d] = d
            for d in range(D - 1, 0, -1):
                state = _next(state)
                r = _below(state, d + 1)
                tmp = order[count, j, d]
                order[count, j, d] = order[count, j, r]
                order[count, j, r] = tmp
            r = 0
            for p in range(D):
                if in_chain[j, order[count, j, p]]:
                    order[count, j, p] = chains[j, r]
                    r += 1
            loops = 0
            for d in range(D):
                if tf[count, j, d] > 1:
                    loops += 1
            for t in range(T):
                if placeable[j, t]:
                    state = _next(state)
                    above[count, j, t] = _below(state, loops + 1)
        count += 1
    return tf[:count], sf[:count], order[:count], axes[:count], above[:count], drawn


class CandidateSampler:
    """Draws batches of legal candidates of ``space``; deterministic for a given seed."""

    def __init__(self, space: MapSpace, seed: int) -> None:
        tables = space.tables()
        self._rows = np.ascontiguousarray(np.concatenate(tables, axis=0), dtype=np.int64)
        self._offsets = np.cumsum([0] + [len(t) for t in tables]).astype(np.int64)
        slots = space.spatial_slots
        self._slot_level = np.array([s.level for s in slots], dtype=np.int64)
        self._slot_axis = np.array([s.axis for s in slots], dtype=np.int64)
        self._slot_size = np.array([s.size for s in slots], dtype=np.int64)
        self._slot_both = np.array([space.constraints.level(space.arch.levels[s.level].name).both_axes for s in slots],
                                   dtype=np.bool_)
        self._L = len(space.arch.levels)
        D = len(space.op.dim_names)
        self._chains = np.zeros((self._L, D), dtype=np.int64)
        self._chain_len = np.zeros(self._L, dtype=np.int64)
        for j in range(self._L):
            chain = space.order_chain(j)
            self._chains[j, :len(chain)] = chain
            self._chain_len[j] = len(chain)
        self._keeps = space.keeps
        self._placeable = np.array([space.placeable(j) for j in range(self._L)], dtype=np.bool_).reshape(self._L, -1)
        self._layouts = space.constraints.layouts
        self._seed = seed
        self._calls = 0
        self.drawn = 0

    def sample(self, n: int) -> MappingBatch:
        """Up to ``n`` legal candidates (fewer when 50 x ``n`` draws find fewer legal ones)."""
        self._calls += 1
        tf, sf, order, axes, above, drawn = _sample(self._rows, self._offsets, self._L, self._slot_level,
                                                    self._slot_axis, self._slot_size, self._slot_both, self._chains,
                                                    self._chain_len, self._placeable, n, 50 * n,
                                                    (self._seed * 1_000_003 + self._calls) % (2**31))
        self.drawn += drawn
        return MappingBatch(tf, sf, order, self._keeps, self._layouts, axes,
                            above if self._placeable.any() else None)
