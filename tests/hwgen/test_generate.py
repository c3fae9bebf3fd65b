"""Hardware generation on a tiny network: budget respected, Pareto front checked by brute force, the chosen
point re-priced independently, its YAML mapped by ``dnnmap map --arch`` and its Verilog header parsed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.arch.area import area_of
from dnnmap.arch.spec import load_arch
from dnnmap.arch.templates.sparse_simd import sparse_simd_spec
from dnnmap.cli.main import app
from dnnmap.errors import DnnmapError
from dnnmap.hwgen.generate import generate_hardware
from dnnmap.hwgen.outputs import verilog_parameters
from dnnmap.hwgen.space import Budget
from dnnmap.search.network import search_network
from dnnmap.workload import zoo

LENET = zoo.get("lenet5")
VERILOG_LINE = re.compile(r"^localparam integer ([A-Z][A-Z0-9_]*) += (\d+);$")


@pytest.fixture(scope="module")
def generation():
    return generate_hardware([LENET], Budget(area_mm2=2.0, pes=64), "edp", max_candidates=6)


def test_every_point_meets_the_budget_and_the_front_is_exactly_the_non_dominated_set(generation) -> None:
    points = generation.points
    assert len(points) == 6
    assert all(p.params.pes <= 64 and p.area_mm2 <= 2.0 for p in points)
    metrics = [(p.latency_s, p.energy_j, p.area_mm2) for p in points]

    def dominated(m):
        return any(all(a <= b for a, b in zip(o, m)) and o != m for o in metrics)

    assert {(p.latency_s, p.energy_j, p.area_mm2) for p in generation.front} == {m for m in metrics if not dominated(m)}
    assert generation.chosen in generation.front
    assert generation.chosen.objective("edp") == min(p.objective("edp") for p in generation.front)


def test_chosen_point_reprices_independently(generation) -> None:
    chosen = generation.chosen
    spec = sparse_simd_spec(chosen.params)
    again = search_network(LENET, spec, "edp")
    assert chosen.latency_s == pytest.approx(again.cycles / (spec.clock_mhz * 1e6))
    assert chosen.energy_j == pytest.approx(again.energy * 1e-12)
    assert chosen.area_mm2 == pytest.approx(area_of(chosen.params).total)


def test_no_point_meets_a_tiny_budget() -> None:
    with pytest.raises(DnnmapError, match="no template point meets the budget"):
        generate_hardware([LENET], Budget(area_mm2=0.5))
    with pytest.raises(DnnmapError, match="give a budget"):
        Budget()


def check_verilog(text: str) -> dict[str, int]:
    """Every non-comment line a ``localparam integer NAME = VALUE;``; returns the parameters."""
    params = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("//"):
            continue
        m = VERILOG_LINE.match(line)
        assert m, f"not a parameter line: {line!r}"
        assert m.group(1) not in params, f"{m.group(1)} given twice"
        params[m.group(1)] = int(m.group(2))
    return params


def test_cli_writes_a_yaml_that_maps_and_a_verilog_header_that_parses(tmp_path: Path) -> None:
    runner = CliRunner()
    yaml_path, vh_path = tmp_path / "out" / "hw.yaml", tmp_path / "out" / "hw.vh"
    r = runner.invoke(app, ["generate-hw", "lenet5", "--pes", "16", "--max-candidates", "3",
                            "--yaml", str(yaml_path), "--verilog", str(vh_path)])
    assert r.exit_code == 0, r.output
    assert "Pareto front" in r.output and "chosen" in r.output
    spec = load_arch(yaml_path)
    assert spec.num_macs <= 16
    mapped = runner.invoke(app, ["map", "lenet5", "--arch", str(yaml_path)])
    assert mapped.exit_code == 0, mapped.output
    params = check_verilog(vh_path.read_text())
    assert params["PE_ROWS"] * params["PE_COLS"] == params["NUM_PES"] == spec.num_macs
    assert params["GLB_BANKS"] * params["GLB_BANK_WORDS"] == spec.levels[2].capacity
    assert 2 ** params["ROW_SRAM_ADDR_BITS"] >= params["ROW_SRAM_WORDS"] > 2 ** (params["ROW_SRAM_ADDR_BITS"] - 1)
    if shutil.which("iverilog"):
        top = tmp_path / "top.v"
        top.write_text(f'module top;\n`include "{vh_path}"\ninitial $display("%0d %0d", PE_ROWS, GLB_BANK_WORDS);\n'
                       "endmodule\n")
        compiled = subprocess.run(["iverilog", "-o", str(tmp_path / "top.vvp"), str(top)], capture_output=True,
                                  text=True, timeout=120)
        assert compiled.returncode == 0, compiled.stderr
        ran = subprocess.run(["vvp", str(tmp_path / "top.vvp")], capture_output=True, text=True, timeout=120)
        assert ran.stdout.split() == [str(params["PE_ROWS"]), str(params["GLB_BANK_WORDS"])]


@pytest.mark.parametrize("args, message", [
    (["nosuchnet", "--pes", "16"], "unknown model"),
    (["lenet5", "--area-mm2", "0.5"], "no template point meets the budget"),
    (["lenet5"], "give a budget"),
    (["lenet5", "--pes", "16", "--yaml", "/proc/nope/hw.yaml"], "cannot write"),
])
def test_bad_input_is_refused_cleanly_and_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    vh = tmp_path / "hw.vh"
    r = CliRunner().invoke(app, ["generate-hw", *args, "--verilog", str(vh)])
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output
    assert not vh.exists() and list(tmp_path.iterdir()) == []


def test_verilog_parameters_are_integers_of_the_point(generation) -> None:
    params = verilog_parameters(generation.chosen.params)
    assert all(isinstance(v, int) and v >= 0 for v in params.values())


def test_two_networks_cost_the_sum_of_their_separate_mappings() -> None:
    """The shape cache shared across networks must not change any network's result."""
    from dnnmap.arch.templates.params import SparseSimdParams
    from dnnmap.hwgen.evaluate import evaluate_point
    from dnnmap.workload.named import parse_workload

    p = SparseSimdParams(rows=4, cols=4)
    other = parse_workload("mttkrp:I=16,J=8,K=8,L=8")
    point = evaluate_point(p, [LENET, other])
    spec = sparse_simd_spec(p)
    separate = [search_network(n, spec, "edp") for n in (LENET, other)]
    assert point.latency_s == pytest.approx(sum(r.cycles for r in separate) / (spec.clock_mhz * 1e6))
    assert point.energy_j == pytest.approx(sum(r.energy for r in separate) * 1e-12)
    assert [n.network for n in point.networks] == [LENET.name, other.name]


