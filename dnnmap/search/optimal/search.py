"""``--mapper optimal``: branch and bound over the declared map space, with a certificate.

The tree fixes the levels from the top down: level ``L-1``'s factors, then its loop order, then
level ``L-2``'s factors and order, ..., and last level 0's spatial factors (its temporal factor
is what is left, its order is fixed: :mod:`.expand`). Every node is bounded with
:class:`.bounds.LowerBound` from the cost model's counts of a completion of the node; a node
whose bound reaches the incumbent is pruned, which is safe because the bound is admissible, so
the search returns the optimum of the declared space. The incumbent starts at the Sunstone
mapper's result; every completion priced on the way that fits may replace it (a node's completion
is a mapping of the space), and a child's bound is at least its parent's. When ``budget_seconds`` runs out, the certificate's lower bound is the least
bound of the nodes still open, and the gap is ``incumbent / lower bound - 1``.

With per-tensor placement (``placement=True``, docs/search.md "The optimal mapper with placement") each
order stage also fixes the level's placements (:mod:`.placement`), level 0's order and
placements get a stage of their own, and a level's tile is no longer dropped for its footprint before its
placements are chosen. A node's completion leaves the open levels' tensors at the shared boundary, which
holds at least as much as any placement and so, for the tensors P1 holds for (no sliding window, or every
overlap reused: :attr:`.bounds.LowerBound.monotone`), never moves more words: its counts still bound every
completion's from below (pruning rule P1 in the docs; the other tensors' pairs get the compulsory bounds).
In that widened space (placement or both-axis unrolling) children the cost model cannot tell apart, or that a
sibling beats in every completion, are not searched (rules P3-P5: :class:`.placement.OrderKeys`,
:func:`.expand.distinct_unrollings`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.cost.objective import best_index
from dnnmap.errors import MappingError
from dnnmap.mapping.mapping import Mapping
from dnnmap.search.mappers import SearchResult, nothing_fits_message
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.mappers import Progress
from dnnmap.search.optimal.expand import Nodes, candidate_tiles, expand_factors, expand_orders
from dnnmap.search.optimal.placement import OrderKeys, distinct_children, least_placements
from dnnmap.search.options import SearchOptions
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.search.registry import Mapper
from dnnmap.workload.ir import Operator

EPS = 1e-9  # relative slack: a bound within rounding of the incumbent cannot beat it


class _OutOfTime(Exception):
    """The budget ran out while a node's children were being bounded."""


@dataclass(frozen=True)
class Certificate:
    lower_bound: float
    incumbent: float
    proven: bool
    nodes: int  # nodes bounded (mappings and partial mappings priced by the cost model)
    seconds: float

    @property
    def gap(self) -> float:
        if self.proven:
            return 0.0
        return self.incumbent / self.lower_bound - 1 if self.lower_bound > 0 else math.inf


@dataclass(frozen=True)
class OptimalResult:
    result: SearchResult
    certificate: Certificate


def _stages(L: int, level0_order: bool) -> list[tuple[str, int]]:
    """Factor and order stages top-down; level 0's order only matters (and is searched) with operand
    registers, whose events are every temporal loop (docs/cost-model.md section 4), or a tensor placed
    among level 0's loops."""
    return [(kind, j) for j in range(L - 1, 0, -1) for kind in ("F", "O")] + [("F", 0)] + [("O", 0)] * level0_order


