"""`dnnmap report` and `dnnmap map --html/--png-dir` end to end, and the progress display."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.cli.progress import item_progress

runner = CliRunner()


def run(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def test_report_compares_two_runs(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out" / "report.html"
    result = run("report", *run_files, "-o", out, "--png-dir", tmp_path / "png")
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stdout and "wrote 17 PNG figures" in result.stdout
    assert "drawing the report: 17 of 17 figures in" in result.stderr  # not a terminal: one summary line
    assert "Comparison of 2 runs" in out.read_text()
    assert len(list((tmp_path / "png").glob("*.png"))) == 17


def test_png_count_is_the_files_this_run_wrote(run_files: tuple[Path, Path], tpu_file: Path, tmp_path: Path) -> None:
    """Eyeriss (energy in x MAC) against the TPU-like preset (pJ): the energy comparison has no figure, so 16 of
    the 17 figures are PNGs; the count says so, a note says which one and why, and a stale PNG of an earlier
    report in the same folder is not counted."""
    from dnnmap.report.html.report import plan
    from dnnmap.report.html.runs import load_run

    keys = [spec.key for specs in plan([load_run(p) for p in (*run_files, tpu_file)]) for spec in specs]
    assert len(keys) == len(set(keys)) == 24  # 3 comparison figures + 7 per run: no two share a PNG name
    fresh, stale = tmp_path / "fresh", tmp_path / "stale"
    stale.mkdir()
    (stale / "compare-energy.png").write_bytes(b"from an earlier report")
    for png_dir in (fresh, stale):
        result = run("report", run_files[0], tpu_file, "-o", tmp_path / "c.html", "--png-dir", png_dir)
        assert result.exit_code == 0, result.output
        assert f"wrote 16 PNG figures to {png_dir}\n" in result.stdout
        assert "note: no compare-energy.png: Energy is not compared: the runs report it in different units" in (
            result.stdout)
        assert "drawing the report: 17 of 17 figures in" in result.stderr
    assert len(list(fresh.glob("*.png"))) == 16
    assert (stale / "compare-energy.png").read_bytes() == b"from an earlier report"  # untouched, not counted


def test_relative_outputs_say_which_folder(run_files: tuple[Path, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("report", run_files[0])  # default output: report.html in the current folder
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"wrote report.html (in {tmp_path})"
    assert (tmp_path / "report.html").is_file()


def test_map_writes_html_and_graph_json(tmp_path: Path) -> None:
    result = run("map", "lenet5", "--layers", "conv1,pool1", "--mapper", "random", "--budget", "100",
                 "--json", tmp_path / "r.json", "--html", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    assert "mapping lenet5: 2 of 2 layers in" in result.stderr
    html = (tmp_path / "r.html").read_text()
    assert 'id="fig-graph"' in html and "dnnmap map lenet5 --arch eyeriss" in html
    assert [layer["inputs"] for layer in json.loads((tmp_path / "r.json").read_text())["layers"]] == [
        ["input"], ["conv1"]]


def test_bad_json_is_a_user_error(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{")
    result = run("report", run_files[0], tmp_path / "bad.json", "-o", tmp_path / "r.html")
    assert result.exit_code == 2
    assert f"error: {tmp_path / 'bad.json'}: not valid JSON" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "r.html").exists()
    result = run("report", tmp_path / "missing.json")
    assert result.exit_code == 2 and "missing.json: file not found" in result.stderr


def test_progress_shows_the_current_item_on_a_terminal() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=150)
    with item_progress(console, "mapping net", ["conv1", "pool1", "fc1"], "layer") as done:
        done("conv1")
        assert "pool1" in buffer.getvalue() and "1/3" in buffer.getvalue()
        done("pool1")
        assert "fc1" in buffer.getvalue()
        done("fc1")
    assert "ETA" in buffer.getvalue()


def test_progress_off_a_terminal_is_one_line() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=150)
    with item_progress(console, "mapping net", ["conv1", "pool1"], "layer") as done:
        done("conv1")
        done("pool1")
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mapping net: 2 of 2 layers in ")
