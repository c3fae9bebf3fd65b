"""Reading runs back: bad files name the file and the field, older JSON says how to fix it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnnmap.errors import InputFileError
from dnnmap.report.html.runs import load_run


def test_run_round_trip(run_files: tuple[Path, Path]) -> None:
    data = json.loads(run_files[0].read_text())
    run = load_run(run_files[0])
    assert (run.network, run.arch, run.label) == ("lenet5", "eyeriss", "edp")
    assert [layer.name for layer in run.layers] == [layer["name"] for layer in data["layers"]]
    for layer, raw in zip(run.layers, data["layers"]):
        assert sum(layer.energy_by_part.values()) == pytest.approx(raw["energy"], rel=1e-9)


def rewrite(source: Path, target: Path, edit) -> Path:  # noqa: ANN001 - a function editing the data
    data = json.loads(source.read_text())
    edit(data)
    target.write_text(json.dumps(data))
    return target


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d["layers"][0].pop("compute_cycles"), "layer 'conv1': missing field 'compute_cycles' (written by "
                                                     "an older dnnmap?"),
    (lambda d: d["layers"][1].update(cycles="many"), "layer 'pool1': field 'cycles' must be int or float, not str"),
    (lambda d: d["layers"][0].update(bottleneck="L9"), "layer 'conv1': unknown level 'L9'"),
    (lambda d: d.update(layers=[]), "layers: no layers"),
    (lambda d: d["machine"].update(levels=[]), "machine: field 'levels' must list the level names"),
    (lambda d: d.pop("machine"), "top level: missing field 'machine'"),
])
def test_bad_fields_are_named(run_files: tuple[Path, Path], tmp_path: Path, edit, message: str) -> None:  # noqa: ANN001
    path = rewrite(run_files[0], tmp_path / "bad.json", edit)
    with pytest.raises(InputFileError) as err:
        load_run(path)
    assert str(err.value).startswith(f"{path}: ")
    assert message in str(err.value)


def test_not_json_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(InputFileError, match=r"x\.json: not valid JSON"):
        load_run(tmp_path / "x.json")
    with pytest.raises(InputFileError, match=r"nope\.json: file not found"):
        load_run(tmp_path / "nope.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(InputFileError, match="expected a JSON object"):
        load_run(tmp_path / "list.json")
