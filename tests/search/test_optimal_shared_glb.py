"""B34 (docs/search.md, "B34: the refetches one shared buffer forces across the backing store's iterations"): where the
backing store's loops are fixed, the input's and the output's pairs with it through one buffer whose capacity both
share (:meth:`.bounds.LowerBound._shared_refetch`), against the independent brute force.

On a register file of one word per role under a small global buffer that keeps only the input and the output (the
weights bypass it, as Eyeriss's), with and without a 2-wide row under the buffer, every placement of every mapping is
priced: at every stage each mapping's ancestor's bound and the tile bound are at most its cost for every objective;
taking B34 out lowers some finite bound and raises none. Its increment x 1.03 is not caught on these cases (the least
of a mapping's cost less its raised bound is 1.08 times B34's increment there), so the check below inflates it x 2.5.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import _ids, stage_bounds
from test_optimal_spilled import bypass_arch

ORIGINAL = LowerBound._shared_refetch


def solo_arch(glb: int) -> ArchSpec:
    """:func:`test_optimal_spilled.bypass_arch` without the row: one register file under the ``glb``-word buffer."""
    return parse_arch({"name": f"solo{glb}", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": {"input": 1, "weight": 1, "output": 1}, "keeps": ["input", "weight", "output"],
         "read_energy": 1.0, "write_energy": 1.0},
        {"name": "GLB", "capacity": glb, "keeps": ["input", "output"], "read_energy": 6.0, "write_energy": 6.0},
        {"name": "DRAM", "read_energy": 200.0, "write_energy": 200.0}]})


TIGHT = (solo_arch(3), ops.conv2d("t", 2, 2, (4, 1), (2, 1)))
CASES = [(bypass_arch(2), ops.conv2d("c", 1, 2, (5, 1), (2, 1))), (bypass_arch(3), ops.conv2d("d", 1, 2, (6, 1), (2, 1))),
         (bypass_arch(3), ops.matmul("m", 4, 2, 2)), (solo_arch(4), ops.conv2d("s", 1, 2, (6, 1), (3, 1)))]


def _off(self: LowerBound, *args: object) -> None:
    """B34 taken out."""
    return None


def _inflated(self: LowerBound, *args: object) -> np.ndarray | None:
    """B34's increment x 2.5."""
    value = ORIGINAL(self, *args)
    return None if value is None else value * 2.5


def _with_and_without(arch: ArchSpec, op: Operator) -> tuple[list, list]:
    """:func:`stage_bounds` with B34 and with B34 taken out."""
    full = stage_bounds(arch, op)
    try:
        LowerBound._shared_refetch = _off
        return full, stage_bounds(arch, op)
    finally:
        LowerBound._shared_refetch = ORIGINAL


def _check(full: list, without: list) -> None:
    """No bound above a finite cost; taking B34 out raises no bound."""
    for bound, truth in full:
        ok = np.isfinite(truth)
        assert not (ok & (bound > truth * (1 + 1e-9))).any(), (bound[ok].max(), truth[ok].min())
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))


@pytest.fixture(scope="module")
def tight() -> tuple[list, list]:
    """:data:`TIGHT`'s bounds with and without B34, computed once for the module."""
    return _with_and_without(*TIGHT)


@pytest.mark.parametrize("arch,op", [pytest.param(*case, marks=pytest.mark.slow if case[1].name in "cm" else ())
                                     for case in CASES], ids=_ids(CASES))
def test_shared_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, placed; taking B34 out raises no bound."""
    _check(*_with_and_without(arch, op))


def test_shared_rule_binds(tight: tuple[list, list]) -> None:
    """On :data:`TIGHT`: sound, and taking B34 out lowers some finite bound (a bound of a mapping that fits)."""
    full, without = tight
    _check(full, without)
    assert any((np.isfinite(t) & (a > b * (1 + 1e-9))).any() for (a, t), (b, _) in zip(full, without))


def test_shared_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B34's increment x 2.5 puts some ancestor's bound above a placed mapping's cost (B40 taken out: it raises the
    input's pair that B34's increment is counted over, docs "B40")."""
    monkeypatch.setattr(LowerBound, "_shared_refetch", _inflated)
    monkeypatch.setattr(LowerBound, "_run_fills", lambda self, pr, temporal, spatial, fixed_from, tile, e, d, h:
                        (e, d, h))
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any() for lb, truth in stage_bounds(*TIGHT))