class BranchAndBound:
    def __init__(self, op: Operator, arch: ArchSpec, objective: str, model: CostModel, chunk: int = 100_000,
                 placement: bool = False, both_axes: frozenset[int] = frozenset()) -> None:
        self.op, self.arch, self.objective, self.model = op, arch, objective, model
        self.L, self.D = len(arch.levels), len(op.dim_names)
        self.keeps = MappingBatch.default_keeps(op, arch)
        self.placement = placement
        self.both_axes = both_axes  # levels whose 2-D fan-out may split a dimension over both axes
        self.registers = bool(arch.mac.operand_registers)
        self.bound = LowerBound(op, arch, model, self.keeps, placement, both_axes)
        self.fit = None if placement else self.bound.fit  # tiles dropped for their footprint (none with placement)
        # in the widened space (placement, both axes): one child per class of children the cost model cannot tell
        # apart, P3 (orders and placements) and P4 (spatial axes), and no child another dominates (P5); the default
        # space's tree is left as it was
        self.distinct = placement or bool(both_axes)
        self.order_keys = OrderKeys(op, self.keeps, arch.mac.operand_registers) if self.distinct else None
        self.stages = _stages(self.L, self.registers or (placement and bool(self.keeps[0].any()) and self.L > 1))
        self.chunk = chunk
        self.incumbent = math.inf
        self.tie = math.inf
        self.best: MappingBatch | None = None
        self.nodes = 0
        self.batch_children = 4096  # children bounded per step of the walk (siblings grouped up to this)
        # running mean of the children one node has at each stage (from one node at a time)
        self.children_per_node = np.full(len(self.stages) + 1, float(self.batch_children))

    def _batch(self, n: Nodes) -> MappingBatch:
        return MappingBatch(n.temporal, n.spatial, n.order, self.keeps, (), n.axes, n.above)

    def offer(self, batch: MappingBatch) -> None:
        cost = self.model.evaluate(batch)
        score, j = cost.best(self.objective)
        tie = float(cost.tie_break()[j])
        if (score, tie) < (self.incumbent, self.tie):
            self.incumbent, self.tie, self.best = score, tie, batch.take([j])

    def _consider(self, nodes: Nodes, cost: CostBatch) -> np.ndarray:
        """Scores of ``nodes`` as complete mappings, updating the incumbent. A node's completion (the
        levels below its stage: all iterations left in level 0's temporal loops, no spatial factors, the
        root's orders) is itself a mapping of the declared space, so any that fits may be the incumbent."""
        score = cost.objective(self.objective).copy()
        tie = cost.tie_break()
        k = best_index(score, tie)
        if (score[k], tie[k]) < (self.incumbent, self.tie):
            self.incumbent, self.tie = float(score[k]), float(tie[k])
            self.best = self._batch(nodes.take(np.array([k])))
        return score

    def _bound(self, nodes: Nodes, stage: int) -> np.ndarray:
        """Lower bounds after ``stage`` (exact objective at the last stage); every completion priced on
        the way is offered as an incumbent."""
        self.nodes += len(nodes)
        kind, j = self.stages[stage]
        cost = self.model.evaluate(self._batch(nodes), reuse_buffers=True)
        if stage == len(self.stages) - 1:
            return self._consider(nodes, cost)
        self._consider(nodes, cost)
        known = j if kind == "F" else j - 1
        if kind == "F" and j > 0:  # B2: completions with each tensor's best level-j order (read before ``cost``'s buffers
            safe = self.bound.order_safe(nodes.temporal, j)  # are reused)
            by_order = []
            for t in range(len(self.op.tensors)):
                if self.keeps[j - 1, t] and safe[:, t].any():
                    variant = self._with_order(nodes, j, t)
                    by_order.append(self.model.evaluate(self._batch(variant)))
                    self._consider(variant, by_order[-1])
                else:
                    by_order.append(cost)
            lb = self.bound.compute(cost, nodes.temporal, nodes.spatial, nodes.order, j, known, self.objective,
                                    by_order, safe)
        else:
            lb = self.bound.compute(cost, nodes.temporal, nodes.spatial, nodes.order, j, known, self.objective)
        return np.where(self._fits(nodes, cost, kind, j), lb, np.inf)

    def _fits(self, nodes: Nodes, cost: CostBatch, kind: str, j: int) -> np.ndarray:
        """(n,) whether a completion of each node may fit: the levels whose tiles are fixed fit in ``cost``. With
        placement those are only the levels whose placements are fixed (above ``j``, and ``j`` after its order
        stage); a level ``j`` still open must at least hold its tensors' smallest tiles (all its loops above
        them: its fan-out over the tile below)."""
        if not self.placement:
            return (cost.capacity_excess[:, max(j - 1, 0):self.L - 1] <= 0).all(axis=1)
        first = j if kind == "O" else j + 1
        ok = (cost.capacity_excess[:, first:self.L - 1] <= 0).all(axis=1)
        if kind == "F" and j < self.L - 1:
            least = nodes.spatial[:, j] * (nodes.temporal[:, 0] if j > 0 else 1)
            ok &= self.bound.fit.fits(j, least)
        return ok

    def _with_order(self, nodes: Nodes, j: int, t: int) -> Nodes:
        """``nodes`` with tensor ``t``'s best order (:func:`.bounds.best_orders`) at level ``j``."""
        order = nodes.order.copy()
        order[:, j] = self.bound.orders[t]
        return Nodes(nodes.temporal, nodes.spatial, nodes.axes, order, nodes.above)

    def tile_bound(self, nodes: Nodes, tiles: np.ndarray, j: int) -> np.ndarray:
        """Tile bound (docs/search.md): bound of the children of each node (its levels above ``j`` fixed) whose
        level-``j - 1`` tile is the same row of ``tiles``, before level ``j``'s factors are split
        (:meth:`.bounds.LowerBound.compute`, ``tile``)."""
        self.nodes += len(tiles)
        cost = self.model.evaluate(self._batch(nodes))
        return self.bound.compute(cost, nodes.temporal, nodes.spatial, nodes.order, j + 1, j, self.objective,
                                  tile=tiles)

    def _children(self, nodes: Nodes, stage: int, parent_lb: np.ndarray):  # noqa: ANN202 - (Nodes, bounds) pieces
        """Children of each node with the bound they inherit. Factor stages below the top first bound each
        tile of level ``j - 1`` (:meth:`tile_bound`) and split only the tiles below the incumbent."""
        kind, j = self.stages[stage]
        if kind == "O":  # every node at once
            piece, parents = expand_orders(nodes, j)
            if self.placement and j < self.L - 1:
                piece, parents = self._placements(piece, parents, j)
            if self.order_keys is not None:
                exact, runs = self.order_keys.keys(j, piece.temporal[:, j], piece.order[:, j],
                                                   piece.above[:, j] if self.placement and j < self.L - 1 else None)
                keep = distinct_children(exact, runs, parents)
                piece, parents = piece.take(keep), parents[keep]
            yield piece, parent_lb[parents]
            return
        for k in range(len(nodes)):
            one = nodes.take(np.array([k]))
            if 1 <= j < self.L - 1:
                tiles = candidate_tiles(one.temporal[0, 0], j, self.fit)
                tile_lb = np.maximum(self.tile_bound(one.take(np.zeros(len(tiles), dtype=np.int64)), tiles, j), parent_lb[k])
                alive = np.nonzero(tile_lb < self.incumbent * (1 - EPS))[0]
                piece, which = expand_factors(one, j, self.arch, self.fit, tiles[alive], j in self.both_axes,
                                              self.distinct)
                yield piece, tile_lb[alive][which]
            else:
                piece, _ = expand_factors(one, j, self.arch, self.fit, both=j in self.both_axes,
                                          distinct=self.distinct)
                yield piece, np.full(len(piece), parent_lb[k])

    def _placements(self, nodes: Nodes, parents: np.ndarray, j: int) -> tuple[Nodes, np.ndarray]:
        """Each child of an order stage (its level-``j`` order fixed) with every placement at level ``j`` worth
        keeping (:func:`.placement.least_placements`), and their parents' indices."""
        base = nodes.spatial[:, j] * (nodes.temporal[:, 0] if j > 0 else 1)
        rows, above = least_placements(self.op, nodes.temporal[:, j], nodes.order[:, j], base, self.keeps[j],
                                       self.bound.monotone[j], self.bound.fit.levels[j])
        out = nodes.take(rows)
        out.above = out.above.copy()
        out.above[:, j] = above
        return out, parents[rows]

    def _survivors(self, nodes: Nodes, stage: int, parent_lb: np.ndarray,
                   deadline: float = math.inf) -> tuple[Nodes, np.ndarray]:
        """Children of ``nodes`` at ``stage`` whose bound is below the incumbent, sorted by bound. A child's
        bound is at least its parent's (the parent's holds for every completion of the child too)."""
        kept, lbs, pending, inherited, size = [], [], [], [], 0

        def flush() -> None:
            batch, parent = Nodes.concat(pending), np.concatenate(inherited)
            pending.clear()
            inherited.clear()
            if len(batch) == 0:
                return
            lb = np.maximum(self._bound(batch, stage), parent)
            alive = lb < self.incumbent * (1 - EPS)
            kept.append(batch.take(np.nonzero(alive)[0]))
            lbs.append(lb[alive])

        born = 0
        for piece, lb in self._children(nodes, stage, parent_lb):
            pending.append(piece)
            inherited.append(lb)
            born += len(piece)
            size += len(piece)
            if size >= self.chunk:
                flush()
                size = 0
                if time.perf_counter() > deadline:
                    raise _OutOfTime
        if pending:
            flush()
        self.children_per_node[stage] = max(1.0, 0.8 * self.children_per_node[stage] + 0.2 * born / len(nodes))
        if not kept:
            return nodes.take(np.array([], dtype=np.int64)), np.zeros(0)
        out, lb = Nodes.concat(kept), np.concatenate(lbs)
        order = np.argsort(lb, kind="stable")
        return out.take(order), lb[order]

    def run(self, deadline: float) -> float:
        """Search until done or ``deadline``; returns the certified lower bound."""
        L, D = self.L, self.D
        root = Nodes(np.ones((1, L, D), dtype=np.int64), np.ones((1, L, D), dtype=np.int64),
                     np.zeros((1, L, D), dtype=np.int64), np.tile(np.arange(D), (1, L, 1)),
                     np.zeros((1, L, len(self.op.tensors)), dtype=np.int64) if self.placement else None)
        root.temporal[0, 0] = [self.op.bound(d) for d in self.op.dim_names]
        # depth first, lowest bound first among siblings: (stage, siblings sorted by bound, their bounds, next one)
        stack: list[list] = [[-1, root, np.zeros(1), 0]]
        while stack:
            if time.perf_counter() > deadline:
                open_lb = [float(lb[k:][lb[k:] < self.incumbent].min()) for _, _, lb, k in stack
                           if (lb[k:] < self.incumbent).any()]
                return min(open_lb + [self.incumbent])
            top = stack[-1]
            stage, nodes, lb, k = top
            while k < len(nodes) and lb[k] >= self.incumbent * (1 - EPS):
                k += 1
            if k >= len(nodes):
                stack.pop()
                continue
            # siblings whose children are few are expanded together (larger batches for the cost model)
            end = min(len(nodes), k + int(np.clip(self.batch_children / self.children_per_node[stage + 1], 1, 256)))
            top[3] = end
            try:
                children, child_lb = self._survivors(nodes.take(np.arange(k, end)), stage + 1, lb[k:end], deadline)
            except _OutOfTime:  # the nodes stay open with their own bounds
                top[3] = k
                continue
            if stage + 1 < len(self.stages) - 1 and len(children):
                stack.append([stage + 1, children, child_lb, 0])
        return self.incumbent


