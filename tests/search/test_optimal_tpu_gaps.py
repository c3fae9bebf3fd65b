"""B29 (docs/search.md, "B29: the output's partial sums at full width"): at the root stage of the widened space on
``tpu_like``'s shape, B24's chain per unrolling ``U`` of the open array with the output's widths. Unless each copy of an
output word drains once from the output register, every drain and every update of the buffer moves a partial sum at
the full width; if each copy drains once, the output's raised tile runs all of ``U``'s reduction
(:meth:`.bounds.LowerBound._partial_sums`, :meth:`.bounds.LowerBound._capped_chains`), against the independent brute
force. And at an exact output pair (:meth:`.bounds.LowerBound._partial_widths`) the drains and updates that move
partial sums are priced at the full width, and where the fan-outs above the output's child are fixed with copies over
a split reduction, its drains (:meth:`.bounds.LowerBound._copies_drained`).

On small random two-register-file architectures with 8-bit final outputs of 16-bit partial sums (with and without a
reducing network) and convolutions whose reduction loops compete for the output register, every placement of every
mapping with both-axis splits is priced: at every stage each mapping's ancestor's bound and the tile bound are at most
its cost for every objective; the search from no incumbent proves the brute-force optimum; taking B29 out never raises
a bound and lowers some finite one; B29 x 1.03 puts some bound above a mapping's cost. Each of the three parts: the
chain per unrolling at the root stage, the exact output pairs at the widths their completion moves, and the copies'
drains.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import assert_below_every_cost, stage_bounds
from test_optimal_placement import _wide, placed_space
from test_optimal_wide_tpu import _ids
from test_optimal_wide_tpu_rf import CASES as RF_CASES, assert_lowered_somewhere

PARTIAL = LowerBound._partial_sums
WIDTHS = LowerBound._partial_widths
COPIES = LowerBound._copies_drained

# the cases of B24's tests whose final outputs are narrower than the partial sums (B29's widths differ there)
CASES = [(arch, op) for arch, op in RF_CASES if arch.final_bits < arch.bits_of("output")]


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case (placed, both axes), computed once for the module."""
    return {op.name: stage_bounds(arch, op, both=True) for arch, op in CASES}


def test_the_cases_have_narrow_final_outputs_with_and_without_a_reducing_network() -> None:
    """B29's widths matter on every case, and both network kinds are covered."""
    assert len(CASES) >= 3
    assert {bool(arch.levels[2].fanout.reduction) for arch, _ in CASES} == {True, False}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_partial_sum_bounds_never_exceed_any_completion(shipped: dict, arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage's ancestor and the tile bound at most each placed mapping's cost, and the search
    proves the brute force's optimum."""
    assert_below_every_cost(shipped[op.name], op.name)
    cost = CostModel(op, arch).evaluate(placed_space(op, arch, both=True))
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        found = optimal_search(op, arch, objective, placement=True,
                               both_axes=[arch.levels[m].name for m in _wide(arch, True)])
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth[np.isfinite(truth)].min(), rel=1e-9)


def _off(self: LowerBound, placed: dict, rest: np.ndarray, drain: tuple) -> np.ndarray:
    """B29's chain taken out."""
    return np.full(len(rest), -np.inf)


def _widths_off(self: LowerBound, cost: object, pr: object) -> float:
    """B29 at the exact pairs taken out."""
    return 0.0


def _copies_off(self: LowerBound, spatial: np.ndarray, ch: int, drains: np.ndarray) -> float:
    """B29 at the copies' drains taken out."""
    return 0.0


def _copies_inflated(self: LowerBound, spatial: np.ndarray, ch: int, drains: np.ndarray) -> np.ndarray:
    """B29 at the copies' drains x 1.03."""
    return 1.03 * COPIES(self, spatial, ch, drains)


def _inflated(self: LowerBound, placed: dict, rest: np.ndarray, drain: tuple) -> np.ndarray:
    """B29's chain x 1.03."""
    return 1.03 * PARTIAL(self, placed, rest, drain)


def _widths_inflated(self: LowerBound, cost: object, pr: object) -> np.ndarray:
    """B29 at the exact pairs x 1.03."""
    return 1.03 * WIDTHS(self, cost, pr)


@pytest.mark.parametrize("name, weaker", [("_partial_sums", _off), ("_partial_widths", _widths_off),
                                           ("_copies_drained", _copies_off)],
                         ids=["the chain per unrolling", "the exact pairs", "the copies' drains"])
def test_partial_sums_bind(monkeypatch: pytest.MonkeyPatch, shipped: dict, name: str, weaker: object) -> None:
    """Each part of B29 never lowers a bound and raises some finite one over the other terms."""
    monkeypatch.setattr(LowerBound, name, weaker)
    assert_lowered_somewhere(shipped, CASES)


@pytest.mark.parametrize("name, inflated", [("_partial_sums", _inflated), ("_partial_widths", _widths_inflated),
                                             ("_copies_drained", _copies_inflated)],
                         ids=["the chain per unrolling", "the exact pairs", "the copies' drains"])
def test_partial_sums_inflation_is_caught(monkeypatch: pytest.MonkeyPatch, name: str, inflated: object) -> None:
    """Each part of B29 x 1.03 puts some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, name, inflated)
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any()
               for arch, op in CASES for lb, truth in stage_bounds(arch, op, both=True))
