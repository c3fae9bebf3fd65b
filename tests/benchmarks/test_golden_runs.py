"""benchmarks/golden_runs.py: timing masks, layer retries and the comparison of two recordings
(recording itself runs the command line for minutes and is checked by running it twice)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "golden_runs.py"
spec = importlib.util.spec_from_file_location("golden_runs", SCRIPT)
golden = importlib.util.module_from_spec(spec)
sys.modules["golden_runs"] = golden  # dataclasses resolve their module
spec.loader.exec_module(golden)


def test_masks_timings_dates_and_speeds_but_not_results() -> None:
    lines = golden.masked_lines("3 layers: 7.240 ms, 0.4 M mappings/s, 23,242 mappings evaluated in 1.4 s\n"
                                "nmp1 (0.72 s) at 2026-11-26T15:06:46+00:00; BW 2 GB/s, 4 sparse layers   \n", ())
    assert lines == ["3 layers: 7.240 ms, <rate>, 23,242 mappings evaluated in <time>",
                     "nmp1 (<time>) at <date>; BW 2 GB/s, 4 sparse layers"]


def test_marvel_masks_only_the_time_columns() -> None:
    fig8 = "L2  104.1 ingress  104.1 100% |  104.1 ( 1.00x) | energy  1.001  1.000  1.001 |  0.2"
    switches = "L9       7,175    11,226      yes |    368,640    368,640  1.075e+09  1.075e+09   13.8"
    assert golden.masked_lines(f"{fig8}\n{switches}", golden.MARVEL_MASKS) == [
        "L2  104.1 ingress  104.1 100% |  104.1 ( 1.00x) | energy  1.001  1.000  1.001 | <time>",
        "L9       7,175    11,226      yes |    368,640    368,640  1.075e+09  1.075e+09 <time>"]


def test_refusal_naming_a_layer_retries_the_other_layers_alone() -> None:
    step = golden.map_step("resnet18", "eyeriss", "exhaustive", "edp", ("conv1", "fc"))
    refused = {"exit_code": 2, "stderr": ["error: layer 'conv1': the exhaustive space has about 2e+11 mappings"]}
    retries = golden.layer_retries(step, refused)
    assert [r.argv[r.argv.index("--layers") + 1] for r in retries] == ["fc"]
    assert golden.layer_retries(step, {"exit_code": 2, "stderr": ["error: architecture 'eyeriss': no"]}) == []


def recording(stdout: list[str], energy: float, seconds: float) -> dict:
    step = {"argv": ["dnnmap", "map"], "exit_code": 0, "stdout": stdout,
            "json": {"created": f"{seconds}", "totals": {"energy": energy, "seconds": seconds}}}
    return {"format": golden.FORMAT, "runtime_s": seconds, "runs": {"r": {"steps": [step], "runtime_s": seconds}}}


def compare(tmp_path: Path, old: dict, new: dict, strict: bool = False) -> int:
    paths = [tmp_path / "old.json", tmp_path / "new.json"]
    for path, data in zip(paths, (old, new)):
        path.write_text(json.dumps(data))
    return golden.compare(*paths, strict)


def test_compare_ignores_timings_and_reports_each_changed_number(tmp_path: Path, capsys) -> None:
    assert compare(tmp_path, recording(["total 1,000 cycles"], 5.0, 1.0),
                   recording(["total 1,000 cycles"], 5.0, 9.0)) == 0
    assert compare(tmp_path, recording(["total 1,000 cycles, 3 MB"], 5.0, 1.0),
                   recording(["total 1,001 cycles, 3 MB"], 5.5, 1.0)) == 1
    out = capsys.readouterr().out
    assert "runs.r.steps[0].stdout[line 1] number 1: 1,000 -> 1,001" in out
    assert "runs.r.steps[0].json.totals.energy: 5.0 -> 5.5" in out


@pytest.mark.parametrize("strict, code", [(False, 0), (True, 1)])
def test_text_only_changes_are_fatal_only_when_strict(tmp_path: Path, strict: bool, code: int) -> None:
    assert compare(tmp_path, recording(["total 1,000 cycles"], 5.0, 1.0),
                   recording(["sum 1,000 cycles"], 5.0, 1.0), strict) == code


def test_written_json_files_are_data_so_their_timings_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"compile_seconds": 0.27, "programs": 17}')
    (tmp_path / "programs.bin").write_bytes(b"\x00\x01")
    assert golden.file_record(tmp_path / "manifest.json") == {"compile_seconds": 0.27, "programs": 17}
    assert golden.file_record(tmp_path / "programs.bin") == (
        "b413f47d13ee2fe6c845b2ee141af81de858df4ec549a58b7970bb96645bc8d2")
    old = {"format": golden.FORMAT, "runs": {"r": {"steps": [], "files": {"m.json": {"compile_seconds": 0.27}}}}}
    new = {"format": golden.FORMAT, "runs": {"r": {"steps": [], "files": {"m.json": {"compile_seconds": 0.29}}}}}
    assert compare(tmp_path, old, new) == 0
