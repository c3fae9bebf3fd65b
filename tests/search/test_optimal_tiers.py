"""The optimal mapper's walk bounds tier by tier (docs/search.md "Costly bounds only where they can prune"): the
costly terms of :meth:`.bounds.LowerBound.compute` are computed only for the nodes the cheaper tiers leave below the
incumbent. Every tier must be a lower bound and (so that the walk prunes the same nodes) at most the next one; the
search must prove the same optimum, with the same nodes in the shared-boundary space, with tiering on and off, and
must skip the costly terms on most nodes."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import TIER_FULL, TIER_PAIRS, TIER_REFILLS, LowerBound
from dnnmap.search.optimal import search
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops, zoo
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_bounds import ancestors, cases

CASES = cases(4, seed=21) + cases(2, seed=22, on_chip=2) + cases(4, seed=23, tpu=True)


def tiers_of(bb: BranchAndBound, nodes, stage: int) -> list[np.ndarray]:
    """The bounds of ``nodes`` after ``stage`` at each tier, from the calls :meth:`BranchAndBound._bound` makes."""
    got: list[np.ndarray] = []
    real = LowerBound.compute

    def spy(self: LowerBound, *args, **kwargs) -> np.ndarray:
        kwargs.pop("tier", None)
        got.extend(real(self, *args, tier=tier, **kwargs) for tier in (TIER_PAIRS, TIER_REFILLS, TIER_FULL))
        return got[-1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LowerBound, "compute", spy)
        full = bb._bound(nodes, stage)
    assert len(got) == 3 and np.array_equal(np.where(np.isfinite(full), got[2], np.inf), full)
    return got


@pytest.mark.parametrize("arch,op", CASES, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(CASES)])
def test_every_tier_is_a_lower_bound_and_the_tiers_only_raise_it(arch: ArchSpec, op: Operator) -> None:
    model = CostModel(op, arch)
    batch = MappingBatch.from_mappings(op, arch, all_mappings(op, arch))
    cost = model.evaluate(batch)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        ok = np.isfinite(truth)
        if not ok.any():
            continue
        bb = BranchAndBound(op, arch, objective, model)
        # the pairs' tier without the cost model's pairs reads one mapping's MAC energy (the walk: the root's)
        bb.incumbent, bb.root_cost = float(truth[ok].max()), model.evaluate(batch.take(np.array([0])))
        for stage, (kind, j) in enumerate(bb.stages[:-1]):
            low, mid, full = tiers_of(bb, ancestors(batch, kind, j), stage)
            if kind == "F":
                unpriced = bb._unpriced_bound(ancestors(batch, kind, j), j, bb.bound)
                assert (unpriced[ok] <= low[ok] * (1 + 1e-9) + 1e-9).all(), (objective, kind, j)
            assert (low[ok] <= mid[ok] * (1 + 1e-9) + 1e-9).all(), (objective, kind, j)
            assert (mid[ok] <= full[ok] * (1 + 1e-9) + 1e-9).all(), (objective, kind, j)
            assert (full[ok] <= truth[ok] * (1 + 1e-9)).all(), (objective, kind, j)


def test_the_tiers_differ_on_some_nodes() -> None:
    """Not vacuous: on the small cases, the refills' tier and the full one each raise some node's bound."""
    raised = np.zeros(2, dtype=bool)
    for arch, op in CASES:
        batch = MappingBatch.from_mappings(op, arch, all_mappings(op, arch))
        bb = BranchAndBound(op, arch, "energy", CostModel(op, arch))
        for stage, (kind, j) in enumerate(bb.stages[:-1]):
            low, mid, full = tiers_of(bb, ancestors(batch, kind, j), stage)
            raised |= [(mid > low * (1 + 1e-6)).any(), (full > mid * (1 + 1e-6)).any()]
    assert raised.all()


def full_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts, per call of :meth:`.bounds.LowerBound.compute` at the full tier, the rows it bounds."""
    rows: list[int] = []
    real = LowerBound.compute

    def spy(self: LowerBound, cost, temporal, *args, tier: int = TIER_FULL, **kwargs) -> np.ndarray:
        if tier == TIER_FULL:
            rows.append(len(temporal))
        return real(self, cost, temporal, *args, tier=tier, **kwargs)
    monkeypatch.setattr(LowerBound, "compute", spy)
    return rows


