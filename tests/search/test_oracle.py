"""The exhaustive mapper finds the optimum of an independent brute-force enumeration.

The oracle (``brute_force.py``) shares no map-space code with ``dnnmap.search``: it builds
every mapping of the declared space as a :class:`Mapping` (all loop orders of every level,
level 0 included, and every fan-out axis assignment) and prices them with the cost model.
The architectures have bounded capacities, so part of every space is invalid.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.mappers import exhaustive_search
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings


def _level(name: str, capacity: object, energy: float, **fields: object) -> dict:
    return {"name": name, "capacity": capacity, "read_energy": energy, "write_energy": energy, **fields}


def _dram(**fields: object) -> dict:
    return {"name": "DRAM", "read_energy": 200, "write_energy": 200, **fields}


ARCHS: dict[str, ArchSpec] = {
    # one buffer feeding 4 MAC lanes, bandwidth-limited
    "two_level_1d": parse_arch({"name": "two_level_1d", "clock_mhz": 100, "levels": [
        _level("Buf", 10, 2, bandwidth=2, fanout={"shape": [4], "hop_energy": 1}), _dram()]}),
    # a double-buffered buffer over a 3x2 MAC array; compute and transfers do not overlap
    "two_level_2d": parse_arch({"name": "two_level_2d", "clock_mhz": 100, "overlap": False, "levels": [
        _level("Buf", 16, 3, buffers=2, fanout={"shape": [3, 2], "hop_energy": 1}),
        _dram(transfer={"model": "burst", "bandwidth_gbps": 0.2, "burst_bytes": 4, "cas_ns": 10})]}),
    # register files under a 1-D array of 4, burst DRAM
    "three_level_1d": parse_arch({"name": "three_level_1d", "clock_mhz": 100, "word_bits": 8, "levels": [
        _level("RF", 6, 1), _level("GLB", 48, 6, fanout={"shape": [4], "hop_energy": 2}),
        _dram(transfer={"model": "burst", "bandwidth_gbps": 0.4, "burst_bytes": 8, "cas_ns": 5})]}),
    # weight-only RFs each feeding 2 MAC lanes, under a 2x2 array without multicast
    "three_level_2d": parse_arch({"name": "three_level_2d", "clock_mhz": 200, "levels": [
        _level("RF", {"weight": 4}, 1, keeps=["weight"], fanout={"shape": [2], "reduction": False}),
        _level("GLB", 10, 6, fanout={"shape": [2, 2], "multicast": False, "hop_energy": 2}),
        _dram(transfer={"model": "volume", "bandwidth_gbps": 0.8})]}),
}

LAYERS: dict[str, Operator] = {
    "conv": ops.conv2d("conv", 2, 2, (3, 3), (2, 1), padding=(0, 0, 0, -1)),  # K2 C2 P2 Q2 R2, right column cropped
    "depthwise": ops.depthwise("dw", 2, (4, 2), 2, stride=(2, 1)),  # G2 P2 R2 S2, strided
    "pointwise": ops.pointwise("pw", 2, 4, (3, 1)),  # K4 C2 P3
    "matmul": ops.matmul("mm", 3, 4, 2),  # M3 K4 N2
    "pool": ops.pool("pool", 2, (4, 1), (3, 1), stride=1),  # G2 P2 R3, no weights
}


@pytest.fixture(scope="module")
def oracle() -> dict[tuple[str, str], CostBatch]:
    """Brute-force costs of every mapping of every (architecture, layer) case."""
    costs = {}
    for arch_name, arch in ARCHS.items():
        for layer_name, op in LAYERS.items():
            mappings = all_mappings(op, arch)
            costs[arch_name, layer_name] = CostModel(op, arch).evaluate(
                MappingBatch.from_mappings(op, arch, mappings))
    return costs


@pytest.mark.parametrize("arch_name", ARCHS)
@pytest.mark.parametrize("layer_name", LAYERS)
def test_exhaustive_finds_the_brute_force_optimum(oracle: dict[tuple[str, str], CostBatch],
                                                  arch_name: str, layer_name: str) -> None:
    cost = oracle[arch_name, layer_name]
    assert 0 < cost.valid.sum() < len(cost.valid)  # capacities bind: the optimum is among valid ones only
    for objective in OBJECTIVES:
        found = exhaustive_search(LAYERS[layer_name], ARCHS[arch_name], objective)
        assert found.cost.objective(objective)[0] == pytest.approx(cost.objective(objective).min(), rel=1e-12)


def test_oracle_space_is_the_declared_space() -> None:
    """Spot check of the enumerator itself: exact factorizations, fan-outs respected, no duplicates."""
    op, arch = LAYERS["matmul"], ARCHS["three_level_2d"]
    mappings = all_mappings(op, arch)
    assert len(set(mappings)) == len(mappings)
    batch = MappingBatch.from_mappings(op, arch, mappings)
    bounds = np.array([op.bound(d) for d in op.dim_names])
    assert ((batch.temporal * batch.spatial).prod(axis=1) == bounds).all()
    glb_x = np.where(batch.axes[:, 1] == 0, batch.spatial[:, 1], 1).prod(axis=1)
    glb_y = np.where(batch.axes[:, 1] == 1, batch.spatial[:, 1], 1).prod(axis=1)
    assert glb_x.max() == 2 and glb_y.max() == 2 and batch.spatial[:, 0].prod(axis=1).max() == 2
