"""The analytical model against the reference simulator (docs/cost-model.md section 4).

Perfect factorizations: every count (reads, fills, updates, drains per level and tensor),
the compute cycles, the words crossing each fan-out and the DRAM bursts (in any DRAM layout)
are exact. Imperfect factorizations: the model evaluates the padded iteration space, so the
words moved per level are an upper bound of the simulator's.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ALL_ROLES, ArchSpec, Level, TransferModel
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostModel
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.sim import sim_metrics, simulate
from model_checks import assert_counts_equal
from random_cases import random_case
from dnnmap.sim.transfers import dram_bursts
from dnnmap.workload import ops


def _cases(seed: int, n: int, perfect: bool, mid: bool = False) -> list:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        op, arch, m = random_case(rng, mid)
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
        assert_counts_equal(cost, sim, op, arch, m)


def test_words_per_level_bound_for_imperfect_factorizations() -> None:
    for op, arch, m in _cases(7, 40, perfect=False):
        cost, sim = _model_and_sim(op, arch, m)
        for li, lv in enumerate(arch.levels):
            model_words = sum(cost.counts[k][0, li].sum() for k in COUNT_KINDS)
            sim_words = sum(getattr(c, k) for (lvl, _), c in sim.counts.items() if lvl == lv.name
                            for k in COUNT_KINDS)
            assert model_words >= sim_words, f"{op.kind} {op.dims} {lv.name}: {model_words} < {sim_words}"
        assert cost.compute_cycles[0] == sim_metrics(sim, op, arch, m).compute_cycles


def _with_burst_dram(arch, burst_bytes: int):
    dram = arch.levels[-1].model_copy(update={"transfer": TransferModel(model="burst", bandwidth_gbps=1.0,
                                                                         burst_bytes=burst_bytes)})
    return arch.model_copy(update={"levels": arch.levels[:-1] + (dram,)})


def _check_bursts(seed: int, n: int, mid: bool = False) -> None:
    """Model bursts == simulated bursts on ``n`` random perfect cases, most of them with a permuted layout."""
    rng = np.random.default_rng(seed)
    cases = _cases(seed + 289, n, perfect=True, mid=mid)
    permuted = sum(any(order != tuple(a.name for a in op.tensor(t).axes) for t, order in m.layouts)
                   for op, _, m in cases)
    assert permuted >= n // 2, f"only {permuted} of {n} cases store a tensor in a permuted layout"
    for op, arch, m in cases:
        arch = _with_burst_dram(arch, int(rng.choice([2, 4, 8, 16])))
        cost, sim = _model_and_sim(op, arch, m)
        assert cost.dram_bursts[0] == dram_bursts(sim, arch, m), f"{op.kind} {op.dims} {arch.name} {m.layouts}"


def test_dram_bursts_exact_for_perfect_factorizations() -> None:
    """The model's DRAM burst count equals the simulator's literal count: every transfer split into
    the contiguous runs it occupies in the tensor's layout (docs/cost-model.md section 4), on 1000
    tiny random cases, two in three with a random DRAM layout."""
    _check_bursts(12, 1000)


def test_dram_bursts_exact_on_mid_size_cases() -> None:
    """The same on mid-size operators (1.5k-20k iterations), half of them on the TPU-like and NMP
    presets with their 32x32 and 8 + 4x8 fan-outs."""
    _check_bursts(13, 60, mid=True)


def test_dram_bursts_of_a_two_axis_move_in_a_permuted_layout() -> None:
    """Regression (issue 15): a 2x2 pooling window over a 3x3 input stored column-major (``W`` outside
    ``H``), DRAM loops ``P`` outside ``Q``, 4-byte bursts of two 16-bit words. When ``P`` advances and
    ``Q`` wraps, both window axes move: the new words are (h1, w0), (h2, w0), (h2, w1), at addresses
    1, 2 and 5 - two runs, two bursts. The model counted the new part as two disjoint pieces in axis
    order (row h2; then (h1, w0)), three runs, one burst too many. All input transfers: 2 + 1 + 2 + 1
    bursts; the four one-word output write-backs: 4."""
    op = ops.pool("pool", 1, (3, 3), 2, stride=1)
    dram = Level(name="DRAM", keeps=ALL_ROLES, transfer=TransferModel(model="burst", bandwidth_gbps=1.0,
                                                                       burst_bytes=4))
    arch = ArchSpec(name="two-level", clock_mhz=100.0, levels=(Level(name="L0", keeps=ALL_ROLES), dram))
    m = Mapping(levels=(LevelMapping(temporal=(("R", 2), ("S", 2))),
                        LevelMapping(temporal=(("P", 2), ("Q", 2)), order=("P", "Q"))),
                layouts=(("I", ("N", "G", "W", "H")),))
    cost, sim = _model_and_sim(op, arch, m)
    assert dram_bursts(sim, arch, m) == 6 + 4
    assert cost.dram_bursts[0] == 6 + 4


def test_bandwidth_cycles_equal_the_busiest_simulated_instance() -> None:
    """The bandwidth-limited cycles of an on-chip level (docs/cost-model.md section 3) are the words
    moved in and out of its busiest instance, divided by the bandwidth."""
    for op, arch, m in _cases(500, 60, perfect=True):
        levels = tuple(lv.model_copy(update={"bandwidth": 2.0}) for lv in arch.levels[:-1]) + (arch.levels[-1],)
        arch = arch.model_copy(update={"levels": levels})
        cost, sim = _model_and_sim(op, arch, m)
        for li, lv in enumerate(arch.levels[:-1]):
            assert cost.level_cycles[0, li] == sim.max_instance_words(lv.name) / 2.0, f"{op.kind} {lv.name}"
