"""B27 (docs/search.md, "B27: the register file's refills between the overflowing tensor's loops"): at the root stage
of the widened space, B26's cases (a tensor that bypasses the global buffer overflows the register file of one
instance under the open array's unrolling ``U``: a prefix of loops not indexing it, then a loop ``Y`` on a dimension
indexing it) with the register file's own refills at the boundaries between loop iterations: the tensors a loop does
not index are touched whole in each of its iterations and the register file keeps only its capacity of them
(:meth:`.bounds.LowerBound._rf_drains`), against the independent brute force.

On a register file of one or two words per role under a global buffer that keeps the input and the output only (the
weights bypass it, as Eyeriss's) over a 2-wide row, with a matmul and two convolutions whose weights overflow the
register file, every placement of every mapping is priced: at every stage each mapping's ancestor's bound and the tile
bound are at most its cost for every objective; taking B27 out, or only its chains inside one iteration of ``Y``
(:meth:`.bounds.LowerBound._chains_inside`), lowers some finite bound and raises none; and its increment over B22 x 1.03
puts some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch, parse_arch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.space import touched_lower
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import _ids, assert_below_every_cost, stage_bounds

ORIGINAL = LowerBound._rf_drains


def bypass_rf_arch(rf: dict[str, int], dram: float = 200.0, hop: float = 1.0) -> ArchSpec:
    """A register file of ``rf`` words per role under a 12-word buffer keeping the input and output only (the weights
    bypass it, as Eyeriss's) over a 2-wide row (``hop`` a word), a backing store of ``dram`` a word."""
    return parse_arch({"name": "bypass_rf", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": rf, "keeps": ["input", "weight", "output"], "read_energy": 1.0,
         "write_energy": 1.0},
        {"name": "GLB", "capacity": 12, "keeps": ["input", "output"], "read_energy": 6.0, "write_energy": 6.0,
         "fanout": {"shape": [2], "hop_energy": hop}},
        {"name": "DRAM", "read_energy": dram, "write_energy": dram}]})


# B27 binds on both convolutions (K2 over a 2-tap window: the weights overflow a one-word register file) and is tight on
# the second (a cheap backing store: a mapping's cost equals the raised bound); its chains inside one iteration of ``Y``
# bind on the matmul
MATMUL = (bypass_rf_arch({"input": 1, "weight": 1, "output": 1}), ops.matmul("m", 2, 2, 4))
CONV = (bypass_rf_arch({"input": 1, "weight": 1, "output": 1}), ops.conv2d("c", 1, 2, (3, 1), (2, 1)))
TIGHT = (bypass_rf_arch({"input": 2, "weight": 1, "output": 1}, dram=20.0, hop=0.0), ops.conv2d("t", 1, 2, (3, 1), (2, 1)))
CASES = [MATMUL, CONV, TIGHT]


def _all_bounds(cases: list[tuple[ArchSpec, Operator]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(bound, cost) of every stage and tile bound of every case, every objective."""
    return [b for arch, op in cases for b in stage_bounds(arch, op)]


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The shipped bounds of each case, computed once for the module."""
    return {op.name: _all_bounds([(arch, op)]) for arch, op in CASES}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_rf_drains_bounds_never_exceed_any_completion(shipped: dict, arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, placed."""
    assert_below_every_cost(shipped[op.name], op.name)


def _off(self: LowerBound, *args: object) -> None:
    """B27 taken out."""
    return None


def _inflated(self: LowerBound, entries: dict, rest: np.ndarray, drain: tuple, top: dict, spent: dict) -> np.ndarray:
    """B27 with its increment over B22 x 1.03."""
    value = ORIGINAL(self, entries, rest, drain, top, spent)
    return value + 0.03 * np.maximum(0.0, value - self._unrolled_refills(entries, rest, drain))


def _outside(self: LowerBound, m: int, c: int, weights: tuple[float, ...], boxes: np.ndarray) -> np.ndarray:
    """B27 without its chains inside one iteration of ``Y`` (none priced there)."""
    return np.zeros(boxes.shape[:-1])


@pytest.mark.parametrize("name, weaker, names", [("_rf_drains", _off, ("c", "t")),
                                                 ("_chains_inside", _outside, ("m",))],
                         ids=["B27", "B27's chains inside one iteration of Y"])
def test_rf_drains_rule_binds(monkeypatch: pytest.MonkeyPatch, shipped: dict, name: str, weaker: Callable,
                              names: tuple[str, ...]) -> None:
    """B27 (or its chains inside one iteration of ``Y``) never lowers a bound and raises some finite one (a bound of
    a mapping that fits)."""
    full = [b for n in names for b in shipped[n]]
    monkeypatch.setattr(LowerBound, name, weaker)
    without = _all_bounds([(arch, op) for arch, op in CASES if op.name in names])
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(t) & (a > b * (1 + 1e-9))).any() for (a, t), (b, _) in zip(full, without))


def test_rf_drains_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B27's increment over B22 x 1.03 puts some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_rf_drains", _inflated)
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any() for lb, truth in _all_bounds([TIGHT]))


def _nested_by_definition(lb: LowerBound, c: int, s: int, moved: tuple[int, ...], weights: tuple[float, ...],
                          box: tuple[int, ...], memo: dict) -> float:
    """The nest's least refills ``f(V)`` of :meth:`.bounds.LowerBound._overflow_refills` by its definition, recursively:
    0 where ``s`` fits ``V``, else the least over a dimension ``e`` and a prime ``q`` dividing ``V_e`` of ``(q - 1)
    X_e(V) + q f(V / q)``."""
    if box not in memo:
        words = touched_lower(lb.op, np.array([box]))[0]
        best = 0.0
        if words[s] > lb.capacity[c, s]:
            best = np.inf
            for e, v in enumerate(box):
                for q in (q for q in range(2, v + 1) if v % q == 0 and all(q % r for r in range(2, q))):
                    x = sum(weights[t] * max(0.0, words[t] - lb.capacity[c, t]) for t in moved if not lb.indexes[t, e])
                    inner = box[:e] + (v // q,) + box[e + 1:]
                    best = min(best, (q - 1) * x + q * _nested_by_definition(lb, c, s, moved, weights, inner, memo))
        memo[box] = best
    return memo[box]


def test_nested_refills_follow_their_definition() -> None:
    """B27's nest (:meth:`.bounds.LowerBound._overflow_refills`) equals its recursive definition on every box of a
    convolution's lattice with Eyeriss's register file (12 input, 224 weight and 24 output words)."""
    arch = load_arch("eyeriss")
    op = ops.conv2d("x", 8, 16, (6, 6), (3, 3))
    lb = BranchAndBound(op, arch, "energy", CostModel(op, arch), placement=True).bound
    m, weights = lb.array, (3.0, 3.0, 6.0)
    s = next(t for t, tensor in enumerate(op.tensors) if tensor.role == "weight")
    moved = tuple(range(len(op.tensors)))
    nested = lb._overflow_refills(m, 0, s, moved, weights)
    values, shape, at, _ = lb._chain_grid(m)
    memo: dict = {}
    found = nested[np.ravel_multi_index(at, shape)]
    expected = [_nested_by_definition(lb, 0, s, moved, weights, tuple(int(x) for x in box), memo) for box in lb._lattice]
    assert np.allclose(found, expected)
    assert (found > 0).any()
