"""The model's reported numbers against the simulator's, with the architecture options of
docs/cost-model.md section 2b drawn at random (``random_case(options=True)``).

Perfect factorizations: every count (five kinds), tile size, fan-out word, energy (per level, hops,
MACs, total), level cycles, network cycles of every fan-out (ingress and egress), latency,
utilization, DRAM bytes and bursts, capacity excess and validity equal :func:`dnnmap.sim.sim_metrics` of a literal simulation. Imperfect factorizations
(the model evaluates the padded iteration space) with halo reuse on every level: the words per
level, energies, cycles, DRAM bytes and tiles are upper bounds, so the model never accepts a
mapping the simulator rejects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from dnnmap.arch.spec import ACTIONS, ArchSpec, Fanout, Level, TransferModel
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostBatch, CostModel
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.sim import SimMetrics, SimResult, sim_metrics, simulate
from random_cases import random_case
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class Case:
    op: Operator
    arch: ArchSpec
    mapping: Mapping
    cost: CostBatch
    sim: SimResult
    metrics: SimMetrics

    @property
    def where(self) -> str:
        return f"{self.op.kind} {self.op.dims} on {self.arch.levels} with {self.mapping}"


def _identical_everywhere(arch: ArchSpec) -> ArchSpec:
    """``arch`` with every fan-out multicasting every role by the identical rule."""
    return ArchSpec.model_validate({**arch.model_dump(), "levels": [
        {**lv.model_dump(), "fanout": None if lv.fanout is None else
         {**lv.fanout.model_dump(), "multicast": True, "multicast_rule": "identical", "no_multicast": ()}}
        for lv in arch.levels]})


def _draw(seed: int, n: int, perfect: bool, mid: bool = False, identical: bool = False,
          placement: bool = False) -> list[Case]:
    """``n`` random cases; ``identical``: only those whose fan-outs, all made to multicast by the identical
    rule, have an input pair crossing two or more of them with spatial factors (:func:`_identical_across_fan_outs`);
    ``placement``: only mappings that place some tensor inside its level's loops (per-tensor placement)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        op, arch, m = random_case(rng, mid=mid, options=True, placement=placement)
        if all(m.total(d) == b for d, b in op.dims) != perfect or (placement and not m.placed):
            continue
        if identical:
            arch = _identical_everywhere(arch)
            if not _identical_across_fan_outs(op, arch, m):
                continue
        cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
        sim = simulate(op, arch, m, compute=False)
        out.append(Case(op, arch, m, cost, sim, sim_metrics(sim, op, arch, m)))
    return out


@pytest.fixture(scope="module")
def perfect() -> list[Case]:
    """260 small cases (up to 1.5k iterations), 40 mid-size ones (up to 20k, preset fan-outs) and 20 small
    ones where the identical rule decides fan-out by fan-out (docs/cost-model.md 2b)."""
    return (_draw(2024, 260, perfect=True) + _draw(2026, 40, perfect=True, mid=True)
            + _draw(2027, 20, perfect=True, identical=True))


@pytest.fixture(scope="module")
def placed() -> list[Case]:
    """160 small and 20 mid-size cases whose mappings place tensors inside their levels' loops (per-tensor
    placement, docs/cost-model.md section 1b), with random section 2b options."""
    return _draw(2028, 160, perfect=True, placement=True) + _draw(2029, 20, perfect=True, mid=True, placement=True)


@pytest.fixture(scope="module")
def imperfect() -> list[Case]:
    return _draw(2025, 150, perfect=False)


def _close(model: float, sim: float) -> bool:
    return math.isclose(float(model), float(sim), rel_tol=1e-9, abs_tol=1e-9)


def _identical_rule(arch: ArchSpec) -> bool:
    return any(lv.fanout is not None and lv.fanout.multicast and lv.fanout.multicast_rule == "identical"
               for lv in arch.levels)


