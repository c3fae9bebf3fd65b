"""B24 (docs/search.md, "B24: the two register files with the array's copies"): at the root stage of the widened space
on ``tpu_like``'s shape (a weight register under a one-word output register, under a buffer with a 2-D fan-out), B22's
chain of raised tiles per unrolling of the open array takes the weight register's tile too, and the output's drains
are priced with the buffer's side at that unrolling's copies (:meth:`.bounds.LowerBound._stacked_refills`,
:meth:`.bounds.LowerBound._stacked_chains`), against the independent brute force.

On small random two-register-file architectures (``test_optimal_tpu_bounds.two_register_arch``) and convolutions whose
reduction loops compete for the output register's residency, every placement of every mapping with both-axis splits is
priced: at every stage each mapping's ancestor's bound and the tile bound are at most its cost for every objective;
taking B24 out lowers some finite bound; its chained refills x 1.03 put some bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import assert_below_every_cost, stage_bounds
from test_optimal_wide_tpu import _ids, cases

CHAINS = LowerBound._stacked_chains


def _window_conv(rng: np.random.Generator, i: int) -> Operator:
    """A convolution with a window loop over the weights (R) and one to three input channels."""
    r = int(rng.integers(2, 4))
    return ops.conv2d(f"r{i}", int(rng.integers(1, 3)), int(rng.integers(2, 4)), (r + int(rng.integers(0, 2)), 1),
                      (r, 1))


CASES = cases(8, seed=5, layer=_window_conv)


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case (placed, both axes), computed once for the module."""
    return {op.name: stage_bounds(arch, op, both=True) for arch, op in CASES}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_stacked_bounds_never_exceed_any_completion(shipped: dict, arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage's ancestor and the tile bound at most each placed mapping's cost."""
    assert_below_every_cost(shipped[op.name], op.name)


def _off(self: LowerBound, placed: dict, rest: np.ndarray, drain: tuple) -> np.ndarray:
    """B24 taken out."""
    return np.full(len(rest), -np.inf)


def _inflated(self: LowerBound, m: int, members: tuple, weights: tuple, *more: object) -> np.ndarray:
    """B24's chained refills (its chains span two levels; B22's one) x 1.03."""
    chains = CHAINS(self, m, members, weights, *more)
    return 1.03 * chains if len({level for level, _ in members}) > 1 else chains



def assert_lowered_somewhere(shipped: dict, cases: list[tuple[ArchSpec, Operator]]) -> None:
    """With a term taken out (monkeypatched by the caller), no stage's bound on ``cases`` rises above ``shipped``'s and
    some finite one falls."""
    raised = False
    for arch, op in cases:
        without = stage_bounds(arch, op, both=True)
        for (a, _), (b, _) in zip(shipped[op.name], without):
            assert (a >= b * (1 - 1e-12)).all()
            raised |= bool((np.isfinite(a) & (a > b * (1 + 1e-9))).any())
    assert raised

def test_stacked_refills_bind(monkeypatch: pytest.MonkeyPatch, shipped: dict) -> None:
    """B24 never lowers a bound and raises some finite one (B29 taken out too: it holds every value of B24 per
    unrolling)."""
    monkeypatch.setattr(LowerBound, "_stacked_refills", _off)
    monkeypatch.setattr(LowerBound, "_partial_sums", _off)
    assert_lowered_somewhere(shipped, CASES)


def test_stacked_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B24's chained refills x 1.03 put some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_stacked_chains", _inflated)
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any()
               for arch, op in CASES for lb, truth in stage_bounds(arch, op, both=True))
