"""B40 (docs/search.md, "B40: the window's tile runs against the child's capacity"): a sliding-window input's pair
whose child's box is known fills at least the box's words less the child's capacity in every run of the box, and its
parent reads at least the union's words less the children's capacities in every run of the union, against the
independent brute force.

Stride-2 poolings (one and two window axes), a strided convolution and a 7x7 window on a register file of a few words
under a global buffer with a fan-out (1-D and 2x2, with and without both-axis unrolling), every placement of every
mapping priced, and random strided layers with placement: at every stage each mapping's ancestor's bound and the tile bound are
at most its cost for every objective, and so is B37's order bound; taking B40 out lowers some finite bound and never raises one, so the checks
cover it; and its term x 1.03 puts some ancestor's bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_order_bound import assert_below, order_bounds
from test_optimal_placed_rf import assert_placed_bounds_below, tiny_rf_array
from test_optimal_placement import assert_rule_binds, stage_bounds, tiny_rf_arch, assert_some_bound_exceeds
from test_optimal_windowed_bounds import check
from test_optimal_wrap_bounds import strided_cases

ORIGINAL = LowerBound._run_fills

POOL = (tiny_rf_arch({"input": 3, "weight": 1, "output": 1}), ops.pool("p", 1, (7, 1), (3, 1), stride=(2, 1)))
POOL_2D = (tiny_rf_arch({"input": 4, "weight": 1, "output": 2}), ops.pool("q", 1, (3, 2), (3, 2), stride=(2, 2)))
CONV = (tiny_rf_arch({"input": 2, "weight": 2, "output": 1}), ops.conv2d("s", 1, 2, (5, 1), (3, 1), stride=2))
ARRAY = (tiny_rf_array({"input": 2, "weight": 1, "output": 1}), ops.pool("a", 2, (5, 1), (3, 1), stride=(2, 1)))


def fills_only_arch() -> ArchSpec:
    """A one-word register file whose fills are the only energy besides its updates (no MAC, read, buffer or DRAM
    energy): a 7x7 window's box run twice, its 49 words filled each time, prices at most 1/49 above B40."""
    return parse_arch({"name": "fills_only", "clock_mhz": 100, "mac": {"energy": 0.0}, "levels": [
        {"name": "RF", "capacity": {"input": 1, "weight": 1, "output": 1}, "keeps": ["input", "weight", "output"],
         "read_energy": 0.0, "write_energy": 1.0},
        {"name": "GLB", "capacity": 128, "read_energy": 0.0, "write_energy": 0.0,
         "fanout": {"shape": [2], "hop_energy": 0.0}},
        {"name": "DRAM", "read_energy": 0.0, "write_energy": 0.0}]})


WINDOW = (fills_only_arch(), ops.pool("w", 1, (8, 7), (7, 7), stride=(1, 1)))
CASES = [POOL, POOL_2D, CONV, ARRAY, WINDOW]


def _ids(cases: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}" for a, op in cases]


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_run_fills_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, with placement (and with both axes on a 2-D array)."""
    assert_placed_bounds_below(arch, op)


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_order_bounds_with_run_fills_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """B37's order bound (relaxed placements, level ``j``'s capacity not checked) with B40, every order stage."""
    assert_below(order_bounds(arch, op))


RANDOM = strided_cases(6, seed=53, on_chip=2, limit=4_000)


@pytest.mark.parametrize("arch,op", RANDOM, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(RANDOM)])
def test_random_strided_run_fills_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Random strided layers on the random architectures of the bound tests, with placement: every stage's bound at
    most each placed mapping's cost, and the certified optimum the brute-force one."""
    check(arch, op, placement=True)


def _off(self: LowerBound, pr: object, temporal: np.ndarray, spatial: np.ndarray, fixed_from: int,
         tile: np.ndarray | None, e: np.ndarray, d: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, ...]:
    """B40 taken out: the pair's bound as counted before it."""
    return e, d, h


def _inflated(self: LowerBound, pr: object, temporal: np.ndarray, spatial: np.ndarray, fixed_from: int,
              tile: np.ndarray | None, e: np.ndarray, d: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, ...]:
    """B40's energy, bytes and fills x 1.03."""
    zero = np.zeros_like(e)
    got = ORIGINAL(self, pr, temporal, spatial, fixed_from, tile, zero, zero, zero)
    return tuple(np.maximum(x, 1.03 * y) for x, y in zip((e, d, h), got))


def test_run_fills_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    """B40 never lowers a bound and raises some finite one (so the checks above cover it)."""
    assert_rule_binds(monkeypatch, CASES, "_run_fills", _off)


def test_run_fills_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B40 x 1.03 puts some ancestor's bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, "_run_fills", _inflated)
    mutated = stage_bounds(*WINDOW)
    assert_some_bound_exceeds(mutated)