def _identical_across_fan_outs(op: Operator, arch: ArchSpec, m: Mapping) -> bool:
    """Some multicasting pair of an input tensor uses the identical rule across two or more fan-outs
    with spatial factors > 1 (where deciding fan-out by fan-out matters)."""
    for t in op.inputs:
        chain = [-1] + [i for i in range(len(arch.levels)) if t.name in m.kept_tensors(i, op, arch)]
        for child, parent in zip(chain, chain[1:]):
            fans = [lv.fanout for lv in arch.levels[child + 1: parent + 1] if lv.fanout is not None]
            used = sum(1 for k in range(child + 1, parent + 1) if math.prod(s for _, s in m.levels[k].spatial) > 1)
            if (used >= 2 and all(f.multicast and t.role not in f.no_multicast for f in fans)
                    and any(f.multicast_rule == "identical" for f in fans)):
                return True
    return False


def test_the_cases_exercise_the_options(perfect: list[Case]) -> None:
    """Enough of the 320 cases have each option in effect for the comparisons below to mean something."""
    assert sum(1 for c in perfect if c.op.iterations > 1500) >= 30
    def share(pred) -> int:
        return sum(1 for c in perfect if pred(c))
    assert share(lambda c: c.arch.mac.operand_registers) > 100
    assert share(lambda c: any(x.accumulate_reads for x in c.sim.counts.values())) > 50
    assert share(lambda c: _identical_rule(c.arch)) > 40
    assert share(lambda c: _identical_across_fan_outs(c.op, c.arch, c.mapping)) >= 20
    assert share(lambda c: not all(lv.halo_reuse for lv in c.arch.levels)) > 100
    assert share(lambda c: not c.metrics.valid) > 30 and share(lambda c: c.metrics.valid) > 100
    assert share(lambda c: c.metrics.dram_bursts > 0) > 50
    assert share(lambda c: isinstance(c.arch.word_bits, dict)) > 100
    # final outputs narrower than partial sums, moved by on-chip drains and by updates (DRAM writes among them)
    narrower = [c for c in perfect if c.arch.final_bits < c.arch.bits_of("output")]
    assert sum(1 for c in narrower if any(x.final_drains for x in c.sim.counts.values())) > 40
    assert sum(1 for c in narrower if c.metrics.dram_bursts and any(
        x.final_updates for (lv, _), x in c.sim.counts.items() if lv == c.arch.dram.name)) > 10
    assert sum(1 for c in narrower if not any(x.final_updates for x in c.sim.counts.values())) > 20
    # non-MAC layers on a declared vector unit, and the unit's cycles (lanes, bandwidth) binding compute
    assert share(lambda c: c.arch.vector is not None and c.op.macs == 0) > 40
    assert share(lambda c: c.metrics.compute_cycles > c.sim.temporal_steps) > 20
    # the network term binds latency (its cycles beat compute and every level), also for pairs crossing
    # several fan-outs with spatial factors on more than one of them
    assert share(lambda c: max(c.metrics.network_cycles.values(), default=0) > 0) > 60
    assert share(lambda c: max(c.metrics.network_cycles.values(), default=0)
                 >= max(c.metrics.compute_cycles, *c.metrics.level_cycles.values())) > 20


def _model_final(c: Case, kind: str, li: int, ti: int) -> float:
    """The model's words of ``kind`` (drains or updates) at level ``li`` of tensor ``ti`` that carry final output
    values (docs/cost-model.md 2b): all of them from the lowest such level up (``CostBatch.final_*``), else none."""
    lowest = c.cost.final_drains if kind == "drains" else c.cost.final_updates
    return float(c.cost.counts[kind][0, li, ti]) if c.op.tensors[ti].role == "output" and li >= lowest[0] else 0.0


