"""B39 (docs/search.md, "B39: one order for a level's refetches and its children's refills"): at a factor stage with
per-tensor placement and no non-trivial loop above the level, the pairs' tier plus the least over the level's orders
of what the order adds to the pairs of its children and of its own placed tensors
(:func:`.shared_order.shared_orders`, :meth:`.search.BranchAndBound._shared_order`), and each order's own value,
which the order stage uses before B37 prices it (:meth:`.search.BranchAndBound._order_floor`).

Against the independent brute force: every placed mapping's factor-stage ancestor (covered by the stage bounds of
``test_optimal_placement`` and ``test_optimal_placed_rf``, which run B39 for the energy) and its order's own value at
its order node are at most its energy; taking B39 out lowers some finite bound; the increments x 1.03 are caught; a
real search prunes orders with it and keeps the optimum; the orders' numbering is the order stage's.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal import search as search_module
from dnnmap.search.optimal.expand import Nodes, expand_orders
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.optimal.shared_order import order_ranks
from dnnmap.workload.ir import Operator
from test_optimal_order_bound import order_nodes
from test_optimal_placed_rf import CASES as RF_CASES
from test_optimal_placement import CASES, _wide, placed_ancestors, placed_space


def floors(arch: ArchSpec, op: Operator, both: bool = False, lowest: int = 1, objective: str = "energy"
           ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(each placed brute-force mapping's factor-stage ancestor's bound, its order's B39 value at its order node, the
    mapping's cost) at every factor stage with placement below the top from level ``lowest`` up (``objective``: energy
    or EDP, B47; ``both``: both-axis unrolling; ``lowest`` 0 takes level 0's too, where B44 extends B39)."""
    batch = placed_space(op, arch, both=both)
    model = CostModel(op, arch)
    truth = model.evaluate(batch).objective(objective)
    bb = BranchAndBound(op, arch, objective, model, placement=True, both_axes=_wide(arch, both))
    out = []
    for stage, (kind, j) in enumerate(bb.stages):
        if kind == "F" and lowest <= j < bb.L - 1:
            bound = bb._bound(placed_ancestors(batch, "F", j), stage)
            nodes = order_nodes(batch, j)
            floor = bb._order_floor(nodes, np.arange(len(nodes)), bb.stages.index(("O", j)))
            out.append((bound, floor, truth))
    return out


def assert_below(found: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    assert found
    for bound, floor, truth in found:
        ok = np.isfinite(truth)
        assert not (ok & (bound > truth * (1 + 1e-9))).any(), (bound[ok].max(), truth[ok].min())
        assert not (ok & (floor > truth * (1 + 1e-9))).any(), (floor[ok].max(), truth[ok].min())


def assert_floors_raised(with_rule: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                         without: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """The rule never lowers a bound (``floors``' first column) and raises some finite one."""
    assert all((b <= a * (1 + 1e-12)).all() for (a, _, _), (b, _, _) in zip(with_rule, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-6))).any() for (a, _, _), (b, _, _) in zip(with_rule, without))


def assert_some_floor_exceeds(found: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Some bound or order value of ``floors`` is above its mapping's cost (an inflated rule is caught)."""
    assert any((np.isfinite(truth) & (np.maximum(bound, floor) > truth * (1 + 1e-9))).any()
               for bound, floor, truth in found)


THREE = [(a, op) for a, op in CASES if len(a.levels) > 2]  # a factor stage below the top and above level 0


@pytest.mark.parametrize("arch,op", [pytest.param(a, op, id=f"{a.name}-{op.name}-{k}", marks=[pytest.mark.slow] * (k % 2))
                                     for k, (a, op) in enumerate(THREE)])
def test_shared_order_never_exceeds_any_placed_completion(arch: ArchSpec, op: Operator) -> None:
    assert_below(floors(arch, op))


@pytest.mark.parametrize("arch,op", RF_CASES, ids=[f"{a.name}-{op.name}" for a, op in RF_CASES])
def test_shared_order_on_small_register_files(arch: ArchSpec, op: Operator) -> None:
    """Where the capacity decides each order's relaxed placements (and with both-axis unrolling on the 2x2 array)."""
    for both in (False, True) if _wide(arch, True) else (False,):
        assert_below(floors(arch, op, both))


def _without(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BranchAndBound, "_shared_order", lambda self, *args: args[-2])


def test_shared_order_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking B39 out never raises a factor-stage bound and lowers some finite one (a random convolution); some order's
    own value is above its parent's bound (the small register files)."""
    assert any((np.isfinite(floor) & (floor > bound * (1 + 1e-6))).any()
               for a, op in RF_CASES for bound, floor, _ in floors(a, op))
    arch, op = next((a, op) for a, op in THREE if op.name == "d5")
    with_rule = floors(arch, op)
    _without(monkeypatch)
    without = floors(arch, op)
    assert_floors_raised(with_rule, without)


def test_shared_order_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: B39's increments x 1.03 put some bound above a mapping's energy."""
    original = search_module.shared_orders
    monkeypatch.setattr(search_module, "shared_orders",
                        lambda *args: [(group, 1.03 * added) for group, added in original(*args)])
    found = [f for a, op in RF_CASES for f in floors(a, op)]
    assert_some_floor_exceeds(found)


def test_shared_order_prunes_orders_and_keeps_the_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a real search some order is pruned on B39's value alone (before B37 prices it) and the proven optimum is
    the search's without B39."""
    arch, op = RF_CASES[1]
    pruned = []
    original = BranchAndBound._order_floor

    def recorded(self: BranchAndBound, nodes: Nodes, parents: np.ndarray, stage: int) -> np.ndarray:
        floor = original(self, nodes, parents, stage)
        pruned.append(int((floor >= self.incumbent * (1 - 1e-9)).sum()))
        return floor
    monkeypatch.setattr(BranchAndBound, "_order_floor", recorded)
    found = optimal_search(op, arch, "energy", placement=True)
    assert sum(pruned) > 0
    _without(monkeypatch)
    without = optimal_search(op, arch, "energy", placement=True)
    assert found.certificate.proven and without.certificate.proven
    assert found.certificate.nodes <= without.certificate.nodes
    assert found.result.cost.objective("energy")[0] == pytest.approx(without.result.cost.objective("energy")[0],
                                                                     rel=1e-12)


def test_order_ranks_number_the_order_stage_children() -> None:
    """:func:`.shared_order.order_ranks` numbers each order as :func:`.expand.expand_orders` makes a node's children."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        trips = rng.choice([1, 1, 2, 3], size=(4, 3, 7))
        nodes = Nodes(trips, np.ones_like(trips), np.zeros_like(trips), np.tile(np.arange(7), (4, 3, 1)),
                      np.zeros((4, 3, 2), dtype=np.int64))
        kids, parents = expand_orders(nodes, 1)
        first: dict[int, int] = {}
        expected = [i - first.setdefault(int(p), i) for i, p in enumerate(parents)]
        assert order_ranks(kids.temporal[:, 1], kids.order[:, 1]).tolist() == expected
