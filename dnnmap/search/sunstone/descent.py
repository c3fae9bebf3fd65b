"""Factor descent: the last step of every Sunstone walk (issue 28; docs/search.md "The Sunstone mapper", item 8).

The walk's pruning (maximal tiles, maximal unrollings, Observation 5) keeps, per step, the candidates that are
best when the levels above have room and the fan-out multicasts. Where that premise fails the pruned candidate
is often one factor away from the optimum: a level with no capacity limit takes the whole residual as its maximal
tile where the optimum leaves a factor to the level above (latency and EDP with per-level bandwidths), a fan-out
without multicast is filled where the optimum leaves it idle (``dram``), an array axis is filled where a smaller
unrolling leaves the global buffer room for a larger tile above it (BERT-base's query projection on Eyeriss: 48 of
168 PEs). The descent starts from the walk's best mapping and moves factors:

* a *redistribution*: the product of one dimension's factors in two slots (a level's temporal loops, a fan-out)
  split anew between them, every divisor (moving a factor from one to the other, or trading factors: ``K8`` in
  the register file and ``K6`` on the array become ``K12`` and ``K4``); a new temporal loop takes the dimension's
  place in the level's order, a new spatial factor an axis the dimension may use;
* where a grown spatial factor does not fit its axis of a 2-D fan-out, the level's dimensions change axes
  (:func:`.unroll.assign_axes`, an assignment of the legal unrolling table, split over both axes where the level
  takes them: the cost model prices an unrolling by its factors, docs/search.md item 4).

Each round prices every neighbour of the incumbent in one batch and takes the best when it is strictly better
(objective, then the energy tie-break). When none is, and the walk was small (at most ``PAIR_WALKS`` mappings
priced: the random small cases, not real layers on real arrays, where it would add 10% to a network's time), the
best ``PAIRS`` neighbours are each extended by a second redistribution (a fan-out's dimensions traded with another
fan-out's and a level's loops at once); after every walk, so are the neighbours that take all of one dimension's
unrolling off a fan-out (the best per fan-out, dimension and receiving level): the second may give the emptied share
of the array to another dimension (ResNet-50's ``layer3.0.conv2`` on Eyeriss, energy: ``C8`` off the array to DRAM,
then ``K8`` onto it from DRAM, the first move 5.5% worse alone; 1.2% above the optimum without). It stops when nothing is better, or after ``ROUNDS`` rounds. Every
neighbour is legal in the walk's space (spatial factors fit their axes, a dimension on one axis of a fan-out unless
the level takes both-axis unrollings, where it may split over both axes; capacity from the cost model), so the
result is never worse than the walk's and is a mapping of the same space. Padded mappings (``--imperfect``) are
left alone: the padded space's factors are ceil splits of each step's residual, which a redistribution need not
keep (``K6 x 2`` of ``K11`` would become ``K12``, a padded extent the space does not hold). Per-tensor placements
are clipped to the loops each level keeps; from a placed start each redistribution is also offered with one kept
tensor of one level at its free placement (:func:`.placement.free_placement`: a loop moved into a level with
``halo_reuse: false`` pays only with the input placed below it), and the placement stage
(:func:`.placement.refine_placements`) runs after the descent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import rank
from dnnmap.search.space import divisors
from dnnmap.search.sunstone.placement import free_placement
from dnnmap.search.sunstone.unroll import assign_axes, axes_used

ROUNDS = 8  # improving rounds at most
PAIRS = 8  # when no redistribution improves, the best this many are each extended by a second one
PAIR_WALKS = 2000  # ... after walks that priced at most this many mappings (small spaces; module docstring)


@dataclass
class Descended:
    """The descent's best mapping (one row), its objective, tie-break and the neighbours it priced."""

    batch: MappingBatch
    score: float
    tie: float
    evaluated: int


