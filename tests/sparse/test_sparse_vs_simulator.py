"""The sparse cost model against the simulator executing sparse mappings literally (docs/sparse.md).

Under the exactness condition (N:M sparsity along a reduction dimension of the weights, M dividing its
level-0 factor, that dimension not split spatially, lanes that merge a dense operand's words sharing the
weight word; perfect factorizations; ``tests/support/sparse_cases.py``) every count, tile, hop, energy,
latency (volume or no transfer model), DRAM byte, MAC and compute cycle equals the simulator's, which
moves and multiplies the real non-zeros of a real sparse tensor. Unstructured sparsity: the model is the
expectation; what stays exact there, and the bound the compute cycles obey, are checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, Fanout, Level, Sparsity
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostBatch, CostModel
from dnnmap.mapping.load_balance import expected_overhead
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.sim import SimMetrics, SimResult, sim_metrics, simulate
from dnnmap.sim.sparse import structured_pattern
from dnnmap.workload import ops
from dnnmap.workload.sparsity import with_densities
from sparse_cases import SparseCase, random_sparse_case


@dataclass(frozen=True)
class Run:
    case: SparseCase
    cost: CostBatch
    sim: SimResult
    metrics: SimMetrics

    @property
    def where(self) -> str:
        c = self.case
        return f"{c.structure} {c.op.kind} {c.op.dims} on {c.arch.levels}, {c.arch.sparsity} with {c.mapping}"


def _runs(seed: int, n: int, exact: bool, imbalance: bool = False) -> list[Run]:
    """``imbalance``: the model's expected load-imbalance overhead (off: the perfectly balanced lanes, exact
    for N:M sparsity)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c = random_sparse_case(rng, exact)
        sim = simulate(c.op, c.arch, c.mapping, nonzero=c.nonzero)
        cost = CostModel(c.op, c.arch, imbalance).evaluate(MappingBatch.from_mappings(c.op, c.arch, [c.mapping]))
        out.append(Run(c, cost, sim, sim_metrics(sim, c.op, c.arch, c.mapping)))
    return out


@pytest.fixture(scope="module")
def structured() -> list[Run]:
    return _runs(13, 200, exact=True)


def _close(a: float, b: float) -> bool:
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


def test_the_cases_exercise_the_options(structured: list[Run]) -> None:
    def share(pred) -> int:
        return sum(1 for r in structured if pred(r))
    assert share(lambda r: r.case.arch.sparsity.decompress_below is None) > 80  # zero-skipping MACs
    assert share(lambda r: r.case.arch.sparsity.decompress_below is not None) > 40
    assert share(lambda r: r.case.arch.sparsity.format == "csr") > 60
    assert share(lambda r: r.sim.macs < r.case.op.macs) > 80
    assert share(lambda r: not r.metrics.valid) > 10 and share(lambda r: r.metrics.valid) > 60
    assert share(lambda r: r.case.op.kind == "matmul") > 20 and share(lambda r: r.case.op.kind != "matmul") > 60


def test_structured_sparsity_is_exact(structured: list[Run]) -> None:
    for r in structured:
        c, sim, cost = r.case, r.sim, r.cost
        assert sim.output_matches, f"the sparse execution's output: {r.where}"
        assert _close(cost.compute_cycles[0], sim.temporal_steps), f"compute cycles: {r.where}"
        assert _close(cost.utilization[0] * cost.cycles[0] * c.arch.num_macs, sim.macs), f"MACs: {r.where}"
        for li, lv in enumerate(c.arch.levels):
            for ti, t in enumerate(c.op.tensors):
                counted = sim.count(lv.name, t.name)
                for kind in COUNT_KINDS:
                    assert _close(cost.counts[kind][0, li, ti], getattr(counted, kind)), \
                        f"{lv.name} {t.name} {kind}: {r.where}"
                assert _close(cost.tile_words[0, li, ti], r.metrics.tile_words.get((lv.name, t.name), 0)) \
                    or li == len(c.arch.levels) - 1, f"tile {lv.name} {t.name}: {r.where}"
            if lv.fanout is not None:
                assert _close(cost.hop_words[0, li], sim.hop_words[lv.name]), f"hops {lv.name}: {r.where}"
                assert _close(cost.network_cycles[0, li], r.metrics.network_cycles[lv.name]), r.where
            assert _close(cost.energy_breakdown[0, li], r.metrics.level_energy[lv.name]), r.where
        assert _close(cost.energy[0], r.metrics.energy), r.where
        assert _close(cost.dram_bytes[0], r.metrics.dram_bytes), r.where
        if c.arch.dram.transfer is None or c.arch.dram.transfer.model == "volume":  # bursts: an approximation
            assert _close(cost.cycles[0], r.metrics.cycles), r.where
        assert bool(cost.valid[0]) == r.metrics.valid, r.where


