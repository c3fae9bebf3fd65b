"""B33 (docs/search.md, "B33: the raised tile inside or over the open levels' loops"): B20's raised tiles with the loop
right above each one where it may be (:meth:`.bounds.LowerBound._loop_room`, :meth:`.bounds.LowerBound._over_rest`,
:meth:`.bounds.LowerBound._loop_boxes`), against the independent brute force of the placed space, and on the
register-file node of MobileNetV2's ``block_1_depthwise`` on Eyeriss that it was made for."""

import sys
from pathlib import Path

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.search.optimal.bounds import LowerBound, _divisor_min, _RestRows
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import zoo

sys.path.insert(0, str(Path(__file__).parent))
from test_optimal_depthwise import CASES as WINDOWS  # noqa: E402
from test_optimal_level_loops import placed_words  # noqa: E402
from test_optimal_placed_rf import ARRAY, CONV  # noqa: E402
from test_optimal_placement import assert_raises_some_bound, stage_bounds  # noqa: E402

ORIGINAL_OVER = LowerBound._over_rest


def _b30(self: LowerBound, least: np.ndarray, rest: _RestRows, level: int, keys: list[tuple[int, frozenset[int]]],
         loopable: tuple[bool, ...] | None = None, single: bool = False) -> np.ndarray:
    """B30 as it was before B33: the cover's least where ``rest`` fits, else also the least over its divisors (one row
    of ``least`` per B20 key ``(t, outer)`` of ``keys``)."""
    _, values = self._layer_lattice()
    at = rest.at
    out = []
    for row, (t, outer) in zip(least, keys):
        ratio = self._placed_tiles[(level, t, outer) if loopable is None else (level, t, outer, loopable)]
        table = _divisor_min(ratio.reshape([len(v) for v in values]), values).reshape(-1)
        below = np.where(np.isfinite(table[at]), table[at], 0.0)
        out.append(np.where(rest.valid & ~np.isfinite(ratio[at]), np.maximum(row, below), row))
    return np.array(out)


def _without(monkeypatch: pytest.MonkeyPatch) -> None:
    """B33 taken out: a loop right above a box on any moving dimension, B30's boxes."""
    monkeypatch.setattr(LowerBound, "_loop_room", lambda self, tiles, moving: np.broadcast_to(moving, tiles.shape))
    monkeypatch.setattr(LowerBound, "_over_rest", _b30)


# the register-file cases where B33 binds (on the random cases of test_optimal_level_loops it raises none)
BINDING = [WINDOWS[4], CONV, ARRAY]


@pytest.mark.parametrize("arch,op", BINDING, ids=["depthwise_array", "conv", "array"])
def test_loop_room_binds(monkeypatch: pytest.MonkeyPatch, arch, op) -> None:
    """B33 never lowers a stage bound and raises some finite one (whose soundness test_optimal_depthwise and
    test_optimal_placed_rf check with B33 in, every placement of every mapping priced)."""
    full = stage_bounds(arch, op)
    _without(monkeypatch)
    assert_raises_some_bound(full, stage_bounds(arch, op))


def test_loop_room_words_at_most_fills_and_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """B20's words with B33 never exceed what a placed brute-force mapping below the node fills on those cases (and on
    30 random ones: test_optimal_level_loops), and equal it on some; B33's words x 1.03 exceed some mapping's fills."""
    got = [placed_words(arch, op) for arch, op in BINDING]
    assert sum(over for over, _ in got) == 0 < sum(tight for _, tight in got)
    monkeypatch.setattr(LowerBound, "_over_rest", lambda self, least, *a: 1.03 * ORIGINAL_OVER(self, least, *a))
    assert sum(placed_words(arch, op)[0] for arch, op in BINDING) > 0


def test_register_file_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node B33 was made for: ``block_1_depthwise`` (G96 P56 Q56 R3 S3, stride 2) on Eyeriss after the global
    buffer's factors (P14 Q56 in time, G16 over the array; DRAM G6 P4), the register file left R3 S3. B30 took the
    input's tile Q4 S3 (a box of no loop of this register file) at 0.375 fills a MAC; the register file's tile is a set
    of its own loops R3, S3 (a loop on R or S right above R3 S3 cannot be), so each Q or P step or S loop's step brings
    two new columns: two thirds a MAC. The bound rises above the layer's best mapping (the search's incumbent) and stays
    below the node's best completion (the best mapping of its subtree: RF R, S; GLB P, Q with the output below P). B38
    and B46 (at the node), each of which alone lifts it above the best mapping too, are taken out for the comparison."""
    arch = load_arch("eyeriss")
    op = zoo.get("mobilenetv2").layer("block_1_depthwise").op
    model = CostModel(op, arch)
    node = Nodes(np.array([[[1, 1, 1, 1, 1, 1, 3, 3], [1, 1, 1, 1, 14, 56, 1, 1], [1, 6, 1, 1, 4, 1, 1, 1]]]),
                 np.array([[[1] * 8, [1, 16, 1, 1, 1, 1, 1, 1], [1] * 8]]),
                 np.array([[[0] * 8, [0, 2, 0, 0, 0, 0, 0, 0], [0] * 8]]),
                 np.array([[[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 3, 4, 5, 6, 7], [1, 4, 0, 2, 3, 5, 6, 7]]]),
                 np.zeros((1, 3, 3), dtype=np.int64))

    def priced(levels: tuple[LevelMapping, ...]) -> float:
        mapping = Mapping(levels, layer=op.name, arch=arch.name)
        return float(model.evaluate(MappingBatch.from_mappings(op, arch, [mapping])).objective("energy")[0])
    completion = priced((LevelMapping(temporal=(("R", 3), ("S", 3)), order=("R", "S")),
                         LevelMapping(temporal=(("P", 14), ("Q", 56)), order=("P", "Q"), spatial=(("G", 16),),
                                      spatial_axis=(("G", 2),), loops_above=(("O", 1),)),
                         LevelMapping(temporal=(("G", 6), ("P", 4)), order=("G", "P"))))
    best = priced((LevelMapping(temporal=(("Q", 4), ("R", 3), ("S", 3)), order=("R", "Q", "S"),
                                loops_above=(("I", 1),)),
                   LevelMapping(spatial=(("Q", 14),)),
                   LevelMapping(temporal=(("G", 96), ("P", 56)), order=("G", "P"))))
    stage = 2  # F(1)
    bb = BranchAndBound(op, arch, "energy", model, placement=True, both_axes=frozenset({1}))
    assert bb._bound(node, stage)[0] <= completion  # with B38, which alone lifts this node above ``best``
    monkeypatch.setattr(LowerBound, "_step_reads", lambda self, pr, e, h, temporal, *a: np.zeros(temporal[:, 0].shape))
    monkeypatch.setattr(BranchAndBound, "_unrolled_node_bound", lambda self, lb, *args: lb)  # B46 too lifts it
    bound = bb._bound(node, stage)[0]
    words = bb.bound._placed_words(node.spatial, 0, [(0, frozenset())],
                                   *bb.bound._level_loops(node.temporal, 1, 0))[0, 0]
    assert words == pytest.approx(2 / 3 * op.operations)
    _without(monkeypatch)
    before = BranchAndBound(op, arch, "energy", model, placement=True, both_axes=frozenset({1}))._bound(node, stage)[0]
    assert before < best < bound <= completion