def test_counts_tiles_and_hops_exact(perfect: list[Case]) -> None:
    for c in perfect:
        assert c.cost.compute_cycles[0] == c.metrics.compute_cycles
        for li, lv in enumerate(c.arch.levels):
            if lv.fanout is not None:
                assert c.cost.hop_words[0, li] == c.sim.hop_words[lv.name], f"hop words at {lv.name}: {c.where}"
            for ti, t in enumerate(c.op.tensors):
                s = c.sim.count(lv.name, t.name)
                for kind in COUNT_KINDS:
                    assert c.cost.counts[kind][0, li, ti] == getattr(s, kind), f"{lv.name} {t.name} {kind}: {c.where}"
                for kind in ("drains", "updates"):
                    assert _model_final(c, kind, li, ti) == getattr(s, f"final_{kind}"), \
                        f"{lv.name} {t.name} final {kind}: {c.where}"
                if li < len(c.arch.levels) - 1:
                    assert c.cost.tile_words[0, li, ti] == c.metrics.tile_words.get((lv.name, t.name), 0), c.where


def test_energy_exact(perfect: list[Case]) -> None:
    for c in perfect:
        n = len(c.arch.levels)
        by_action = c.cost.energy_by_action()[0]
        for li, lv in enumerate(c.arch.levels):
            assert _close(c.cost.energy_breakdown[0, li], c.metrics.level_energy[lv.name]), f"{lv.name}: {c.where}"
            for ti, t in enumerate(c.op.tensors):
                for ai, action in enumerate(ACTIONS):
                    assert _close(by_action[li, ti, ai], c.metrics.action_energy.get((lv.name, t.name, action), 0.0))
        assert _close(c.cost.energy_breakdown[0, n], c.metrics.hop_energy), c.where
        assert _close(c.cost.energy_breakdown[0, n + 1], c.metrics.mac_energy), c.where
        assert _close(c.cost.energy[0], c.metrics.energy), c.where


def test_latency_and_utilization_exact(perfect: list[Case]) -> None:
    for c in perfect:
        for li, lv in enumerate(c.arch.levels):
            assert _close(c.cost.level_cycles[0, li], c.metrics.level_cycles[lv.name]), f"{lv.name}: {c.where}"
            if lv.fanout is not None:
                assert _close(c.cost.network_cycles[0, li], c.metrics.network_cycles[lv.name]), \
                    f"network below {lv.name}: {c.where}"
            else:
                assert c.cost.network_cycles[0, li] == 0, c.where
        assert _close(c.cost.cycles[0], c.metrics.cycles), c.where
        assert _close(c.cost.utilization[0], c.metrics.utilization), c.where


def test_dram_bytes_exact(perfect: list[Case]) -> None:
    for c in perfect:
        assert _close(c.cost.dram_bytes[0], c.metrics.dram_bytes), c.where
        word_bytes = np.array([c.arch.bytes_of(t.role) for t in c.op.tensors])
        assert _close(c.cost.dram_bytes_by_tensor(word_bytes)[0].sum(), c.metrics.dram_bytes), c.where


def test_dram_bursts_exact(perfect: list[Case]) -> None:
    for c in perfect:
        assert c.cost.dram_bursts[0] == c.metrics.dram_bursts, c.where


def test_dram_bursts_under_the_identical_rule() -> None:
    """Under the identical rule each distinct fill set is its own DRAM transfer (docs/cost-model.md 2b).

    O[0, n] += I[0, 0] * W[0, n], N = 4 on 4 lanes fed straight from DRAM through an identical-rule
    fan-out, 16-bit words, 8-byte bursts. Per step the lanes' W words differ: 4 one-word transfers,
    4 bursts (the union rule: one 4-word run, 1 burst); their I word is the same set: 1 transfer,
    1 burst; the 4 partial sums reduce into one 4-word update, 1 burst. 6 bursts."""
    op = ops.matmul("mm", 1, 1, 4)
    dram = Level(name="DRAM", fanout=Fanout(shape=(4,), multicast_rule="identical"),
                 transfer=TransferModel(model="burst", bandwidth_gbps=1.0, burst_bytes=8))
    arch = ArchSpec(name="identical", clock_mhz=100.0, levels=(Level(name="PE"), dram))
    m = Mapping(levels=(LevelMapping(keeps=()), LevelMapping(spatial=(("N", 4),))))
    sim = simulate(op, arch, m, compute=False)
    assert sim_metrics(sim, op, arch, m).dram_bursts == 6
    assert CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m])).dram_bursts[0] == 6