def test_unstructured_sparsity_bounds() -> None:
    """Unstructured: the density is measured from the tensor, so the sparse operand's own counts are exact
    (every element position is moved equally often in a perfect factorization and the compressed cost is
    linear), the MACs are exact (every weight is used the same number of times) and the model's compute
    cycles are exactly the perfectly balanced ones; the simulator's lanes wait for the slowest one at
    every event, so its cycles are never fewer. Tile sizes and the dense operands' lane traffic are not."""
    runs = [r for r in _runs(14, 60, exact=False) if all(r.case.mapping.total(d) == b for d, b in r.case.op.dims)]
    skipping = [r for r in runs if r.case.arch.sparsity.decompress_below is None]
    assert len(skipping) > 15
    w = 1  # the weights, the sparse operand
    for r in runs:  # every element position of it is moved equally often, and its compressed cost is linear
        for li, lv in enumerate(r.case.arch.levels):
            for kind in COUNT_KINDS:
                assert _close(r.cost.counts[kind][0, li, w], getattr(r.sim.count(lv.name, "W"), kind)), r.where
    for r in skipping:
        assert _close(r.cost.utilization[0] * r.cost.cycles[0] * r.case.arch.num_macs, r.sim.macs), r.where
        assert _close(r.cost.compute_cycles[0], r.sim.balanced_steps), r.where
        assert r.sim.temporal_steps >= r.cost.compute_cycles[0] - 1e-9, r.where
        assert r.sim.output_matches, r.where
    assert any(r.sim.temporal_steps > r.cost.compute_cycles[0] + 1 for r in skipping)  # imbalance is real


def test_imbalance_overhead_matches_the_simulator_on_average() -> None:
    """RTML 3.2.11 in the model: O[m, n] += I[m, k] W[k, n] with W's columns split over 4 lanes, each lane
    walking 16 positions of W per event of the PE. Over 200 weight tensors drawn at density 0.25, the
    simulator's lanes (waiting for the slowest at every event) take on average what the model charges:
    the balanced cycles times 1 + load_balance.expected_overhead(16, 0.25, 4); the balanced ones fall short."""
    op = with_densities(ops.matmul("mm", 2, 64, 16), {"W": 0.25})
    arch = ArchSpec(name="rows", clock_mhz=100.0, sparsity=Sparsity(),
                    levels=(Level(name="PE"), Level(name="DRAM", read_energy=1.0, fanout=Fanout(shape=(4,)))))
    m = Mapping(levels=(LevelMapping(temporal=(("K", 16), ("M", 2))),
                        LevelMapping(temporal=(("K", 4), ("N", 4)), spatial=(("N", 4),))))
    batch = MappingBatch.from_mappings(op, arch, [m])
    charged = CostModel(op, arch).evaluate(batch)
    balanced = CostModel(op, arch, imbalance=False).evaluate(batch)
    factor = 1 + expected_overhead(16, 0.25, 4)
    assert factor > 1.3 and _close(charged.compute_cycles[0], balanced.compute_cycles[0] * factor)
    assert charged.cycles[0] > balanced.cycles[0]
    rng = np.random.default_rng(5)
    sims = [simulate(op, arch, m, nonzero=rng.random((64, 16)) < 0.25) for _ in range(200)]
    slowest, even = sum(s.temporal_steps for s in sims) / 200, sum(s.balanced_steps for s in sims) / 200
    assert math.isclose(even, balanced.compute_cycles[0], rel_tol=0.03)
    assert math.isclose(slowest, charged.compute_cycles[0], rel_tol=0.03)
    assert slowest > balanced.compute_cycles[0] * 1.2


