"""Local search in the widened map space (``search.refine``): never worse than its start, legal, priced as the
simulator counts, and able to reach mappings the declared space does not hold (both-axis splits with a tile
placed inside its level's loops)."""

from __future__ import annotations

import numpy as np
import pytest
from archs import eyeriss_without_hops
from model_checks import assert_counts_equal

from dnnmap.arch.spec import load_arch
from dnnmap.mapping.mapping import BOTH_AXES, validate_mapping
from dnnmap.search.network import map_layer
from dnnmap.search.refine import refine
from dnnmap.sim import simulate
from dnnmap.workload import ops


def test_pointwise_conv_moves_each_input_into_the_registers_once() -> None:
    """A 1x1 convolution 64 -> 64 on Eyeriss: the declared space's best mapping splits the output channels
    over one axis of the array, so every input word is filled into four PEs' registers. The refined mapping
    splits the input channels over both axes and keeps the outputs below the output-channel loop in the
    register file: each input word is filled once, and the energy drops by at least those fills."""
    arch = eyeriss_without_hops()
    op = ops.conv2d("pw", 64, 64, (14, 14), 1, 1, 0, 1, 1)
    start = map_layer(op, arch, "energy", "auto")
    best = refine(start, "energy")
    inputs = 64 * 14 * 14
    rf, i = 0, [t.role for t in op.tensors].index("input")
    assert start.cost.counts["fills"][0, rf, i] > inputs
    assert best.cost.counts["fills"][0, rf, i] == inputs
    saved = (start.cost.counts["fills"][0, rf, i] - inputs) * start.cost.action_energy[rf, i, 1]
    assert float(start.cost.energy[0] - best.cost.energy[0]) >= saved > 0
    glb = best.mapping.levels[1]
    assert dict(glb.spatial_axis).get("C") == BOTH_AXES and best.mapping.placed
    validate_mapping(best.mapping, op, arch)
    assert_counts_equal(best.cost, simulate(op, arch, best.mapping), op, arch, best.mapping)


@pytest.mark.parametrize("objective", ["energy", "edp", "latency"])
def test_refinement_is_never_worse_than_its_start(objective: str) -> None:
    rng = np.random.default_rng(len(objective))
    for arch in (load_arch("eyeriss"), load_arch("hwff_config1")):
        for _ in range(2):
            c, k, hw, r = (int(x) for x in (rng.choice([3, 8, 16]), rng.choice([4, 16, 32]), rng.choice([7, 12]),
                                            rng.choice([1, 3])))
            op = ops.conv2d("c", c, k, (hw, hw), r, 1, r // 2, 1, 1)
            start = map_layer(op, arch, objective, "auto")
            best = refine(start, objective)
            before = start.cost.objective(objective)[0]
            assert best.cost.objective(objective)[0] <= before
            validate_mapping(best.mapping, op, arch)
            assert bool(best.cost.valid[0])
