"""TSO schedules as core mappings: legal on the NMP's [4, 8] (KS/KS&OFM over both axes), priced like the flat [32], the core's scratchpad tiles
are TSO's IN/W/OUT tiles, compute cycles equal Eq. 8 on even tiles, and `--mapper tso` maps whole models."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.errors import MappingError
from dnnmap.mapping.mapping import BOTH_AXES, LevelMapping, Mapping, validate_mapping
from dnnmap.search.network import map_layer
from dnnmap.arch.variants import flat_fanout, with_dram_model
from dnnmap.search.tso.core_mapping import price, pricing_arch, schedule_mapping
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.mapper import TsoSearchResult
from dnnmap.search.tso.search import best_tiling, tso_layer_search
from dnnmap.search.tso.slicing import tle_slicing
from dnnmap.search.tso.timing import Tiles, breakdown
from dnnmap.workload import ops, zoo


def test_flat_fanout_prices_an_ofm_mapping_like_the_2d_fanout(nmp) -> None:
    """OFM + IS puts rows on the TLE axis and filters on the TLT axis: legal on [4, 8] and on [32]."""
    op = zoo.get("inceptionv3").layer("conv2d_4a_3x3").op
    sched = tso_layer_search(tso_layer(op), TsoMachine.from_arch(nmp)).by_strategy[("OFM", "IS")]
    flat = flat_fanout(nmp)
    assert pricing_arch(sched, nmp) is nmp
    two_d = schedule_mapping(sched, op, nmp)
    validate_mapping(two_d, op, nmp)
    a, b = price(schedule_mapping(sched, op, flat), op, flat), price(two_d, op, nmp)
    for field in ("cycles", "energy", "dram_bytes", "dram_bursts"):
        assert getattr(a, field)[0] == getattr(b, field)[0], field


def test_ks_slicing_spans_both_axes_and_prices_like_the_flat_view(nmp) -> None:
    """KS splits the filters over the 4 TLEs and the 8 TLTs: one dimension on both axes of [4, 8], legal on
    the NMP itself and priced as the same split on a flat [32] fan-out."""
    op = zoo.get("resnet50_v1").layer("layer4.0.conv1").op
    sched = tso_layer_search(tso_layer(op), TsoMachine.from_arch(nmp)).by_strategy[("KS", "IS")]
    mapping = schedule_mapping(sched, op, nmp)
    validate_mapping(mapping, op, nmp)
    assert dict(mapping.levels[1].spatial)["K"] == 32
    assert dict(mapping.levels[1].spatial_axis)["K"] == BOTH_AXES
    flat = flat_fanout(nmp)
    a, b = price(schedule_mapping(sched, op, flat), op, flat), price(mapping, op, nmp)
    for field in ("cycles", "energy", "dram_bytes", "dram_bursts"):
        assert getattr(a, field)[0] == getattr(b, field)[0], field


def test_both_axes_rule_counts_the_instances_other_dims_leave(nmp) -> None:
    op = ops.conv2d("c", 8, 64, 10, 3)  # 8 x 8 output
    mb = LevelMapping(temporal=(("C", 8), ("Q", 8), ("R", 3), ("S", 3), ("P", 4)))
    ok = Mapping((mb, LevelMapping(temporal=(("K", 4),), spatial=(("P", 2), ("K", 16)),
                                   spatial_axis=(("K", BOTH_AXES),))), layer="c")
    validate_mapping(ok, op, nmp)  # P takes 2 of 4 TLEs, K the other 2 x 8 TLTs
    bad = Mapping((mb, LevelMapping(temporal=(("K", 2),), spatial=(("P", 2), ("K", 32)),
                                    spatial_axis=(("K", BOTH_AXES),))), layer="c")
    with pytest.raises(MappingError, match="both axes use 32 instances, the other dims leave 16"):
        validate_mapping(bad, op, nmp)


@pytest.mark.parametrize("q", ["IS", "OS"])
def test_core_scratchpad_tiles_are_tsos_tiles(nmp, q: str) -> None:
    op = zoo.get("resnet50_v1").layer("layer2.0.conv2").op
    layer = tso_layer(op)
    sched = tso_layer_search(layer, TsoMachine.from_arch(nmp)).by_strategy[("KS&OFM", q)]
    cost = price(schedule_mapping(sched, op, nmp), op, nmp)
    words = dict(zip((t.name for t in op.tensors), cost.tile_words[0, 0]))
    assert words["I"] == sched.TN * sched.TH * sched.TL
    assert words["W"] == sched.TM * sched.TN * layer.Kh * layer.Kw
    assert words["O"] == sched.TM * sched.TR * sched.TC
    assert cost.valid[0]


def test_core_compute_cycles_equal_eq8_on_even_tiles(nmp) -> None:
    """N = 16, M = 64, 16 x 16 output, 3x3: OFM slicing, IS, tiles that divide every extent."""
    op = ops.conv2d("even", 16, 64, 18, 3)
    layer = tso_layer(op)
    m = TsoMachine.from_arch(nmp)
    s = tle_slicing("OFM", layer.R, layer.M, m.tle)
    t = Tiles(*(np.array([v]) for v in (4, 8, 8, 8)))  # T_R, T_C, T_N, T_M (= 64 / 8 TLTs)
    b = breakdown(layer, m, TsoOptions(), s, "IS", t)
    sched, _ = best_tiling(layer, m, TsoOptions(), s, "IS")
    sched = replace(sched, TR=4, TC=8, TN=8, TM=8, time=b)
    cost = price(schedule_mapping(sched, op, nmp), op, nmp)
    assert cost.compute_cycles[0] == pytest.approx(b.mac[0] * m.freq_hz)
    assert cost.compute_cycles[0] == op.macs / (m.tle * m.tlt * m.macs)


@pytest.mark.parametrize("model,layers", [
    ("mobilenetv2", ["conv1", "block_1_depthwise", "block_1_project", "block_2_add", "global_average_pooling",
                     "predictions"]),
    ("inceptionv3", ["mixed_5b/avgpool", "mixed_5b", "mixed_6b/branch7x7_2"]),
])
def test_tso_mapper_maps_every_layer_kind(nmp, model: str, layers: list[str]) -> None:
    net = zoo.get(model)
    for name in layers:
        res = map_layer(net.layer(name).op, nmp, mapper="tso")
        assert isinstance(res, TsoSearchResult) and res.mapper == "tso"
        assert res.cost.valid[0] and res.schedule.seconds > 0
        assert res.mapping.notes and "TSO" in res.mapping.notes[0]


def test_volume_model_switches_tso_to_noburst(nmp) -> None:
    op = zoo.get("inceptionv3").layer("conv2d_4a_3x3").op
    burst = map_layer(op, nmp, mapper="tso").schedule
    volume = map_layer(op, with_dram_model(nmp, "volume"), mapper="tso").schedule
    assert burst.options.dram == "burst" and volume.options.dram == "volume"
    assert volume.time.total[0] < burst.time.total[0]  # no CAS term


def test_cli_map_with_tso_prints_both_estimates() -> None:
    result = CliRunner().invoke(app, ["map", "lenet5", "--arch", "nmp", "--mapper", "tso", "--dram-model", "volume"])
    assert result.exit_code == 0, result.output
    assert "TSO mapper's time estimate vs the core cost model" in result.output
    assert "OFM+IS" in result.output or "KS+IS" in result.output
    bad = CliRunner().invoke(app, ["map", "lenet5", "--arch", "eyeriss", "--mapper", "tso"])
    assert bad.exit_code != 0 and "NMP-like" in bad.output


def test_tiny_yolov2_zoo_entry() -> None:
    net = zoo.get("tiny-yolov2")
    assert net.count("conv2d", "pointwise") == 9 and net.count("pool_max") == 6
    assert net.macs == 3_485_520_896  # Darknet: 6.97 BFLOPs = 2 x MACs
    assert net.layer("pool6").output_shape == (1, 512, 13, 13)
    assert net.layers[-1].output_shape == (1, 125, 13, 13)
