"""The analytical model against the reference simulator (docs/cost-model.md section 4).

Perfect factorizations: every count (reads, fills, updates, drains per level and tensor)
the compute cycles and the words crossing each fan-out are exact. Imperfect factorizations: the model evaluates the padded
iteration space, so the words moved per level are an upper bound of the simulator's.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import TransferModel
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostModel
from dnnmap.sim import simulate
from dnnmap.sim.random_cases import random_case
from dnnmap.sim.transfers import dram_bursts


def _cases(seed: int, n: int, perfect: bool) -> list:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        op, arch, m = random_case(rng)
        if all(m.total(d) == b for d, b in op.dims) == perfect:
            out.append((op, arch, m))
    return out


def _model_and_sim(op, arch, m):
    cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
    sim = simulate(op, arch, m, compute=False)
    return cost, sim


@pytest.mark.parametrize("chunk", range(4))
def test_counts_exact_for_perfect_factorizations(chunk: int) -> None:
    cases = _cases(100 + chunk, 60, perfect=True)  # 240 cases in all
    for op, arch, m in cases:
        cost, sim = _model_and_sim(op, arch, m)
        assert cost.compute_cycles[0] == sim.temporal_steps
        for li, lv in enumerate(arch.levels):
            if lv.fanout is not None:
                assert cost.hop_words[0, li] == sim.hop_words.get(lv.name, 0), f"{op.kind} hop words at {lv.name}"
            for ti, t in enumerate(op.tensors):
                s = sim.counts.get((lv.name, t.name))
                for kind in COUNT_KINDS:
                    expected = getattr(s, kind) if s else 0
                    assert cost.counts[kind][0, li, ti] == expected, (
                        f"{op.kind} {op.dims} level {lv.name} tensor {t.name} {kind}: "
                        f"model {cost.counts[kind][0, li, ti]} simulator {expected}")


def test_words_per_level_bound_for_imperfect_factorizations() -> None:
    for op, arch, m in _cases(7, 40, perfect=False):
        cost, sim = _model_and_sim(op, arch, m)
        for li, lv in enumerate(arch.levels):
            model_words = sum(cost.counts[k][0, li].sum() for k in COUNT_KINDS)
            sim_words = sum(getattr(c, k) for (lvl, _), c in sim.counts.items() if lvl == lv.name
                            for k in COUNT_KINDS)
            assert model_words >= sim_words, f"{op.kind} {op.dims} {lv.name}: {model_words} < {sim_words}"
        assert cost.compute_cycles[0] == sim.temporal_steps


def _with_burst_dram(arch, burst_bytes: int):
    dram = arch.levels[-1].model_copy(update={"transfer": TransferModel(model="burst", bandwidth_gbps=1.0,
                                                                         burst_bytes=burst_bytes)})
    return arch.model_copy(update={"levels": arch.levels[:-1] + (dram,)})


def _check_bursts(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    for op, arch, m in _cases(seed + 289, n, perfect=True):
        arch = _with_burst_dram(arch, int(rng.choice([2, 4, 8, 16])))
        cost, sim = _model_and_sim(op, arch, m)
        assert cost.dram_bursts[0] == dram_bursts(sim, arch, m), f"{op.kind} {op.dims}"


def test_dram_bursts_exact_for_perfect_factorizations() -> None:
    """The model's DRAM burst count equals the simulator's literal count: every transfer split into
    the contiguous runs it occupies in the tensor's layout (docs/cost-model.md section 4)."""
    _check_bursts(11, 200)


@pytest.mark.slow
def test_dram_bursts_exact_on_1000_more_cases() -> None:
    _check_bursts(12, 1000)


def test_bandwidth_cycles_equal_the_busiest_simulated_instance() -> None:
    """The bandwidth-limited cycles of an on-chip level (docs/cost-model.md section 3) are the words
    moved in and out of its busiest instance, divided by the bandwidth."""
    for op, arch, m in _cases(500, 60, perfect=True):
        levels = tuple(lv.model_copy(update={"bandwidth": 2.0}) for lv in arch.levels[:-1]) + (arch.levels[-1],)
        arch = arch.model_copy(update={"levels": levels})
        cost, sim = _model_and_sim(op, arch, m)
        for li, lv in enumerate(arch.levels[:-1]):
            assert cost.level_cycles[0, li] == sim.max_instance_words(lv.name) / 2.0, f"{op.kind} {lv.name}"
