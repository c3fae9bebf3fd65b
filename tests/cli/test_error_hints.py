"""Unknown names get a "did you mean" suggestion; schema errors in YAML name the line as well as the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import PRESET_DIR
from dnnmap.cli.main import app
from dnnmap.errors import did_you_mean

runner = CliRunner()


@pytest.mark.parametrize(("args", "message"), [
    (("map", "resnet5"), "error: unknown model 'resnet5'; did you mean 'resnet50' or 'resnet18'? known models: "),
    (("map", "lenet5", "--arch", "eyriss"), "error: unknown architecture 'eyriss'; did you mean 'eyeriss'? presets: "),
    (("map", "lenet5", "--objective", "enrgy"), "error: unknown objective 'enrgy'; did you mean 'energy'? choose "),
    (("map", "lenet5", "--mapper", "randm"), "error: unknown mapper 'randm'; did you mean 'random'? choose from "),
    (("map", "lenet5", "--layers", "conv9"), "error: network 'lenet5' has no layer(s) ['conv9']; did you mean "),
])
def test_unknown_names_suggest_the_closest(args: tuple[str, ...], message: str) -> None:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_no_suggestion_for_a_name_like_none() -> None:
    assert did_you_mean("zzzzzz", ["eyeriss", "tpu_like"]) == ""
    assert did_you_mean("TPU-like", ["eyeriss", "tpu_like"]) == " did you mean 'tpu_like'?"


def test_yaml_schema_errors_name_the_line(tmp_path: Path) -> None:
    text = (PRESET_DIR / "eyeriss.yaml").read_text()
    lines = text.splitlines()
    glb = next(i for i, line in enumerate(lines) if "name: GLB" in line)
    write = next(i for i in range(glb, len(lines)) if "write_energy" in lines[i])
    lines[write] = lines[write].replace("write_energy", "write_enrgy")
    clock = next(i for i, line in enumerate(lines) if line.startswith("clock_mhz:"))
    lines[clock] = "clock_mhz: fast"
    bad = tmp_path / "bad.yaml"
    bad.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["map", "lenet5", "--arch", str(bad)])
    assert result.exit_code == 2, result.output
    assert f"field 'clock_mhz' (line {clock + 1}): " in result.stderr
    assert f"field 'levels.1.write_enrgy' (line {write + 1}): unknown field" in result.stderr
