"""``--mapper optimal``: branch and bound over the declared map space, with a certificate.

The tree fixes the levels from the top down: level ``L-1``'s factors, then its loop order, then
level ``L-2``'s factors and order, ..., and last level 0's spatial factors (its temporal factor
is what is left, its order is fixed: :mod:`.expand`). Every node is bounded with
:class:`.bounds.LowerBound` from the cost model's counts of a completion of the node; a node
whose bound reaches the incumbent is pruned, which is safe because the bound is admissible, so
the search returns the optimum of the declared space. The incumbent starts at the Sunstone
mapper's result; every completion priced on the way that fits may replace it (a node's completion
is a mapping of the space; one that does not fit, of infinite value, never is), and a child's bound is at least its parent's. When ``budget_seconds`` runs out, the certificate's lower bound is the least
bound of the nodes still open, and the gap is ``incumbent / lower bound - 1``.

Memory and the budget: a node's children are generated and bounded in chunks of at most ``chunk`` nodes
(:meth:`BranchAndBound._survivors`), each chunk's survivors entering the walk (sorted by bound) before the next
chunk is made, so the walk holds at most about one chunk per stage at once; the clock is read between chunks
(also while tiles are bounded). The children of a node not yet all made are open with their parent's bound,
which the certificate's lower bound counts.

With per-tensor placement (``placement=True``, docs/search.md "The optimal mapper with placement") each
order stage also fixes the level's placements (:mod:`.placement`), level 0's order and
placements get a stage of their own, and a level's tile is no longer dropped for its footprint before its
placements are chosen. A node's completion leaves the open levels' tensors at the shared boundary, which
holds at least as much as any placement and so, for the tensors P1 holds for (no sliding window, or every
overlap reused: :attr:`.bounds.LowerBound.monotone`), never moves more words: its counts still bound every
completion's from below (pruning rule P1 in the docs; the other tensors' pairs get the compulsory bounds).
In that widened space (placement or both-axis unrolling) children the cost model cannot tell apart, or that a
sibling beats in every completion, are not searched (rules P3-P5: :class:`.placement.OrderKeys`,
:func:`.expand.distinct_unrollings`). Before an order's placements are made, the order is bounded over its relaxed
placement vectors (B37, :meth:`BranchAndBound.order_bound`), and only the orders below the incumbent get them. Of each
pair of nodes bounded together that are mirror images of each other (a square layer's ``P <-> Q``, ``R <-> S``: every
mapping costs what its image does) one is searched (B42, :mod:`.mirror`; docs/search.md "B42: mirror-image nodes"). A
factor stage takes one order of the level for its children's refills and its own tensors' refetches (B39, and B44 under
the loops above the level: :meth:`BranchAndBound._shared_order`, for the nodes the other tiers leave below the
incumbent), and keeps each order's value, with which its order stage drops orders before B37 prices them.
``F(1)``'s tile bound takes the register file's pairs at one unrolling of the array together where that applies (B45,
:mod:`.unrolled_tile`; B46 on sliding-window layers), and each child of a tile inherits B45's value at its own
unrolling, the children it puts at or above the incumbent never made into nodes (B47,
:meth:`BranchAndBound._by_unrolling`).

Costly bounds only where they can prune (docs/search.md): the walk bounds a batch tier by tier
(:meth:`BranchAndBound._tiered`, :data:`.bounds.TIER_PAIRS` to :data:`.bounds.TIER_FULL`), the costly terms only for
the nodes the cheaper ones leave below the incumbent; the same nodes are pruned as with every bound in full. B2's
completions with each tensor's best order are priced (and offered) only for the nodes the pairs' tier without them
leaves at or below the incumbent, where that tier prunes most nodes (docs/search.md "B2's completions only where they
can count"): none of the others' completions can beat or tie the incumbent.

Over the padded space (``imperfect``, docs/search.md "The optimal mapper over the padded space") the factor stages
read the exhaustive mapper's ceil-split tables (:class:`.expand.PaddedSplits`), each node is bounded for the padded
extent its completions run (:meth:`BranchAndBound.lower`), only completions that are mappings of the space become
incumbents, and the top level's tiles are all bounded before any is expanded, best first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.cost.objective import best_index
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.mapping.mapping import Mapping
from dnnmap.search.mappers import SearchResult, nothing_fits_message
from dnnmap.search.optimal.bounds import TIER_FULL, TIER_PAIRS, TIER_REFILLS, LowerBound
from dnnmap.search.mappers import Progress
from dnnmap.search.constraints import Constraints
from dnnmap.search.optimal.expand import FactorSplits, Nodes, PaddedSplits, candidate_tiles, expand_orders, extents
from dnnmap.search.optimal.mirror import mirror_dims, mirror_keep
from dnnmap.search.optimal.placement import OrderKeys, distinct_children, least_placements, relaxed_placements
from dnnmap.search.optimal.shared_order import order_ranks, shared_orders
from dnnmap.search.optimal.unrolled_tile import UnrolledTile
from dnnmap.search.options import SearchOptions
from dnnmap.search.space import MapSpace, padded_cap, unique_rows
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.search.registry import Mapper
from dnnmap.workload.ir import Operator

EPS = 1e-9  # relative slack: a bound within rounding of the incumbent cannot beat it
# about the CPU time one call of the cost model and bounds takes: the clock is read between calls. Measured in CPU
# time, not wall time: on a machine shared with other jobs a wall-time estimate grows with the load, shrinking the
# calls until their fixed cost (about 10-20 ms a call of the bounds) dominates the work
STEP_SECONDS = 0.1
# the tiers a batch's bounds may be computed in (:meth:`BranchAndBound._tiered`): all three, the pairs' then the full,
# the refills' then the full, the full alone; one is chosen per stage from its tiers' running costs and shares of rows
# left (:class:`_TierStats`), the first (which measures every tier) every TIER_TRY calls
TIER_PLANS = ((TIER_PAIRS, TIER_REFILLS, TIER_FULL), (TIER_PAIRS, TIER_FULL), (TIER_REFILLS, TIER_FULL), (TIER_FULL,))
TIER_TRY = 16
TIER_DECAY = 0.7  # weight of the past calls in a stage's running tier statistics
TIER_ROWS = 256  # plan 0 while a stage's statistics rest on fewer live rows (a few rows' shares and costs say little)
ORDER_FLOORS_KEPT = 100_000  # B39's per-order bounds kept per level at most (all dropped past it; only pruning is lost)
# a factor stage prices B2's completions only for the nodes its pairs' tier leaves below the incumbent while at most
# this share of its nodes is (:meth:`BranchAndBound._bound_extent`; else every node's, the share measured every
# TIER_TRY calls)
PRICED_SHARE = 0.5
# the second start (:func:`optimal_search`): Sunstone's thorough placed walk, run once the search is still open at this
# share of the budget, where the budget left is above THOROUGH_COST times the cheap start's seconds (the thorough walk
# runs both placed walks: 3.2-3.4x the cheap one's CPU on ResNet-18/50, docs/search.md "The placed walk's rules")
MIDWAY = 0.5
THOROUGH_COST = 5.0


class _OutOfTime(Exception):
    """The budget ran out while a node's children were being made or bounded."""


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


def _check(deadline: float) -> None:
    """Raises :class:`_OutOfTime` past ``deadline``."""
    if time.perf_counter() > deadline:
        raise _OutOfTime


def _slices(sizes: np.ndarray, cap: int) -> Iterator[np.ndarray]:
    """Consecutive index ranges whose ``sizes`` sum to at most ``cap`` (or a single index)."""
    total = np.concatenate([[0], np.cumsum(sizes)])
    lo = 0
    while lo < len(sizes):
        hi = max(lo + 1, int(np.searchsorted(total, total[lo] + cap, side="right")) - 1)
        yield np.arange(lo, hi)
        lo = hi


class _CostRows(CostBatch):
    """``cost`` of the mappings ``rows`` only: each per-mapping array taken from ``cost`` when first read (a bound reads
    a few of them; the architecture's tables kept), so, as ``cost`` itself, read before the model reuses its buffers
    (``reuse_buffers``). The methods of :class:`CostBatch` read the taken arrays; ``dataclasses.replace`` of one
    fails (its class takes ``cost`` and ``rows``): the bounds only read it."""

    def __init__(self, cost: CostBatch, rows: np.ndarray) -> None:  # the dataclass's fields are left unset
        object.__setattr__(self, "_taken_from", (cost, rows))

    def __getattr__(self, name: str) -> object:  # a field not read yet (the others are attributes of the instance)
        if name == "_taken_from" or name not in _COST_FIELDS:
            raise AttributeError(name)
        cost, rows = self._taken_from
        value = getattr(cost, name)
        if name == "counts":
            value = {k: v[rows] for k, v in value.items()}
        elif name not in ("action_energy", "final_scale"):
            value = value[rows]
        object.__setattr__(self, name, value)
        return value


