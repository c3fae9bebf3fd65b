"""B38 (docs/search.md, "B38: the parent's reads of the window's steps"): at a factor stage the sliding-window input's
pair with the child right below the fixed levels priced whole, its parent reading at least B19's words of the union of
the children's tiles under it, and B19 under placement where P1 holds, against the independent brute force.

Stride-2 poolings and convolutions on a register file of a few words under a global buffer with a fan-out (1-D and
2x2, with and without both-axis unrolling), every placement of every mapping priced, and the strided layers of the B19
tests without placement: at every stage each mapping's ancestor's bound and the tile bound are at most its cost for
every objective; taking B38's parent reads out lowers some finite bound and never raises one, so the checks cover it;
and those reads inflated by 3% put some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import assert_placed_bounds_below, tiny_rf_array
from test_optimal_placement import assert_rule_binds, stage_bounds, tiny_rf_arch, assert_some_bound_exceeds
from test_optimal_windowed_bounds import check
from test_optimal_wrap_bounds import strided_cases

ORIGINAL = LowerBound._union_reads

POOL = (tiny_rf_arch({"input": 3, "weight": 1, "output": 1}), ops.pool("p", 1, (7, 1), (3, 1), stride=(2, 1)))
POOL_2 = (tiny_rf_arch({"input": 2, "weight": 1, "output": 2}), ops.pool("p2", 2, (5, 1), (3, 1), stride=(2, 1)))
CONV = (tiny_rf_arch({"input": 2, "weight": 2, "output": 1}), ops.conv2d("s", 1, 2, (5, 1), (3, 1), stride=2))
ARRAY = (tiny_rf_array({"input": 2, "weight": 1, "output": 1}), ops.pool("a", 2, (5, 1), (3, 1), stride=(2, 1)))
CASES = [POOL, POOL_2, CONV, ARRAY]


def _ids(cases: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}" for a, op in cases]


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_step_reads_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, with placement (and with both axes on a 2-D array)."""
    assert_placed_bounds_below(arch, op)


RANDOM = strided_cases(6, seed=47, on_chip=2, limit=4_000)


@pytest.mark.parametrize("arch,op", RANDOM, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(RANDOM)])
def test_random_strided_placed_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Random strided layers on the random architectures of the bound tests, with placement: every stage's bound at
    most each placed mapping's cost, and the certified optimum the brute-force one."""
    check(arch, op, placement=True)


def _off(self: LowerBound, *args: object) -> np.ndarray:
    """B38's parent reads taken out (B19 alone)."""
    return np.zeros_like(ORIGINAL(self, *args))


def _inflated(self: LowerBound, *args: object) -> np.ndarray:
    """B38's parent reads x 1.03."""
    return 1.03 * ORIGINAL(self, *args)


def test_step_reads_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    """B38's parent reads never lower a bound and raise some finite one (so the check above covers them)."""
    assert_rule_binds(monkeypatch, [POOL_2, CONV, ARRAY], "_union_reads", _off)


def test_step_reads_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B38's parent reads x 1.03 put some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_union_reads", _inflated)
    mutated = stage_bounds(*POOL)
    assert_some_bound_exceeds(mutated)