def test_density_options_reach_every_layer() -> None:
    from dnnmap.cli.hw_inputs import networks_of
    from dnnmap.workload.sparsity import op_densities

    (net,) = networks_of(["lenet5"], "forward", ["weights=0.25"])
    weighted = [layer.op for layer in net.layers if any(t.role == "weight" for t in layer.op.inputs)]
    assert weighted and all(set(op_densities(op).values()) == {0.25} for op in weighted)


def test_layers_of_one_shape_but_different_densities_are_searched_apart() -> None:
    """The shape cache (within and across networks) keys on densities too: a 10%-dense copy of a layer
    must not reuse the dense layer's result on the sparse-capable template."""
    from dataclasses import replace

    from dnnmap.arch.templates.params import SparseSimdParams
    from dnnmap.workload.sparsity import with_densities

    conv2 = LENET.layer("conv2")
    sparse = replace(conv2, op=with_densities(replace(conv2.op, name="conv2_sparse"),
                                                                    {"W": 0.1}))
    net = replace(LENET, layers=(*LENET.layers, sparse))
    result = search_network(net, sparse_simd_spec(SparseSimdParams(rows=4, cols=4)), "edp", layers=["conv2",
                                                                                                   "conv2_sparse"])
    dense_layer, sparse_layer = result.layers
    assert sparse_layer.reused_from is None
    assert sparse_layer.energy < dense_layer.energy


def test_out_dir_holds_both_files_and_help_says_where_they_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o/--out-dir`` (as `compile -o`): the folder of both files, relative --yaml/--verilog names inside it,
    an absolute one as given; each "wrote" line names the folder of a relative path like every command's."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    r = runner.invoke(app, ["generate-hw", "lenet5", "--pes", "16", "--max-candidates", "2", "-o", "hw",
                            "--verilog", str(tmp_path / "abs.vh")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "hw" / "generated_hw.yaml").is_file() and (tmp_path / "abs.vh").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abs.vh", "hw"]
    lines = r.stdout.splitlines()
    assert f"wrote the architecture YAML to hw/generated_hw.yaml (in {tmp_path}): use it: dnnmap map MODEL --arch " \
           "hw/generated_hw.yaml" in lines
    assert f"wrote the Verilog parameter header to {tmp_path / 'abs.vh'}" in lines
    shown = " ".join(runner.invoke(app, ["generate-hw", "--help"], env={"COLUMNS": "200"}).stdout.split())
    assert "generated_hw.yaml and generated_hw.vh in the current folder" in shown and "--out-dir" in shown