def optimal_search(op: Operator, arch: ArchSpec, objective: str = "edp", budget_seconds: float | None = None,
                   incumbent: SearchResult | None = None, seeds: Sequence[Mapping] = (),
                   placement: bool = False, both_axes: Collection[str] = ()) -> OptimalResult:
    """Optimum of the declared space with its certificate (``budget_seconds``: None = until proven;
    ``placement``: the space with every per-tensor placement; ``both_axes``: names of the levels whose 2-D
    fan-out may split a dimension over both axes, the constraint ``both_axes``).

    The search starts from ``incumbent`` (None: Sunstone's result) and the better of ``seeds``, further
    mappings of the space known beforehand (e.g. an optimum on a smaller buffer, which fits a larger one)."""
    t0 = time.perf_counter()
    model = CostModel(op, arch)
    names = [lv.name for lv in arch.levels]
    bb = BranchAndBound(op, arch, objective, model, placement=placement,
                        both_axes=frozenset(names.index(name) for name in both_axes))
    if incumbent is None:
        try:
            incumbent = sunstone_search(op, arch, objective, model=model)
        except MappingError:
            incumbent = None
    if incumbent is not None:
        bb.offer(MappingBatch.from_mappings(op, arch, [incumbent.mapping]))
    for seed in seeds:
        bb.offer(MappingBatch.from_mappings(op, arch, [seed]))
    deadline = t0 + budget_seconds if budget_seconds is not None else math.inf
    lower = bb.run(deadline)
    if bb.best is None:
        raise MappingError(nothing_fits_message(op, arch, model))
    seconds = time.perf_counter() - t0
    proven = lower >= bb.incumbent * (1 - EPS)
    cert = Certificate(bb.incumbent if proven else lower, bb.incumbent, proven, bb.nodes, seconds)
    cost = model.evaluate(bb.best)
    label = "optimal (proven)" if proven else f"optimal, gap {cert.gap:.1%} to bound {cert.lower_bound:.4g}"
    result = SearchResult(op, arch, bb.best.mapping(0, op, arch), cost, bb.nodes, bb.nodes, seconds, label)
    return OptimalResult(result, cert)


def search_optimal(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                   progress: Progress | None = None) -> SearchResult:
    space = options.space_constraints()
    return optimal_search(op, arch, objective, budget_seconds=options.budget_seconds, placement=space.placement,
                          both_axes=[name for name, c in space.levels if c.both_axes]).result


MAPPER = Mapper.builtin("optimal", search_optimal)
