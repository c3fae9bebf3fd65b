"""The JSON report's additions for the HTML report are consistent with the cost model's numbers."""

from __future__ import annotations

import numpy as np
import pytest

import dnnmap
from dnnmap.arch.spec import load_arch
from dnnmap.mapping.printer import format_loop_nest
from dnnmap.report.json_report import bottleneck, to_dict
from dnnmap.search.network import search_network
from dnnmap.search.options import SearchOptions
from dnnmap.workload import zoo
from dnnmap.workload.ir import Layer, Network
from random_cases import random_op


@pytest.mark.parametrize("arch", ["eyeriss", "nmp"])  # nmp: transfers do not overlap compute
def test_latency_parts_sum_to_cycles_and_name_the_bottleneck(arch: str) -> None:
    network = zoo.get("lenet5")
    result = dnnmap.map_network(network, arch=arch, mapper="random", budget=200).search
    data = to_dict(result, network)
    spec = load_arch(arch)
    for layer, res in zip(data["layers"], result.layers):
        assert sum(layer["latency_parts"].values()) == pytest.approx(layer["cycles"], rel=1e-9)
        assert layer["latency_parts"]["compute"] == layer["compute_cycles"]
        assert set(layer["level_cycles"]) == {lv.name for lv in spec.levels}
        slowest = max(layer["level_cycles"], key=layer["level_cycles"].get)
        expected = slowest if layer["level_cycles"][slowest] > layer["compute_cycles"] else "compute"
        assert layer["bottleneck"] == expected
        if spec.overlap:
            assert set(layer["latency_parts"]) <= {"compute", layer["bottleneck"]}
        assert sum(layer["dram_bytes_by_tensor"].values()) == pytest.approx(layer["dram_bytes"], rel=1e-9)
        assert layer["loop_nest"] == format_loop_nest(res.search.mapping, res.search.op, spec)
        assert layer["inputs"] == list(network.layer(layer["name"]).inputs)
        assert layer["operations"] == (res.search.op.macs or res.search.op.iterations)
        dram = spec.levels[-1].name
        for tensor, kinds in layer["counts"].get(dram, {}).items():
            role = res.search.op.tensor(tensor).role
            moved = (kinds.get("reads", 0.0) + kinds.get("updates", 0.0)) * spec.bytes_of(role)
            assert layer["dram_bytes_by_tensor"][tensor] == pytest.approx(moved)


def test_machine_and_metadata() -> None:
    data = to_dict(dnnmap.map_network("lenet5", arch="eyeriss", mapper="random", budget=50, layers=["conv1"]).search)
    assert data["machine"]["peak_ops_per_second"] == 14 * 12 * 200e6
    assert data["machine"]["dram_bytes_per_second"] == 1.6e9
    assert data["machine"]["levels"] == ["RF", "GLB", "DRAM"]
    assert data["tool"]["name"] == "dnnmap" and data["tool"]["version"]
    assert "inputs" not in data["layers"][0]  # the graph needs the network


def test_bottleneck_ties_go_to_compute() -> None:
    assert bottleneck(10.0, {"RF": 3.0, "DRAM": 10.0}) == "compute"
    assert bottleneck(10.0, {"RF": 3.0, "DRAM": 12.0}) == "DRAM"
    assert bottleneck(1.0, {}) == "compute"


def test_onchip_and_offchip_energy_split_the_total_on_random_runs() -> None:
    """Random layers on the presets (random mapper): per layer and in the totals, the off-chip
    energy is the backing-store level's (the sum of its energy by action) and on-chip + off-chip = energy."""
    rng = np.random.default_rng(8)
    checked = 0
    for i in range(12):
        op, arch = random_op(rng), load_arch(("eyeriss", "tpu_like", "rtml_192pe", "nmp")[i % 4])
        first = op.inputs[0]
        network = Network("n", (Layer(op, (first.name,), op.tensor_shape(op.output.name)),),
                          ((first.name, op.tensor_shape(first.name)),))
        data = to_dict(search_network(network, arch, "edp", "random", options=SearchOptions(budget=50)), network)
        top = arch.levels[-1].name
        for layer in data["layers"]:
            by_action = sum(sum(actions.values()) for actions in layer["energy_by_action"].get(top, {}).values())
            assert layer["energy_offchip"] == pytest.approx(by_action, rel=1e-9, abs=1e-9)
            assert layer["energy_onchip"] + layer["energy_offchip"] == pytest.approx(layer["energy"], rel=1e-12)
            checked += layer["energy_offchip"] > 0 and layer["energy_onchip"] > 0
        totals = data["totals"]
        assert totals["energy_onchip"] + totals["energy_offchip"] == pytest.approx(totals["energy"], rel=1e-12)
        assert totals["energy_offchip"] == pytest.approx(sum(lay["energy_offchip"] for lay in data["layers"]))
    assert checked >= 6
