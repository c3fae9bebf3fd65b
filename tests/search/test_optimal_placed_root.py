"""The optimal mapper's root stage in the widened space (docs/search.md, "The root stage in the widened space"): the
root's order taken jointly over the tensors (:meth:`.search.BranchAndBound._root_orders`) and B14 (the output's
drains in the open fan-out's joint unrolling) with per-tensor placement, against the independent brute force.

On placed brute-force cases (every placement of every mapping; the generators of ``test_optimal_placement`` and
``test_optimal_windowed_bounds``), with and without both-axis unrolling: at every stage each mapping's ancestor's bound
is at most the mapping's cost for every objective (the soundness checks of those modules, which now run with both
rules, and here on the cases below), each rule raises some finite bound where it is taken out (so the checks cover
it), and each rule inflated by 3% puts some ancestor's bound above a mapping's cost (the checks would catch an
inadmissible version).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload.ir import Operator
from test_optimal_placement import (CASES as PLACED, assert_bounds_below, placed_ancestors,
                                    placed_space, assert_some_bound_exceeds)
from test_optimal_placed_rf import stage_bounds  # every stage and the tile bound, every objective
from test_optimal_windowed_bounds import PLACED_CASES as WINDOWED

# cases where B14 (the first two) and B18 (the last two) bind under placement, found by taking each out on every placed
# case of those modules
BIND = [PLACED[11], WINDOWED[4], PLACED[10], PLACED[13]]
ORIGINAL_ROOT = LowerBound._root_order
ORIGINAL_DRAIN = LowerBound._drain_pair


def _ids(cases: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(cases)]


@pytest.mark.parametrize("arch,op", BIND, ids=_ids(BIND))
def test_root_stage_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, with placement and with placement and both axes."""
    model = CostModel(op, arch)
    for both in (False, True):
        wide = frozenset(i for i, lv in enumerate(arch.levels) if both and lv.fanout and len(lv.fanout.shape) == 2)
        batch = placed_space(op, arch, both=both)
        cost = model.evaluate(batch)
        for objective in OBJECTIVES:
            truth = cost.objective(objective)
            assert_bounds_below(BranchAndBound(op, arch, objective, model, placement=True, both_axes=wide), batch,
                                truth, np.isfinite(truth), placed_ancestors)


def _inflated_drain(self: LowerBound, m: int) -> tuple[int, float, float] | None:
    """B14's output pair with its energies per word x 1.03."""
    found = ORIGINAL_DRAIN(self, m)
    return None if found is None else (found[0], 1.03 * found[1], 1.03 * found[2])


def _unplaced_drain(self: LowerBound, m: int) -> tuple[int, float, float] | None:
    """B14 as it was: off with per-tensor placement."""
    return None if self.placement else ORIGINAL_DRAIN(self, m)


def _inflated_root(self: LowerBound, *args: object) -> tuple[np.ndarray, np.ndarray]:
    """B18 with the joint order's least energy x 1.03."""
    least, now = ORIGINAL_ROOT(self, *args)
    return 1.03 * least, now


@pytest.fixture(scope="module")
def with_rule() -> list[tuple[np.ndarray, np.ndarray]]:
    """The bounds of :data:`BIND` with every rule as shipped: computed once for both rules' tests below (each swaps in
    its own variants after this, with ``monkeypatch``)."""
    return [b for arch, op in BIND for b in stage_bounds(arch, op)]


@pytest.mark.parametrize("off, inflated", [
    (("_root_order", lambda self, terms, temporal, *args: (np.zeros(len(temporal)),) * 2),
     ("_root_order", _inflated_root)),
    (("_drain_pair", _unplaced_drain), ("_drain_pair", _inflated_drain))],
    ids=["root order jointly", "B14 with placement"])
def test_root_stage_rules_bind_and_their_inflation_is_caught(monkeypatch: pytest.MonkeyPatch,
                                                             with_rule: list[tuple[np.ndarray, np.ndarray]],
                                                             off: tuple[str, Callable],
                                                             inflated: tuple[str, Callable]) -> None:
    """Each rule never lowers a bound and raises some finite one on these cases; inflated by 3% it puts some
    ancestor's bound above the mapping's cost."""
    monkeypatch.setattr(LowerBound, *off)
    without = [b for arch, op in BIND for b in stage_bounds(arch, op)]
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(with_rule, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(with_rule, without))
    monkeypatch.setattr(LowerBound, *inflated)
    mutated = (b for arch, op in BIND for b in stage_bounds(arch, op))  # lazily: stops at the first case caught
    assert_some_bound_exceeds(mutated)