def neighbours(arch: ArchSpec, start: MappingBatch, both_axes: frozenset[int] = frozenset(),
               relevant: np.ndarray | None = None) -> MappingBatch:
    """Every redistribution (module docstring) of the one-row ``start``, legal on the fan-outs; with ``relevant``
    (:func:`.placement.relevance`, a placed start) each also with one kept tensor of one level at its free
    placement there (:func:`.placement.free_placement`)."""
    temporal, spatial, axes = start.temporal[0], start.spatial[0], start.axes[0]
    L, D = temporal.shape
    shapes = [tuple(lv.fanout.shape) if lv.fanout else None for lv in arch.levels]
    # slots of one dimension: ("t", level) or ("s", level, axis: where its factor is, or any it may take)
    spatial_levels = [lv for lv in range(L) if shapes[lv] is not None]
    # one row per neighbour: (dimension, then per side: is spatial, level, axis, new factor)
    moves: list[tuple[int, int, int, int, int, int, int, int, int]] = []
    for d in range(D):
        slots = [(0, lv, 0) for lv in range(L)]
        for lv in spatial_levels:
            if spatial[lv, d] > 1:
                slots.append((1, lv, int(axes[lv, d])))  # BOTH_AXES on a both-axes level
            else:
                slots += [(1, lv, a) for a in range(len(shapes[lv]))]
        factor = [int(spatial[lv, d] if kind else temporal[lv, d]) for kind, lv, _ in slots]
        for k, p in enumerate(slots):
            for m in range(k + 1, len(slots)):
                q, total = slots[m], factor[k] * factor[m]
                if q[:2] != p[:2] and total > 1:
                    moves += [(d, *p, v, *q, total // v) for v in divisors(total) if v != factor[k]]
    if not moves:
        return start.take(np.array([], dtype=np.int64))
    mv = np.array(moves, dtype=np.int64)
    n, rows = len(mv), np.arange(len(mv))
    t, s, a = (np.repeat(x[None], n, axis=0) for x in (temporal, spatial, axes))
    for side in (1, 5):  # the two slots of each move
        kind, lv, ax, value = mv[:, side], mv[:, side + 1], mv[:, side + 2], mv[:, side + 3]
        tm, sm = kind == 0, kind == 1
        t[rows[tm], lv[tm], mv[tm, 0]] = value[tm]
        s[rows[sm], lv[sm], mv[sm, 0]] = value[sm]
        a[rows[sm], lv[sm], mv[sm, 0]] = np.where(value[sm] > 1, ax[sm], 0)
    ok = np.ones(len(t), dtype=bool)
    for lv in spatial_levels:
        both = lv in both_axes
        fits = (axes_used(s[:, lv], a[:, lv], len(shapes[lv])) <= np.array(shapes[lv])).all(axis=1) & (not both)
        if len(shapes[lv]) == 2:  # a grown factor may fit once the level's dimensions change axes (or split)
            for r in np.nonzero(~fits)[0]:
                assigned = assign_axes(tuple(s[r, lv].tolist()), shapes[lv], both)
                if assigned is not None:
                    a[r, lv], fits[r] = assigned, True
        ok &= fits
    t, s, a = t[ok], s[ok], a[ok]
    n = len(t)
    order = np.repeat(start.order, n, axis=0)
    if start.above is None:
        return MappingBatch(t, s, order, start.keeps, start.layouts, a, None)
    loops = (t > 1).sum(axis=2)  # (n, L) non-trivial temporal loops per level
    above = np.minimum(np.repeat(start.above, n, axis=0), loops[:, :, None])
    rows, aboves = [np.arange(n)], [above]
    for lv in range(L - 1) if relevant is not None else ():
        free, _ = free_placement(relevant, start.order[0, lv], t[:, lv])
        for j in np.nonzero(start.keeps[lv])[0]:
            moved = np.nonzero(free[:, j] != above[:, lv, j])[0]
            placed = above[moved].copy()
            placed[:, lv, j] = free[moved, j]
            rows.append(moved), aboves.append(placed)
    rows = np.concatenate(rows)
    return MappingBatch(t[rows], s[rows], order[rows], start.keeps, start.layouts, a[rows], np.concatenate(aboves))


def _ranked(model: CostModel, objective: str, cands: MappingBatch) -> tuple[np.ndarray, float, float]:
    """The rows of ``cands`` best first (objective, tie-break), and the best one's objective and tie-break (inf
    where there is none)."""
    if len(cands) == 0:
        return np.zeros(0, dtype=np.int64), np.inf, np.inf
    cost = model.evaluate(cands, reuse_buffers=True)
    s, t = cost.objective(objective), cost.tie_break()
    order = rank(s, t)
    return order, float(s[order[0]]), float(t[order[0]])


def _off_the_array(start: MappingBatch, cands: MappingBatch, order: np.ndarray) -> list[int]:
    """The neighbours ``cands`` of the one-row ``start`` (rows best first in ``order``, priced) that move all of a
    dimension's unrolling on a fan-out to a level's temporal loops: the best one per fan-out, dimension and level
    (module docstring)."""
    gone = (start.spatial[0] > 1)[None] & (cands.spatial == 1)  # (n, L, D)
    grown = cands.temporal > start.temporal  # (n, L, D)
    first: dict[tuple[int, int, int], int] = {}
    for k in order:
        for lv, d in zip(*np.nonzero(gone[k])):
            for to in np.nonzero(grown[k][:, d])[0]:
                first.setdefault((int(lv), int(d), int(to)), int(k))
    return [*dict.fromkeys(first.values())]


def descend(arch: ArchSpec, objective: str, model: CostModel, start: MappingBatch,
            both_axes: frozenset[int] = frozenset(), rounds: int | None = None,
            relevant: np.ndarray | None = None, pairs: bool = True) -> Descended:
    """The best mapping the descent (module docstring) reaches from the one-row ``start`` in at most ``rounds``
    improving rounds (``ROUNDS`` when None; 0: ``start`` itself); ``relevant``: a placed start's neighbours also
    place one tensor (:func:`neighbours`); ``pairs``: where no redistribution improves, also two in a row from the
    best ``PAIRS`` (from the neighbours that empty a fan-out's dimension in any case)."""
    rounds = ROUNDS if rounds is None else rounds
    cost = model.evaluate(start)
    best, score, tie, evaluated = start, float(cost.objective(objective)[0]), float(cost.tie_break()[0]), 1
    bounds = [model.op.bound(d) for d in model.op.dim_names]
    if (start.temporal[0].prod(axis=0) * start.spatial[0].prod(axis=0)).tolist() != bounds:
        rounds = 0  # padded: a redistribution would leave the ceil splits of the padded space
    for _ in range(rounds):
        cands = neighbours(arch, best, both_axes, relevant)
        order, s, t = _ranked(model, objective, cands)
        j, evaluated = order[0] if len(order) else -1, evaluated + len(cands)
        if not (s, t) < (score, tie) and len(cands):  # two in a row: from the best few, the emptied fan-outs
            seeds = [*order[:PAIRS]] if pairs else []
            seeds += [k for k in _off_the_array(best, cands, order) if k not in seeds]
            if seeds:
                cands = MappingBatch.concat([neighbours(arch, cands.take([k]), both_axes, relevant) for k in seeds])
                order, s, t = _ranked(model, objective, cands)
                j, evaluated = order[0] if len(order) else -1, evaluated + len(cands)
        if not (s, t) < (score, tie):
            break
        best, score, tie = cands.take([j]), s, t
    return Descended(best, score, tie, evaluated)
