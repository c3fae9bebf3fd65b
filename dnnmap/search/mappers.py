"""Mappers: exhaustive enumeration of the declared space (the optimality oracle) and random sampling.

Pruning rules (docs/search.md):
- lossless: loop order is enumerated only over a level's non-trivial loops (factor 1 loops
  do not change any count); the order of level 0 is fixed, because the model's counts do
  not depend on it (its loops run inside every tile; MAC lanes have no storage); candidates
  whose spatial factors exceed a fan-out axis are dropped before evaluation; capacity is
  checked for every candidate by the cost model.
- lossy: none in the exhaustive mapper. The random mapper samples the same space.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.mapping.mapping import Mapping
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace, decode
from dnnmap.workload.ir import Operator

Progress = Callable[[int], None]
EXHAUSTIVE_LIMIT = 5e6  # the exhaustive mapper refuses larger declared spaces


class SearchSpaceTooLarge(DnnmapError):
    """The exhaustive space exceeds the limit; the message says how large it is and what to use instead."""


@dataclass(frozen=True)
class SearchResult:
    op: Operator
    arch: ArchSpec
    mapping: Mapping
    cost: CostBatch  # the best mapping's costs (batch of one)
    evaluated: int
    valid: int
    seconds: float
    mapper: str


def _best_of(model: CostModel, batch: MappingBatch, objective: str) -> tuple[float, int, int]:
    cost = model.evaluate(batch, reuse_buffers=True)  # read here, before the next evaluation
    score, idx = cost.best(objective)
    return score, idx, int(cost.valid.sum())


class _Best:
    def __init__(self) -> None:
        self.score = math.inf
        self.batch: MappingBatch | None = None
        self.idx = -1
        self.evaluated = 0
        self.valid = 0

    def offer(self, model: CostModel, batch: MappingBatch, objective: str) -> None:
        if len(batch) == 0:
            return
        score, idx, valid = _best_of(model, batch, objective)
        self.evaluated += len(batch)
        self.valid += valid
        if score < self.score:
            self.score, self.batch, self.idx = score, batch.take([idx]), 0

    def result(self, op: Operator, arch: ArchSpec, model: CostModel, t0: float, mapper: str) -> SearchResult:
        if self.batch is None or not math.isfinite(self.score):
            raise MappingError(nothing_fits_message(op, arch, model))
        return SearchResult(op, arch, self.batch.mapping(0, op, arch), model.evaluate(self.batch), self.evaluated,
                            self.valid, time.perf_counter() - t0, mapper)


def nothing_fits_message(op: Operator, arch: ArchSpec, model: CostModel) -> str:
    """Name the level and tensor that is too small, using the smallest possible tile (all factors 1)."""
    L, D = len(arch.levels), len(op.dim_names)
    ones = np.ones((1, L, D), dtype=np.int64)
    batch = MappingBatch(ones, ones, np.tile(np.arange(D), (1, L, 1)), MappingBatch.default_keeps(op, arch))
    cost = model.evaluate(batch)
    for i, lv in enumerate(arch.levels[:-1]):
        if cost.capacity_excess[0, i] > 0:
            kept = [t for j, t in enumerate(op.tensors) if batch.keeps[i, j]]
            need = ", ".join(f"{t.name} ({t.role}) {int(cost.tile_words[0, i, j])} words"
                             for j, t in enumerate(op.tensors) if batch.keeps[i, j])
            return (f"layer {op.name!r}: no mapping fits architecture {arch.name!r}: even the smallest tile "
                    f"does not fit level {lv.name} (capacity {lv.capacity}); it needs {need}"
                    + (f" for {', '.join(t.name for t in kept)}" if not need else ""))
    return (f"layer {op.name!r}: no legal mapping found on {arch.name!r} by this search, although the smallest tiles "
            "fit every level: try --mapper random (it samples the whole map space; raise --budget if it finds "
            "none either)")


def exhaustive_size(tables: list[np.ndarray], space: MapSpace) -> float:
    """Estimated number of mappings the exhaustive mapper evaluates over ``space``'s factor ``tables``
    (:meth:`MapSpace.tables`): factorizations x loop orders."""
    return math.prod(len(t) for t in tables) * _mean_orders_estimate(tables, space)


def exhaustive_search(op: Operator, arch: ArchSpec, objective: str = "edp", max_space: float = EXHAUSTIVE_LIMIT,
                      chunk: int = 200_000, progress: Progress | None = None,
                      space: MapSpace | None = None) -> SearchResult:
    """Evaluate every candidate of ``space`` (default: the declared space; its factorizations x non-trivial loop
    orders, shrunk by its constraints)."""
    t0 = time.perf_counter()
    space = space or MapSpace(op, arch)
    model = CostModel(op, arch)
    tables = space.tables()
    n_factor = math.prod(len(t) for t in tables)
    estimate = exhaustive_size(tables, space)
    if estimate > max_space:
        raise SearchSpaceTooLarge(
            f"layer {op.name!r}: the exhaustive space has about {estimate:.2e} mappings (limit {max_space:.0e}); "
            "use --mapper random (budgeted sampling) or raise the limit")
    best = _Best()
    for start in range(0, n_factor, chunk):
        idx = np.arange(start, min(n_factor, start + chunk))
        factors = decode(idx, tables)
        factors = factors[space.spatial_legal(factors)]
        for fac, order, above in space.expand_orders(factors):
            best.offer(model, space.to_batch(fac, order, above), objective)
        if progress:
            progress(len(idx))
    return best.result(op, arch, model, t0, "exhaustive")


def random_search(op: Operator, arch: ArchSpec, objective: str = "edp", budget: int = 20_000, seed: int = 0,
                  chunk: int = 50_000, progress: Progress | None = None,
                  space: MapSpace | None = None) -> SearchResult:
    """Evaluate ``budget`` legal candidates sampled from the declared space (Timeloop-style random baseline).

    Each dimension's factorization is drawn uniformly from its table and each level's loop
    order uniformly; draws whose spatial factors exceed a fan-out are redrawn (at most
    50 x ``budget`` draws). Deterministic for a given ``seed``.
    """
    t0 = time.perf_counter()
    space = space or MapSpace(op, arch)
    model = CostModel(op, arch)
    sampler = CandidateSampler(space, seed)
    best = _Best()
    while best.evaluated < budget and sampler.drawn < 50 * budget:
        batch = sampler.sample(min(chunk, budget - best.evaluated))
        if len(batch) == 0:
            break
        best.offer(model, batch, objective)
        if progress:
            progress(len(batch))
    return best.result(op, arch, model, t0, "random")


def _mean_orders_estimate(tables: list[np.ndarray], space: MapSpace) -> float:
    """Expected number of (loop order, placement) choices per factor candidate (:meth:`MapSpace.choice_count`
    of each level; a relative order constraint is not counted: an upper bound), for the size check."""
    total = 1.0
    for level in range(len(space.arch.levels)):
        if space.fixed_order(level) is not None and not space.placeable(level).any():
            continue
        probs = [float((t[:, level] > 1).mean()) for t in tables]
        expected = 0.0
        for mask in itertools.product((0, 1), repeat=len(probs)):
            p = math.prod(pr if m else 1 - pr for pr, m in zip(probs, mask))
            expected += p * space.choice_count(level, sum(mask))
        total *= expected
    return total
