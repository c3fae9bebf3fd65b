"""B37 (docs/search.md, "B37: each order bounded before its placements"): at an order stage with per-tensor placement,
each order is bounded (:meth:`.search.BranchAndBound.order_bound`, over its relaxed placement vectors
:func:`.placement.relaxed_placements`) before its placements are made, against the independent brute force.

Every placement of every brute-force mapping is priced; at every order stage with placement, each mapping's order
node (its ancestor with level ``j``'s order fixed and its placements open) is bounded at most the mapping's cost for
every objective, on the random cases of ``test_optimal_placement`` and the small register files of
``test_optimal_placed_rf`` (where the capacity decides the relaxed vectors); the bound prunes orders in a real search
(whose optimum is unchanged), and the bound x 1.03 is caught by the check.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload.ir import Operator
from test_optimal_bounds import ancestors
from test_optimal_placed_rf import CASES as RF_CASES
from test_optimal_placement import CASES, _wide, placed_searches


def order_nodes(batch, j: int) -> Nodes:
    """Each mapping's ancestor at ``O(j)`` before its placements: level ``j``'s order fixed, the placements of level
    ``j`` and below open (at the shared boundary)."""
    node = ancestors(batch, "O", j)
    above = batch.above.copy()
    above[:, :j + 1] = 0
    return Nodes(node.temporal, node.spatial, node.axes, node.order, above)


def order_bounds(arch: ArchSpec, op: Operator, both: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    """(B37's bound of each placed brute-force mapping's order node, the mapping's cost) at every order stage with
    placement, for every objective (``both``: the space with both-axis unrolling)."""
    out = []
    for bb, batch, truth in placed_searches(arch, op, both):
        for stage, (kind, j) in enumerate(bb.stages):
            if kind == "O" and j < bb.L - 1:
                out.append((bb.order_bound(order_nodes(batch, j), stage), truth))
    return out


def assert_below(pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    assert pairs
    for bound, truth in pairs:
        ok = np.isfinite(truth)
        assert not (ok & (bound > truth * (1 + 1e-9))).any(), (bound[ok].max(), truth[ok].min())


@pytest.mark.parametrize("arch,op", [pytest.param(a, op, id=f"{a.name}-{op.name}-{k}", marks=[pytest.mark.slow] * (k % 2))
                                     for k, (a, op) in enumerate(CASES)])
def test_order_bound_never_exceeds_any_placed_completion(arch: ArchSpec, op: Operator) -> None:
    assert_below(order_bounds(arch, op))


@pytest.mark.parametrize("arch,op", RF_CASES, ids=[f"{a.name}-{op.name}" for a, op in RF_CASES])
def test_order_bound_on_small_register_files(arch: ArchSpec, op: Operator) -> None:
    """Where the capacity decides the relaxed vectors (and with both-axis unrolling on the 2x2 array)."""
    for both in (False, True) if _wide(arch, True) else (False,):
        assert_below(order_bounds(arch, op, both))


def test_order_bound_x_1_03_is_caught() -> None:
    """The check can fail: the bound x 1.03 is above some mapping's cost (the bound is tight somewhere)."""
    arch, op = RF_CASES[0]
    assert any((np.isfinite(truth) & (1.03 * bound > truth * (1 + 1e-9))).any() for bound, truth in order_bounds(arch, op))


def test_order_bound_prunes_orders_and_keeps_the_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a real search some order is pruned by B37 where its parent's bound is below the incumbent, and the proven
    optimum and its value are those of the search without B37."""
    arch, op = RF_CASES[1]
    pruned = []
    original = BranchAndBound._bounded_orders

    def recorded(self: BranchAndBound, nodes: Nodes, parents: np.ndarray, stage: int, parent_lb: np.ndarray):
        lb = self.order_bound(nodes, stage)
        pruned.append(int(((lb >= self.incumbent * (1 - 1e-9)) & (parent_lb[parents] < self.incumbent)).sum()))
        return original(self, nodes, parents, stage, parent_lb)
    monkeypatch.setattr(BranchAndBound, "_bounded_orders", recorded)
    found = {objective: optimal_search(op, arch, objective, placement=True) for objective in OBJECTIVES}
    assert sum(pruned) > 0
    monkeypatch.setattr(BranchAndBound, "_bounded_orders", lambda self, nodes, parents, *a: (nodes, parents))
    for objective, result in found.items():
        without = optimal_search(op, arch, objective, placement=True)
        assert result.certificate.proven and without.certificate.proven
        assert result.result.cost.objective(objective)[0] == pytest.approx(
            without.result.cost.objective(objective)[0], rel=1e-12)
