"""B31 (docs/search.md, "B31: the chains within the loops left below the fixed levels"): B22's, B25's and B26's chains
of raised tiles per unrolling ``U`` read inside ``rest / U`` where the outermost tile cannot hold it
(:meth:`.bounds.LowerBound._rooted_chains`), against the independent brute force.

On B22's and B26's small cases (register files under a 1-D row of 2 or a 2x2 array, placed, and placed with both axes;
a weight bypassing the buffer) and on random cases of the mixed draw with one fan-out, placed, every placement of every
mapping is priced: at every stage each mapping's ancestor's bound and the tile bound are at most its cost for every
objective; taking B31 out (the chains read at ``bounds / U`` again) lowers some finite bound and raises none, so the
checks cover it; reading every chain inside ``rest / U``, without B31's exception, is caught. On ResNet-18 ``layer2.0.conv2`` on Eyeriss (energy, widened space), the root child with the DRAM loops
``C2 Q2 S3`` is bounded at 698.3e6 with B31 (689.2e6 without; its subtree's least cost, by an exhaustive branch and
bound, is 798.57e6).
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload.ir import Operator
from test_optimal_mixed_soundness import mixed_case, stage_bounds, violations
from test_optimal_placed_rf import _ids, assert_below_every_cost
from test_optimal_rf_reload import CASES as RELOAD
from test_optimal_rf_reload import _all_bounds
from test_optimal_spilled import CASES as SPILLED

CASES = RELOAD + SPILLED


def _everywhere(self: LowerBound, m: int, level: int, t: int) -> np.ndarray:
    """B31 taken out: every box held by every tensor alone, so every chain is read at ``bounds / U``."""
    _, shape, _, _ = self._chain_grid(m)
    return np.ones(int(np.prod(shape)), dtype=bool)


@pytest.fixture(scope="module")
def shipped() -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case, computed once for the module."""
    return [_all_bounds([case]) for case in CASES]


@pytest.mark.parametrize("k", range(len(CASES)), ids=_ids(CASES))
def test_root_rest_bounds_never_exceed_any_completion(shipped: list, k: int) -> None:
    """Every objective, every stage and the tile bound, placed and placed with both axes."""
    assert_below_every_cost(shipped[k], CASES[k][1].name)


def test_root_rest_rule_binds(monkeypatch: pytest.MonkeyPatch, shipped: list) -> None:
    """B31 never lowers a bound and raises some finite one (a bound of a mapping that fits) on these cases."""
    full = [b for bounds in shipped for b in bounds]
    monkeypatch.setattr(LowerBound, "_holds_alone", _everywhere)
    without = _all_bounds(CASES)
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(t) & (a > b * (1 + 1e-9))).any() for (a, t), (b, _) in zip(full, without))


# cases of the mixed draws 31-35 (:func:`mixed_case` with three levels or more) with one fan-out, placed, on which B31
# raises some finite bound (scanned: 9 of their first 150 cases each, these the quickest)
DRAWN = [mixed_case(seed, i, levels=3) for seed, i in ((31, 29), (32, 91), (33, 106), (34, 1), (34, 60), (35, 46))]


def test_root_rest_binds_on_random_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """B31 raises some finite bound of each drawn case and lowers none."""
    full = [stage_bounds(*case) for case in DRAWN]
    monkeypatch.setattr(LowerBound, "_holds_alone", _everywhere)
    for case, a in zip(DRAWN, full):
        b = stage_bounds(*case)
        assert (a >= b * (1 - 1e-12)).all() and (np.isfinite(a) & (a > b * (1 + 1e-9))).any(), case[:2]


@pytest.mark.parametrize("arch,op,space", DRAWN, ids=[f"{a.name}-{op.name}-{s}" for a, op, s in DRAWN])
def test_root_rest_sound_on_random_cases(arch: ArchSpec, op: Operator, space: str) -> None:
    """Every rule on, B31 included: no bound above a completion's cost, every objective, and the certified optimum the
    brute force's."""
    assert not violations(arch, op, space)


def _nowhere(self: LowerBound, m: int, level: int, t: int) -> np.ndarray:
    """B31 without its exception: no box held by any tensor alone, so every chain is read inside ``rest / U``, even
    where the outermost tile may hold ``rest / U`` and reach over the fixed loops."""
    _, shape, _, _ = self._chain_grid(m)
    return np.zeros(int(np.prod(shape)), dtype=bool)


def test_root_rest_exception_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading every chain inside ``rest / U`` puts some ancestor's bound above a mapping's cost (B31's exception, the
    outermost tile holding ``rest / U`` over some fixed loops, is what keeps it sound)."""
    monkeypatch.setattr(LowerBound, "_holds_alone", _nowhere)
    assert violations(*DRAWN[1], ("energy",))


def test_root_rest_tightens_the_eyeriss_root_child() -> None:
    """ResNet-18 ``layer2.0.conv2`` on Eyeriss, energy, widened space: the root child with DRAM loops ``C2 Q2 S3`` is
    bounded above 6.95e8 (6.8917e8 without B31) and below its subtree's least cost, 7.9857e8 (exhaustive branch and
    bound of that subtree, ``/work/wt/tasks/probe_root.py``)."""
    from dnnmap.search.optimal.expand import Nodes
    from dnnmap.search.optimal.search import BranchAndBound, CostModel
    from dnnmap.workload import ops

    arch = load_arch("eyeriss")
    op = ops.conv2d("layer2.0.conv2", 128, 128, (28, 28), (3, 3), padding=1)
    assert [op.bound(d) for d in op.dim_names] == [1, 1, 128, 128, 28, 28, 3, 3]
    bb = BranchAndBound(op, arch, "energy", CostModel(op, arch), placement=True, both_axes=frozenset([1]))
    dram = np.array([1, 1, 1, 2, 1, 2, 1, 3])
    rest = np.array([op.bound(d) for d in op.dim_names]) // dram
    temporal = np.array([[rest, np.ones(8, dtype=np.int64), dram]])
    order = np.tile(np.arange(8), (1, 3, 1))
    node = Nodes(temporal, np.ones_like(temporal), np.zeros_like(temporal), order, np.zeros((1, 3, 3), dtype=np.int64))
    bound = float(bb._bound(node, 0)[0])
    assert 6.95e8 < bound <= 7.9857e8
