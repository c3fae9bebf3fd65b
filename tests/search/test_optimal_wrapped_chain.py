"""B43 (docs/search.md, "B43: the window's loops inside the next raised tile"): in B22's chains a sliding-window input's
raised tile strictly inside the next member's has the loop right above it inside that one, with trips dividing their
ratio, and the loop after it inside too unless nothing else lies between (:meth:`.bounds.LowerBound._wrapped_chain`,
:meth:`.bounds.LowerBound._trip_values`), against the independent brute force.

Stride-2 convolutions with few input channels on register files of 2-3 words under a global buffer with a fan-out (a row
of 2, and a 2x2 array with and without both-axis unrolling; the buffer and the backing store cheap, so the register
file's traffic weighs): every placement of every mapping is priced, and at every stage each mapping's ancestor's bound
and the tile bound are at most its cost for every objective; taking B43 out never raises a bound and lowers some finite
one; and the chain values B43 returns x 1.03 put some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.search.optimal.bounds import LowerBound, _divisor_min
from dnnmap.workload import ops
from test_optimal_placed_rf import _ids, _wide, assert_below_every_cost, stage_bounds
from test_optimal_placement import assert_raises_some_bound, tiny_rf_arch

WRAPPED = LowerBound._wrapped_chain


def cheap_store(capacity: dict[str, int], shape: tuple[int, ...] = (2,)) -> ArchSpec:
    """A register file of a few words per role under a global buffer with a fan-out of ``shape``, the buffer, the hops
    and the backing store as cheap as the register file."""
    return parse_arch({"name": "cheap_store", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": capacity, "keeps": ["input", "weight", "output"], "read_energy": 1.0,
         "write_energy": 1.0},
        {"name": "GLB", "capacity": 24, "read_energy": 1.0, "write_energy": 1.0,
         "fanout": {"shape": list(shape), "hop_energy": 1.0}},
        {"name": "DRAM", "read_energy": 1.0, "write_energy": 1.0}]})


# B43 binds on the first row case; the 7-wide one catches the 3% inflation
ROW = (cheap_store({"input": 2, "weight": 2, "output": 1}), ops.conv2d("row", 1, 2, (5, 1), (3, 1), stride=2))
WIDE = (cheap_store({"input": 3, "weight": 2, "output": 1}), ops.conv2d("wide", 1, 2, (7, 1), (3, 1), stride=2))
CHANNELS = (cheap_store({"input": 2, "weight": 2, "output": 2}), ops.conv2d("chan", 2, 1, (5, 1), (3, 1), stride=2))
ARRAY = (cheap_store({"input": 2, "weight": 2, "output": 1}, (2, 2)),
         ops.conv2d("array", 1, 2, (5, 1), (3, 1), stride=2))
COSTLY = (tiny_rf_arch({"input": 2, "weight": 2, "output": 1}), ops.conv2d("costly", 1, 2, (5, 1), (3, 1), stride=2))
CASES = [ROW, WIDE, CHANNELS, ARRAY, COSTLY]


def _bounds(arch: ArchSpec, op: object) -> list[tuple[np.ndarray, np.ndarray]]:
    """(bound, cost) of every stage and tile bound, placed (and placed with both axes on a 2-D array)."""
    return [b for both in ((False, True) if _wide(arch, True) else (False,)) for b in stage_bounds(arch, op, both)]


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case, computed once for the module."""
    return {op.name: _bounds(arch, op) for arch, op in CASES}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_wrapped_chain_bounds_never_exceed_any_completion(shipped: dict, arch: ArchSpec, op: object) -> None:
    """Every objective, every stage and the tile bound."""
    assert_below_every_cost(shipped[op.name], op.name)


def _before(self: LowerBound, m: int, level: int, t: int, own: np.ndarray, fits: np.ndarray, scale: float,
            least: np.ndarray) -> np.ndarray:
    """B43 taken out: B20's table over every box inside (B22's chain before B43)."""
    return _divisor_min(own + least, self._chain_grid(m)[0])


def test_wrapped_chain_binds(monkeypatch: pytest.MonkeyPatch, shipped: dict) -> None:
    """B43 never lowers a bound and raises some finite one."""
    monkeypatch.setattr(LowerBound, "_wrapped_chain", _before)
    assert_raises_some_bound(shipped[ROW[1].name], _bounds(*ROW))


def test_wrapped_chain_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B43's chain values x 1.03 put some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_wrapped_chain", lambda self, *args: 1.03 * WRAPPED(self, *args))
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any() for lb, truth in _bounds(*WIDE))
