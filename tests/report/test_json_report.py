"""The JSON report's additions for the HTML report are consistent with the cost model's numbers."""

from __future__ import annotations

import pytest

import dnnmap
from dnnmap.arch.spec import load_arch
from dnnmap.mapping.printer import format_loop_nest
from dnnmap.report.json_report import bottleneck, to_dict
from dnnmap.workload import zoo


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
