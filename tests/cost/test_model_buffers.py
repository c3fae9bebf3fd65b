"""Reused output buffers give the same costs as fresh ones: the kernel writes every cell it owns."""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import load_arch
from dnnmap.cost.model import COUNT_KINDS, CostModel
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.workload import zoo


def test_reused_buffers_equal_fresh_evaluation() -> None:
    for arch_name in ("eyeriss", "nmp"):
        op, arch = zoo.get("resnet18").layer("layer2.0.conv1").op, load_arch(arch_name)
        sampler = CandidateSampler(MapSpace(op, arch), seed=1)
        big, small = sampler.sample(3000), sampler.sample(700)
        model = CostModel(op, arch)
        model.evaluate(big, reuse_buffers=True)  # leaves the buffers full of another batch's numbers
        reused = model.evaluate(small, reuse_buffers=True)
        fresh = CostModel(op, arch).evaluate(small)
        for field in ("valid", "cycles", "energy", "energy_breakdown", "level_cycles", "dram_bytes", "utilization",
                      "tile_words", "capacity_excess", "hop_words", "dram_bursts"):
            assert np.array_equal(getattr(reused, field), getattr(fresh, field)), (arch_name, field)
        for kind in COUNT_KINDS:
            assert np.array_equal(reused.counts[kind], fresh.counts[kind]), (arch_name, kind)
        assert fresh.valid.any() and (~fresh.valid).any()  # the batch exercises both outcomes
