"""B28 (docs/search.md, "B28: the window's wraps under a small register file"): B20's least words per run of a
sliding-window input's raised tile, with the entries of the loop right above it priced by the next loop's step
(:meth:`.bounds.LowerBound._run_words`), against the independent brute force.

On small register files (a 3x3 depthwise convolution on 5x5 inputs under a 2-word input register file that holds the
weights and outputs whole, straight under the backing store, at Eyeriss-like and at cheap backing-store energies; a
depthwise convolution and a 3-tap convolution under a global buffer over a 2-wide row; a depthwise convolution under
a 2x2 array, placed and with both axes), every placement of every mapping is priced: at every stage each mapping's
ancestor's bound and the tile bound are at most its cost for every objective. Taking B28 out (B20's half a step at
the runs that are not all steps) lowers some finite bound and raises none on the two register-file cases (on the
others B11's and B13's refills or the compulsory words are larger). An inflation is not caught: B20's sliding-window
term is nowhere tight on these cases (its whole per-run table x 1.2, or B28's raised entries x 5, put no bound above a
mapping's cost: the least over the boxes then moves to a box B28 leaves), so a hand-derived box checks the term's
value instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.bounds import LowerBound, _step_words
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import _ids, assert_placed_bounds_below, stage_bounds, tiny_rf_array
from test_optimal_placement import tiny_rf_arch

ORIGINAL = LowerBound._run_words



def register_file(backing: float) -> ArchSpec:
    """A 2-word input register file that holds 9 weights and 9 outputs, straight under a backing store of energy
    ``backing`` a word (fills of the register file at 50 where it is cheap, so its input refills dominate)."""
    return parse_arch({"name": f"rf_{backing:g}", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": {"input": 2, "weight": 9, "output": 9}, "keeps": ["input", "weight", "output"],
         "read_energy": 1.0, "write_energy": 1.0 if backing > 1 else 50.0},
        {"name": "DRAM", "read_energy": backing, "write_energy": backing}]})


# B28 binds on the first two (5x5 inputs, 3x3 window, P3 Q3 R3 S3); the cheap one catches its inflation
WINDOW = (register_file(200.0), ops.depthwise("dw3", 1, (5, 5), (3, 3)))
CHEAP = (register_file(1.0), ops.depthwise("dw3c", 1, (5, 5), (3, 3)))
DEPTHWISE = (tiny_rf_arch({"input": 2, "weight": 1, "output": 1}), ops.depthwise("dw", 2, (5, 1), (2, 1)))
THREE_TAP = (tiny_rf_arch({"input": 3, "weight": 1, "output": 1}), ops.conv2d("c3", 1, 1, (5, 1), (3, 1)))
ARRAY = (tiny_rf_array({"input": 2, "weight": 1, "output": 1}), ops.depthwise("dwa", 2, (4, 1), (2, 1)))
CASES = [WINDOW, CHEAP, DEPTHWISE, THREE_TAP, ARRAY]


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_window_runs_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, placed (and with both axes on the 2x2 array)."""
    assert_placed_bounds_below(arch, op)


def _before(self: LowerBound, tiles: np.ndarray, t: int, level: int, loopable: tuple[bool, ...] | None = None
            ) -> np.ndarray:
    """B28 taken out: every step's words where every event brings them, else half of them (B20 as it was)."""
    step = _step_words(self.op, tiles, t, True, self.bounds)
    return np.where(self._every_event(tiles, t), step, 0.5 * step)


@pytest.mark.parametrize("arch,op", [WINDOW, CHEAP], ids=_ids([WINDOW, CHEAP]))
def test_window_runs_bind(monkeypatch: pytest.MonkeyPatch, arch: ArchSpec, op: Operator) -> None:
    """B28 never lowers a bound and raises some finite one (a bound of a mapping that fits) on each case."""
    full = stage_bounds(arch, op)
    monkeypatch.setattr(LowerBound, "_run_words", _before)
    without = stage_bounds(arch, op)
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(t) & (a > b * (1 + 1e-9))).any() for (a, t), (b, _) in zip(full, without))


def test_window_runs_price_the_wraps() -> None:
    """A 1-D 3-tap window (P4 R3) under a 2-wide row, the box P2 R1 (a 2-word window), the loop right above it on R
    (3 trips of stride 1: the row's spatial factor of 2 cannot divide R3). Each of its 2 steps brings 1 word; at its
    entry the next loop steps: on P by 2 (the window back by 2 and forward by 2: none new, the diagonal reuse of
    ``p + r``), on no other dimension (all of one index), or there is none (the first run: the whole box). So
    (2 x 1 + 0 / 2) / 3 = 2/3 words a run, where B20 took half a step; with P whole in the box (P4 R1) every event
    is a step (1 word), as before B28."""
    arch, op = tiny_rf_arch({"input": 2, "weight": 1, "output": 1}), ops.conv2d("c4", 1, 1, (6, 1), (3, 1))
    bound = BranchAndBound(op, arch, "energy", CostModel(op, arch), placement=True).bound
    p, r = op.dim_names.index("P"), op.dim_names.index("R")
    boxes = np.ones((2, len(op.dim_names)), dtype=np.int64)
    boxes[:, p] = [2, 4]
    assert _before(bound, boxes, 0, 0)[:, r] == pytest.approx([0.5, 1.0])
    assert ORIGINAL(bound, boxes, 0, 0)[:, r] == pytest.approx([2 / 3, 1.0])