_COST_FIELDS = frozenset(f.name for f in fields(CostBatch))


def _unit_table(n: int, found: list[tuple[np.ndarray, np.ndarray]] | None
                ) -> tuple[np.ndarray, np.ndarray] | None:
    """B47: of ``n`` tile rows, B45's bounds per unrolling ``found`` (rows, (r, V) values) as each row's slot (n,; -1:
    none) and the (k, V) values; None where nothing was found."""
    if not found:
        return None
    slot = np.full(n, -1, dtype=np.int64)
    rows = np.concatenate([r for r, _ in found])
    slot[rows] = np.arange(len(rows))
    return slot, np.concatenate([v for _, v in found])


def _cost_rows(cost: CostBatch, rows: np.ndarray) -> CostBatch:
    """``cost`` of the mappings ``rows`` only (:class:`_CostRows`: every per-mapping array taken as it is read)."""
    return _CostRows(cost, rows)


def _stages(L: int, level0_order: bool) -> list[tuple[str, int]]:
    """Factor and order stages top-down; level 0's order only matters (and is searched) with operand
    registers, whose events are every temporal loop (docs/cost-model.md section 4), or a tensor placed
    among level 0's loops."""
    return [(kind, j) for j in range(L - 1, 0, -1) for kind in ("F", "O")] + [("F", 0)] + [("O", 0)] * level0_order


