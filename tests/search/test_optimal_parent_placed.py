"""B23 (docs/search.md, "B23: the output's parent side under placement"): the output's drained pair with its parent
(B16) and the output drains of the joint unrolling at the tile bound (B14) with per-tensor placement, and the output
pair's whole energy taken jointly with the lanes' unrolling per nesting order of B20's raised tiles
(:meth:`.bounds.LowerBound._joint_drained`), against the independent brute force.

On architectures shaped like ``tpu_like`` (``test_optimal_tpu_bounds.two_register_arch``: an output register file
under a buffer with a 2-D fan-out) and like Eyeriss (one register file of all three tensors under a buffer whose array
may reduce), every placement of every brute-force mapping is priced, with and without both-axis unrolling: at every
stage each mapping's ancestor's bound and the tile bound are at most its cost for every objective; taking each part
out never raises a bound and lowers some finite one; each part's term inflated by 3% puts some bound above a
mapping's cost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.unrolled_tile import UnrolledTile
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import assert_placed_bounds_below, stage_bounds
import test_optimal_tpu_bounds
from test_optimal_placement import assert_some_bound_exceeds

DRAINED = LowerBound._drained_pair
JOINT_DRAIN = LowerBound._joint_drain
JOINT_DRAINED = LowerBound._joint_drained


def eyeriss_like(shape: tuple[int, int]) -> ArchSpec:
    """One register file of 2 input words, 2 weights and 1 output under a 32-word buffer whose array (``shape``)
    reduces, over DRAM: the output's raised tile and the array's reduction copies trade against the lanes."""
    return parse_arch({"name": f"rf221_{shape[0]}x{shape[1]}", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": {"input": 2, "weight": 2, "output": 1}, "keeps": ["input", "weight", "output"],
         "read_energy": 1.0, "write_energy": 1.0},
        {"name": "GLB", "capacity": 32, "read_energy": 6.0, "write_energy": 6.0,
         "fanout": {"shape": list(shape), "hop_energy": 0.5}},
        {"name": "DRAM", "read_energy": 200.0, "write_energy": 200.0}]})


# every part binds on MATMUL (4 lanes of one row over a 4-deep reduction); both axes on SQUARE; B16 and B14 at the tile
# bound on the tpu_like cases (an output register file under the buffer's 2-D fan-out)
MATMUL = (eyeriss_like((4, 1)), ops.matmul("a", 1, 4, 2))
SQUARE = (eyeriss_like((2, 2)), ops.matmul("b", 2, 4, 1))
TPU = [test_optimal_tpu_bounds.CASES[k] for k in (1, 4)]
CASES = [MATMUL, SQUARE] + TPU


@pytest.mark.parametrize("arch,op", CASES, ids=[f"{a.name}-{op.name}" for a, op in CASES])
def test_parent_side_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound, with placement (and both axes on a 2-D array)."""
    assert_placed_bounds_below(arch, op)


def _no_placed_drained(self: LowerBound, words: np.ndarray, *args: object, **kwargs: object) -> np.ndarray:
    """B16's pair with placement taken out (and with it B23's uses of it): no energy."""
    return np.zeros(np.shape(words)) if self.placement else DRAINED(self, words, *args, **kwargs)


def _no_tile_drain(self: LowerBound, fixed_from: int, tile: np.ndarray | None) -> tuple | None:
    """B14 at the tile bound off with placement, as before B23."""
    return None if tile is not None and self.placement else JOINT_DRAIN(self, fixed_from, tile)


def _no_joint(self: LowerBound, *args: object) -> None:
    """The output pair jointly with the lanes per nesting order taken out."""
    return None


def _inflated_drained(self: LowerBound, *args: object, **kwargs: object) -> np.ndarray:
    """B16's pair with placement x 1.03."""
    return DRAINED(self, *args, **kwargs) * (1.03 if self.placement else 1.0)


def _inflated_tile_drain(self: LowerBound, fixed_from: int, tile: np.ndarray | None) -> tuple | None:
    """B14's energies per word x 1.03 at the tile bound with placement."""
    drain = JOINT_DRAIN(self, fixed_from, tile)
    if drain is None or tile is None or not self.placement:
        return drain
    return drain[0], drain[1] * 1.03, drain[2] * 1.03


def _inflated_joint(self: LowerBound, *args: object) -> np.ndarray | None:
    """The joint per-order term x 1.03."""
    got = JOINT_DRAINED(self, *args)
    return None if got is None else got * 1.03


PARTS = [("_drained_pair", _no_placed_drained, [MATMUL] + TPU), ("_joint_drain", _no_tile_drain, [MATMUL] + TPU),
         ("_joint_drained", _no_joint, [MATMUL])]


@pytest.fixture(scope="module")
def shipped() -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """The bounds of the cases of :data:`PARTS` with every part as shipped, by layer: computed once for the three
    parts' tests below (each swaps in its weaker part after this, with ``monkeypatch``). B45 off in both: on MATMUL's
    Eyeriss-like array it raises the tile bound where the joint per-order term binds."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(UnrolledTile, "applies", _never)
        return {op.name: stage_bounds(arch, op) for arch, op in [MATMUL] + TPU}


def _never(bound: LowerBound) -> bool:
    """B45 off."""
    return False


@pytest.mark.parametrize("method, weaker, cases", PARTS, ids=["B16 with placement", "B14 at the tile bound",
                                                              "the pair with the lanes per order"])
def test_each_part_binds(monkeypatch: pytest.MonkeyPatch, shipped: dict[str, list[tuple[np.ndarray, np.ndarray]]],
                         method: str, weaker: Callable, cases: list[tuple[ArchSpec, Operator]]) -> None:
    """Taking the part out never raises a bound and lowers some finite one on these cases."""
    full = [b for _, op in cases for b in shipped[op.name]]
    monkeypatch.setattr(UnrolledTile, "applies", _never)
    monkeypatch.setattr(LowerBound, method, weaker)
    without = [b for arch, op in cases for b in stage_bounds(arch, op)]
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(full, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(full, without))


INFLATED = [("_drained_pair", _inflated_drained, TPU), ("_joint_drain", _inflated_tile_drain, TPU),
            ("_joint_drained", _inflated_joint, [MATMUL])]


@pytest.mark.parametrize("method, inflated, cases", INFLATED, ids=["B16 with placement", "B14 at the tile bound",
                                                                   "the pair with the lanes per order"])
def test_each_part_inflated_is_caught(monkeypatch: pytest.MonkeyPatch, method: str, inflated: Callable,
                                      cases: list[tuple[ArchSpec, Operator]]) -> None:
    """The part's term x 1.03 puts some ancestor's or tile bound above a placed mapping's cost."""
    monkeypatch.setattr(LowerBound, method, inflated)
    mutated = [b for arch, op in cases for b in stage_bounds(arch, op)]
    assert_some_bound_exceeds(mutated)