def test_imbalance_brings_the_model_closer_to_the_simulator() -> None:
    """Random unstructured cases with zero-skipping lanes: the charged compute cycles are never below the
    balanced ones, and on the cases where the simulator's lanes are imbalanced they are closer to its cycles
    (mean log error) than the balanced ones."""
    runs = [r for r in _runs(14, 60, exact=False, imbalance=True)
            if all(r.case.mapping.total(d) == b for d, b in r.case.op.dims)
            and r.case.arch.sparsity.decompress_below is None]
    balanced = {id(r): CostModel(r.case.op, r.case.arch, imbalance=False).evaluate(
        MappingBatch.from_mappings(r.case.op, r.case.arch, [r.case.mapping])) for r in runs}
    assert all(r.cost.compute_cycles[0] >= balanced[id(r)].compute_cycles[0] for r in runs)
    assert any(r.cost.compute_cycles[0] > balanced[id(r)].compute_cycles[0] * 1.05 for r in runs)

    def error(cost: CostBatch, r: Run) -> float:
        return abs(math.log(cost.compute_cycles[0] / r.sim.temporal_steps))
    uneven = [r for r in runs if r.sim.temporal_steps > r.sim.balanced_steps]
    assert len(uneven) > 5
    assert np.mean([error(r.cost, r) for r in uneven]) < 0.5 * np.mean([error(balanced[id(r)], r) for r in uneven])


def test_hand_derived_bitmap_matmul() -> None:
    """O[m, n] += I[m, k] W[k, n], M = 1, K = 8, N = 2, W 2:4 along K (8 non-zeros of 16), 16-bit words,
    bitmap. The PE holds all of W: DRAM reads of W = 8 non-zeros + 16 bits of bitmap = 9 words; the MAC
    lane executes the 8 effectual products in 8 cycles instead of 16 and reads 8 + 16/16 = 9 compressed
    words of W from the PE."""
    op = with_densities(ops.matmul("mm", 1, 8, 2), {"W": 0.5})
    arch = ArchSpec(name="hand", clock_mhz=100.0, sparsity=Sparsity(),
                    levels=(Level(name="PE"), Level(name="DRAM", read_energy=1.0)))
    m = Mapping(levels=(LevelMapping(temporal=(("K", 8), ("N", 2))), LevelMapping()))
    mask = structured_pattern((8, 2), 0, 2, 4, np.random.default_rng(0))
    sim = simulate(op, arch, m, nonzero=mask)
    cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
    assert sim.count("DRAM", "W").reads == 9 == cost.counts["reads"][0, 1, 1]
    assert sim.count("PE", "W").reads == 9 == cost.counts["reads"][0, 0, 1]
    assert sim.macs == 8 and sim.temporal_steps == 8 == cost.compute_cycles[0]
    assert sim.output_matches


def test_dense_layers_are_unchanged_by_sparse_hardware() -> None:
    """A layer without a density below 1 costs the same on the architecture with and without ``sparsity``."""
    op = ops.conv2d("c", 4, 4, (5, 5), 3)
    base = ArchSpec(name="d", clock_mhz=100.0, levels=(Level(name="PE"), Level(name="DRAM", read_energy=2.0)))
    m = Mapping(levels=(LevelMapping(temporal=(("C", 4), ("R", 3), ("S", 3))), LevelMapping(temporal=(
        ("K", 4), ("P", 3), ("Q", 3)))))
    for variant in (op, with_densities(op, {"W": 1.0})):
        a = CostModel(variant, base).evaluate(MappingBatch.from_mappings(op, base, [m]))
        sparse_hw = base.model_copy(update={"sparsity": Sparsity()})
        b = CostModel(variant, sparse_hw).evaluate(MappingBatch.from_mappings(op, sparse_hw, [m]))
        assert a.energy[0] == b.energy[0] and a.cycles[0] == b.cycles[0]
        assert all(np.array_equal(a.counts[k], b.counts[k]) for k in COUNT_KINDS)
