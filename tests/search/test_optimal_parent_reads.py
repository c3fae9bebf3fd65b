"""B25 (docs/search.md, "B25: the parents' reads per unrolling, lazily"): B22 with each tensor's parent reading its
refills over the children one read may feed under the unrolling (:meth:`.bounds.LowerBound._parent_reads`,
:meth:`.bounds.LowerBound._read_gains`, :meth:`.bounds.LowerBound._read_groups`), against the independent brute force.

On B22's cases (``test_optimal_rf_reload``: small register files under a 1-D row of 2 and a 2x2 array, placed, and
placed with both axes), every placement of every mapping is priced: at every stage each mapping's ancestor's bound and
the tile bound are at most its cost for every objective; taking B25 out lowers some finite bound, so the checks cover
it; and its reads term x 1.03 puts some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import _ids, assert_below_every_cost
from test_optimal_rf_reload import ARRAY, CASES, ROW, _all_bounds

GROUPS = LowerBound._read_groups


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case, computed once for the module."""
    return {op.name: _all_bounds([(arch, op)]) for arch, op in CASES}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_parent_reads_never_exceed_any_completion(shipped: dict, arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, placed and placed with both axes."""
    assert_below_every_cost(shipped[op.name], op.name)


def _off(self: LowerBound, entries: dict, paired: dict, rest: np.ndarray, drain: tuple) -> np.ndarray:
    """B25 taken out (B22 alone)."""
    return np.full(len(rest), -np.inf)


def test_parent_reads_bind(monkeypatch: pytest.MonkeyPatch, shipped: dict) -> None:
    """B25 never lowers a bound and raises some finite one on the row and array cases."""
    full = shipped[ROW[1].name] + shipped[ARRAY[1].name]
    monkeypatch.setattr(LowerBound, "_parent_reads", _off)
    without = _all_bounds([ROW, ARRAY])
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(full, without))


def _inflated(self: LowerBound, m: int, c: int, others: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """B25's reads term x 1.03 (each parent read feeding 1 / 1.03 times the children)."""
    group, vectors = GROUPS(self, m, c, others)
    return group, vectors / 1.03


def test_parent_reads_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B25's reads term x 1.03 puts some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_read_groups", _inflated)
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any() for lb, truth in _all_bounds(CASES))
