"""B46 (docs/search.md, "B46: B45 for sliding-window layers"): ``F(1)``'s tile bound and nodes with the register file's
pairs priced per unrolling of the array (:class:`.unrolled_tile.UnrolledTile`) on layers whose input has a sliding
window, against the independent brute force.

On small register files under an array (a 3-tap window, strided, dilated and two-dimensional ones) and on random
variants of them (capacities, bypass, array shape, multicast, reduction, hop energy, accumulation, final width, buffer
size; kernels of 2-3 taps, stride 1-2, dilation 1-2), every placement of every mapping is priced: every stage's ancestor
bound and the tile bound are at most its cost for every objective, with and without both axes; taking B46 out lowers
some finite tile bound, and some node's bound on a ResNet-18 layer; B46 x 1.03 is caught; it stays off without halo
reuse. B47's per-unrolling values on these cases are at most every mapping's cost, and the search with B46 and B47
proves the brute force's optimum.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.optimal.unrolled_tile import UnrolledTile
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_level_loops import input_terms_out, register_file_node, without_level_loops
from test_optimal_placed_rf import assert_placed_bounds_below
from test_optimal_placement import assert_raises_some_bound, assert_some_bound_exceeds, placed_space, stage_bounds
from test_optimal_tile_units import assert_unit_bounds_below
from test_optimal_unrolled_tile import _applied, _ids, _inflated, _off, assert_search_proves_the_optimum, tiny_array

WINDOW = (tiny_array({"input": 3, "weight": 3, "output": 2}), ops.conv2d("w", 1, 2, (4, 1), (3, 1)))
STRIDED = (tiny_array({"input": 2, "weight": 2, "output": 1}, ("input", "output")),
           ops.conv2d("s", 1, 2, (5, 1), (3, 1), stride=2))
# a dilated window whose wrap returns to a tile sharing words with the one before (a step's residue class does not
# hold there): the case that caught the residue count applied to every event
DILATED = (tiny_array({"input": 5, "weight": 4, "output": 1}, fanout={"shape": [3], "hop_energy": 1.0}, rmw=False,
                      glb=12), ops.conv2d("d", 1, 2, (7, 1), (3, 1), dilation=2))
SQUARE = (tiny_array({"input": 4, "weight": 2, "output": 2}, ("input", "output")), ops.conv2d("q", 1, 1, (3, 3), (2, 2)))
CASES = [WINDOW, STRIDED, DILATED, SQUARE]


def _variant(rng: np.random.Generator) -> tuple[ArchSpec, Operator]:
    """A random :func:`tiny_array` and a random one-dimensional window layer (2-3 taps, stride or dilation 1-2)."""
    caps = {r: int(rng.integers(1, 7)) for r in ("input", "weight", "output")}
    keeps = ("input", "weight", "output") if rng.random() < 0.5 else ("input", "output")
    fanout = {"shape": [[2, 2], [2], [3]][int(rng.integers(0, 3))], "multicast": bool(rng.random() < 0.7),
              "reduction": bool(rng.random() < 0.7), "hop_energy": float(rng.integers(0, 3))}
    arch = tiny_array(caps, keeps, fanout, bool(rng.random() < 0.7), [None, 8][int(rng.integers(0, 2))],
                      int(rng.integers(4, 40)))
    taps, stride = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    dilation = int(rng.integers(1, 3)) if stride == 1 else 1
    height = (int(rng.integers(2, 5)) - 1) * stride + (taps - 1) * dilation + 1
    return arch, ops.conv2d("c", int(rng.integers(1, 3)), int(rng.integers(1, 3)), (height, 1), (taps, 1),
                            stride=stride, dilation=dilation)


def _random_cases(n: int, seed: int) -> list[tuple[ArchSpec, Operator]]:
    """``n`` random :func:`_variant` cases where B46 applies and the placed space with both axes has 3,000-20,000
    mappings."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = _variant(rng)
        if _applied(arch, op) and 3_000 <= len(placed_space(op, arch, both=True)) <= 20_000:
            out.append((arch, op))
    return out


