"""Per-tensor placement (docs/cost-model.md section 1b): a hand-worked example where it beats the best
shared-boundary mapping, the simulator on the same loop structure, and the mapping-level plumbing
(files, printer, legality, Timeloop export). The random model-vs-simulator cases that use placement
are in ``test_model_vs_simulator_metrics.py`` (``test_placement_exact``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from archs import eyeriss_without_hops

from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import MappingError
from dnnmap.mapping.io import mapping_from_dict, mapping_to_dict
from dnnmap.mapping.mapping import LevelMapping, Mapping, validate_mapping
from dnnmap.mapping.printer import format_loop_nest
from dnnmap.mapping.timeloop_map import mapping_to_timeloop
from dnnmap.search.optimal import optimal_search
from dnnmap.sim import sim_metrics, simulate
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator


def _placed(p: int) -> tuple[Operator, Mapping]:
    """The 1x1 convolution K=256 C=128 P=Q=``p`` and its placed mapping on Eyeriss: per PE a register tile
    of 8 output channels x 16 input channels whose input word sits below the C loop (1 input word, where
    a shared boundary needs 16 of the 12 the register file has), 8 x 8 PEs over K and C, and at the
    global buffer the whole input above the K loop and the output below it."""
    op = ops.conv2d("pw", 128, 256, (p, p), 1, 1, 0, 1, 1)
    rf = LevelMapping(temporal=(("K", 8), ("C", 16)), order=("C", "K"), loops_above=(("I", 1),))
    glb = LevelMapping(temporal=(("K", 4), ("P", p), ("Q", p)), order=("K", "Q", "P"),
                       spatial=(("K", 8), ("C", 8)), spatial_axis=(("C", 1),), loops_above=(("O", 1),))
    return op, Mapping((rf, glb, LevelMapping()), layer="pw", arch="eyeriss")


def test_placement_beats_the_best_shared_boundary_mapping() -> None:
    """Energy by hand (x MAC, Eyeriss with hop energy 0), 6,422,528 MACs (1 each):

    - DRAM (200/word): every word once, I 25,088 + W 32,768 reads + O 50,176 updates: 21,606,400.
    - GLB (6/word): I fills 25,088; I reads 8 distinct words (the 8 C-PEs; multicast over the K-PEs) per
      (k1, q, p, c0) event, 4 x 196 x 16 x 8 = 100,352; O: 64 words per (k1, q, p) event drained from the
      PEs, reduced over the C-PEs, 50,176 updates, none reloaded, and drained to DRAM once, 50,176:
      225,792 words, 1,354,752.
    - RF (1/word): per MAC an I read, a W read and an O update, 3 x 6,422,528; read-modify-write reads of
      all but the first touches, 6,422,528 - 401,408 (64 PEs x 8 words x 784 events); fills I 1 word per
      PE and (k1, q, p, c0) event, 802,816, W 128 per PE and k1, 32,768; O drains 401,408: 26,525,696.

    55,909,376 in all, below the 56,611,840 the optimal mapper proves for the shared-boundary space."""
    arch = eyeriss_without_hops()
    op, m = _placed(14)
    validate_mapping(m, op, arch)
    model = CostModel(op, arch)
    cost = model.evaluate(MappingBatch.from_mappings(op, arch, [m]))
    assert cost.valid[0]
    assert cost.energy_breakdown[0].tolist() == [26_525_696, 1_354_752, 21_606_400, 0, 6_422_528]
    assert cost.energy[0] == 55_909_376
    assert cost.tile_words[0, 0].tolist() == [1, 128, 8] and cost.tile_words[0, 1].tolist() == [25_088, 0, 12_544]
    # without the placement the register file would hold 16 input words (it has 12), the buffer 75,264 (55,296)
    shared = Mapping(tuple(replace(lm, loops_above=()) for lm in m.levels))
    unplaced = model.evaluate(MappingBatch.from_mappings(op, arch, [shared]))
    assert not unplaced.valid[0] and unplaced.tile_words[0, 0, 0] == 16 and unplaced.tile_words[0, 1].sum() == 75_264
    best = optimal_search(op, arch, "energy", budget_seconds=60)
    assert best.certificate.proven and best.result.cost.energy[0] == 56_611_840
    assert cost.energy[0] < best.result.cost.energy[0]


def test_the_simulator_counts_the_placed_example() -> None:
    """The same loop structure on a 2 x 2 feature map (the 14 x 14 one has 6.4 M lane-steps: 21 s and 1.5 GB
    in the simulator, which also gave 55,909,376): every count, tile and energy equal the model's."""
    arch = eyeriss_without_hops()
    op, m = _placed(2)
    cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
    sim = simulate(op, arch, m)
    metrics = sim_metrics(sim, op, arch, m)
    assert sim.output_matches
    for li, lv in enumerate(arch.levels):
        for ti, t in enumerate(op.tensors):
            got = sim.count(lv.name, t.name)
            assert [cost.counts[k][0, li, ti] for k in ("reads", "fills", "updates", "drains", "accumulate_reads")] \
                == [got.reads, got.fills, got.updates, got.drains, got.accumulate_reads], (lv.name, t.name)
    assert sim.tile_words[("RF", "I")] == 1 and sim.tile_words[("GLB", "O")] == 8 * 8 * 4
    assert cost.energy[0] == metrics.energy


def test_mapping_files_printer_and_timeloop_export() -> None:
    arch = eyeriss_without_hops()
    op, m = _placed(14)
    data = mapping_to_dict(m, [lv.name for lv in arch.levels])
    assert data["levels"]["RF"]["loops_above"] == {"I": 1} and data["levels"]["GLB"]["loops_above"] == {"O": 1}
    assert mapping_from_dict(data, [lv.name for lv in arch.levels], op=op).levels == m.levels
    text = format_loop_nest(m, op, arch).splitlines()
    k_loop = text.index("for k1 in [0:4)")
    assert text[k_loop - 1] == "[GLB] keeps I:25088 words"
    assert text[k_loop + 1] == "  [GLB] keeps O:12544 words (tile below the loops above)"
    c_loop = next(i for i, line in enumerate(text) if line.strip() == "for c0 in [0:16)")
    assert text[c_loop + 1].strip() == "[RF] keeps I:1 words (tile below the loops above)"
    with pytest.raises(MappingError, match="GLB: O placed below some of the level's loops"):
        mapping_to_timeloop(m, op, arch)


@pytest.mark.parametrize("level, above, message", [
    (1, (("W", 1),), "does not keep"),  # weights bypass the global buffer
    (1, (("O", 4),), "has 3 loops"),
    (2, (("O", 1),), "backing store"),
    (0, (("I", 1), ("I", 2)), "names a tensor twice"),
])
def test_illegal_placements_are_refused(level: int, above: tuple, message: str) -> None:
    arch = eyeriss_without_hops()
    op, m = _placed(14)
    levels = list(m.levels)
    levels[level] = replace(levels[level], loops_above=above)
    if level == 2:
        levels[2] = replace(levels[2], temporal=(("N", 1),))
    with pytest.raises(MappingError, match=message):
        validate_mapping(Mapping(tuple(levels)), op, arch)
