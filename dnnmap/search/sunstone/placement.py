"""Per-tensor placement in the Sunstone walk (``--placement``; docs/cost-model.md section 1b, docs/search.md).

Two pieces:

* :func:`free_placement`: for one level's loop order and temporal factors, each tensor's tile boundary
  below the *leading run* of the level's non-trivial loops that index the tensor (outermost first, up to
  the first loop that does not). Those loops act for the tensor like loops of the level above: within one
  event of the level every word of the shared tile is still filled once, in pieces, but the tile no longer
  holds their extent. The walk uses it as the capacity relief that lets larger tiles fit
  (:meth:`.tiles.Capacity.fits_placed`); :func:`placement_variants` gives the candidates' placements (it
  is not free across the level's events: module docstring of that function).
* :func:`refine_placements`: the final stage over a finished mapping: per level (innermost first), every
  (loop order, placement) pair of the core's :meth:`MapSpace.level_choices` with the other levels fixed,
  the best kept, until a pass over the levels improves nothing. When a level's free orders would give more
  than ``order_limit`` pairs, its order stays the walk's (a full-order constraint) and only placements vary.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import best_index
from dnnmap.search.constraints import Constraints
from dnnmap.search.space import MapSpace
from dnnmap.search.sunstone.reuse import ReuseKind, reuse_table
from dnnmap.workload.ir import Operator

if TYPE_CHECKING:
    from dnnmap.search.sunstone.tiles import Capacity

ORDER_LIMIT = 4096  # (order, placement) pairs per level above which refinement keeps the walk's order


def relevance(op: Operator) -> np.ndarray:
    """(T, D) bool: dimension ``d`` indexes tensor ``t`` (its tile changes when a loop over ``d`` advances)."""
    table = reuse_table(op)
    return np.array([[table[t.name][d] is not ReuseKind.FULL for d in op.dim_names] for t in op.tensors])


def free_placement(relevant: np.ndarray, order: np.ndarray, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``factors`` (n, D: one level's temporal factors, loop ``order`` outermost first), the loops
    above each tensor's tile (n, T: the leading run of non-trivial loops indexing it) and the factors left
    inside each tensor's tile (n, T, D)."""
    n, T = factors.shape[0], relevant.shape[0]
    above = np.zeros((n, T), dtype=np.int64)
    inside = np.repeat(factors[:, None, :], T, axis=1)
    for d, take in leading_loops(relevant, order, factors):
        above += take
        inside[:, :, d] = np.where(take, 1, inside[:, :, d])
    return above, inside