@pytest.mark.parametrize("priced_first", [False, True], ids=["as the stage chooses", "priced first everywhere"])
@pytest.mark.parametrize("arch,op", CASES, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(CASES)])
def test_tiered_search_proves_the_same_optimum_with_the_same_nodes(arch: ArchSpec, op: Operator, priced_first: bool,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiered search proves the brute-force optimum with the same mapping (ties included) and nodes as every
    bound in full (no tiers); ``priced_first``: B2's best-order completions priced only for the nodes the pairs' tier
    leaves at or below the incumbent at every factor stage (``PRICED_SHARE`` above any share)."""
    if priced_first:
        monkeypatch.setattr(search, "PRICED_SHARE", 2.0)
    for objective in OBJECTIVES:
        truth = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, all_mappings(op, arch)))
        if not np.isfinite(truth.objective(objective)).any():
            continue
        on, off = (optimal_search(op, arch, objective, incumbent=None, tiered=tiered) for tiered in (True, False))
        assert on.certificate.proven and off.certificate.proven
        assert on.certificate.incumbent == off.certificate.incumbent == truth.objective(objective).min()
        assert on.result.mapping == off.result.mapping
        assert on.certificate.nodes == off.certificate.nodes


@pytest.mark.parametrize("space", [{}, {"placement": True}, {"placement": True, "both_axes": ["GLB"]},
                                   {"imperfect": 0.1}], ids=["shared", "placement", "placement-both", "padded"])
def test_wide_spaces_prove_the_same_optimum(space: dict) -> None:
    """Placement, both axes and padding (their B11, B18 and padded extents) under tiering: the same optimum and
    proof as every bound in full."""
    arch = load_arch("eyeriss")
    op = ops.conv2d("c", 4, 8, (4, 4), (3, 3))
    on, off = (optimal_search(op, arch, "energy", tiered=tiered, **space) for tiered in (True, False))
    assert on.certificate.proven and off.certificate.proven
    assert on.certificate.incumbent == pytest.approx(off.certificate.incumbent, rel=1e-12)
    assert on.certificate.nodes <= off.certificate.nodes  # a node pruned by a lower tier stays pruned


@pytest.mark.parametrize("arch_name,layer_name", [("tpu_like", "layer4.0.downsample.0"), ("eyeriss", "fc")])
def test_a_real_layer_skips_the_costly_terms_on_most_nodes(arch_name: str, layer_name: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With every tier in turn at every stage (the plan chosen by CPU time may be the full bound alone where that is
    cheaper), the full tier bounds fewer than half the nodes, and the search is the same as without tiers."""
    arch = load_arch(arch_name)
    op = next(layer.op for layer in zoo.get("resnet18").layers if layer.name == layer_name)
    off = optimal_search(op, arch, "energy", tiered=False)
    rows = full_rows(monkeypatch)
    monkeypatch.setattr(search, "TIER_PLANS", search.TIER_PLANS[:1])
    on = optimal_search(op, arch, "energy", tiered=True)
    assert on.certificate.proven and off.certificate.proven
    assert on.certificate.incumbent == off.certificate.incumbent and on.certificate.nodes == off.certificate.nodes
    assert sum(rows) < 0.5 * on.certificate.nodes


def priced_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts, per call of :meth:`.CostModel.evaluate`, the mappings it prices."""
    rows: list[int] = []
    real = CostModel.evaluate

    def spy(self: CostModel, batch: MappingBatch, *args, **kwargs):  # noqa: ANN202 - the model's CostBatch
        rows.append(len(batch))
        return real(self, batch, *args, **kwargs)
    monkeypatch.setattr(CostModel, "evaluate", spy)
    return rows


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_a_real_layer_prices_fewer_completions(objective: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a ``tpu_like`` layer many of B2's completions are not priced (most nodes of the buffer's factor stage are
    pruned by the pairs' tier): the cost model prices at least a fifth fewer mappings in all, and the search is the
    same as with every completion priced."""
    arch = load_arch("tpu_like")
    op = next(layer.op for layer in zoo.get("resnet18").layers if layer.name == "layer4.0.downsample.0")
    rows = priced_rows(monkeypatch)
    off = optimal_search(op, arch, objective, tiered=False)
    priced_off, rows[:] = sum(rows), []
    on = optimal_search(op, arch, objective, tiered=True)
    assert on.certificate.proven and off.certificate.proven
    assert on.certificate.incumbent == off.certificate.incumbent and on.certificate.nodes == off.certificate.nodes
    assert on.result.mapping == off.result.mapping
    assert sum(rows) < 0.8 * priced_off


def test_the_tier_plan_follows_each_tiers_cost_and_share_left() -> None:
    """:class:`.search._TierStats` (docs/search.md "The tier plan from each tier's cost and the rows it leaves"): plan 0
    (every tier) first and every ``TIER_TRY`` calls; otherwise the plan of least expected seconds per live row, from
    each tier's cost per row (a ratio of sums: a large call outweighs a small one's fixed cost) and the share it
    leaves."""
    stats = search._TierStats()
    assert stats.plan() == 0  # nothing measured yet: every tier, which measures them all
    # the pairs' tier prunes nothing and costs 2 us a row, the refills' leaves a quarter at 5 us, the full 10 us
    stats.record(TIER_PAIRS, 2e-3, 1000, 1000, 1000)
    stats.record(TIER_REFILLS, 5e-3, 1000, 1000, 250)
    stats.record(TIER_FULL, 2.5e-3, 250, 1000, 10)
    assert search.TIER_PLANS[stats.plan()] == (TIER_REFILLS, TIER_FULL)
    assert stats.expected((TIER_REFILLS, TIER_FULL)) == pytest.approx(5e-6 + 0.25 * 10e-6)
    # a small call (1 ms for 2 rows, mostly its fixed cost) weighs by its rows, not as one call: the plan stays
    stats.record(TIER_FULL, 1e-3, 2, 2, 2)
    assert search.TIER_PLANS[stats.plan()] == (TIER_REFILLS, TIER_FULL)
    # where the pairs' tier prunes most rows it runs first
    stats.record(TIER_PAIRS, 2e-3, 1000, 1000, 20)
    assert search.TIER_PLANS[stats.plan()][0] == TIER_PAIRS
    for _ in range(search.TIER_TRY - 4):
        stats.plan()
    assert stats.plan() == 0  # every TIER_TRY calls every tier again


def test_a_tier_never_computed_is_not_chosen_alone() -> None:
    """A tier without a measured cost counts as infinitely costly unless the tier before it in the plan left no row."""
    stats = search._TierStats()
    stats.plan()
    stats.record(TIER_PAIRS, 1e-3, 100, 100, 0)  # the pairs' tier pruned every row: the others never ran
    assert stats.expected((TIER_PAIRS, TIER_FULL)) == pytest.approx(1e-5)
    assert stats.expected((TIER_FULL,)) == float("inf")
    assert search.TIER_PLANS[stats.plan()][0] == TIER_PAIRS


def test_a_stage_of_small_calls_keeps_every_tier() -> None:
    """While a stage's statistics rest on fewer than ``TIER_ROWS`` live rows (an order stage's first calls bound 1-20
    orders each), plan 0 runs, even where the few rows measured make the full tier alone look cheaper."""
    stats = search._TierStats()
    for _ in range(5):
        assert stats.plan() == 0
        for tier in (TIER_PAIRS, TIER_REFILLS, TIER_FULL):  # 2 rows a call, none pruned, each tier 1 ms
            stats.record(tier, 1e-3, 2, 2, 2)
    assert stats.expected((TIER_FULL,)) < stats.expected(search.TIER_PLANS[0])
    assert stats.plan() == 0