RANDOM = _random_cases(8, 46)


@pytest.mark.parametrize("arch,op", CASES[:-1] + [pytest.param(*SQUARE, marks=pytest.mark.slow)] + RANDOM,
                         ids=_ids(CASES + RANDOM))
def test_window_unrolled_bound_never_exceeds_any_completion(arch: ArchSpec, op: Operator) -> None:
    """Every objective, every stage and the tile bound (with B46), with placement (and with both axes)."""
    assert _applied(arch, op)
    assert_placed_bounds_below(arch, op)


@pytest.mark.parametrize("arch,op", CASES[:-1] + RANDOM, ids=_ids(CASES[:-1] + RANDOM))
def test_window_unit_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """B47 on these layers: each placed mapping's value at its own unrolling (B46 at its ``F(1)`` tile bound's node
    and tile) is at most its energy and EDP."""
    assert_unit_bounds_below(arch, op)


@pytest.mark.parametrize("arch,op", [WINDOW, STRIDED], ids=_ids([WINDOW, STRIDED]))
def test_search_with_window_unrolled_proves_the_brute_force_optimum(arch: ArchSpec, op: Operator) -> None:
    """The placed search with both axes (B46 and B47 on) proves the least energy and EDP of every placed brute-force
    mapping."""
    assert_search_proves_the_optimum(arch, op)


def test_window_unrolled_tile_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """B46 never lowers a tile bound and raises some finite one on the one-dimensional window cases. (At ``F(1)``'s
    nodes it binds on ResNet-18's ``layer1.0.conv1``, docs "B46", not on these small cases, where the node's own
    per-tensor orders already price as much.)"""
    full = [b for arch, op in CASES[:-1] for b in stage_bounds(arch, op, tiles_only=True)]
    monkeypatch.setattr(UnrolledTile, "per_unrolling", _off)
    assert_raises_some_bound(full, [b for arch, op in CASES[:-1] for b in stage_bounds(arch, op, tiles_only=True)])


def test_window_unrolled_node_bound_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """B46 at an ``F(1)`` node's own unrolling raises the bound of ResNet-18 ``layer2.0.conv2``'s register-file node
    (:func:`.test_optimal_level_loops.register_file_node`) where the other terms on the input's refills (B30, B38-B40)
    are out, by more than a third, and stays below the node's best completion."""
    op, arch, model, node, completion, _ = register_file_node()
    input_terms_out(monkeypatch)
    without_level_loops(monkeypatch)
    bound = BranchAndBound(op, arch, "energy", model, placement=True, both_axes=frozenset({1}))._bound(node, 2)[0]
    monkeypatch.setattr(BranchAndBound, "_unrolled_node_bound", lambda self, lb, *args: lb)
    before = BranchAndBound(op, arch, "energy", model, placement=True, both_axes=frozenset({1}))._bound(node, 2)[0]
    assert before * 4 / 3 < bound <= completion


def test_window_unrolled_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B46 x 1.03 puts some tile bound above a placed mapping's cost."""
    monkeypatch.setattr(UnrolledTile, "per_unrolling", _inflated)
    assert_some_bound_exceeds([b for arch, op in (WINDOW, STRIDED) for b in stage_bounds(arch, op, tiles_only=True)])


def test_window_unrolled_needs_halo_reuse() -> None:
    """B46 stays off where the register file or the buffer refills a changed tile whole or keeps halos only across
    the innermost loop (P1 does not hold for a window tensor there)."""
    arch, op = WINDOW
    for level in (0, 1):
        for halo in (False, "innermost"):
            levels = [lv.model_copy(update={"halo_reuse": halo}) if m == level else lv
                      for m, lv in enumerate(arch.levels)]
            assert not _applied(arch.model_copy(update={"levels": levels}), op)
