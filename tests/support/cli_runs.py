"""Running the ``dnnmap`` command in-process: checking a refusal (exit 2, ``error:`` naming what is wrong), and a
model file imported then mapped."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from dnnmap.cli.main import app
from dnnmap.workload.importers import load_network

runner = CliRunner()


def run(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def assert_user_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def assert_imports_and_maps(model: Path, folder: Path) -> None:
    """``dnnmap import MODEL`` then ``dnnmap map`` on eyeriss (no --skip-unsupported): every layer of the network
    file mapped, in order, with its MACs and a positive cycle count."""
    imported = run("import", model, "-o", folder / "net.yaml")
    assert imported.exit_code == 0, imported.output
    mapped = run("map", folder / "net.yaml", "--arch", "eyeriss", "--json", folder / "map.json")
    assert mapped.exit_code == 0, mapped.output
    layers = json.loads((folder / "map.json").read_text())["layers"]
    net = load_network(folder / "net.yaml")
    assert [(layer["name"], layer["macs"]) for layer in layers] == [(x.name, x.op.macs) for x in net.layers]
    assert all(layer["cycles"] > 0 for layer in layers)
