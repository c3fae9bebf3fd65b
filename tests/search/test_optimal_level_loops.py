"""B30 (docs/search.md, "B30: the raised tile within its level's loops"): B20's raised tiles of a level priced over the
boxes of the node's own open extents (:meth:`.bounds.LowerBound._over_rest`) and the loops next to them only on
dimensions that have a loop (``loopable``), against the independent brute force of the placed space, and on the
register-file node of ResNet-18's ``layer2.0.conv2`` on Eyeriss that the rule was made for."""

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import zoo
from dnnmap.workload.ir import Operator

from test_optimal_placed_rf import ARRAY, CONV, MATMUL
from test_optimal_placement import (
    assert_raises_some_bound, cases, placed_ancestors, placed_space, stage_bounds)

ORIGINAL_RATIO = LowerBound._placed_ratio


def without_level_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """B30 taken out: B20's boxes over the whole cover, a loop next to them on any dimension."""
    monkeypatch.setattr(LowerBound, "_over_rest", lambda self, least, *a: least)
    monkeypatch.setattr(LowerBound, "_placed_ratio", lambda self, covers, level, t, outer, loopable=None, rows=None:
                        ORIGINAL_RATIO(self, covers, level, t, outer, None, rows))


@pytest.mark.parametrize("arch,op", [CONV, ARRAY], ids=["conv", "array"])
def test_level_loops_bind(monkeypatch: pytest.MonkeyPatch, arch, op) -> None:
    """B30 never lowers a bound and raises some finite one on each case (whose soundness test_optimal_placed_rf
    checks with B30 in)."""
    full = stage_bounds(arch, op)
    without_level_loops(monkeypatch)
    assert_raises_some_bound(full, stage_bounds(arch, op))


def placed_words(arch: ArchSpec, op: Operator, scale: float = 1.0) -> tuple[int, int]:
    """For every placed brute-force mapping that fits, every factor stage's ancestor and every tensor but the output
    kept below the stage's level: (how many of B20's least words with B30, x ``scale``, exceed the words the mapping
    fills into that level, how many equal them). The output is left out: B20 counts its drains less the reloads."""
    batch = placed_space(op, arch)
    model = CostModel(op, arch)
    cost = model.evaluate(batch)
    bound = BranchAndBound(op, arch, "energy", model, placement=True).bound
    over = tight = 0
    for j in range(1, len(arch.levels)):
        node = placed_ancestors(batch, "F", j)
        for ch in range(j):
            for t in range(len(op.tensors)):
                if bound.keeps[ch, t] and t != bound.out:
                    words = scale * bound._placed_words(node.spatial, ch, [(t, frozenset())],
                                                        *bound._level_loops(node.temporal, j, ch))[0]
                    fills = cost.counts["fills"][:, ch, t]
                    over += int((cost.valid & (words > fills * (1 + 1e-9) + 1e-9)).sum())
                    tight += int((cost.valid & (np.abs(words - fills) <= fills * 1e-9 + 1e-9)).sum())
    return over, tight


RANDOM = cases(30, 2811)


def test_placed_words_at_most_fills() -> None:
    """B20's words with B30 never exceed what a mapping below the node fills, on 30 random architectures and layers
    (2-3 levels, bypass, fan-outs, partitioned capacities) and the register-file cases, and equal it on some."""
    got = [placed_words(arch, op) for arch, op in RANDOM + [ARRAY, CONV, MATMUL]]
    assert sum(over for over, _ in got) == 0
    assert sum(tight for _, tight in got) > 0


def test_placed_words_inflation_is_caught() -> None:
    """Those words x 1.03 exceed some mapping's fills (the check above can fail)."""
    assert sum(placed_words(arch, op, 1.03)[0] for arch, op in RANDOM[:10] + [MATMUL]) > 0


