"""ONNX models whose weights live in external data files: read in place when the files are intact, mapped from
shapes with one note when they are missing, truncated, replaced or pointing outside the model's folder."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx_graphs import conv_relu_model, ints, model, scalar, weight
from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.errors import DnnmapNote
from dnnmap.workload.importers import load_network
from dnnmap.workload.ir import Network
from dnnmap.workload.sparsity import op_densities

runner = CliRunner()
DATA = "model.data"


def _pruned_model() -> tuple[onnx.ModelProto, float]:
    """conv_relu_model with half of the conv weights zero (density 0.5) and dense fc weights."""
    m = conv_relu_model()
    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 3, 3, 3)).astype(np.float32)
    w.reshape(-1)[::2] = 0
    fw = rng.normal(size=(10, 8)).astype(np.float32) + 5
    for i, t in enumerate(m.graph.initializer):
        if t.name in ("w", "fw"):
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(w if t.name == "w" else fw, t.name))
    return m, np.count_nonzero(w) / w.size


def _save_external(folder: Path, location: str = DATA) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(_pruned_model()[0], str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=0)
    return path


def _layers(network: Network) -> list[tuple]:
    return [(layer.name, layer.output_shape, layer.op.dims, layer.op.macs) for layer in network.layers]


def _relocate(path: Path, location: str) -> None:
    """Point every external tensor of ``path`` at ``location`` (the data file itself is left alone)."""
    m = onnx.load_model(str(path), load_external_data=False)
    for t in m.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = location
    path.write_bytes(m.SerializeToString())


@pytest.fixture()
def intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the data file is found next to the model, not in the working directory
    return _save_external(tmp_path / "intact")


def test_intact_external_weights_give_measured_densities(intact: Path) -> None:
    inline = intact.parent / "inline.onnx"
    inline.write_bytes(_pruned_model()[0].SerializeToString())
    with_data = load_network(intact)
    assert _layers(with_data) == _layers(load_network(inline))
    conv, _, fc = with_data.layers
    assert op_densities(conv.op) == {"W": pytest.approx(_pruned_model()[1])} and _pruned_model()[1] < 1
    assert op_densities(fc.op) == {}


def _break(path: Path, how: str) -> str:
    """Damage the external data of ``path``; the reason the note must give."""
    data = path.parent / DATA
    if how == "missing":
        data.unlink()
        return f"external data file '{DATA}' not found"
    if how == "truncated":  # cut right after the conv weights 'w', the first tensor
        data.write_bytes(data.read_bytes()[:_tensor_ends(path)["w"]])
        return f"external data file '{DATA}' is shorter than its tensors need (truncated?)"
    if how == "directory":
        data.unlink()
        data.mkdir()
        return f"external data file '{DATA}' is a directory"
    if how == "outside":  # a valid data file, but one folder up
        shutil.move(data, path.parent.parent / DATA)
        _relocate(path, f"../{DATA}")
        return f"external data location '../{DATA}' is outside the model's folder"
    if how == "symlink":  # a link inside the folder to a file outside it
        shutil.move(data, path.parent.parent / DATA)
        data.symlink_to(path.parent.parent / DATA)
        return f"external data location '{DATA}' is outside the model's folder"
    raise AssertionError(how)


def _tensor_ends(path: Path) -> dict[str, int]:
    """Where each external tensor of ``path`` ends in its data file."""
    m = onnx.load_model(str(path), load_external_data=False)
    ends = {}
    for t in m.graph.initializer:
        info = {e.key: e.value for e in t.external_data}
        ends[t.name] = int(info.get("offset", 0)) + int(info["length"])
    return ends


@pytest.mark.parametrize("how", ["missing", "truncated", "directory", "outside", "symlink"])
def test_broken_external_data_maps_from_shapes_with_one_note(intact: Path, how: str) -> None:
    reference = load_network(intact)
    broken = _save_external(intact.parent.parent / "broken")
    reason = _break(broken, how)
    ends = _tensor_ends(broken)
    count = sum(end > ends["w"] for end in ends.values()) if how == "truncated" else 7
    assert 0 < count <= 7
    # a truncated file still gives the densities of the tensors before the cut (the conv weights), others none
    densities = [op_densities(layer.op) if how == "truncated" and layer.name == "conv" else {}
                 for layer in reference.layers]
    assert op_densities(reference.layer("conv").op)  # the intact model has one to lose
    note = f"note: {broken}: {count} of 7 weight tensors could not be read ({reason}); their densities are unknown"

    out = intact.parent.parent / "x.yaml"
    imported = runner.invoke(app, ["import", str(broken), "-o", str(out)])
    assert imported.exit_code == 0, imported.output
    assert imported.stderr.count("note:") == 1 and note in imported.stderr, imported.stderr
    assert _layers(load_network(out)) == _layers(reference)
    assert [op_densities(layer.op) for layer in load_network(out).layers] == densities  # unknown: dense

    json_path = intact.parent.parent / "x.json"
    mapped = runner.invoke(app, ["map", str(broken), "--arch", "eyeriss", "--json", str(json_path)])
    assert mapped.exit_code == 0, mapped.output
    assert mapped.stderr.count("note:") == 1 and note in mapped.stderr, mapped.stderr
    layers = json.loads(json_path.read_text())["layers"]
    assert [(lay["name"], lay["macs"]) for lay in layers] == [(lay.name, lay.op.macs) for lay in reference.layers]


def test_absolute_location_is_not_read(intact: Path) -> None:
    _relocate(intact, str(intact.parent / DATA))
    with pytest.warns(DnnmapNote, match="7 of 7 weight tensors.*is outside the model's folder"):
        network = load_network(intact)
    assert all(op_densities(layer.op) == {} for layer in network.layers)


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")
def test_fifo_in_place_of_the_data_file_does_not_hang(intact: Path) -> None:
    """A FIFO without a writer would block a plain open() forever."""
    data = intact.parent / DATA
    data.unlink()
    os.mkfifo(data)
    result: dict[str, object] = {}

    def load() -> None:
        with pytest.warns(DnnmapNote, match=f"7 of 7 .*'{DATA}' is not a regular file") as caught:
            result["network"] = load_network(intact)
        result["notes"] = len(caught)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "import blocked on the FIFO"
    assert result["notes"] == 1 and len(result["network"].layers) == 3


def _pad_conv_clip(folder: Path) -> Path:
    """pad (pads initializer) -> conv -> clip(0, 6), every tensor external: shapes need the pads' values."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
             helper.make_node("Conv", ["p", "w"], ["c"], name="conv"),
             helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="clip")]
    inits = [ints("pads", 0, 0, 1, 1, 0, 0, 1, 1), weight("w", 4, 3, 3, 3), scalar("lo", 0.0), scalar("hi", 6.0)]
    folder.mkdir()
    path = folder / "model.onnx"
    onnx.save_model(model(nodes, inits, [1, 3, 8, 8]), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=DATA, size_threshold=0)
    return path


def test_small_constants_read_from_external_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shape inference sees the pads read from the data file next to the model (not the working directory)."""
    monkeypatch.chdir(tmp_path)
    (conv,) = load_network(_pad_conv_clip(tmp_path / "m")).layers
    assert conv.op.attr("padding") == (1, 1, 1, 1) and conv.output_shape == (1, 4, 8, 8)
    assert conv.fused == ("relu6",)


def test_unreadable_pads_are_an_error_not_a_guess(tmp_path: Path) -> None:
    """Without the pads the conv's input shape is unknown: exit 2 naming the node and why, after the note."""
    path = _pad_conv_clip(tmp_path / "m")
    (path.parent / DATA).unlink()
    result = runner.invoke(app, ["import", str(path), "-o", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.stderr.count("note:") == 1 and "4 of 4 weight tensors could not be read" in result.stderr
    assert f"Pad (input 'pads' is unknown: external data file '{DATA}' not found) x1 (pad)" in result.stderr
    assert "Clip (" not in result.stderr and "(clip)" not in result.stderr  # unknown bounds: still a clip