class _TierStats:
    """Running statistics of one stage's tiers (:meth:`BranchAndBound._tiered`; docs/search.md "The tier plan from each
    tier's cost and the rows it leaves"): per tier, its CPU seconds per row computed, and the share of a call's live rows
    still below the incumbent after it. The tiers are nested (each holds the terms of those below it), so the rows a
    tier leaves do not depend on which lower tiers ran before it, and a plan's expected seconds per live row is the sum
    over its tiers of each one's cost per row times the share the tier before it in the plan leaves. Each is a ratio of
    sums over the calls (the past weighted down by :data:`TIER_DECAY`), so a large call counts more than a small one,
    whose fixed cost per call inflates its cost per row; plan 0 (every tier, so every statistic) runs on the first call,
    every :data:`TIER_TRY` calls, and while the statistics rest on fewer than :data:`TIER_ROWS` live rows (weighted as
    the sums are): the order stages' first calls bound 1-20 rows each."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = np.zeros(3)  # per tier: CPU seconds spent computing it
        self.rows = np.zeros(3)  # per tier: the rows it was computed for
        self.entered = np.zeros(3)  # per tier: the live rows of the calls that computed it
        self.left = np.zeros(3)  # per tier: of those, the rows below the incumbent after it

    def plan(self) -> int:
        """The index into :data:`TIER_PLANS` of the next call's plan: the one of least expected seconds per live row,
        plan 0 every :data:`TIER_TRY` calls (from the first) and while fewer than :data:`TIER_ROWS` live rows are
        measured."""
        self.calls += 1
        if (self.calls - 1) % TIER_TRY == 0 or self.entered[TIER_PAIRS] < TIER_ROWS:
            return 0
        return int(np.argmin([self.expected(plan) for plan in TIER_PLANS]))

    def expected(self, plan: tuple[int, ...]) -> float:
        """Expected CPU seconds per live row of ``plan``: a tier never computed costs inf, a share never measured is 1
        (no row pruned)."""
        cost, share = 0.0, 1.0
        for tier in plan:
            if share == 0.0:
                break
            cost += share * (self.seconds[tier] / self.rows[tier] if self.rows[tier] else math.inf)
            share = self.left[tier] / self.entered[tier] if self.entered[tier] else 1.0
        return cost

    def record(self, tier: int, seconds: float, rows: int, entered: int, left: int) -> None:
        """One computation of ``tier`` for ``rows`` rows of a call with ``entered`` live rows, ``left`` of them still
        below the incumbent after it."""
        for total, value in ((self.seconds, seconds), (self.rows, rows), (self.entered, entered), (self.left, left)):
            total[tier] = TIER_DECAY * total[tier] + value


class BranchAndBound:
    def __init__(self, op: Operator, arch: ArchSpec, objective: str, model: CostModel, chunk: int = 20_000,
                 placement: bool = False, both_axes: frozenset[int] = frozenset(),
                 waste: float | None = None, tiered: bool = True) -> None:
        """``tiered``: the walk bounds a batch tier by tier (:meth:`_tiered`); the bounds it prunes with are then
        at least the full bound where they stay below the incumbent. :meth:`_bound` and :meth:`tile_bound` called
        directly (``lazy`` false) always give the full bound."""
        self.op, self.arch, self.objective, self.model = op, arch, objective, model
        self.L, self.D = len(arch.levels), len(op.dim_names)
        self.keeps = MappingBatch.default_keeps(op, arch)
        self.placement = placement
        self.both_axes = both_axes  # levels whose 2-D fan-out may split a dimension over both axes
        self.registers = bool(arch.mac.operand_registers)
        self.bound = LowerBound(op, arch, model, self.keeps, placement, both_axes)
        # the padded space (``waste``): its factor stages, and a bound per padded extent of the nodes' completions
        self.padded = PaddedSplits(MapSpace(op, arch, Constraints(waste=waste))) if waste is not None else None
        self.bounds_by_extent = {tuple(int(x) for x in self.bound.bounds): self.bound}
        self.caps = np.array([padded_cap(n, waste) for _, n in op.dims]) if waste is not None else None
        self._above: list[np.ndarray] = []  # padded extents whose every mapping costs more (:meth:`_extent_above`)
        self.root_cost: CostBatch | None = None  # the root's cost, its MAC energy (:meth:`run`)
        # the padded top level without a fan-out has one child per tile, the many tiles the padding allows: they are
        # all bounded before any is expanded, then expanded best first, so a budget stop has a finite bound
        self.top_bounded = self.padded is not None and not arch.levels[-1].fanout
        # B42: the layer's mirror (a relabeling of its dimensions every mapping's cost is blind to): of two nodes bounded
        # together that are each other's image one is searched (not in the padded space)
        self.mirror = mirror_dims(op, arch) if self.padded is None else None
        self.fit = None if placement else self.bound.fit  # tiles dropped for their footprint (none with placement)
        # B45/B46: F(1)'s tile bound with the register file's refills per unrolling of the array (exact space only)
        self.unrolled_tile = (UnrolledTile(self.bound) if self.padded is None and UnrolledTile.applies(self.bound)
                              else None)
        # in the widened space (placement, both axes): one child per class of children the cost model cannot tell
        # apart, P3 (orders and placements) and P4 (spatial axes), and no child another dominates (P5); the default
        # space's tree is left as it was
        self.distinct = placement or bool(both_axes)
        self.order_keys = OrderKeys(op, self.keeps, arch.mac.operand_registers) if self.distinct else None
        self.stages = _stages(self.L, self.registers or (placement and bool(self.keeps[0].any()) and self.L > 1))
        self.chunk = chunk
        self.tiered = tiered
        # per stage (or level's tile bound): the running statistics of its tiers (:meth:`_tiered`)
        self._plans: dict[int | tuple[int, str], _TierStats] = {}
        # per factor stage: calls of :meth:`_bound_extent`, and the running share of its nodes whose completions with
        # B2's orders are priced
        self._priced_share: dict[int, list] = {}
        self.incumbent = math.inf
        self.tie = math.inf
        self.best: MappingBatch | None = None
        self.nodes = 0
        self.batch_children = 4096  # children bounded per step of the walk (siblings grouped up to this)
        # running mean of the children one node has at each stage (from one node at a time)
        self.children_per_node = np.full(len(self.stages) + 1, float(self.batch_children))
        # running mean of the seconds bounding one node (one tile: key "tile") takes per stage (first guess: 256 a step)
        self.seconds_per_node: dict[int | tuple[int, str], float] = {}
        self._tiles: dict[tuple[int, bytes], np.ndarray] = {}  # candidate tiles per (level, rest): _candidate_tiles
        # B39's bound per order of a factor stage's node, per level and node key (:meth:`_shared_order`)
        self._order_floors: dict[int, dict[bytes, np.ndarray]] = {}

    def _batch(self, n: Nodes) -> MappingBatch:
        return MappingBatch(n.temporal, n.spatial, n.order, self.keeps, (), n.axes, n.above)

    def offer(self, batch: MappingBatch) -> None:
        """Make the best of ``batch`` the incumbent if it beats it (and, in the padded space, is a mapping of it)."""
        cost = self.model.evaluate(batch)
        score = cost.objective(self.objective).copy()
        if self.padded is not None:
            score[~self.padded.members(batch.temporal, batch.spatial, batch.axes)] = np.inf
        j = best_index(score, cost.tie_break())
        tie = float(cost.tie_break()[j])
        if math.isfinite(score[j]) and (float(score[j]), tie) < (self.incumbent, self.tie):
            self.incumbent, self.tie, self.best = float(score[j]), tie, batch.take([j])

    def _consider(self, nodes: Nodes, cost: CostBatch) -> np.ndarray:
        """Scores of ``nodes`` as complete mappings, updating the incumbent. A node's completion (the
        levels below its stage: all iterations left in level 0's temporal loops, no spatial factors, the
        root's orders) is itself a mapping of the declared space, so any that fits may be the incumbent (in the padded
        space only where every dimension's factors are one of its ceil-split chains: :meth:`.expand.PaddedSplits.members`)."""
        score = cost.objective(self.objective).copy()
        if self.padded is not None:  # a completion outside the padded space (a ceil-split chain it lacks) is no
            rows = np.nonzero(score <= self.incumbent)[0]  # mapping of it; only those that may win are looked up
            score[rows[~self.padded.members(nodes.temporal[rows], nodes.spatial[rows], nodes.axes[rows])]] = np.inf
        tie = cost.tie_break()
        k = best_index(score, tie)
        if math.isfinite(score[k]) and (score[k], tie[k]) < (self.incumbent, self.tie):
            self.incumbent, self.tie = float(score[k]), float(tie[k])
            self.best = self._batch(nodes.take(np.array([k])))
        return score

    def lower(self, extent: np.ndarray) -> LowerBound:
        """The bound of nodes whose completions run ``extent`` iterations per dimension (the layer's bounds, or in
        the padded space the padded extents: :func:`.expand.extents`)."""
        key = tuple(int(x) for x in extent)
        if key not in self.bounds_by_extent:
            self.bounds_by_extent[key] = LowerBound(self.op, self.arch, self.model, self.keeps, self.placement,
                                                    self.both_axes, key)
        return self.bounds_by_extent[key]

    def _bound(self, nodes: Nodes, stage: int, lazy: bool = False) -> np.ndarray:
        """Lower bounds after ``stage`` (exact objective at the last stage); every completion priced on
        the way is offered as an incumbent. Nodes of different padded extents are bounded apart. ``lazy``: tier by
        tier (:meth:`_tiered`)."""
        return self._by_extent(nodes, lambda rows, bound: self._bound_extent(nodes.take(rows) if rows is not None
                                                                             else nodes, stage, bound, lazy))

    def _by_extent(self, nodes: Nodes,
                   bound_rows: Callable[[np.ndarray | None, LowerBound], np.ndarray]) -> np.ndarray:
        """``bound_rows(rows, bound)`` over the groups of ``nodes`` of one extent (:func:`.expand.extents`), each
        with its :meth:`lower` bound, put together in the nodes' order; ``rows`` None: all of ``nodes`` (one group:
        always in the exact space, whose extents are the layer's bounds, so they are not computed there)."""
        if self.padded is None:
            return bound_rows(None, self.lower(np.array([self.op.bound(d) for d in self.op.dim_names])))
        keys, inverse = unique_rows(extents(nodes))
        if len(keys) == 1:
            return bound_rows(None, self.lower(keys[0]))
        out = np.empty(len(nodes))
        for g, key in enumerate(keys):
            rows = np.nonzero(inverse == g)[0]
            out[rows] = bound_rows(rows, self.lower(key))
        return out

    def _bound_extent(self, nodes: Nodes, stage: int, bound: LowerBound, lazy: bool = False) -> np.ndarray:
        """:meth:`_bound` of nodes of one extent, with its ``bound``."""
        self.nodes += len(nodes)
        kind, j = self.stages[stage]
        if stage == len(self.stages) - 1:
            return self._consider(nodes, self.model.evaluate(self._batch(nodes), reuse_buffers=True))
        stats = self._priced_share.setdefault(stage, [0, 0.0])
        calls, share = stats
        stats[0] += 1
        if not (lazy and kind == "F" and j > 0) or (share > PRICED_SHARE and calls % TIER_TRY):
            cost = self.model.evaluate(self._batch(nodes), reuse_buffers=True)
            self._consider(nodes, cost)
            return self._bound_priced(nodes, cost, self._fits(nodes, cost, kind, j), stage, bound, lazy)
        # B2's best-order completions only for the nodes they may help (docs/search.md "B2's completions only where
        # they can count"): a node whose bound without them (the pairs' tier) exceeds the incumbent is pruned by every
        # bound, and none of its completions can beat or tie the incumbent, so leaving them unpriced changes neither
        # the incumbent nor the walk. Where most nodes stay below the incumbent (the running share at this stage) that
        # first bound is only overhead: the stage then prices every node's, measuring the share again now and then.
        # Before it, the nodes the pairs' tier prunes without the cost model (:meth:`_unpriced_bound`) are not priced
        # at all, for the same reason
        lb = self._unpriced_bound(nodes, j, bound)
        keep = np.nonzero(lb <= self.incumbent * (1 + EPS))[0]
        if not len(keep):
            stats[1] = 0.5 * share if calls else 0.0
            return lb
        part = nodes if len(keep) == len(nodes) else nodes.take(keep)
        cost = self.model.evaluate(self._batch(part), reuse_buffers=True)
        self._consider(part, cost)
        fits = self._fits(part, cost, kind, j)
        pre = bound.compute(cost, part.temporal, part.spatial, part.order, j, j, self.objective, tier=TIER_PAIRS)
        lb[keep] = np.where(fits, pre, np.inf)
        rows = np.nonzero(fits & (pre <= self.incumbent * (1 + EPS)))[0]
        got = len(rows) / len(nodes)
        stats[1] = 0.5 * share + 0.5 * got if calls else got
        if len(rows):
            lb[keep[rows]] = self._bound_priced(part.take(rows), _cost_rows(cost, rows), fits[rows], stage, bound,
                                                lazy)
        return lb

    def _unpriced_bound(self, nodes: Nodes, j: int, bound: LowerBound) -> np.ndarray:
        """(n,) the pairs' tier of nodes of factor stage ``j`` with no pair taken from the cost model (every pair's
        compulsory bound: :meth:`.bounds.LowerBound.compute` with ``known`` past the top), a lower bound of every
        completion of each node and at most its pairs' tier with the exact pairs. Its only read of a completion's
        cost is the MACs' energy, the same for every mapping of the layer (the root's; no level's cycles are
        known). -inf where not computed: with no incumbent yet, or in the padded space (whose MACs differ by
        extent)."""
        if not math.isfinite(self.incumbent) or self.padded is not None or self.root_cost is None:
            return np.full(len(nodes), -math.inf)
        n = len(nodes)
        root = self.root_cost
        shared = ("counts", "action_energy", "final_scale")
        same = replace(root, counts={k: np.broadcast_to(v[:1], (n,) + v.shape[1:]) for k, v in root.counts.items()},
                       **{f.name: np.broadcast_to(getattr(root, f.name)[:1], (n,) + getattr(root, f.name).shape[1:])
                          for f in fields(root) if f.name not in shared})
        same = replace(same, level_cycles=np.zeros((n,) + root.level_cycles.shape[1:]))
        return bound.compute(same, nodes.temporal, nodes.spatial, nodes.order, j, self.L, self.objective,
                             tier=TIER_PAIRS)

    def _bound_priced(self, nodes: Nodes, cost: CostBatch, fits: np.ndarray, stage: int, bound: LowerBound,
                      lazy: bool, key: int | tuple[int, str] | None = None) -> np.ndarray:
        """:meth:`_bound_extent`'s bounds of ``nodes`` priced in ``cost`` (whose completions were offered; ``fits``:
        :meth:`_fits`); at a factor stage below the top their completions with B2's best orders are priced and offered
        here. ``key``: the work :meth:`_tiered` times (None: the stage)."""
        kind, j = self.stages[stage]
        known = j if kind == "F" else j - 1
        by_order, safe = None, None
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

        def bound_rows(rows: np.ndarray | None, tier: int) -> np.ndarray:
            if rows is None:
                return bound.compute(cost, nodes.temporal, nodes.spatial, nodes.order, j, known, self.objective,
                                     by_order, safe, tier=tier)
            taken = _cost_rows(cost, rows)  # also by_order's where it is ``cost`` (a tensor B2 does not apply to)
            return bound.compute(taken, nodes.temporal[rows], nodes.spatial[rows],
                                 nodes.order[rows], j, known, self.objective,
                                 None if by_order is None else [taken if c is cost else _cost_rows(c, rows)
                                                                for c in by_order],
                                 None if safe is None else safe[rows], tier=tier)
        lb = np.where(fits, self._tiered(bound_rows, fits, lazy, stage if key is None else key), np.inf)
        if (kind == "F" and (by_order is not None or j == 0) and self.placement and j < self.L - 1
                and self.objective in ("energy", "edp") and self.padded is None):
            lb = self._shared_order(nodes, cost, by_order, safe, j, bound, lb, lazy)
        if kind == "F" and j == 1 and key is None:
            lb = self._unrolled_node_bound(lb, nodes, cost, lazy)
        return lb

    def _open_rows(self, lb: np.ndarray, lazy: bool) -> np.ndarray:
        """The rows of ``lb`` a costly term may still raise (B39/B44, B45): with ``lazy`` those below the incumbent
        (where raising them can prune), else every finite one (an infinite bound stays infinite)."""
        return np.nonzero(np.isfinite(lb) & (lb < self.incumbent * (1 - EPS) if lazy else True))[0]

    def _unrolled_node_bound(self, lb: np.ndarray, nodes: Nodes, cost: CostBatch, lazy: bool) -> np.ndarray:
        """``lb`` of ``F(1)``'s ``nodes`` (priced in ``cost``) raised to B45 at each node's own unrolling of the array
        (:class:`.unrolled_tile.UnrolledTile` of its tile node: level 1's split folded into level 0, its register file's
        tile, its unrolling; docs/search.md, "B45: the register file's refills per unrolling at the tile bound") where it
        applies; ``lazy``: only where ``lb`` is below the incumbent, else wherever it is finite."""
        if self.unrolled_tile is None:
            return lb
        rows = self._open_rows(lb, lazy)
        if len(rows):
            part = nodes.take(rows)
            temporal, spatial = part.temporal.copy(), part.spatial.copy()
            temporal[:, 0] *= part.temporal[:, 1] * part.spatial[:, 1]
            temporal[:, 1] = 1
            spatial[:, 1] = 1
            lb[rows] = np.maximum(lb[rows], self.unrolled_tile.compute(
                _cost_rows(cost, rows), temporal, spatial, part.order, part.temporal[:, 0] * part.spatial[:, 0],
                self.objective, part.spatial[:, 1]))
        return lb

    def _shared_order(self, nodes: Nodes, cost: CostBatch, by_order: list[CostBatch] | None, safe: np.ndarray | None,
                      j: int, bound: LowerBound, lb: np.ndarray, lazy: bool) -> np.ndarray:
        """``lb`` of factor stage ``j``'s ``nodes`` (priced in ``cost``, B2's ``by_order`` and ``safe``, None at level 0)
        raised to B39 (docs/search.md, "B39: one order for a level's refetches and its children's refills"; B44 under
        the loops above the level, "B44: B39 under the loops above the level"): the pairs' tier plus
        the least over level ``j``'s orders of :func:`.shared_order.shared_orders`' increment. ``lazy``: only where
        ``lb`` is still below the incumbent (where it can prune), else wherever ``lb`` is finite. Each node's bound per
        order is kept (:attr:`_order_floors`) for its order stage (:meth:`_order_floor`). Energy, and EDP as each order's
        energy times the node's latency bound (B47: every completion's EDP is at least the two bounds' product)."""
        rows = self._open_rows(lb, lazy)
        if not len(rows):
            return lb
        taken = _cost_rows(cost, rows)
        orders = None if by_order is None else [taken if c is cost else _cost_rows(c, rows) for c in by_order]
        safe = None if safe is None else safe[rows]
        part = nodes.take(rows)
        groups = shared_orders(bound, part.temporal, part.spatial, taken, orders, safe, j)
        if not groups:
            return lb
        pairs = bound.compute(taken, part.temporal, part.spatial, part.order, j, j, "energy", orders, safe,
                              tier=TIER_PAIRS)
        if self.objective == "edp":  # B47: each order's energy times the node's latency bound
            latency = bound.compute(taken, part.temporal, part.spatial, part.order, j, j, "latency", tier=TIER_PAIRS)
        lb = lb.copy()
        kept = self._order_floors.setdefault(j, {})
        if len(kept) > ORDER_FLOORS_KEPT:
            kept.clear()
        for group, added in groups:
            floors = pairs[group, None] + added
            if self.objective == "edp":
                floors = floors * latency[group, None]
            lb[rows[group]] = np.maximum(lb[rows[group]], floors.min(axis=1))
            kept.update(zip(self._floor_keys(part.take(group), j), floors))
        return lb

    def _floor_keys(self, nodes: Nodes, j: int) -> list[bytes]:
        """Each node's key in :attr:`_order_floors`: what its order stage's nodes share with it (all but level
        ``j``'s order and placements and those below)."""
        n = len(nodes)
        rows = np.concatenate([nodes.temporal.reshape(n, -1), nodes.spatial.reshape(n, -1), nodes.axes.reshape(n, -1),
                               nodes.order[:, j + 1:].reshape(n, -1), nodes.above[:, j + 1:].reshape(n, -1)], axis=1)
        return [row.tobytes() for row in np.ascontiguousarray(rows, dtype=np.int64)]

    def _order_floor(self, nodes: Nodes, parents: np.ndarray, stage: int) -> np.ndarray:
        """(n,) B39's bound of each order stage node (its level-``j`` order fixed; ``parents``: its parent's index, the
        siblings' the same) where its factor-stage parent's orders were bounded (:meth:`_shared_order`: that order's
        value bounds every child of it), else -inf."""
        _, j = self.stages[stage]
        out = np.full(len(nodes), -math.inf)
        floors = self._order_floors.get(j)
        if not floors:
            return out
        ranks = order_ranks(nodes.temporal[:, j], nodes.order[:, j])
        _, first, inverse = np.unique(parents, return_index=True, return_inverse=True)
        for g, key in enumerate(self._floor_keys(nodes.take(first), j)):
            floor = floors.get(key)
            if floor is not None:
                rows = np.nonzero(inverse.reshape(-1) == g)[0]
                out[rows] = floor[ranks[rows]]
        return out

    def _tiered(self, bound_rows: Callable[[np.ndarray | None, int], np.ndarray], live: np.ndarray,
                lazy: bool, key: int | tuple[int, str]) -> np.ndarray:
        """Bounds of the ``live`` rows (n,) of a batch from ``bound_rows(rows, tier)`` (``rows`` None: all; the other
        rows' values are not used). Not ``lazy``: the full bound. ``lazy``: the tiers of one of :data:`TIER_PLANS` in
        turn (each adds terms that only raise a bound), each next one only for the rows the bound so far leaves below
        the incumbent, a row's bound the largest of its tiers (each is a lower bound). A row pruned by a lower tier
        would be pruned by the full bound too (at least as large), so the walk prunes the same nodes and keeps the same
        ones in the same order: the costly terms (B19, the lanes' joint term, B14, B18, B11's unrollings; docs/search.md
        "Costly bounds only where they can prune") run only where they can prune. The plan is the one of least expected
        CPU seconds per row at the work ``key`` names (a stage, or a level's tile bound) from its tiers' running costs
        and shares of rows left (:class:`_TierStats`): where the lower tiers prune few rows, computing them is only
        overhead."""
        if not lazy:
            return bound_rows(None, TIER_FULL)
        stats = self._plans.setdefault(key, _TierStats())
        lb = np.full(len(live), -math.inf)
        rows = np.nonzero(live)[0]
        entered = len(rows)
        for tier in TIER_PLANS[stats.plan()]:
            if not len(rows):
                break
            t = time.process_time()
            computed = len(rows)
            lb[rows] = np.maximum(lb[rows], bound_rows(None if computed == len(lb) else rows, tier))
            rows = rows[lb[rows] < self.incumbent * (1 - EPS)]
            stats.record(tier, time.process_time() - t, computed, entered, len(rows))
        return lb

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

    def tile_bound(self, nodes: Nodes, tiles: np.ndarray, j: int, lazy: bool = False,
                   owner: np.ndarray | None = None, units: list | None = None) -> np.ndarray:
        """Tile bound (docs/search.md): bound of the children of each node (its levels above ``j`` fixed) whose
        level-``j - 1`` tile is the same row of ``tiles``, before level ``j``'s factors are split
        (:meth:`.bounds.LowerBound.compute`, ``tile``); ``lazy``: tier by tier (:meth:`_tiered`). ``owner`` (r,):
        row ``i``'s node is ``nodes[owner[i]]``, each of ``nodes`` priced once by the cost model for all its tiles
        (the same costs, row by row, as pricing one copy per tile); None: one row of ``nodes`` per tile. ``units``: a list
        that receives B45's bounds per unrolling of the rows it raises (:meth:`_unrolled_tile_bound`)."""
        self.nodes += len(tiles)
        if owner is not None and self.padded is not None:  # grouped by each row's padded extent: one copy per tile
            nodes, owner = nodes.take(owner), None

        def extent_rows(rows: np.ndarray | None, bound: LowerBound) -> np.ndarray:
            part, tile = (nodes, tiles) if rows is None else (nodes.take(rows), tiles[rows])
            cost = self.model.evaluate(self._batch(part))
            if owner is not None:  # the exact space: one group, ``rows`` None
                part, cost = part.take(owner), _cost_rows(cost, owner)

            def bound_rows(sub: np.ndarray | None, tier: int) -> np.ndarray:
                if sub is None:
                    return bound.compute(cost, part.temporal, part.spatial, part.order, j + 1, j, self.objective,
                                         tile=tile, tier=tier)
                return bound.compute(_cost_rows(cost, sub), part.temporal[sub], part.spatial[sub], part.order[sub],
                                     j + 1, j, self.objective, tile=tile[sub], tier=tier)
            lb = self._tiered(bound_rows, np.ones(len(tile), dtype=bool), lazy, (j, "tile"))
            return self._unrolled_tile_bound(lb, part, cost, tile, lazy, units) if j == 1 else lb
        return self._by_extent(nodes, extent_rows)

    def _unrolled_tile_bound(self, lb: np.ndarray, nodes: Nodes, cost: CostBatch, tiles: np.ndarray,
                             lazy: bool, units: list | None = None) -> np.ndarray:
        """``lb`` (the tile bounds of ``F(1)``'s ``nodes`` and ``tiles``, priced in ``cost``) raised to B45
        (:class:`.unrolled_tile.UnrolledTile`; docs/search.md, "B45: the register file's refills per unrolling at the
        tile bound") where it applies, at :meth:`_open_rows` (``lazy``: only where ``lb`` is below the incumbent, elsewhere
        it prunes already, so the walk prunes the same rows whatever the tiers). ``units``: a list that receives those
        rows and their (r, V) bounds per unrolling (B47: :meth:`_by_unrolling`)."""
        if self.unrolled_tile is None:
            return lb
        rows = self._open_rows(lb, lazy)
        if len(rows):
            values = self.unrolled_tile.per_unrolling(_cost_rows(cost, rows), nodes.temporal[rows],
                                                      nodes.spatial[rows], nodes.order[rows], tiles[rows],
                                                      self.objective)
            lb[rows] = np.maximum(lb[rows], values.min(axis=1))
            if units is not None:
                units.append((rows, values))
        return lb

    def _children(self, nodes: Nodes, stage: int, parent_lb: np.ndarray, deadline: float = math.inf,
                  room: list[int] | None = None) -> Iterator[tuple[Nodes, np.ndarray, float]]:
        """Children of each node with the bound they inherit, in pieces of at most :attr:`chunk` nodes, each with the
        least bound inherited by the children not yet made (a lower bound of every one of them). Factor
        stages below the top first bound each tile of level ``j - 1`` (:meth:`tile_bound`, in :meth:`_timed` steps)
        and split only the tiles below the incumbent, a few at a time; the clock is read before each step. ``room``
        (kept up to date by the caller, :meth:`_survivors`): the children the chunk being filled still takes;
        consecutive nodes whose children all fit below it are handed on in one piece (no chunk fills within it, so
        neither the incumbent nor the chunks differ from a hand-over tile by tile)."""
        kind, j = self.stages[stage]
        if kind == "O":
            orders = [math.factorial(int(n)) for n in (nodes.temporal[:, j] > 1).sum(axis=1)]
            step = max(1, self.chunk // 8)  # placements multiply the orders
            for rows in _slices(np.array(orders), self.chunk):
                piece, parents = expand_orders(nodes.take(rows), j)
                later = float(parent_lb[rows[0]:].min())  # children of these nodes and the next are still to come
                for lo in range(0, len(piece), step):
                    part = slice(lo, min(lo + step, len(piece)))  # views of the piece's rows
                    sub, up = piece.take(part), rows[parents[part]]
                    if self.placement and j < self.L - 1:  # B37: the orders bounded before their placements
                        sub, up = self._bounded_orders(sub, up, stage, parent_lb)
                        if not len(sub):
                            continue
                    # the children as rows of ``sub`` and their level-j placements, copied once when all are chosen
                    pick, above = (self._placements(sub, j) if self.placement and j < self.L - 1 else
                                   (np.arange(len(sub)), None))
                    if self.order_keys is not None:  # P3, P5 among the siblings made together
                        exact, runs = self.order_keys.keys(j, sub.temporal[pick, j], sub.order[pick, j], above)
                        keep = distinct_children(exact, runs, up[pick])
                        pick, above = pick[keep], None if above is None else above[keep]
                    sub, up = sub.take(pick), up[pick]
                    if above is not None:
                        sub.above[:, j] = above
                    yield from self._split(sub, parent_lb[up], later)
            return
        room = room or [0]
        after = np.append(np.minimum.accumulate(parent_lb[::-1])[::-1][1:], math.inf)  # least of the nodes after each
        for ks, first, tiles, tile_lb, units in self._bounded_tiles(nodes, stage, parent_lb, deadline):
            # one row of ``splits`` per (node, tile alive now: a superset of those alive later, the incumbent only
            # falls), ``sel`` its tile; ``starts``: each node's first row
            sel = np.nonzero(tile_lb < self.incumbent * (1 - EPS))[0]
            if not len(sel):
                continue
            # each node's tiles best first: the least bound left of the node's children is then the next tile's
            owner = np.searchsorted(first, sel, side="right") - 1  # each tile's node among ``ks``
            sel = sel[np.lexsort((tile_lb[sel], owner))]
            units = None if units is None else (units[0][sel], units[1])  # B47: per row of ``splits``
            starts = np.append(0, np.cumsum(np.bincount(owner, minlength=len(ks))))
            splits = FactorSplits(nodes.take(ks), np.repeat(np.arange(len(ks)), np.diff(starts)), tiles[sel], j,
                                  self.arch, j in self.both_axes, self.distinct, self.padded)
            row_lb = tile_lb[sel]
            merged: list[np.ndarray] = []  # rows of whole nodes whose children all go in one piece
            merged_size, last = 0, 0
            for i, k in enumerate(ks.tolist()):
                lo, hi = starts[i], starts[i + 1]
                if lo == hi:
                    continue
                rows = lo + np.nonzero(row_lb[lo:hi] < self.incumbent * (1 - EPS))[0]
                if not len(rows):
                    continue
                if splits.counted:
                    size = splits.total(rows, room[0] - merged_size)
                    if merged_size + size < room[0]:  # no chunk fills within: as if handed on tile by tile
                        merged.append(rows)
                        merged_size += size
                        last = k
                        continue
                if merged:
                    _check(deadline)
                    piece, row = splits.make(np.concatenate(merged))
                    yield from self._handed(piece, row, row_lb, units, float(after[last]))
                    merged, merged_size = [], 0
                yield from self._node_children(splits, rows, row_lb, float(after[k]), deadline, units)
            if merged:
                _check(deadline)
                piece, row = splits.make(np.concatenate(merged))
                yield from self._handed(piece, row, row_lb, units, float(after[last]))

    def _node_children(self, splits: FactorSplits, alive: np.ndarray, row_lb: np.ndarray, after: float,
                       deadline: float, units: tuple[np.ndarray, np.ndarray] | None = None
                       ) -> Iterator[tuple[Nodes, np.ndarray, float]]:
        """The children of one node's ``alive`` rows of ``splits`` (bounds ``row_lb``), handed on a few tiles at a
        time (1, 4, 16, ... about a chunk a step), dropping the tiles the incumbent has meanwhile beaten, each piece
        with the least bound of the tiles after it and of the nodes after this one (``after``). The children are
        made about a chunk at a time (``made``: those of the alive positions ``made_lo`` up to ``made_hi``, ``pos``:
        each one's position). ``units``: B47's bounds per unrolling of the rows (:meth:`_by_unrolling`)."""
        later = np.minimum(np.append(np.minimum.accumulate(row_lb[alive][::-1])[::-1], math.inf), after)
        made, pos, starts, made_lo, made_hi = None, None, None, 0, 0
        lo, step = 0, 1
        while lo < len(alive):
            hi = min(lo + step, len(alive))
            live = row_lb[alive[lo:hi]] < self.incumbent * (1 - EPS)  # the incumbent may have improved meanwhile
            if live.any():
                _check(deadline)
                if not splits.counted:  # children not counted beforehand: those of this step only
                    made, row = splits.make(alive[lo:hi][live])
                    pos = np.searchsorted(alive, row)
                    rows = np.arange(len(row))
                else:
                    if hi > made_hi:
                        made_lo, made_hi = lo, splits.reach(alive, lo, hi, self.chunk)
                        made, row = splits.make(alive[made_lo:made_hi])
                        pos = np.searchsorted(alive, row)
                        starts = np.searchsorted(pos, np.arange(made_lo, made_hi + 1))
                    rows = np.arange(starts[lo - made_lo], starts[hi - made_lo])
                    rows = rows[live[pos[rows] - lo]]
                piece = made.take(rows)
                step = max(1, min(4 * step, step * self.chunk // max(len(piece), 1)))  # about a chunk a step
                yield from self._handed(piece, alive[pos[rows]], row_lb, units, float(later[hi]))
            lo = hi

    def _bounded_tiles(self, nodes: Nodes, stage: int, parent_lb: np.ndarray,
                       deadline: float
                       ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                           tuple[np.ndarray, np.ndarray] | None]]:
        """Groups of consecutive nodes of a factor stage, in order: the nodes' indices ``ks`` (g,), ``first`` (g + 1,)
        each one's first row, and the rows: every node's candidate tiles of level ``j - 1`` (r, D), their bounds
        (r,) (at least the node's ``parent_lb``; the tile bound where :meth:`_children` uses one) and B47's values
        per unrolling of the rows B45 raised (:func:`_unit_table`; None where B45 does not apply). A group holds about
        :attr:`batch_children` tiles, their tile bounds computed together (a bound's rows do not depend on each
        other, so the values are those of one node at a time); the padded top's nodes one at a time (bounding its
        tiles may change the incumbent)."""
        _, j = self.stages[stage]
        if j == self.L - 1 and self.top_bounded:
            for k in range(len(nodes)):
                yield self._padded_top(nodes, k, stage, float(parent_lb[k]), deadline)
            return
        ks: list[int] = []
        parts: list[np.ndarray] = []
        waiting = 0  # tiles in ``parts``
        for k in range(len(nodes)):
            if j == 0:
                tiles = np.ones((1, self.D), dtype=np.int64)
            elif self.padded is not None:
                tiles = self.padded.tiles(nodes, k, j, self.fit)
            else:
                tiles = self._candidate_tiles(nodes.temporal[k, 0], j)
            ks.append(k)
            parts.append(tiles)
            waiting += len(tiles)
            if k == len(nodes) - 1 or waiting >= self.batch_children:
                owner = np.repeat(np.array(ks), [len(t) for t in parts])
                tiles = np.concatenate(parts)
                tile_lb = parent_lb[owner].astype(float)
                found: list[tuple[np.ndarray, np.ndarray]] | None = [] if self.unrolled_tile is not None and j == 1 else None
                if 1 <= j < self.L - 1:
                    for part in self._timed(len(tiles), (stage, "tile"), deadline):
                        used, inverse = np.unique(owner[part], return_inverse=True)  # each node priced once
                        got = None if found is None else []
                        tile_lb[part] = np.maximum(self.tile_bound(nodes.take(used), tiles[part], j, self.tiered,
                                                                   inverse, got), tile_lb[part])
                        if got:
                            found.extend((part[rows], values) for rows, values in got)
                yield (np.array(ks), np.cumsum([0] + [len(t) for t in parts]), tiles, tile_lb,
                       _unit_table(len(tiles), found))
                ks, parts, waiting = [], [], 0

    def _padded_top(self, nodes: Nodes, k: int, stage: int, parent_lb: float, deadline: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, None]:
        """:meth:`_bounded_tiles` of node ``k`` at the padded top without a fan-out: each tile's one child bounded
        (made again, not bounded, in :meth:`_children`), one padded extent at a time
        (:meth:`.expand.PaddedSplits.top_tiles`), each extent's tiles with its own bound and only those left below the
        incumbent kept (the caller drops the others). An extent whose every mapping the padded root bound of its
        extent (:meth:`_extent_above`) puts above the incumbent has no tiles built or bounded: its children could not
        have become the incumbent nor been expanded, so the optimum and the certificate stay the same."""
        tiles, bounds = [], []
        for extent, grid in self.padded.top_tiles(nodes, k, self.fit, self._extent_above):
            bound = self.lower(extent)
            lb = np.full(len(grid), parent_lb)
            for part in self._timed(len(grid), (stage, "tile"), deadline):
                kids, _ = FactorSplits(nodes, np.full(len(part), k), grid[part], self.L - 1, self.arch, False,
                                       self.distinct, self.padded).make(np.arange(len(part)))
                lb[part] = np.maximum(self._bound_extent(kids, stage, bound, self.tiered), lb[part])
            alive = lb < self.incumbent * (1 - EPS)
            tiles.append(grid[alive])
            bounds.append(lb[alive])
        tiles.append(np.zeros((0, self.D), dtype=np.int64))
        bounds.append(np.zeros(0))
        tiles, bounds = np.concatenate(tiles), np.concatenate(bounds)
        return np.array([k]), np.array([0, len(tiles)]), tiles, bounds, None

    def _extent_above(self, extent: np.ndarray) -> bool:
        """Whether every mapping whose padded extents are at least ``extent`` per dimension costs more than the
        incumbent: the padded root bound (:meth:`.bounds.LowerBound.padded_root`) built for ``extent`` (its terms do
        not fall as the extents grow, its refills' boxes up to the largest extents the padding allows), or an extent
        below this one per dimension already found so (:attr:`_above`; the incumbent only falls)."""
        if len(self._above) and (extent >= np.array(self._above)).all(axis=1).any():
            return True
        if self.lower(extent).padded_root(self.root_cost, self.objective, self.caps) > self.incumbent:
            self._above.append(extent)
            return True
        return False

    def _candidate_tiles(self, rest: np.ndarray, j: int) -> np.ndarray:
        """:func:`.expand.candidate_tiles` of ``rest`` at level ``j``, cached per search (siblings share ``rest``;
        read-only)."""
        key = (j, rest.tobytes())
        tiles = self._tiles.get(key)
        if tiles is None:
            if len(self._tiles) > 100_000:
                self._tiles.clear()
            tiles = candidate_tiles(rest, j, self.fit)
            tiles.setflags(write=False)
            self._tiles[key] = tiles
        return tiles

    def _timed(self, n: int, key: int | tuple[int, str], deadline: float) -> Iterator[np.ndarray]:
        """Consecutive index ranges covering ``n`` items, each about :data:`STEP_SECONDS` of work from the running
        mean per item of the work ``key`` names (the CPU time of the caller's use between yields; first guess: 256
        items); raises :class:`_OutOfTime` before each past ``deadline``."""
        lo = 0
        while lo < n:
            _check(deadline)
            per_item = self.seconds_per_node.get(key, STEP_SECONDS / 256)
            hi = min(n, lo + int(np.clip(STEP_SECONDS / per_item, 16, self.chunk)))
            t = time.process_time()
            yield np.arange(lo, hi)
            self.seconds_per_node[key] = 0.5 * per_item + 0.5 * (time.process_time() - t) / (hi - lo)
            lo = hi

    def _handed(self, piece: Nodes, row: np.ndarray, row_lb: np.ndarray, units: tuple[np.ndarray, np.ndarray] | None,
                later: float) -> Iterator[tuple[Nodes, np.ndarray, float]]:
        """:meth:`_split` of the children ``piece`` of the rows ``row`` (bounds ``row_lb``) of a factor split, each
        child's bound raised by B47 where ``units`` has its row (:meth:`_by_unrolling`), the children it puts at or
        above the incumbent dropped."""
        piece, lb = self._by_unrolling(piece, row, row_lb[row], units)
        if len(piece):
            yield from self._split(piece, lb, later)

    def _by_unrolling(self, piece: Nodes, row: np.ndarray, lb: np.ndarray, units: tuple[np.ndarray, np.ndarray] | None
                      ) -> tuple[Nodes, np.ndarray]:
        """B47 (docs/search.md, "B47: each child of a tile at its own unrolling"): ``piece`` (children of ``F(1)``'s tiles,
        ``row`` each one's tile, ``lb`` the bounds they inherit, raised in place) with each bound raised to B45's value at the tile for
        the child's unrolling of the array (``units``: per tile its slot among the (k, V) values, -1 where B45 was not
        computed), and only the children left below the incumbent. That value bounds every completion of the tile
        with that unrolling (B45 takes the least over them), so of every completion of the child."""
        if units is None:
            return piece, lb
        slot, values = units
        slot = slot[row]
        unit = self.unrolled_tile.rows_of(piece.spatial[:, 1])
        found = np.nonzero((slot >= 0) & (unit >= 0))[0]
        lb[found] = np.maximum(lb[found], values[slot[found], unit[found]])
        keep = np.nonzero(lb < self.incumbent * (1 - EPS))[0]
        return (piece, lb) if len(keep) == len(lb) else (piece.take(keep), lb[keep])

    def _split(self, piece: Nodes, lb: np.ndarray, later: float) -> Iterator[tuple[Nodes, np.ndarray, float]]:
        """``piece`` and its bounds ``lb`` in slices of at most :attr:`chunk` nodes, each with the least bound of
        the rest of ``piece`` and of the children after it (``later``)."""
        if len(piece) <= self.chunk:  # the usual case: one slice
            yield piece, lb, later
            return
        for lo in range(0, len(piece), self.chunk):
            hi = min(lo + self.chunk, len(piece))
            yield piece.take(np.arange(lo, hi)), lb[lo:hi], min(float(lb[hi:].min(initial=math.inf)), later)

    def _placements(self, nodes: Nodes, j: int) -> tuple[np.ndarray, np.ndarray]:
        """The children of order stage nodes (their level-``j`` order fixed) with every placement at level ``j`` worth
        keeping (:func:`.placement.least_placements`): each child's node (m,; ascending) and its placements (m, T)."""
        base = nodes.spatial[:, j] * (nodes.temporal[:, 0] if j > 0 else 1)
        return least_placements(self.op, nodes.temporal[:, j], nodes.order[:, j], base, self.keeps[j],
                                self.bound.monotone[j], self.bound.fit.levels[j])

    def _bounded_orders(self, nodes: Nodes, parents: np.ndarray, stage: int, parent_lb: np.ndarray
                        ) -> tuple[Nodes, np.ndarray]:
        """B37: the nodes of order stage ``stage`` (``parents``: each one's index into ``parent_lb``) whose
        :meth:`order_bound` (at least their parent's) is below the incumbent, and their parents' indices; an order
        whose B39 value (:meth:`_order_floor`) is not is dropped before it is priced."""
        floor = np.maximum(self._order_floor(nodes, parents, stage), parent_lb[parents])  # B39, where known: no pricing
        keep = np.nonzero(floor < self.incumbent * (1 - EPS))[0]
        if len(keep) < len(nodes):
            nodes, parents, floor = nodes.take(keep), parents[keep], floor[keep]
        lb = np.maximum(self.order_bound(nodes, stage), floor)
        keep = np.nonzero(lb < self.incumbent * (1 - EPS))[0]
        return nodes.take(keep), parents[keep]

    def order_bound(self, nodes: Nodes, stage: int) -> np.ndarray:
        """(n,) B37 (docs/search.md, "B37: each order bounded before its placements"): a lower bound of every
        completion of every child of the nodes of order stage ``stage`` (their level-``j`` order fixed, its placements
        not yet chosen): the least bound over each node's relaxed placement vectors
        (:func:`.placement.relaxed_placements`; inf where no placement fits). Each fitting placement of a node is at
        least one of its vectors tensor by tensor where P1 holds and equal to it elsewhere. The bound of an order
        stage's node reads level ``j``'s placements only through its completion's exact pairs (and the known levels'
        cycles), each a non-decreasing function of a P1 tensor's loops above its tile, and each of its terms is a
        non-decreasing function of those, so the vector's bound (level ``j``'s capacity not checked: the vector need
        not fit) is at most the child's. Completions of vectors that fit are offered as incumbents."""
        _, j = self.stages[stage]
        base = nodes.spatial[:, j] * (nodes.temporal[:, 0] if j > 0 else 1)
        rows, above = relaxed_placements(self.op, nodes.temporal[:, j], nodes.order[:, j], base, self.keeps[j],
                                         self.bound.monotone[j], self.bound.fit.levels[j])
        relaxed = nodes.take(rows)  # a copy
        relaxed.above[:, j] = above

        def bound_rows(part: np.ndarray | None, bound: LowerBound) -> np.ndarray:
            sub = relaxed if part is None else relaxed.take(part)
            self.nodes += len(sub)
            cost = self.model.evaluate(self._batch(sub), reuse_buffers=True)
            self._consider(sub, cost)
            above_fit = (cost.capacity_excess[:, j + 1:self.L - 1] <= 0).all(axis=1)  # level j's own not checked
            return self._bound_priced(sub, cost, above_fit, stage, bound, self.tiered, (stage, "order"))
        lb = np.full(len(nodes), np.inf)
        np.minimum.at(lb, rows, self._by_extent(relaxed, bound_rows) if len(rows) else np.zeros(0))
        return lb

    def _survivors(self, nodes: Nodes, stage: int, parent_lb: np.ndarray,
                   deadline: float = math.inf) -> Iterator[tuple[Nodes, np.ndarray, float]]:
        """Children of ``nodes`` at ``stage`` whose bound is below the incumbent, a chunk (below twice
        :attr:`chunk` children bounded at once) at a time, each chunk's sorted by bound, with the least bound of
        the children not yet bounded (inf after the last); raises :class:`_OutOfTime` past ``deadline``. A child's
        bound is at least its parent's (the parent's holds for every completion of the child too)."""
        pending, inherited, size, born = [], [], 0, 0
        room = [self.chunk]  # children this chunk still takes: :meth:`_children` hands on whole nodes below it at once
        for piece, lb, later in self._children(nodes, stage, parent_lb, deadline, room):
            pending.append(piece)
            inherited.append(lb)
            born += len(piece)
            size += len(piece)
            if size >= self.chunk:
                yield *self._bound_sorted(pending, inherited, stage, deadline), later
                pending, inherited, size = [], [], 0
            room[0] = self.chunk - size
        if pending:
            yield *self._bound_sorted(pending, inherited, stage, deadline), math.inf
        self.children_per_node[stage] = max(1.0, 0.8 * self.children_per_node[stage] + 0.2 * born / len(nodes))

    def _bound_sorted(self, pieces: list[Nodes], inherited: list[np.ndarray], stage: int,
                      deadline: float) -> tuple[Nodes, np.ndarray]:
        """The children in ``pieces`` whose bound (at least the ``inherited`` one) is below the incumbent, sorted
        by bound, and their bounds; bounded about :data:`STEP_SECONDS` at a time, the clock read in between."""
        batch, parent = Nodes.concat(pieces), np.concatenate(inherited)
        if self.mirror is not None:  # B42: one of each pair of mirror images among them
            keep = mirror_keep(batch, self.mirror, self._decided(stage))
            batch, parent = batch.take(keep), parent[keep]
        if stage == 0 and self.top_bounded:  # bounded with their tiles (:meth:`_children`)
            lb = parent.copy()
        else:
            lb = np.empty(len(batch))
            for part in self._timed(len(batch), stage, deadline):
                rows = slice(part[0], part[-1] + 1)  # consecutive: views of the batch's arrays, not copies
                lb[rows] = np.maximum(self._bound(batch.take(rows), stage, self.tiered), parent[rows])
        alive = np.nonzero(lb < self.incumbent * (1 - EPS))[0]
        order = alive[np.argsort(lb[alive], kind="stable")]
        return batch.take(order), lb[order]

    def _decided(self, stage: int) -> np.ndarray:
        """(L,) the levels whose loop orders the nodes of ``stage`` have chosen (those above its level, and its own
        after its order stage)."""
        kind, j = self.stages[stage]
        return np.arange(self.L) >= (j if kind == "O" else j + 1)

    def _open_bound(self, stack: list[list]) -> float:
        """The least bound of the nodes still open on ``stack`` (at most the incumbent): each frame's nodes not yet
        expanded and, while a frame's expansion is under way, the least bound of its children not yet bounded."""
        open_lb = [self.incumbent]
        for _, _, lb, k, expansion, first in stack:
            if len(lb) > k:
                open_lb.append(float(lb[k:].min()))
            if expansion is not None:
                open_lb.append(first)
        return min(open_lb)

    def run(self, deadline: float, midway: tuple[float, Callable[[], None]] | None = None) -> float:
        """Search until done or ``deadline``; returns the certified lower bound. ``midway`` (a time, a call): the call
        made once when the search is still open at that time (:func:`optimal_search`'s second start, which offers a
        mapping: a lower incumbent only prunes more, so the search goes on where it was)."""
        L, D = self.L, self.D
        root = Nodes(np.ones((1, L, D), dtype=np.int64), np.ones((1, L, D), dtype=np.int64),
                     np.zeros((1, L, D), dtype=np.int64), np.tile(np.arange(D), (1, L, 1)),
                     np.zeros((1, L, len(self.op.tensors)), dtype=np.int64) if self.placement else None)
        root.temporal[0, 0] = [self.op.bound(d) for d in self.op.dim_names]
        # the padded root bound (:meth:`.bounds.LowerBound.padded_root`): of every mapping whatever its padded extents
        # (in the exact space, whose extents are the layer's bounds, of every mapping too), which the root's children
        # inherit (a stop before the top level's tiles are all bounded has a finite gap)
        self.root_cost = self.model.evaluate(self._batch(root))
        root_lb = self.bound.padded_root(self.root_cost, self.objective,
                                         self.caps if self.padded is not None else self.bound.bounds)
        # depth first, lowest bound first among siblings: (stage, siblings sorted by bound, their bounds, next one,
        # the expansion under way of the siblings before it (a generator of bounded chunks) or None, the least bound
        # of its children not yet bounded)
        stack: list[list] = [[-1, root, np.array([root_lb]), 0, None, 0.0]]
        while stack:
            now = time.perf_counter()
            if now > deadline:
                return self._open_bound(stack)
            if midway is not None and now > midway[0]:
                midway[1]()
                midway = None
            top = stack[-1]
            stage, nodes, lb, k, expansion, _ = top
            if expansion is not None:
                try:
                    children, child_lb, top[5] = next(expansion)
                except StopIteration:
                    top[4] = None
                    continue
                except _OutOfTime:  # the children not yet bounded stay open with the bound they inherit
                    return self._open_bound(stack)
                if stage + 1 < len(self.stages) - 1 and len(children):
                    stack.append([stage + 1, children, child_lb, 0, None, 0.0])
                continue
            while k < len(nodes) and lb[k] >= self.incumbent * (1 - EPS):
                k += 1
            if k >= len(nodes):
                stack.pop()
                continue
            # siblings whose children are few are expanded together (larger batches for the cost model)
            end = min(len(nodes), k + int(np.clip(self.batch_children / self.children_per_node[stage + 1], 1, 256)))
            top[3:] = [end, self._survivors(nodes.take(np.arange(k, end)), stage + 1, lb[k:end], deadline),
                       float(lb[k:end].min())]
        return self.incumbent


def optimal_search(op: Operator, arch: ArchSpec, objective: str = "edp", budget_seconds: float | None = None,
                   incumbent: SearchResult | None = None, seeds: Sequence[Mapping] = (),
                   placement: bool = False, both_axes: Collection[str] = (),
                   imperfect: float | None = None, tiered: bool = True) -> OptimalResult:
    """Optimum of the declared space with its certificate (``budget_seconds``: None = until proven;
    ``placement``: the space with every per-tensor placement; ``both_axes``: names of the levels whose 2-D
    fan-out may split a dimension over both axes, the constraint ``both_axes``; ``imperfect``: the padded space,
    factors padding each dimension by up to this fraction of its bound, as the exhaustive mapper's
    ``MapSpace(op, arch, Constraints(waste=imperfect))``; not with ``both_axes``; ``tiered``: the costly bounds only
    where the cheaper ones leave a node below the incumbent, :meth:`BranchAndBound._tiered`; False: every bound in
    full, the same optimum and proof).

    The search starts from ``incumbent`` (None: Sunstone's result in the same space (its placed and both-axis walks
    with ``placement`` and ``both_axes``, the placed walk without the thorough rules, whose time can exceed a short
    budget: docs/search.md, "The placed walk's rules"; with placement and a budget, a second start, the thorough
    walk's mapping, offered when the search is still open at :data:`MIDWAY` of the budget and the rest likely holds
    the walk), with ``imperfect`` its padded walk's where that is a mapping of the padded space, else its exact
    walk's) and the better of ``seeds``, further mappings of the
    space known beforehand (e.g. an optimum on a smaller buffer, which fits a larger one); one outside the space
    is not taken."""
    t0 = time.perf_counter()
    if imperfect is not None and both_axes:
        raise DnnmapError("the optimal mapper does not search imperfect factorization together with both-axis "
                          "unrolling (both_axes); drop one of them, or use --mapper sunstone")
    model = CostModel(op, arch)
    names = [lv.name for lv in arch.levels]
    bb = BranchAndBound(op, arch, objective, model, placement=placement,
                        both_axes=frozenset(names.index(name) for name in both_axes), waste=imperfect, tiered=tiered)
    start_seconds = 0.0
    if incumbent is None:
        for pad in ([imperfect] if imperfect is not None else []) + [None]:
            try:
                start = sunstone_search(op, arch, objective, model=model, imperfect=pad, placement=placement,
                                        thorough=False, both_axes=both_axes)  # the cheap placed walk: the budget
                bb.offer(MappingBatch.from_mappings(op, arch, [start.mapping]))
            except MappingError:
                break
            if math.isfinite(bb.incumbent):
                break
        start_seconds = time.perf_counter() - t0
    else:
        bb.offer(MappingBatch.from_mappings(op, arch, [incumbent.mapping]))
    for seed in seeds:
        bb.offer(MappingBatch.from_mappings(op, arch, [seed]))
    deadline = t0 + budget_seconds if budget_seconds is not None else math.inf
    midway = None
    if incumbent is None and placement and imperfect is None and budget_seconds is not None:
        def thorough_start() -> None:
            """Offer the thorough placed walk's mapping where the budget left likely holds the walk."""
            if deadline - time.perf_counter() > THOROUGH_COST * start_seconds:
                bb.offer(MappingBatch.from_mappings(op, arch, [sunstone_search(
                    op, arch, objective, model=model, placement=True, both_axes=both_axes).mapping]))
        midway = (t0 + budget_seconds * MIDWAY, thorough_start)
    lower = bb.run(deadline, midway)
    if bb.best is None:
        raise MappingError(nothing_fits_message(op, arch, model))
    seconds = time.perf_counter() - t0
    proven = lower >= bb.incumbent * (1 - EPS)
    cert = Certificate(bb.incumbent if proven else lower, bb.incumbent, proven, bb.nodes, seconds)
    cost = model.evaluate(bb.best)
    label = ("optimal (proven)" if proven else f"optimal, gap {cert.gap:.1%} to bound {cert.lower_bound:.4g}"
             if cert.lower_bound > 0 else "optimal, not proven: no lower bound within the budget")
    result = SearchResult(op, arch, bb.best.mapping(0, op, arch), cost, bb.nodes, bb.nodes, seconds, label)
    return OptimalResult(result, cert)


def search_optimal(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                   progress: Progress | None = None) -> SearchResult:
    space = options.space_constraints()
    return optimal_search(op, arch, objective, budget_seconds=options.budget_seconds, placement=space.placement,
                          both_axes=[name for name, c in space.levels if c.both_axes], imperfect=space.waste).result


MAPPER = Mapper.builtin("optimal", search_optimal)
