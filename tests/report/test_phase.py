"""A transformer's inference phase in the outputs of `dnnmap map`, and decode layers on the roofline."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.report.html.report import build_report
from dnnmap.report.html.runs import load_run, run_from_dict

DECODE = "decode, 1 new token, KV cache 128 tokens"


def test_gpt2_decode_carries_its_phase_and_is_bandwidth_bound(tmp_path: Path) -> None:
    out = tmp_path / "gpt2_decode.json"
    result = CliRunner().invoke(app, ["map", "gpt2:phase=decode,seq=128", "--arch", "tpu_like", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert f"gpt2 ({DECODE}) on tpu_like" in result.stdout  # the table's title
    assert f"170 layers ({DECODE}):" in result.stdout  # the totals line
    data = json.loads(out.read_text())
    assert data["phase"] == {"name": "decode", "tokens": 1, "kv_cache": 128, "description": DECODE}
    machine = data["machine"]
    bandwidth, peak, clock_hz = machine["dram_bytes_per_second"], machine["peak_ops_per_second"], data["clock_mhz"] * 1e6
    assert machine["dram_transfer_model"] is None and bandwidth  # the DRAM level's word bandwidth is the roof
    kinds = set()
    for layer in data["layers"]:
        kinds.add(layer["kind"])
        assert layer["bottleneck"] == "dram", layer["name"]
        seconds = layer["cycles"] / clock_hz
        assert layer["dram_bytes"] / seconds <= bandwidth * (1 + 1e-9), layer["name"]  # the roof bounds it
        assert layer["operations"] / layer["dram_bytes"] < peak / bandwidth, layer["name"]  # left of the ridge
        if layer["kind"] in ("matmul", "einsum"):
            assert layer["operations"] == layer["macs"] > 0
        else:  # vector and element-wise layers are placed by their operations, not their (zero) MACs
            assert layer["macs"] == 0 and layer["operations"] > 0
    assert {"matmul", "einsum", "softmax", "layernorm", "gelu", "add"} <= kinds
    run = load_run(out)
    assert run.phase == DECODE
    html = build_report([run])
    assert f"dnnmap report: gpt2 ({DECODE}) on tpu_like" in html and "<td>phase</td>" in html.replace(" ", "")
    assert "GB/s, ridge" in html  # the roofline draws the sloped roof


def test_runs_without_a_phase_load(run_files: tuple[Path, Path]) -> None:
    data = json.loads(run_files[0].read_text())
    assert data["phase"] is None  # LeNet-5 has no phase
    del data["phase"]  # saved before phases were written
    run = run_from_dict(data, "old.json", "old")
    assert run.phase is None and run.model == "lenet5"
