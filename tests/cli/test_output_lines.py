"""What every command prints about its results: counts in the right number ("1 layer", "2 layers") and one
"wrote ..." line per output, all printed by ``dnnmap.cli.console.wrote`` with the folder of a relative path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.report.summary import counted

CLI = Path(__file__).resolve().parents[2] / "dnnmap" / "cli"


def run(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("n, noun, text", [
    (1, "layer", "1 layer"), (0, "layer", "0 layers"), (31, "layer", "31 layers"), (1024, "MAC", "1,024 MACs"),
    (2, "layer search", "2 layer searches"), (3, "capacity", "3 capacities"), (1, "capacity", "1 capacity"),
    (2, "PNG figure", "2 PNG figures"), (2, "mapping file", "2 mapping files"),
])
def test_counted_puts_the_noun_in_the_right_number(n: int, noun: str, text: str) -> None:
    assert counted(n, noun) == text


def test_one_layer_is_a_layer_in_the_totals_and_the_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("map", "lenet5", "--layers", "conv1", "--mapper", "random", "--budget", "100",
                 "--json", "r.json", "--save-mappings", "maps", "--png-dir", "png")
    assert result.exit_code == 0, result.output
    assert re.search(r"^1 layer: [\d,]+ cycles", result.stdout, re.M), result.stdout
    assert "mapping lenet5: 1 of 1 layer in" in result.stderr
    wrote = [line for line in result.stdout.splitlines() if line.startswith("wrote")]
    # every output says where it went, the same way (the JSON file too, not only the HTML/PNG outputs)
    assert wrote == [f"wrote r.json (in {tmp_path})", f"wrote 7 PNG figures to png (in {tmp_path})",
                     f"wrote 1 mapping file to maps (in {tmp_path})"]
    assert len(list((tmp_path / "png").glob("*.png"))) == 7 and len(list((tmp_path / "maps").iterdir())) == 1


def test_no_command_prints_its_own_wrote_line() -> None:
    """The one function that says what was written is ``console.wrote``; a command printing "wrote ..." itself
    would drift from the others (the "(in FOLDER)" of a relative path, markup in file names)."""
    printing = [f"{path.name}:{n}" for path in sorted(CLI.glob("*.py")) if path.name != "console.py"
                for n, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"""f?["']wrote """, line)]
    assert printing == []
