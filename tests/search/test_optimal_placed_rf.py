"""B20 (docs/search.md, "B20: each tensor's own tiles under placement"): the refills of a child level whose tile is
open, priced over the boxes each tensor's own placed tile allows (:meth:`.bounds.LowerBound._placed_refills`), against
the independent brute force.

On small register files under a global buffer (``test_optimal_placement.tiny_rf_arch``: a matmul, stride-1 and
stride-2 convolutions; and the same register file under a 2x2 array, with and without both-axis unrolling), every
placement of every mapping is priced: at every stage each mapping's ancestor's bound and the tile bound are at most
its cost for every objective; taking B20 out (or only its sliding-window inputs' part) lowers some finite bound, so
the checks cover it; and B20 inflated by 3% puts some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placement import (_wide, assert_bounds_below, placed_ancestors, placed_space,
                                    stage_bounds, tiny_rf_arch, assert_some_bound_exceeds)

ORIGINAL = LowerBound._placed_refills


def tiny_rf_array(capacity: dict[str, int]) -> ArchSpec:
    """:func:`tiny_rf_arch` with a 2x2 array under the global buffer (both-axis unrolling possible)."""
    return parse_arch({"name": "tiny_rf_2d", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": capacity, "keeps": ["input", "weight", "output"], "read_energy": 1.0,
         "write_energy": 1.0},
        {"name": "GLB", "capacity": 24, "read_energy": 6.0, "write_energy": 6.0,
         "fanout": {"shape": [2, 2], "hop_energy": 1.0}},
        {"name": "DRAM", "read_energy": 200.0, "write_energy": 200.0}]})


# B20 binds on the matmul (plain tensors) and the first two convolutions (the sliding-window input's part too); the
# stride-2 window with 2 taps catches the 3% inflation
MATMUL = (tiny_rf_arch({"input": 3, "weight": 1, "output": 1}), ops.matmul("m", 3, 4, 1))
CONV = (tiny_rf_arch({"input": 2, "weight": 1, "output": 1}), ops.conv2d("c", 1, 2, (4, 1), (2, 1)))
STRIDED = (tiny_rf_arch({"input": 2, "weight": 2, "output": 1}), ops.conv2d("s", 1, 2, (5, 1), (3, 1), stride=2))
STRIDED_2 = (tiny_rf_arch({"input": 2, "weight": 1, "output": 1}), ops.conv2d("s2", 1, 2, (5, 1), (2, 1), stride=2))
ARRAY = (tiny_rf_array({"input": 2, "weight": 1, "output": 1}), ops.conv2d("a", 1, 2, (4, 1), (2, 1)))
CASES = [MATMUL, CONV, STRIDED, STRIDED_2, ARRAY]


def _ids(cases: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}" for a, op in cases]


def assert_below_every_cost(pairs: list[tuple[np.ndarray, np.ndarray]], name: str) -> None:
    """Each (bound, cost) pair of :func:`stage_bounds`: no bound above a finite cost (up to rounding)."""
    for bound, truth in pairs:
        ok = np.isfinite(truth)
        assert not (ok & (bound > truth * (1 + 1e-9))).any(), (name, bound[ok].max(), truth[ok].min())


def assert_placed_bounds_below(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound of every placed brute-force mapping at most its cost (and with
    both axes on a 2-D array)."""
    model = CostModel(op, arch)
    for both in (False, True) if _wide(arch, True) else (False,):
        batch = placed_space(op, arch, both=both)
        cost = model.evaluate(batch)
        for objective in OBJECTIVES:
            truth = cost.objective(objective)
            assert_bounds_below(BranchAndBound(op, arch, objective, model, placement=True, both_axes=_wide(arch, both)),
                                batch, truth, np.isfinite(truth), placed_ancestors)


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_placed_rf_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, with placement (and with both axes on a 2-D array)."""
    assert_placed_bounds_below(arch, op)


def _off(self: LowerBound, entries: dict, spatial: np.ndarray, ch: int, *more: object) -> tuple[np.ndarray, ...]:
    """B20 taken out: no refills, one nesting order of none."""
    return np.zeros(len(spatial)), np.zeros((1, len(spatial))), np.zeros((1, len(spatial)))


def _plain_only(self: LowerBound, entries: dict, spatial: np.ndarray, ch: int, *more: object
                ) -> tuple[np.ndarray, ...]:
    """B20 without the sliding-window inputs' refills."""
    return ORIGINAL(self, {t: v for t, v in entries.items() if self.plain[t]}, spatial, ch, *more)


def _inflated(self: LowerBound, entries: dict, spatial: np.ndarray, ch: int, *more: object
              ) -> tuple[np.ndarray, ...]:
    """B20's refills x 1.03."""
    return tuple(1.03 * x for x in ORIGINAL(self, entries, spatial, ch, *more))


@pytest.mark.parametrize("cases, weaker", [([MATMUL], _off), ([CONV, STRIDED], _plain_only)],
                         ids=["B20 on a matmul", "B20's sliding-window inputs"])
def test_placed_rf_rule_binds(monkeypatch: pytest.MonkeyPatch, cases: list[tuple[ArchSpec, Operator]],
                              weaker: Callable) -> None:
    """B20 (or its sliding-window inputs' part) never lowers a bound and raises some finite one on these cases."""
    full = [b for arch, op in cases for b in stage_bounds(arch, op)]
    monkeypatch.setattr(LowerBound, "_placed_refills", weaker)
    without = [b for arch, op in cases for b in stage_bounds(arch, op)]
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(full, without))


def test_placed_rf_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B20's refills x 1.03 put some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_placed_refills", _inflated)
    mutated = stage_bounds(*STRIDED_2)
    assert_some_bound_exceeds(mutated)
