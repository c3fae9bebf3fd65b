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

from dnnmap.arch.spec import ArchSpec, Level, Sparsity
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostBatch, CostModel
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


def _runs(seed: int, n: int, exact: bool) -> list[Run]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        c = random_sparse_case(rng, exact)
        sim = simulate(c.op, c.arch, c.mapping, nonzero=c.nonzero)
        cost = CostModel(c.op, c.arch).evaluate(MappingBatch.from_mappings(c.op, c.arch, [c.mapping]))
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
