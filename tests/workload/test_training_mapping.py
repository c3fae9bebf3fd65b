"""Derived training passes and named einsum workloads on the simulator and every mapper: bit-exact
outputs under random mappings, analytical counts equal to the simulator's, every mapper's best
mapping simulated bit-exact (tso and marvel refuse non-forward kinds by design)."""

from __future__ import annotations

import numpy as np
import pytest
from random_cases import random_arch, random_mapping, random_op

from dnnmap.arch.spec import load_arch, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostModel
from dnnmap.errors import MappingError
from dnnmap.search import registry
from dnnmap.search.network import map_layer
from dnnmap.search.options import SearchOptions
from dnnmap.sim import simulate
from dnnmap.workload import ops, training
from dnnmap.workload.named import parse_workload
from dnnmap.workload.ir import Operator


def derived_ops(rng: np.random.Generator, n: int) -> list[Operator]:
    """``n`` derived operators of random small trainable forward operators (conv family and matmul)."""
    out: list[Operator] = []
    while len(out) < n:
        op = random_op(rng)
        if training.is_trainable(op):
            out.extend((*training.backward_data(op), training.weight_update(op)))
    return out[:n]


@pytest.mark.parametrize("seed", range(3))
def test_simulator_bit_exact_on_random_derived_passes(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    kinds = set()
    for k, op in enumerate(derived_ops(rng, 60)):
        arch = random_arch(rng)
        mapping = random_mapping(rng, op, arch)
        result = simulate(op, arch, mapping, seed=k)
        assert result.output_matches and result.iterations_exact, (op, mapping)
        kinds.add(op.kind)
    assert {"conv2d.bwd", "conv2d.wgt", "matmul.bwd", "matmul.wgt"} <= kinds


def test_cost_model_counts_equal_simulator_on_derived_passes() -> None:
    """Perfect factorizations: every count of the analytical model equals the simulator's (this fails
    for a scatter-form backward pass, whose output would carry window axes)."""
    rng = np.random.default_rng(7)
    checked = 0
    for op in derived_ops(rng, 120):
        arch = random_arch(rng)
        m = random_mapping(rng, op, arch)
        if any(m.total(d) != b for d, b in op.dims):
            continue
        cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
        sim = simulate(op, arch, m, compute=False)
        assert cost.compute_cycles[0] == sim.temporal_steps
        for li, lv in enumerate(arch.levels):
            for ti, t in enumerate(op.tensors):
                s = sim.counts.get((lv.name, t.name))
                for kind in COUNT_KINDS:
                    assert cost.counts[kind][0, li, ti] == (getattr(s, kind) if s else 0), (op, m, lv.name, t.name)
        checked += 1
    assert checked >= 60


SMALL_CONV = ops.conv2d("conv", 2, 4, (5, 5), 3, stride=2, padding=1)
MTTKRP = parse_workload("mttkrp:I=4,J=3,K=4,L=2").layers[0].op
TTMC = parse_workload("ttmc:I=3,J=2,K=4,R=2,S=2").layers[0].op
CASES = {"conv.fwd": SMALL_CONV, **{op.name: op for op in training.backward_data(SMALL_CONV)},
         "conv.wgt": training.weight_update(SMALL_CONV), "mttkrp": MTTKRP, "ttmc": TTMC}
SMALL = parse_arch({
    "name": "small", "clock_mhz": 100, "word_bits": 8,
    "levels": [
        {"name": "RF", "capacity": 64, "read_energy": 1, "write_energy": 1},
        {"name": "GLB", "capacity": 1024, "read_energy": 6, "write_energy": 6,
         "fanout": {"shape": [2, 2], "multicast": True, "reduction": True, "hop_energy": 2}},
        {"name": "DRAM", "read_energy": 200, "write_energy": 200,
         "transfer": {"model": "burst", "bandwidth_gbps": 0.4, "burst_bytes": 8, "cas_ns": 5}},
    ],
})
ARCH = {"tso": "nmp"}  # TSO schedules one scratchpad level above DRAM only
REFUSING = {"tso": "TSO's analytical model schedules forward conv/FC/channel-wise layers only"}


@pytest.mark.parametrize("mapper", registry.names())
@pytest.mark.parametrize("case", list(CASES))
def test_every_mapper_maps_training_passes_and_mttkrp(mapper: str, case: str) -> None:
    op = CASES[case]
    arch = load_arch(ARCH[mapper]) if mapper in ARCH else SMALL
    if mapper in REFUSING and op.kind not in ("conv2d", "pointwise", "depthwise", "fc"):
        with pytest.raises(MappingError):
            map_layer(op, arch, "edp", mapper, SearchOptions(budget=500, budget_seconds=5))
        pytest.skip(f"{mapper} refuses {op.kind} by design: {REFUSING[mapper]}")
    result = map_layer(op, arch, "edp", mapper, SearchOptions(budget=500, budget_seconds=5))
    sim = simulate(op, arch, result.mapping)
    assert sim.output_matches and sim.iterations_exact
    assert sim.macs == op.iterations
