"""``dnnmap map --density`` end to end (docs/sparse.md)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from dnnmap.arch.spec import PRESET_DIR
from dnnmap.cli.main import app

runner = CliRunner()


def _sparse_eyeriss(tmp_path: Path) -> Path:
    data = yaml.safe_load((PRESET_DIR / "eyeriss.yaml").read_text())
    data["sparsity"] = {"format": "bitmap"}
    path = tmp_path / "sparse_eyeriss.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _map(*args: object) -> object:
    return runner.invoke(app, ["map", "lenet5", "--mapper", "random", "--budget", "100", "--layers", "conv1,conv2", *map(str, args)])


def test_density_lowers_energy(tmp_path: Path) -> None:
    arch = _sparse_eyeriss(tmp_path)
    totals = {}
    for name, extra in (("dense", ()), ("sparse", ("--density", "weights=0.1"))):
        result = _map("--arch", arch, "--json", tmp_path / f"{name}.json", *extra)
        assert result.exit_code == 0, result.output
        totals[name] = json.loads((tmp_path / f"{name}.json").read_text())["totals"]
    assert totals["sparse"]["energy"] < 0.7 * totals["dense"]["energy"]


def test_density_errors_and_dense_note(tmp_path: Path) -> None:
    for bad, fragment in (("weights=1.5", "(0, 1]"), ("Wx=0.5", "names no input tensor"), ("weights", "KEY=VALUE")):
        result = _map("--density", bad)
        assert result.exit_code == 2 and fragment in result.stderr and "Traceback" not in result.output, result.output
    result = _map("--density", "weights=0.5")
    assert result.exit_code == 0 and "no sparsity support" in result.stderr
