"""The pipelined latency of spatial fusion against an event replay of the executor's schedule.

The model (dnnmap/fusion/pipeline.py) assumes a layer may start tile ``k`` once the group layers it
reads have finished tile ``k``. The replay (execute.replay_finish) uses instead what the literal
executor measured: for each step, the latest tile of each producer whose pixels its windows read.
Both give every step the same duration, so any dependency the model gets wrong (too strong or too
weak) shows as a different finish. Stage latencies are drawn at random, so the equality is not an
accident of balanced stages.

The replay also measures the buffer the overlap holds (each step's fetched, stored and freed words as the
executor counted them), which must stay within the model's bound for the same tiles in flight
(buffers.OverlapBuffer) whatever the stage latencies.
"""

from __future__ import annotations

import numpy as np
import pytest
from nets import resnet_blocks
from test_proof import CASES, _ids, _plan

from dnnmap.arch.spec import load_arch
from dnnmap.fusion.buffers import fusion_buffer, overlap_buffer
from dnnmap.fusion.execute import FusedExecutor, replay, replay_finish
from dnnmap.fusion.group import build_group
from dnnmap.fusion.pipeline import pipeline
from dnnmap.fusion.proof import execute_plan, random_operands
from dnnmap.fusion.search import FusionSearch
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.search.options import SearchOptions


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_pipeline_latency_equals_the_replay(case) -> None:
    net, names = case[:2]
    plan = _plan(case)
    steps = execute_plan(plan, *random_operands(net, plan.group)).steps
    rng = np.random.default_rng(len(names))
    for _ in range(3):
        cycles = {n: float(rng.uniform(1e3, 1e5)) for n in names}
        zero = dict.fromkeys(names, 0.0)
        model = pipeline(plan, cycles, zero, zero)
        position = {n: p for p, n in enumerate(names)}
        duration = {(s.tile, s.layer): float(model.duration[s.tile, position[s.layer]]) for s in steps}
        assert model.critical == pytest.approx(replay_finish(steps, duration), rel=1e-12)
        assert model.critical <= model.serial + 1e-6 * model.serial
        # every step the executor ran has a duration in the model, and no step the model times is missing
        assert {(s.tile, s.layer) for s in steps} == {(k, names[p]) for k, p in zip(*np.nonzero(model.duration))}
        if plan.n_tiles > 1 and len(names) > 1:
            assert model.critical < model.serial  # sub-arrays overlap


def test_replay_sees_a_wrong_dependency() -> None:
    """The check can fail: replaying with the last layer's dependencies dropped finishes earlier."""
    net, names, toy, tox, tof = CASES[2]
    plan = plan_tiles(build_group(net, names), toy, tox, tof)
    steps = FusedExecutor(plan, *random_operands(net, plan.group)).run().steps
    cycles = {n: 1e4 * (1 + p) for p, n in enumerate(names)}
    model = pipeline(plan, cycles, dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0))
    position = {n: p for p, n in enumerate(names)}
    duration = {(s.tile, s.layer): float(model.duration[s.tile, position[s.layer]]) for s in steps}
    cut = [s if s.layer != names[-1] else type(s)(s.tile, s.layer, ()) for s in steps]
    assert replay_finish(cut, duration) < model.critical


def test_shared_buffer_and_dram_bound_the_group() -> None:
    net, names, toy, tox, tof = CASES[0]
    plan = plan_tiles(build_group(net, names), toy, tox, tof)
    cycles = dict.fromkeys(names, 1000.0)
    model = pipeline(plan, cycles, dict.fromkeys(names, 900.0), dict.fromkeys(names, 100.0))
    assert model.critical < 1800.0 and model.cycles == model.buffer_floor == 1800.0 and model.bound == "buffer"


def test_spatial_groups_are_priced_pipelined() -> None:
    """A spatially fused group's cost is its pipeline's latency; temporal groups keep the sum of their layers."""
    net = resnet_blocks()
    arch = load_arch("hwff_config1_dram2")
    search = FusionSearch(net, arch, "latency", "random", 2, options=SearchOptions(budget=300))
    for names, choice in search.candidates()[:3]:
        spatial = search.fused(names, choice, "spatial")
        temporal = search.fused(names, choice, "temporal")
        assert spatial.pipeline is not None and temporal.pipeline is None
        assert spatial.cost.cycles == pytest.approx(spatial.pipeline.cycles)
        assert spatial.pipeline.cycles <= spatial.pipeline.serial
        assert temporal.cost.cycles == pytest.approx(sum(lc.cost.cycles for lc in temporal.layer_costs))