def leading_loops(relevant: np.ndarray, order: np.ndarray, factors: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """:func:`free_placement`'s loops: per loop ``d`` of ``order`` (outermost first) non-trivial on some row of
    ``factors`` (n, D), ``d`` and the (n, T) mask of the tensors whose leading run it belongs to on each row."""
    leading = np.ones((factors.shape[0], relevant.shape[0]), dtype=bool)
    for d in order:
        live = factors[:, d] > 1
        if not live.any():  # a trivial loop on every row: above no tile, ends no run
            continue
        yield int(d), leading & live[:, None] & relevant[None, :, d]
        leading &= ~(live[:, None] & ~relevant[None, :, d])


def placement_subsets(kept: np.ndarray) -> tuple[np.ndarray, ...]:
    """(T,) bool masks: every non-empty subset of the ``kept`` tensors (those a level may place), smallest first."""
    return _subsets(tuple(bool(k) for k in kept))


@lru_cache(maxsize=64)
def _subsets(kept: tuple[bool, ...]) -> tuple[np.ndarray, ...]:
    candidates = [t for t, k in enumerate(kept) if k]
    out = []
    for subset in itertools.chain.from_iterable(itertools.combinations(candidates, r)
                                                for r in range(1, len(candidates) + 1)):
        mask = np.zeros(len(kept), dtype=bool)
        mask[list(subset)] = True
        mask.setflags(write=False)
        out.append(mask)
    return tuple(out)


def row_keys(fields: np.ndarray, seed: int = 0) -> np.ndarray:
    """A 64-bit hash of each row of the integer array ``fields`` (n, F) (wraps around; collisions negligible;
    hashes of several arrays with distinct ``seed`` add up to one of them side by side)."""
    return fields @ _row_weights(seed, fields.shape[1])


@lru_cache(maxsize=64)
def _row_weights(seed: int, width: int) -> np.ndarray:
    """:func:`row_keys`'s weights for ``seed`` and ``width`` columns (drawn once: the walk hashes a few hundred
    batches; read-only)."""
    weights = np.random.default_rng(seed).integers(1, 2**62, size=width, dtype=np.int64)
    weights.setflags(write=False)
    return weights


def placement_variants(capacity: Capacity, level: int, fits: np.ndarray, free: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The placements a walk candidate takes for each of n tiles at ``level``, given their fits ``fits`` (S, n) and
    free placements ``free`` (n, T) (:meth:`.tiles.Capacity.placed`): none where the shared tile fits; else, for every
    non-empty subset of the tensors the level keeps, the subset at its free placement and the others at the boundary,
    where that fits. Not always all tensors: a placed tile changes at every step of the loops above it, so the level
    keeps no copy across the parent's loops that do not index the tensor (the weights of a register file below the C
    and K loops are refetched at every step of a P loop above). Returns (tile's row, placement (T,)) pairs as an
    index array and an (m, T) array."""
    shared = fits[0]
    T = capacity.relevant.shape[0]
    rows, aboves = [np.nonzero(shared)[0]], [np.zeros((int(shared.sum()), T), dtype=np.int64)]
    if len(fits) == 1:  # no capacity limit: every tile fits shared
        return rows[0], aboves[0]
    for mask, placed_fits in zip(placement_subsets(capacity.keeps[level]), fits[1:]):
        ok = ~shared & (free[:, mask] > 0).all(axis=1) & placed_fits
        rows.append(np.nonzero(ok)[0])
        aboves.append(free[ok] * mask[None, :])
    return np.concatenate(rows), np.concatenate(aboves)


@dataclass
class Refined:
    """The best mapping found by :func:`refine_placements` (one row), its objective, tie-break and evaluations."""

    batch: MappingBatch
    score: float
    tie: float
    evaluated: int


def refine_placements(op: Operator, arch: ArchSpec, objective: str, model: CostModel, start: MappingBatch,
                      order_limit: int = ORDER_LIMIT) -> Refined:
    """Coordinate descent over the levels' (order, placement) choices from the one-row ``start``."""
    L, T = len(arch.levels), len(op.tensors)
    above = start.above if start.above is not None else np.zeros((1, L, T), dtype=np.int64)
    best = MappingBatch(start.temporal, start.spatial, start.order, start.keeps, start.layouts, start.axes, above)
    cost = model.evaluate(best)
    score, tie = float(cost.objective(objective)[0]), float(cost.tie_break()[0])
    evaluated = 1
    free = MapSpace(op, arch, Constraints(placement=True))
    improved = True
    while improved:
        improved = False
        for level in range(L - 1):
            nontrivial = tuple(int(d) for d in np.nonzero(best.temporal[0, level] > 1)[0])
            space = free
            if free.choice_count(level, len(nontrivial)) > order_limit:
                names = tuple(op.dim_names[d] for d in best.order[0, level])
                space = MapSpace(op, arch, free.constraints.with_level(arch.levels[level].name, order=names))
            orders, places = space.level_choices(level, nontrivial)
            n = len(orders)
            order = np.repeat(best.order, n, axis=0)
            ab = np.repeat(best.above, n, axis=0)
            order[:, level], ab[:, level] = orders, places
            cands = MappingBatch(np.repeat(best.temporal, n, axis=0), np.repeat(best.spatial, n, axis=0), order,
                                 best.keeps, best.layouts, np.repeat(best.axes, n, axis=0), ab)
            cost = model.evaluate(cands, reuse_buffers=True)
            evaluated += n
            s, t = cost.objective(objective), cost.tie_break()
            j = best_index(s, t)
            if (s[j], t[j]) < (score, tie):
                best, score, tie, improved = cands.take([j]), float(s[j]), float(t[j]), True
    return Refined(best, score, tie, evaluated)
