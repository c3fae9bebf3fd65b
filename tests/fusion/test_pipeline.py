"""The pipelined latency of spatial fusion against an event replay of the executor's schedule.

The model (dnnmap/fusion/pipeline.py) assumes a layer may start tile ``k`` once the group layers it
reads have finished tile ``k``. The replay (execute.replay_finish) uses instead what the literal
executor measured: for each step, the latest tile of each producer whose pixels its windows read.
Both give every step the same duration, so any dependency the model gets wrong (too strong or too
weak) shows as a different finish. Stage latencies are drawn at random, so the equality is not an
accident of balanced stages.
"""

from __future__ import annotations

import numpy as np
import pytest
from nets import resnet_blocks
from test_proof import CASES, _ids, _plan

from dnnmap.arch.spec import load_arch
from dnnmap.fusion.execute import FusedExecutor, replay_finish
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