MAP_CASES = [c for c in CASES if c[0].name in ("vgg16_e_prefix", "resnet_blocks", "inception_blocks")]


def _replayed(plan, steps, resident, cycles, window):  # noqa: ANN001, ANN202
    """The model's timing and the replay of the executed steps with the model's step durations."""
    names = plan.group.names
    zero = dict.fromkeys(names, 0.0)
    model = pipeline(plan, cycles, zero, zero, window=window)
    position = {n: p for p, n in enumerate(names)}
    duration = {(s.tile, s.layer): float(model.duration[s.tile, position[s.layer]]) for s in steps}
    return model, replay(steps, duration, window, resident)


@pytest.mark.parametrize("case", MAP_CASES, ids=_ids)
def test_overlap_buffer_bounds_the_replayed_occupancy(case) -> None:
    """With W tiles in flight the replayed schedule's latency equals the model's, its peak buffer stays within
    OverlapBuffer.words(W), and W = 1 bounds the sequential executor's peak too. Stage latencies span four
    orders of magnitude, so producers far faster than their consumers run ahead as far as W lets them."""
    net, names = case[:2]
    plan = _plan(case)
    executor = FusedExecutor(plan, *random_operands(net, plan.group))
    result = executor.run()
    bound = overlap_buffer(plan)
    assert bound.words(1) >= result.counts.peak_words
    rng = np.random.default_rng(len(names))
    for window in sorted({1, 2, len(names)}) + [None]:
        peak = 0
        for _ in range(12):
            cycles = {n: float(10 ** rng.uniform(2, 6)) for n in names}
            model, rep = _replayed(plan, result.steps, executor.resident_weights, cycles, window)
            assert model.critical == pytest.approx(rep.finish, rel=1e-12)
            peak = max(peak, rep.peak_words)
        assert peak <= bound.words(window or plan.n_tiles)
        assert bound.words(window or plan.n_tiles) <= bound.words(plan.n_tiles)


def test_overlap_needs_more_than_the_sequential_buffer() -> None:
    """The check can fail: a producer running ahead without a window holds more than Eq. 5 + Eq. 8 and more than
    the bound for one tile in flight; the window brings it back within its bound."""
    net, names = CASES[1][:2]
    plan = _plan(CASES[1])
    executor = FusedExecutor(plan, *random_operands(net, plan.group))
    result = executor.run()
    cycles = {n: 1e2 if p == 0 else 1e5 for p, n in enumerate(names)}  # the top layer runs far ahead
    _, free = _replayed(plan, result.steps, executor.resident_weights, cycles, None)
    _, one = _replayed(plan, result.steps, executor.resident_weights, cycles, 1)
    assert free.peak_words > fusion_buffer(plan).total_words and free.peak_words > overlap_buffer(plan).words(1)
    assert one.peak_words <= overlap_buffer(plan).words(1) < free.peak_words


def test_a_window_slows_the_pipeline_only_when_it_binds() -> None:
    net, names, toy, tox, tof = CASES[0]
    plan = plan_tiles(build_group(net, names), toy, tox, tof)
    cycles = {names[0]: 1e3, names[1]: 1e5}
    zero = dict.fromkeys(names, 0.0)
    free = pipeline(plan, cycles, zero, zero)
    assert pipeline(plan, cycles, zero, zero, window=plan.n_tiles).critical == free.critical
    one = pipeline(plan, cycles, zero, zero, window=1)
    assert free.critical < one.critical <= free.serial * (1 + 1e-12)  # one tile at a time: no overlap left


def test_spatial_fusion_keeps_the_overlap_within_the_buffer() -> None:
    """The search charges the overlap: a spatial group's pipeline has a window whose bound fits the buffer, and
    a buffer too small for even one tile in flight refuses spatial fusion (temporal stays legal)."""
    net = resnet_blocks()
    arch = load_arch("hwff_config1_dram2")
    search = FusionSearch(net, arch, "latency", "random", 2, options=SearchOptions(budget=300))
    names, choice = search.candidates()[0]
    spatial = search.fused(names, choice, "spatial")
    assert spatial.pipeline.window is not None and 1 <= spatial.pipeline.window <= len(names)
    assert spatial.pipeline.buffer_words == overlap_buffer(choice.plan).words(spatial.pipeline.window)
    assert spatial.pipeline.buffer_words <= search.capacity
    search.capacity = overlap_buffer(choice.plan).words(1) - 1
    assert search._spatial(names, choice, search.single_group(names).singles) is None
    assert search.fused(names, choice, "auto").mode == "temporal"
