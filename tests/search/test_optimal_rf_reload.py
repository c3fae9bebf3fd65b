"""B22 (docs/search.md, "B22: the register file's refills per unrolling of the open array"): at the root stage of the
widened space, B14's joint sum over the open array's unrollings with, per unrolling, the register file's refills of B20
over that unrolling's cover and the raised tiles chained (:meth:`.bounds.LowerBound._unrolled_refills`,
:meth:`.bounds.LowerBound._nested_chains`), against the independent brute force.

On small register files under a global buffer with a fan-out (convolutions on a 1-D row of 2, and on a 2x2 array with
and without both-axis unrolling), every placement of every mapping is priced: at every stage each mapping's ancestor's bound and
the tile bound are at most its cost for every objective; taking B22 out (or only its chained boxes) lowers some finite
bound, so the checks cover it; and its chained refills x 1.03 put some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import _ids, _wide, assert_below_every_cost, stage_bounds, tiny_rf_array
from test_optimal_placement import tiny_rf_arch

CHAINS = LowerBound._nested_chains

# B22 and its chained boxes bind on the convolution on the 2-wide row and the one on the 2x2 array (placed, and placed
# with both axes); the smallest array case catches the 3% inflation
ROW = (tiny_rf_arch({"input": 2, "weight": 2, "output": 1}), ops.conv2d("c", 1, 2, (3, 1), (2, 1)))
ARRAY = (tiny_rf_array({"input": 2, "weight": 2, "output": 1}), ops.conv2d("a", 1, 2, (3, 1), (2, 1)))
SMALL = (tiny_rf_array({"input": 2, "weight": 2, "output": 1}), ops.conv2d("s", 1, 2, (2, 1), (2, 1)))
CASES = [ROW, ARRAY, SMALL]


def _spaces(cases: list[tuple[ArchSpec, Operator]]) -> list[tuple[ArchSpec, Operator, bool]]:
    """Each case placed, and placed with both-axis unrolling where its array is 2-D."""
    return [(arch, op, both) for arch, op in cases for both in ((False, True) if _wide(arch, True) else (False,))]


def _all_bounds(cases: list[tuple[ArchSpec, Operator]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(bound, cost) of every stage and tile bound of every case's spaces, every objective."""
    return [b for arch, op, both in _spaces(cases) for b in stage_bounds(arch, op, both)]


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case, computed once for the module."""
    return {op.name: _all_bounds([(arch, op)]) for arch, op in CASES}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_rf_reload_bounds_never_exceed_any_completion(shipped: dict, arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, placed and placed with both axes."""
    assert_below_every_cost(shipped[op.name], op.name)


def _off(self: LowerBound, entries: dict, *args: object) -> np.ndarray:
    """B22 (or B25, which holds B22's per-unrolling values) taken out."""
    return np.full(len(args[-2]), -np.inf)


def _unchained(self: LowerBound, m: int, c: int, weights: tuple[float, ...], *more: object) -> np.ndarray:
    """B22 without its chained boxes (each tensor's least box on its own only)."""
    return np.zeros_like(CHAINS(self, m, c, weights, *more))


def _inflated(self: LowerBound, m: int, c: int, weights: tuple[float, ...], *more: object) -> np.ndarray:
    """B22's chained refills x 1.03."""
    return 1.03 * CHAINS(self, m, c, weights, *more)


@pytest.mark.parametrize("names, weaker", [(("_unrolled_refills", "_parent_reads"), _off),
                                           (("_nested_chains",), _unchained)],
                         ids=["B22", "B22's chained boxes"])
def test_rf_reload_rule_binds(monkeypatch: pytest.MonkeyPatch, shipped: dict, names: tuple[str, ...],
                              weaker: Callable) -> None:
    """B22 (with B25, which holds its values per unrolling; or its chained boxes) never lowers a bound and raises some
    finite one on the row and array cases."""
    full = shipped[ROW[1].name] + shipped[ARRAY[1].name]
    for name in names:
        monkeypatch.setattr(LowerBound, name, weaker)
    without = _all_bounds([ROW, ARRAY])
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(full, without))


def test_rf_reload_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B22's chained refills x 1.03 put some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_nested_chains", _inflated)
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any() for lb, truth in _all_bounds([SMALL]))
