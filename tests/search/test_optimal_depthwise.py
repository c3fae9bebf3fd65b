"""B28 (docs/search.md, "B28: the window's wraps under a small register file"): B20's least words per run of a
sliding-window input's raised tile, with the entries of the loop right above it priced by the next loop's step
(:meth:`.bounds.LowerBound._run_words`), against the independent brute force.

On small register files under a global buffer (a depthwise convolution, a 3-tap convolution whose window loop wraps
after 3 trips, and a depthwise convolution under a 2x2 array, placed and with both axes), every placement of every
mapping is priced: at every stage each mapping's ancestor's bound and the tile bound are at most its cost for every
objective; taking B28 out (B20's half a step at the runs that are not all steps) lowers some finite bound and raises
none; B28's increment over B20 x 1.03 puts some bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.bounds import LowerBound, _step_words
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import _ids, assert_placed_bounds_below, stage_bounds, tiny_rf_array
from test_optimal_placement import tiny_rf_arch

ORIGINAL = LowerBound._run_words

DEPTHWISE = (tiny_rf_arch({"input": 2, "weight": 1, "output": 1}), ops.depthwise("dw", 2, (5, 1), (2, 1)))
THREE_TAP = (tiny_rf_arch({"input": 3, "weight": 1, "output": 1}), ops.conv2d("c3", 1, 1, (5, 1), (3, 1)))
ARRAY = (tiny_rf_array({"input": 2, "weight": 1, "output": 1}), ops.depthwise("dwa", 2, (4, 1), (2, 1)))
CASES = [DEPTHWISE, THREE_TAP, ARRAY]


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_window_runs_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, placed (and with both axes on the 2x2 array)."""
    assert_placed_bounds_below(arch, op)


def _before(self: LowerBound, tiles: np.ndarray, t: int) -> np.ndarray:
    """B28 taken out: every step's words where every event brings them, else half of them (B20 as it was)."""
    step = _step_words(self.op, tiles, t, True, self.bounds)
    return np.where(self._every_event(tiles, t), step, 0.5 * step)


def _inflated(self: LowerBound, tiles: np.ndarray, t: int) -> np.ndarray:
    """B28's increment over B20 x 1.03."""
    base = _before(self, tiles, t)
    return base + 1.03 * (ORIGINAL(self, tiles, t) - base)


@pytest.mark.parametrize("arch,op", [DEPTHWISE, THREE_TAP], ids=_ids([DEPTHWISE, THREE_TAP]))
def test_window_runs_bind(monkeypatch: pytest.MonkeyPatch, arch: ArchSpec, op: Operator) -> None:
    """B28 never lowers a bound and raises some finite one (a bound of a mapping that fits) on each case."""
    full = stage_bounds(arch, op)
    monkeypatch.setattr(LowerBound, "_run_words", _before)
    without = stage_bounds(arch, op)
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(t) & (a > b * (1 + 1e-9))).any() for (a, t), (b, _) in zip(full, without))


def test_window_runs_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B28's increment x 1.03 puts some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_run_words", _inflated)
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any()
               for arch, op in [DEPTHWISE, THREE_TAP] for lb, truth in stage_bounds(arch, op))
