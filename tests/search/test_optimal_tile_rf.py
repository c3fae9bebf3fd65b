"""B36 (docs/search.md, "B36: the tile's own raised tiles at the tile bound"): at the tile bound (the tile of level
``j - 1`` known before level ``j``'s factors are split), B20's raised tiles of that level priced with B30/B33 over the
tile itself (:meth:`.bounds.LowerBound._tile_loops`), against the independent brute force.

Every placed mapping of small register files under a global buffer (with and without a 2x2 array, both-axis unrolling
too) and of random architectures and layers is priced: the tile bound of each mapping's tile under its ancestor is at
most its cost for every objective (so below every completion of the tile's children); taking B36 out lowers some
finite tile bound, so the check covers it; and B36's refills x 1.03 put some tile bound above a mapping's cost.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.workload.ir import Operator

from test_optimal_placed_rf import ARRAY, CASES, CONV, _ids, assert_below_every_cost
from test_optimal_placement import assert_raises_some_bound, cases, stage_bounds, assert_some_bound_exceeds

ORIGINAL_REFILLS = LowerBound._placed_refills
ORIGINAL_LOOPS = LowerBound._tile_loops


def tile_bounds(arch: ArchSpec, op: Operator, both: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    """(tile bound, cost) of every placed brute-force mapping for every level with a tile bound and every objective."""
    return stage_bounds(arch, op, both, tiles_only=True)


def _without(self: LowerBound, temporal: np.ndarray, fixed_from: int, ch: int, tile: np.ndarray
             ) -> tuple[np.ndarray | None, np.ndarray, bool]:
    """B36 taken out: the tile's level priced as before it (no open extents known below the open fan-out)."""
    return self._level_loops(temporal, fixed_from, ch)


RANDOM = cases(24, 3636)
BOTH = [(ARRAY[0], ARRAY[1], True)]


@pytest.mark.parametrize("arch,op,both", [(a, o, False) for a, o in CASES] + BOTH,
                         ids=_ids(CASES) + ["tiny_rf_2d-a-both"])
def test_tile_bound_below_every_completion(arch: ArchSpec, op: Operator, both: bool) -> None:
    """The register-file cases: every objective's tile bound at most the cost of every mapping with that tile."""
    assert_below_every_cost(tile_bounds(arch, op, both), "tile bound")


def test_tile_bound_below_every_completion_random() -> None:
    """Random architectures and layers (2-3 levels, bypass, fan-outs, partitioned capacities)."""
    for arch, op in RANDOM:
        assert_below_every_cost(tile_bounds(arch, op), f"{arch.name} {op.name}")


@pytest.mark.parametrize("arch,op,both", [(*CONV, False), (*ARRAY, True)], ids=["conv", "array-both"])
def test_tile_rf_binds(monkeypatch: pytest.MonkeyPatch, arch: ArchSpec, op: Operator, both: bool) -> None:
    """B36 never lowers a tile bound and raises some finite one (a convolution's register file under a 2-wide and a
    2x2 array, both-axis unrolling on the latter)."""
    full = tile_bounds(arch, op, both)
    monkeypatch.setattr(LowerBound, "_tile_loops", _without)
    assert_raises_some_bound(full, tile_bounds(arch, op, both))


def test_tile_rf_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B20's refills with B36's facts x 1.03 (only there: at the tile's level of the tile bound) put some tile bound
    above a mapping's cost."""
    marked: set[int] = set()  # ids of the tiles B36 hands to B20

    def loops(self: LowerBound, temporal: np.ndarray, fixed_from: int, ch: int, tile: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, bool]:
        got = ORIGINAL_LOOPS(self, temporal, fixed_from, ch, tile)
        marked.add(id(got[0]))
        return got

    def inflated(self: LowerBound, entries: dict, spatial: np.ndarray, ch: int, left: np.ndarray | None,
                 *more: object) -> tuple[np.ndarray, ...]:
        got = ORIGINAL_REFILLS(self, entries, spatial, ch, left, *more)
        return tuple(1.03 * x for x in got) if id(left) in marked else got

    monkeypatch.setattr(LowerBound, "_tile_loops", loops)
    monkeypatch.setattr(LowerBound, "_placed_refills", inflated)
    mutated = tile_bounds(*CONV)
    assert marked
    assert_some_bound_exceeds(mutated)
