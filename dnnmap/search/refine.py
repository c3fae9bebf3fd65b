"""Local search around a mapper's result in the widened map space: a dimension may split over both axes of
a 2-D fan-out, and each tensor's tile may sit inside its level's loops (per-tensor placement).

Sunstone and the optimal mapper walk only the declared space (one axis per dimension, one tile boundary
per level), and random sampling of the widened space finds its good corners slowly (docs/search.md,
"Per-tensor placement": 5e7 samples for -1.2%). Some mappings there need two factors to trade places at
once: a 1x1 convolution on Eyeriss moves no input twice only when its input channels fill both axes of the
array and the weights' output channels go into the register file, where the outputs then fit only below
the output-channel loop. So a step here is:

- a *move*: one prime factor of one dimension from one loop slot (a level's temporal loop, a fan-out axis)
  to another, or an *exchange*: one factor from slot ``a`` to slot ``b`` and one of another dimension back;
- each with every placement of the tensors kept at the innermost level, the other levels' kept (clipped to
  their loops);
- then, for the best factors, every loop order and placement of every level when they are few.

The best strictly better neighbour (objective, then tie-break) replaces the incumbent until none is better.
Every candidate is priced by the core cost model (capacity included), so the result is never worse than the
start and is a legal mapping of the widened space.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import BOTH_AXES, Mapping
from dnnmap.search.constraints import Constraints
from dnnmap.search.mappers import SearchResult
from dnnmap.search.space import MapSpace, prime_factors
from dnnmap.workload.ir import Operator

ROUNDS = 6  # steps at most
STEP_LIMIT = 100_000  # neighbours x joint placements of one factor step at most (else one tensor at a time)
ORDER_LIMIT = 50_000  # orders x placements of the incumbent's factors walked whole at most
CHUNK = 20_000  # candidates priced at once
NEIGHBOUR_CHUNK = 1_000  # neighbours (each with its placements) priced at once


def widened_space(op: Operator, arch: ArchSpec, constraints: Constraints = Constraints()) -> MapSpace:
    """``constraints`` with both-axis splits on every 2-D fan-out and per-tensor placement."""
    widened = replace(constraints, placement=True)
    for lv in arch.levels:
        if lv.fanout is not None and len(lv.fanout.shape) == 2:
            widened = widened.with_level(lv.name, both_axes=True)
    return MapSpace(op, arch, widened)


def _slots(mapping: Mapping, space: MapSpace) -> np.ndarray:
    """(D, slots) factors of ``mapping``: temporal per level, then each fan-out axis (a both-axes split as the
    largest factor the first axis takes)."""
    dims, L = space.op.dim_names, len(space.arch.levels)
    out = np.ones((len(dims), space.n_slots), dtype=np.int64)
    for i, lm in enumerate(mapping.levels):
        out[:, i] = [lm.t(d) for d in dims]
    for k, slot in enumerate(space.spatial_slots):
        lm = mapping.levels[slot.level]
        axes = dict(lm.spatial_axis)
        for j, d in enumerate(dims):
            f, axis = lm.s(d), axes.get(d, 0)
            if axis == BOTH_AXES:
                first = max(x for x in range(1, min(f, space.spatial_slots[k - slot.axis].size) + 1) if f % x == 0)
                f = first if slot.axis == 0 else f // first
            elif axis != slot.axis:
                f = 1
            out[j, L + k] = f
    return out


def _moves(factors: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(dimension, from slot, to slot, prime) of every single-factor move."""
    D, S = factors.shape
    return [(d, a, b, p) for d in range(D) for a in range(S) for p in prime_factors(int(factors[d, a]))
            for b in range(S) if b != a]


def _neighbours(factors: np.ndarray) -> np.ndarray:
    """(n, D, slots): every move and every exchange of ``factors``."""
    moves = _moves(factors)
    out = []
    for d, a, b, p in moves:
        one = factors.copy()
        one[d, a] //= p
        one[d, b] *= p
        out.append(one)
        for e, a2, b2, q in moves:
            if (a2, b2) == (b, a) and e != d and one[e, a2] % q == 0:
                two = one.copy()
                two[e, a2] //= q
                two[e, b2] *= q
                out.append(two)
    return np.unique(np.array(out), axis=0)