def test_capacity_exact(perfect: list[Case]) -> None:
    for c in perfect:
        for li, lv in enumerate(c.arch.levels):
            assert _close(c.cost.capacity_excess[0, li], c.metrics.capacity_excess[lv.name]), f"{lv.name}: {c.where}"
        assert bool(c.cost.valid[0]) == c.metrics.valid, c.where


def test_imperfect_factorizations_are_bounded(imperfect: list[Case]) -> None:
    """Bursts (and so a burst-model backing store's cycles) are not bounded: a padded transfer can
    join runs that the real edge transfers leave apart. Nor is anything once a level has
    ``halo_reuse: false``: a partial edge tile followed by the full tile it is part of refills whole
    in the literal nest, while in the padded nest the two tiles are equal and nothing moves
    (docs/cost-model.md 2b)."""
    checked = 0
    for c in imperfect:
        if not all(lv.halo_reuse for lv in c.arch.levels):
            continue
        checked += 1
        bursts = c.arch.dram.transfer is not None and c.arch.dram.transfer.model == "burst"
        for li, lv in enumerate(c.arch.levels):
            model_words = sum(c.cost.counts[k][0, li].sum() for k in COUNT_KINDS)
            sim_words = sum(getattr(x, k) for (name, _), x in c.sim.counts.items() if name == lv.name
                            for k in COUNT_KINDS)
            assert model_words >= sim_words, f"{lv.name}: {c.where}"
            assert c.cost.energy_breakdown[0, li] >= c.metrics.level_energy[lv.name] - 1e-9, c.where
            if not bursts:
                assert c.cost.level_cycles[0, li] >= c.metrics.level_cycles[lv.name] - 1e-9, c.where
            if lv.fanout is not None:
                assert c.cost.network_cycles[0, li] >= c.metrics.network_cycles[lv.name] - 1e-9, c.where
            for ti, t in enumerate(c.op.tensors):
                if li < len(c.arch.levels) - 1:
                    assert c.cost.tile_words[0, li, ti] >= c.metrics.tile_words.get((lv.name, t.name), 0), c.where
        assert c.cost.energy[0] >= c.metrics.energy - 1e-9, c.where
        assert bursts or c.cost.cycles[0] >= c.metrics.cycles - 1e-9, c.where
        assert c.cost.dram_bytes[0] >= c.metrics.dram_bytes, c.where
        assert c.metrics.valid or not c.cost.valid[0], c.where
    assert checked >= 20


def _unplaced(m: Mapping) -> Mapping:
    """``m`` with every tile holding all of its level's loops."""
    return Mapping(tuple(LevelMapping(lm.temporal, lm.order, lm.spatial, lm.spatial_axis, lm.keeps)
                         for lm in m.levels), m.layouts, m.layer, m.arch)


def test_placement_exact(placed: list[Case]) -> None:
    """Per-tensor placement: every number above equals the simulator's, on cases where the placement
    changes what moves (the same mappings without it fill, drain or hold other amounts)."""
    changed = 0
    for c in placed:
        shared = simulate(c.op, c.arch, _unplaced(c.mapping), compute=False)
        changed += shared.counts != c.sim.counts or shared.tile_words != c.sim.tile_words
    assert changed > 100
    assert sum(1 for c in placed if c.metrics.dram_bursts > 0) > 20
    assert sum(1 for c in placed if not all(lv.halo_reuse is True for lv in c.arch.levels)) > 50
    for check in (test_counts_tiles_and_hops_exact, test_energy_exact, test_latency_and_utilization_exact,
                  test_dram_bytes_exact, test_dram_bursts_exact, test_capacity_exact):
        check(placed)
