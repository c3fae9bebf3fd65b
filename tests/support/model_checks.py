"""The one comparison of the cost model's per-level numbers with the reference simulator's, for tests."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import COUNT_KINDS, CostBatch
from dnnmap.mapping.mapping import Mapping
from dnnmap.sim import sim_metrics
from dnnmap.workload.ir import Operator


def assert_counts_equal(cost: CostBatch, sim, op: Operator, arch: ArchSpec, m: Mapping) -> None:  # noqa: ANN001
    """Compute cycles, hop words per fan-out and every count kind per (level, tensor) equal the simulator's."""
    assert cost.compute_cycles[0] == sim_metrics(sim, op, arch, m).compute_cycles
    for li, lv in enumerate(arch.levels):
        if lv.fanout is not None:
            assert cost.hop_words[0, li] == sim.hop_words.get(lv.name, 0), f"{op.kind} {op.dims} hop words at {lv.name}"
        for ti, t in enumerate(op.tensors):
            s = sim.counts.get((lv.name, t.name))
            for kind in COUNT_KINDS:
                expected = getattr(s, kind) if s else 0
                assert cost.counts[kind][0, li, ti] == expected, (
                    f"{op.kind} {op.dims} {m} level {lv.name} tensor {t.name} {kind}: "
                    f"model {cost.counts[kind][0, li, ti]} simulator {expected}")
