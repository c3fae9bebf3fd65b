"""B45 (docs/search.md, "B45: the register file's refills per unrolling at the tile bound"): ``F(1)``'s tile bound with
the register file's pairs priced per unrolling of the array (:class:`.unrolled_tile.UnrolledTile`), against the
independent brute force.

On small register files under a 2x2 array (a matmul, a 1x1 convolution and a strided one, with and without both-axis
unrolling, the weights also bypassing the global buffer as on Eyeriss) and on random variants of them (capacities,
bypass, array shape, multicast, reduction, hop energy, accumulation, final width; random matmuls and 1x1
convolutions), every placement of every mapping is priced: every stage's ancestor bound and the tile bound are at most its
cost for every objective; taking B45 out lowers some finite tile bound; and B45 inflated by 3% puts some tile bound
above a mapping's cost. B48 (docs/search.md, "B48: the outermost loop at the register file and the buffer") on small
global buffers with the weights bypassing them: the same check, each of its parts binds, and each x 1.03 is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.search import BranchAndBound, optimal_search
from dnnmap.search.optimal.unrolled_tile import UnrolledTile
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import assert_placed_bounds_below
from test_optimal_placement import assert_raises_some_bound, assert_some_bound_exceeds, placed_space, stage_bounds

ORIGINAL = UnrolledTile.per_unrolling
ORIGINAL_OUTSIDE = UnrolledTile._outside
ORIGINAL_PER_ITERATION = UnrolledTile._per_iteration


def tiny_array(capacity: dict[str, int], glb_keeps: tuple[str, ...] = ("input", "weight", "output"),
               fanout: dict | None = None, rmw: bool = True, final_bits: int | None = None, glb: int = 24
               ) -> ArchSpec:
    """A register file of a few words per role under a 2x2 array (``glb_keeps``: what the global buffer keeps; the
    others go between the register file and DRAM, as Eyeriss's weights; ``fanout``: another array; ``rmw``: whether
    the register file accumulates; ``final_bits``: the final outputs' width; ``glb``: the global buffer's words)."""
    spec = {"name": "tiny_array", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": capacity, "keeps": ["input", "weight", "output"], "read_energy": 1.0,
         "write_energy": 1.0, "read_modify_write": rmw},
        {"name": "GLB", "capacity": glb, "keeps": list(glb_keeps), "read_energy": 6.0, "write_energy": 6.0,
         "fanout": fanout or {"shape": [2, 2], "hop_energy": 2.0}},
        {"name": "DRAM", "read_energy": 200.0, "write_energy": 200.0}]}
    if final_bits is not None:
        spec["final_output_bits"] = final_bits
    return parse_arch(spec)


MATMUL = (tiny_array({"input": 2, "weight": 4, "output": 2}), ops.matmul("m", 2, 4, 2))
BYPASS = (tiny_array({"input": 2, "weight": 4, "output": 2}, ("input", "output")), ops.matmul("w", 2, 2, 4))
POINTWISE = (tiny_array({"input": 2, "weight": 2, "output": 2}), ops.conv2d("p", 2, 2, (3, 1), (1, 1)))
STRIDED = (tiny_array({"input": 1, "weight": 2, "output": 2}, ("input", "output")),
           ops.conv2d("s", 2, 2, (4, 1), (1, 1), stride=2))
# a global buffer of 3 words: its tile overflows, so level 1's outermost loop refetches (:meth:`UnrolledTile._refetched`)
SPILLED = (tiny_array({"input": 2, "weight": 2, "output": 2}, ("input", "output"), glb=3), ops.matmul("v", 4, 2, 2))
CASES = [MATMUL, BYPASS, POINTWISE, STRIDED, SPILLED]


def _applied(arch: ArchSpec, op: Operator) -> bool:
    """Whether B45 applies to the placed search of ``op`` on ``arch``."""
    return BranchAndBound(op, arch, "energy", CostModel(op, arch), placement=True).unrolled_tile is not None


def _variant(rng: np.random.Generator, glb: tuple[int, int] = (4, 25), bypass: float = 0.5
             ) -> tuple[ArchSpec, Operator]:
    """A random :func:`tiny_array` (capacities, bypass with probability ``bypass``, array shape, multicast, reduction,
    hop energy, accumulation, final width, the global buffer's words in ``glb``) and a random matmul or 1x1 convolution
    (strided or not)."""
    caps = {r: int(rng.integers(1, 5)) for r in ("input", "weight", "output")}
    keeps = ("input", "weight", "output") if rng.random() >= bypass else ("input", "output")
    fanout = {"shape": [[2, 2], [2], [3]][int(rng.integers(0, 3))], "multicast": bool(rng.random() < 0.7),
              "reduction": bool(rng.random() < 0.7), "hop_energy": float(rng.integers(0, 3))}
    arch = tiny_array(caps, keeps, fanout, bool(rng.random() < 0.7), [None, 8][int(rng.integers(0, 2))],
                      int(rng.integers(*glb)))
    sizes = [int(x) for x in rng.integers(1, 5, size=3)]
    if rng.random() < 0.5:
        return arch, ops.matmul("m", *sizes)
    return arch, ops.conv2d("c", sizes[0], sizes[1], (sizes[2], 2), (1, 1), stride=int(rng.integers(1, 3)))


def _random_cases(n: int, seed: int, glb: tuple[int, int] = (4, 25), bypass: float = 0.5, most: int = 20_000
                  ) -> list[tuple[ArchSpec, Operator]]:
    """``n`` random :func:`_variant` cases where B45 applies and the placed space with both axes has at most ``most``
    mappings."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = _variant(rng, glb, bypass)
        if _applied(arch, op) and len(placed_space(op, arch, both=True)) <= most:
            out.append((arch, op))
    return out


RANDOM = _random_cases(6, 45)
# B48: global buffers of 2-7 words (level 1's tile overflows, so the outermost loop's refetches count), the weights
# mostly bypassing it as on Eyeriss
SMALL = _random_cases(6, 48, glb=(2, 8), bypass=0.7, most=8_000)
# B48's outermost loop outside the register file's runs: a 1x1 convolution with loops on K, P and Q at level 1 under a
# 1-lane array (the weights, which P and Q do not index, then run at most the trips of the one of them inside), the
# weights bypassing a 3-word buffer
WIDE = (tiny_array({"input": 3, "weight": 3, "output": 2}, ("input", "output"), {"shape": [1], "hop_energy": 1.0},
                   glb=3), ops.conv2d("q", 1, 2, (2, 2), (1, 1)))
# B48's words per iteration of the outermost loop, tight: a 3-word buffer under which the 4x4 output overflows
TIGHT = (tiny_array({"input": 2, "weight": 2, "output": 2}, ("input", "output"), {"shape": [2], "hop_energy": 0.0},
                    glb=3), ops.matmul("t", 1, 4, 4))
OUTERMOST = SMALL + [WIDE, TIGHT]


def _ids(found: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}" for a, op in found]


@pytest.mark.parametrize("arch,op", [pytest.param(*MATMUL, marks=pytest.mark.slow)] + CASES[1:] + RANDOM,
                         ids=_ids(CASES + RANDOM))
def test_unrolled_tile_bound_never_exceeds_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound (with B45), with placement (and with both axes)."""
    assert _applied(arch, op)
    assert_placed_bounds_below(arch, op)


@pytest.mark.parametrize("arch,op", [BYPASS, STRIDED], ids=_ids([BYPASS, STRIDED]))
def test_search_with_unrolled_tile_proves_the_brute_force_optimum(arch: ArchSpec, op: Operator) -> None:
    """The placed search with both axes (B45 on) proves the least energy and EDP of every placed brute-force
    mapping."""
    assert_search_proves_the_optimum(arch, op)


def assert_search_proves_the_optimum(arch: ArchSpec, op: Operator) -> None:
    """The placed search with both axes proves the least energy and EDP of every placed brute-force mapping."""
    cost = CostModel(op, arch).evaluate(placed_space(op, arch, both=True))
    for objective in ("energy", "edp"):
        result = optimal_search(op, arch, objective, placement=True, both_axes=["GLB"])
        assert result.certificate.proven
        assert result.certificate.incumbent == pytest.approx(cost.objective(objective).min(), rel=1e-9)


def _off(self: UnrolledTile, cost: object, temporal: np.ndarray, *more: object) -> np.ndarray:
    """B45 taken out (every unrolling's value -inf)."""
    return np.full((len(temporal), len(self.table)), -np.inf)


def _inflated(self: UnrolledTile, *args: object) -> np.ndarray:
    """B45 x 1.03."""
    return 1.03 * ORIGINAL(self, *args)


def test_unrolled_tile_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """B45 never lowers a bound and raises some finite tile bound on the handmade cases (but the largest)."""
    full = [b for arch, op in CASES[1:] for b in stage_bounds(arch, op, tiles_only=True)]
    monkeypatch.setattr(UnrolledTile, "per_unrolling", _off)
    assert_raises_some_bound(full, [b for arch, op in CASES[1:] for b in stage_bounds(arch, op, tiles_only=True)])


def test_unrolled_node_bound_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """B45 at each ``F(1)`` node's own unrolling raises some finite stage bound (the 1x1 convolution, the overflowing
    buffer), B39 off on both sides (for EDP too, since B47, it holds those rows)."""
    monkeypatch.setattr(BranchAndBound, "_shared_order", lambda self, *args: args[-2])
    full = [b for arch, op in (POINTWISE, SPILLED) for b in stage_bounds(arch, op)]
    monkeypatch.setattr(BranchAndBound, "_unrolled_node_bound", lambda self, lb, *args: lb)
    assert_raises_some_bound(full, [b for arch, op in (POINTWISE, SPILLED) for b in stage_bounds(arch, op)])


def test_buffer_refetches_bind(monkeypatch: pytest.MonkeyPatch) -> None:
    """B45's refetches of the overflowing global buffer raise some finite tile bound (where its tile overflows)."""
    full = stage_bounds(*SPILLED, tiles_only=True)
    monkeypatch.setattr(UnrolledTile, "_refetched", lambda self, temporal, held, at, trips: np.zeros(
        (self.b.op_dims, len(at))))
    assert_raises_some_bound(full, stage_bounds(*SPILLED, tiles_only=True))


def test_unrolled_tile_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B45 x 1.03 puts some tile bound above a placed mapping's cost."""
    monkeypatch.setattr(UnrolledTile, "per_unrolling", _inflated)
    assert_some_bound_exceeds(stage_bounds(*STRIDED, tiles_only=True))


def test_unrolled_tile_needs_the_conditions() -> None:
    """B45 stays off for a register file that does not keep every tensor (a sliding-window layer: B46's tests,
    ``test_optimal_window_unrolled.py``)."""
    partial = parse_arch({"name": "partial", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": 4, "keeps": ["weight", "output"], "read_energy": 1.0, "write_energy": 1.0},
        {"name": "GLB", "capacity": 24, "read_energy": 6.0, "write_energy": 6.0,
         "fanout": {"shape": [2, 2], "hop_energy": 2.0}},
        {"name": "DRAM", "read_energy": 200.0, "write_energy": 200.0}]})
    assert not _applied(partial, ops.matmul("m", 4, 4, 2))


@pytest.mark.parametrize("arch,op", OUTERMOST, ids=_ids(OUTERMOST))
def test_outermost_loop_terms_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """B48 (docs/search.md, "B48: the outermost loop at the register file and the buffer"): with small global buffers
    (level 1's tile overflowing) and the weights bypassing it, every objective, every stage and the tile bound."""
    assert _applied(arch, op)
    assert_placed_bounds_below(arch, op)


def _capacity_only(self: UnrolledTile, t: int, words: np.ndarray) -> np.ndarray:
    """B45's words per iteration of the outermost loop: those past level 1's capacity (B48's whole words taken out)."""
    return np.maximum(0.0, words - self.b.capacity[1, t])


def _no_reloads(self: UnrolledTile, t: int, taken: np.ndarray) -> np.ndarray:
    """B48's reloads of the output taken out."""
    return taken * self.refetch[t]


@pytest.mark.parametrize("method,off", [("_outside", lambda self, t, d1, trips, indexed: np.ones(len(trips))),
                                        ("_per_iteration", _capacity_only), ("_taken_energy", _no_reloads)],
                         ids=["runs", "whole-words", "reloads"])
def test_outermost_loop_terms_bind(monkeypatch: pytest.MonkeyPatch, method: str, off: object) -> None:
    """Each part of B48 never lowers a tile bound and raises some finite one (the small buffers and the two handmade
    cases)."""
    full = [b for arch, op in OUTERMOST for b in stage_bounds(arch, op, tiles_only=True)]
    monkeypatch.setattr(UnrolledTile, method, off)
    assert_raises_some_bound(full, [b for arch, op in OUTERMOST for b in stage_bounds(arch, op, tiles_only=True)])


def _more_trips(self: UnrolledTile, *args: object) -> np.ndarray:
    """B48's trips outside the runs x 1.03 (where there are any)."""
    trips = ORIGINAL_OUTSIDE(self, *args)
    return np.where(trips > 1, 1.03 * trips, trips)


def _more_words(self: UnrolledTile, *args: object) -> np.ndarray:
    """B48's words per iteration of the outermost loop x 1.03."""
    return 1.03 * ORIGINAL_PER_ITERATION(self, *args)


@pytest.mark.parametrize("method,inflated", [("_outside", _more_trips), ("_per_iteration", _more_words)],
                         ids=["runs", "words"])
def test_outermost_loop_inflation_is_caught(monkeypatch: pytest.MonkeyPatch, method: str, inflated: object) -> None:
    """B48's trips outside the runs and its words per iteration (so their refetches and reloads), each x 1.03, put some
    tile bound above a placed mapping's cost."""
    monkeypatch.setattr(UnrolledTile, method, inflated)
    assert_some_bound_exceeds([b for arch, op in OUTERMOST for b in stage_bounds(arch, op, tiles_only=True)])
