"""TSO mappings of random small layers are legal per the core on the NMP preset itself: the structure
(validate_mapping on the [4, 8] fan-out), the capacities (the cost model's validity and the simulator's
largest tile per scratchpad role) and the execution (the simulator runs every iteration once, bit-exact)."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import validate_mapping
from dnnmap.search.network import map_layer
from dnnmap.arch.variants import with_dram_model
from dnnmap.sim import simulate
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator


def random_layer(rng: np.random.Generator, k: int) -> Operator:
    """A small layer of a kind TSO schedules: conv (strided, padded, dilated, grouped), pointwise, FC,
    depthwise, pooling, add."""
    kind = rng.choice(["conv", "conv", "conv", "pointwise", "fc", "depthwise", "pool", "add"])
    c, m, hw = int(rng.integers(1, 7)), int(rng.integers(1, 41)), int(rng.integers(3, 10))
    name = f"{kind}{k}"
    if kind == "conv":
        kernel = int(rng.integers(1, 4))
        groups = int(rng.choice([1, 1, 2]))
        return ops.conv2d(name, c * groups, m * groups, hw + kernel, kernel, stride=int(rng.integers(1, 3)),
                          padding=int(rng.integers(0, 2)), dilation=int(rng.choice([1, 1, 2])), groups=groups)
    if kind == "pointwise":
        return ops.pointwise(name, c, m, hw)
    if kind == "fc":
        return ops.fully_connected(name, int(rng.integers(1, 60)), m)
    if kind == "depthwise":
        return ops.depthwise(name, m, hw, 3, stride=int(rng.integers(1, 3)), padding=1)
    if kind == "pool":
        return ops.pool(name, m, hw, 2, mode=str(rng.choice(["max", "avg"])))
    return ops.eltwise(name, m, hw)


@pytest.mark.parametrize("seed", range(4))
def test_tso_mappings_of_random_small_layers_are_legal(nmp: ArchSpec, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for k in range(10):
        op = random_layer(rng, k)
        arch = with_dram_model(nmp, str(rng.choice(["burst", "volume"])))
        result = map_layer(op, arch, mapper="tso")
        validate_mapping(result.mapping, op, nmp)
        cost = CostModel(op, nmp).evaluate(MappingBatch.from_mappings(op, nmp, [result.mapping]))
        assert cost.valid[0], (op, result.mapping)
        sim = simulate(op, nmp, result.mapping, seed=k)
        assert sim.output_matches and sim.iterations_exact, (op, result.mapping)
        mb = nmp.levels[0]
        for t in op.tensors:
            tile = sim.tile_words.get((mb.name, t.name), 0)
            assert tile <= mb.capacity_for(t.role), (op.name, t.name, tile, result.schedule.describe())