def input_terms_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """B38, B39 and B40 taken out (at :func:`register_file_node` they price the input's refills at least as high as
    B30)."""
    monkeypatch.setattr(LowerBound, "_step_reads", lambda self, pr, e, h, temporal, *a: np.zeros(temporal[:, 0].shape))
    monkeypatch.setattr(BranchAndBound, "_shared_order", lambda self, *args: args[-2])  # B39 out: B30 against B20
    monkeypatch.setattr(LowerBound, "_run_fills", lambda self, pr, temporal, spatial, fixed_from, tile, e, d, h:
                        (e, d, h))  # B40 binds here too (the input's box of 2,160 words in 12)


def register_file_node() -> tuple[Operator, ArchSpec, CostModel, Nodes, float, float]:
    """The ``F(1)`` node of :func:`test_register_file_node` (``layer2.0.conv2`` on Eyeriss, the global buffer's factors
    fixed): its operator, architecture, cost model, node, the best completion's energy and the input's fills there."""
    arch = load_arch("eyeriss")
    op = zoo.get("resnet18").layer("layer2.0.conv2").op
    model = CostModel(op, arch)
    rest = np.array([1, 1, 1, 16, 4, 7, 1, 1])
    node = Nodes(np.array([[rest, [1, 1, 128, 2, 7, 4, 1, 1], [1] * 8]]),
                 np.array([[[1] * 8, [1, 1, 1, 4, 1, 1, 3, 3], [1] * 8]]), np.zeros((1, 3, 8), dtype=np.int64),
                 np.tile(np.arange(8), (1, 3, 1)), np.zeros((1, 3, 3), dtype=np.int64))
    best = Mapping((LevelMapping(temporal=(("C", 16), ("P", 4), ("Q", 7)), order=("P", "C", "Q"),
                                 loops_above=(("I", 2), ("O", 1))),
                    LevelMapping(temporal=(("K", 128), ("C", 2), ("P", 7), ("Q", 4)), order=("Q", "K", "C", "P"),
                                 spatial=(("C", 4), ("R", 3), ("S", 3)), loops_above=(("I", 1), ("O", 2))),
                    LevelMapping()), layer=op.name, arch=arch.name)
    priced = model.evaluate(MappingBatch.from_mappings(op, arch, [best]))
    completion = priced.objective("energy")[0]
    return op, arch, model, node, completion, priced.counts["fills"][0, 0, 0]


def test_register_file_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node B30 was made for: ``layer2.0.conv2`` (K128 C128 P28 Q28 R3 S3) on Eyeriss after the global buffer's
    factors (K128 C2 P7 Q4 in time, C4 R3 S3 over the array), the register file left C16 P4 Q7 and no K: each input
    word a processing element fetches serves one MAC, whatever the orders and placements. B20 took the input's raised
    tile over K (a loop of the buffer) and a loop on R next to it (R has no loop here), half a fill a MAC; B30 prices
    three quarters of it. The bound rises by more than a third and stays below the node's best completion (the best
    mapping of its subtree, found by the search run from this node: input tile below P and C, output below P). B38,
    B39, B40 and B46 (at the node, which prices the input's refills as high) are taken out for the comparison."""
    op, arch, model, node, completion, fills = register_file_node()
    stage = 2  # F(1)
    bb = BranchAndBound(op, arch, "energy", model, placement=True, both_axes=frozenset({1}))
    assert bb._bound(node, stage)[0] <= completion  # with B38, which binds here more than B30 (docs "B38"), and B39
    input_terms_out(monkeypatch)
    monkeypatch.setattr(BranchAndBound, "_unrolled_node_bound", lambda self, lb, *args: lb)  # B46: as much as B30
    bound = bb._bound(node, stage)[0]
    # the input's words: the completion fills one a MAC; B30 three quarters of that (B28's entries counted half, over
    # a loop of 2 trips on P), B20 alone half
    words = bb.bound._placed_words(node.spatial, 0, [(0, frozenset())],
                                   *bb.bound._level_loops(node.temporal, 1, 0))[0, 0]
    assert 0.75 * op.operations == words < fills == op.operations
    without_level_loops(monkeypatch)
    before = BranchAndBound(op, arch, "energy", model, placement=True, both_axes=frozenset({1}))._bound(node, stage)[0]
    assert before * 4 / 3 < bound <= completion