def _placements(space: MapSpace, factors: np.ndarray, above: np.ndarray, level: int, joint: bool) -> np.ndarray:
    """(n, L, T): ``above`` clipped to each level's loops, with every placement of ``level``'s tensors
    (``joint``), or each tensor's placements with the others' kept."""
    L = len(space.arch.levels)
    loops = (factors[:, :L] > 1).sum(axis=0)
    base = np.minimum(above, loops[:, None])
    placeable = space.placeable(level)
    if joint:
        ranges = [range(loops[level] + 1) if p else (0,) for p in placeable]
        options = np.array(list(itertools.product(*ranges)), dtype=np.int64)
    else:
        options = [base[level].copy()]
        for t in np.nonzero(placeable)[0]:
            for k in range(loops[level] + 1):
                one = base[level].copy()
                one[t] = k
                options.append(one)
        options = np.unique(np.array(options), axis=0)
    out = np.repeat(base[None], len(options), axis=0)
    out[:, level] = options
    return out


class _Walk:
    """The incumbent (factors, order, placement) and its score; offers batches of candidates."""

    def __init__(self, space: MapSpace, model: CostModel, objective: str, start: Mapping) -> None:
        self.space, self.model, self.objective = space, model, objective
        batch = MappingBatch.from_mappings(space.op, space.arch, [start])
        L, T = len(space.arch.levels), len(space.op.tensors)
        self.factors = _slots(start, space)
        self.order = batch.order[0]
        self.above = batch.above[0] if batch.above is not None else np.zeros((L, T), dtype=np.int64)
        cost = model.evaluate(space.to_batch(self.factors[None], self.order[None], self.above[None]))
        self.key = (float(cost.objective(objective)[0]), float(cost.tie_break()[0]))
        self.evaluated = 1

    def offer(self, factors: np.ndarray, orders: np.ndarray, above: np.ndarray) -> bool:
        """Take the best candidate when it beats the incumbent; True when it did."""
        legal = self.space.spatial_legal(factors)
        factors, orders, above = factors[legal], orders[legal], above[legal]
        if not len(factors):
            return False
        cost = self.model.evaluate(self.space.to_batch(factors, orders, above))
        self.evaluated += len(factors)
        score, idx = cost.best(self.objective)
        key = (score, float(cost.tie_break()[idx]))
        if not np.isfinite(score) or key >= self.key:
            return False
        self.key, self.factors, self.order, self.above = key, factors[idx], orders[idx], above[idx]
        return True

    def factor_step(self) -> bool:
        """The best move or exchange of the incumbent's factors, each with every placement at the innermost level
        (with one tensor placed at a time when that would exceed ``STEP_LIMIT`` candidates)."""
        neighbours = _neighbours(self.factors)
        neighbours = neighbours[self.space.spatial_legal(neighbours)] if len(neighbours) else neighbours
        if not len(neighbours):
            return False
        loops = (neighbours[:, :, 0] > 1).sum(axis=1)
        joint = int(((loops + 1) ** int(self.space.placeable(0).sum())).sum()) <= STEP_LIMIT
        better = False
        for start in range(0, len(neighbours), NEIGHBOUR_CHUNK):
            part = neighbours[start:start + NEIGHBOUR_CHUNK]
            places = [_placements(self.space, f, self.above, 0, joint) for f in part]
            factors = np.repeat(part, [len(p) for p in places], axis=0)
            better |= self.offer(factors, np.repeat(self.order[None], len(factors), axis=0), np.concatenate(places))
        return better

    def order_step(self) -> bool:
        """Every order and placement of every level for the incumbent's factors, when they are at most
        ``ORDER_LIMIT``."""
        L = len(self.space.arch.levels)
        loops = (self.factors[:, :L] > 1).sum(axis=0)
        if math.prod(self.space.choice_count(lv, int(loops[lv])) for lv in range(L)) > ORDER_LIMIT:
            return False
        better = False
        for factors, orders, above in self.space.expand_orders(self.factors[None], chunk=CHUNK):
            better |= self.offer(factors, orders, above)
        return better


def refine(start: SearchResult, objective: str, constraints: Constraints = Constraints(),
           rounds: int = ROUNDS) -> SearchResult:
    """The best mapping the local search (module docstring) reaches from ``start`` in the widened space of
    ``constraints``; ``start`` itself when no neighbour is better."""
    t0 = time.perf_counter()
    op, arch = start.op, start.arch
    space = widened_space(op, arch, constraints)
    model = CostModel(op, arch)
    walk = _Walk(space, model, objective, start.mapping)
    start_key = walk.key
    for _ in range(rounds):
        moved = walk.factor_step()
        if not (walk.order_step() or moved):
            break
    if walk.key >= start_key:
        return start
    batch = space.to_batch(walk.factors[None], walk.order[None], walk.above[None])
    mapping = replace(batch.mapping(0, op, arch), layer=start.mapping.layer)
    return SearchResult(op, arch, mapping, model.evaluate(batch), start.evaluated + walk.evaluated,
                        start.valid + walk.evaluated, start.seconds + time.perf_counter() - t0, start.mapper)
