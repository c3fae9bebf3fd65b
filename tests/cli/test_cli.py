"""End-to-end tests of the `dnnmap` command line (typer CliRunner, in process)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import dnnmap
from dnnmap.arch.spec import PRESET_DIR, preset_names
from dnnmap.cli.main import app
from dnnmap.report.json_report import to_dict
from dnnmap.workload import zoo

runner = CliRunner()
LENET_LAYERS = [layer.name for layer in zoo.get("lenet5").layers]


def run(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def assert_user_error(result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.fixture(scope="module")
def lenet_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict, Path]:
    out = tmp_path_factory.mktemp("lenet")
    result = run("map", "lenet5", "--arch", "eyeriss", "--json", out / "lenet.json",
                 "--save-mappings", out / "maps")
    assert result.exit_code == 0, result.output
    return result, json.loads((out / "lenet.json").read_text()), out / "maps"


def test_map_json_totals_are_sums_of_layers(lenet_run) -> None:
    result, data, _ = lenet_run
    assert [layer["name"] for layer in data["layers"]] == LENET_LAYERS
    for key in ("cycles", "energy", "dram_bytes", "macs"):
        assert data["totals"][key] == pytest.approx(sum(layer[key] for layer in data["layers"]))
    assert data["totals"]["latency_ms"] == pytest.approx(data["totals"]["cycles"] / (200 * 1e3))
    for layer in data["layers"]:
        assert set(layer["mapping"]["levels"]) == {"RF", "GLB", "DRAM"}
        assert sum(layer["energy_breakdown"].values()) == pytest.approx(layer["energy"], rel=1e-6)
    for name in LENET_LAYERS:
        assert name in result.stdout
    assert "energy (x MAC)" in result.stdout and "ms at 200 MHz" in result.stdout


def test_saved_mappings_show_and_verify(lenet_run) -> None:
    _, data, maps = lenet_run
    files = sorted(maps.glob("*.yaml"))
    assert [f.stem.split("_", 1)[1] for f in files] == LENET_LAYERS
    for f in files:
        shown = run("show", f)
        assert shown.exit_code == 0, shown.output
        assert "MAC  #" in shown.stdout and "fits: yes" in shown.stdout
    conv1 = run("show", maps / "00_conv1.yaml")
    assert f"cycles {data['layers'][0]['cycles']:,.0f}" in conv1.stdout
    verified = run("verify", maps / "00_conv1.yaml", "--arch", "eyeriss")
    assert verified.exit_code == 0, verified.output
    assert "bit-exact" in verified.stdout
    assert "counts: all 45 equal to the analytical model" in verified.stdout


def test_verify_refuses_layer_too_large_for_simulator(tmp_path: Path) -> None:
    mapped = run("map", "resnet18", "--layers", "conv1", "--save-mappings", tmp_path)
    assert mapped.exit_code == 0, mapped.output
    assert_user_error(run("verify", tmp_path / "00_conv1.yaml"), "too large for the reference simulator",
                      "limit 20,000,000")


def test_mapping_file_without_operator_is_refused(lenet_run, tmp_path: Path) -> None:
    raw = yaml.safe_load((lenet_run[2] / "00_conv1.yaml").read_text())
    del raw["operator"]
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump(raw))
    assert_user_error(run("show", bare), "bare.yaml", "'operator'")


@pytest.mark.parametrize("args, fragments", [
    (("map", "nosuchnet"), ("unknown model 'nosuchnet'", "lenet5", "resnet18")),
    (("map", "lenet5", "--arch", "nosucharch"), ("unknown architecture 'nosucharch'", "eyeriss", "tpu_like")),
    (("map", "lenet5", "--layers", "conv1,conv9"), ("conv9", "conv1, pool1")),
    (("map", "lenet5", "--objective", "speed"), ("unknown objective 'speed'", "latency")),
    (("map", "missing.onnx"), ("missing.onnx", "no such file")),
    (("map", "lenet5", "--input-shape", "1x3x4"), ("--input-shape",)),
    (("map", "lenet5", "--input-shape", "x=1x3x4"), ("model files only",)),
    (("models", "--layers", "nosuchnet"), ("unknown model", "lenet5")),
    (("show", "missing.yaml"), ("missing.yaml", "not found")),
])
def test_bad_input_exits_2_with_message(args: tuple[str, ...], fragments: tuple[str, ...]) -> None:
    assert_user_error(run(*args), *fragments)


@pytest.mark.parametrize("name, content, fragments", [
    ("bad.onnx", b"garbage\x00\x01 not onnx", ("bad.onnx", "not an ONNX model")),
    ("bad.yaml", b"name: x\nlayers: [\n  - {name: a\n", ("bad.yaml", "not valid YAML")),
])
def test_bad_model_file_prints_one_error_line(tmp_path: Path, name: str, content: bytes,
                                              fragments: tuple[str, ...]) -> None:
    """The importers chain the parser's exception (``raise ... from exc``); the user still sees one line."""
    path = tmp_path / name
    path.write_bytes(content)
    result = run("map", path, "--arch", "eyeriss")
    assert_user_error(result, *fragments)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("edit, fragments", [
    (lambda spec: spec.update(clock_mhx=200), ("clock_mhx", "unknown field")),
    (lambda spec: spec.update(clock_mhz="fast"), ("clock_mhz",)),
    (lambda spec: spec["levels"][0].update(capacity="big"), ("levels.0.capacity",)),
    (lambda spec: spec.update(final_output_bits=32), ("final_output_bits", "output's word_bits (16)")),
])
def test_bad_arch_yaml_names_file_and_field(tmp_path: Path, edit, fragments: tuple[str, ...]) -> None:
    spec = yaml.safe_load((PRESET_DIR / "eyeriss.yaml").read_text())
    edit(spec)
    path = tmp_path / "my_arch.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert_user_error(run("map", "lenet5", "--arch", path, "--layers", "fc3"), str(path), *fragments)


def test_json_is_not_written_on_error(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    assert_user_error(run("map", "lenet5", "--layers", "nope", "--json", target))
    assert not target.exists()


def test_models_and_archs_lists() -> None:
    models = run("models")
    assert models.exit_code == 0
    for name in zoo.names():
        assert name in models.stdout
    layers = run("models", "--layers", "lenet5")
    assert layers.exit_code == 0
    assert all(name in layers.stdout for name in LENET_LAYERS) and "K=6 P=28 Q=28 R=5 S=5" in layers.stdout
    archs = run("archs")
    assert archs.exit_code == 0
    for name in preset_names():
        assert name in archs.stdout
    assert "RF < GLB < DRAM" in archs.stdout and "168" in archs.stdout


def test_python_api_matches_cli_json(lenet_run) -> None:
    _, data, _ = lenet_run
    result = dnnmap.map_network("lenet5", arch="eyeriss", layers=["conv2", "fc1"]).search
    as_dict = to_dict(result)
    by_name = {layer["name"]: layer for layer in data["layers"]}
    for layer in as_dict["layers"]:
        assert layer["cycles"] == by_name[layer["name"]]["cycles"]
        assert layer["mapping"] == by_name[layer["name"]]["mapping"]
    assert as_dict["totals"]["energy"] == pytest.approx(by_name["conv2"]["energy"] + by_name["fc1"]["energy"])


def test_import_writes_network_file_that_map_reads(tmp_path: Path) -> None:
    target = tmp_path / "lenet.yaml"
    imported = run("import", "lenet5", "-o", target)
    assert imported.exit_code == 0, imported.output
    assert "7 layers" in imported.stdout
    mapped = run("map", target, "--layers", "conv2,fc1")
    assert mapped.exit_code == 0, mapped.output
    assert "conv2" in mapped.stdout and "2 layers:" in mapped.stdout
    assert_user_error(run("import", "lenet5", "-o", tmp_path / "lenet.txt"), "lenet.txt")


def test_piped_table_keeps_every_number_beside_a_long_layer_name(tmp_path: Path) -> None:
    """Piped output (CliRunner is not a terminal) is never squeezed: a 120-character layer name, as ONNX
    imports give, leaves every column whole instead of cutting numbers to '1,22…'."""
    target = tmp_path / "lenet.yaml"
    assert run("import", "lenet5", "-o", target).exit_code == 0
    long_name = "encoder/" + "block" * 22 + "/conv1"
    target.write_text(target.read_text().replace("conv1", long_name))
    mapped = run("map", target, "--arch", "eyeriss", "--layers", f"{long_name},conv2", "--json", tmp_path / "r.json")
    assert mapped.exit_code == 0, mapped.output
    assert "…" not in mapped.stdout
    row = next(line for line in mapped.stdout.splitlines() if long_name in line)
    layer = json.loads((tmp_path / "r.json").read_text())["layers"][0]
    assert layer["name"] == long_name and f"{layer['cycles']:,.0f}" in row


def test_compile_and_simulate_nve(tmp_path: Path) -> None:
    xml = Path(dnnmap.__file__).parent / "targets" / "nve" / "networks" / "face.xml"
    compiled = run("compile", xml, "--target", "nve", "-o", tmp_path / "out")
    assert compiled.exit_code == 0, compiled.output
    assert "NVE programs" in compiled.stdout
    assert "(optimization level 3: +fusion," in " ".join(compiled.stdout.split())
    simulated = run("simulate", tmp_path / "out")
    assert simulated.exit_code == 0, simulated.output
    first = " ".join(simulated.stdout.split("bit-exact")[0].split())  # the verdict line, however wrapped
    assert first.startswith(f"NVE instruction-set simulation of {tmp_path / 'out'}"), first
    assert "reduced frame" in first and "--full-frame for all" in first
    assert "all outputs" in first
    assert_user_error(run("compile", xml, "--target", "tpu", "-o", tmp_path / "x"), "unknown target 'tpu'", "nve")
    assert_user_error(run("simulate", tmp_path / "missing"), "manifest")


def _tiny_onnx(path: Path) -> Path:
    """Conv 3->8 (3x3) + Relu on an input with a symbolic batch and resolution."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.zeros((8, 3, 3, 3), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_onnx_file_with_input_shape(tmp_path: Path) -> None:
    model = _tiny_onnx(tmp_path / "tiny.onnx")
    imported = run("import", model, "-o", tmp_path / "tiny.yaml", "--input-shape", "x=1x3x16x16")
    assert imported.exit_code == 0, imported.output
    assert "imported from" in imported.stdout and "network 'tiny', 1 layer, " in imported.stdout
    mapped = run("map", model, "--input-shape", "x=1x3x16x16", "--json", tmp_path / "tiny.json",
                 "--save-mappings", tmp_path / "maps")
    assert mapped.exit_code == 0, mapped.output
    data = json.loads((tmp_path / "tiny.json").read_text())
    assert [layer["macs"] for layer in data["layers"]] == [8 * 3 * 3 * 3 * 16 * 16]
    (saved,) = (tmp_path / "maps").glob("*.yaml")
    verified = run("verify", saved)
    assert verified.exit_code == 0, verified.output
    assert "bit-exact" in verified.stdout


def test_savedmodel_directory_import_and_map(tmp_path: Path) -> None:
    """A Keras 3 export (``model.export``) is a TensorFlow SavedModel directory: import, map, malformed copy."""
    keras = pytest.importorskip("keras", reason="Keras not installed; run: pip install 'dnnmap[keras]'")
    inp = keras.Input((16, 16, 3), name="img")
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv")(inp)
    out = keras.layers.Dense(4, name="fc")(keras.layers.GlobalAveragePooling2D(name="gap")(x))
    keras.Model(inp, out).export(str(tmp_path / "exported"), verbose=False)
    imported = run("import", tmp_path / "exported", "-o", tmp_path / "net.yaml")
    assert imported.exit_code == 0, imported.output
    assert "imported from" in imported.stdout and "3 layers" in imported.stdout
    mapped = run("map", tmp_path / "exported", "--arch", "eyeriss", "--json", tmp_path / "m.json")
    assert mapped.exit_code == 0, mapped.output
    macs = [layer["macs"] for layer in json.loads((tmp_path / "m.json").read_text())["layers"]]
    assert macs == [8 * 3 * 3 * 3 * 16 * 16, 0, 8 * 4]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "saved_model.pb").write_bytes(b"\x08\x01 not a protobuf \xff\xff")
    assert_user_error(run("map", broken, "--arch", "eyeriss"), str(broken), "cannot load the TensorFlow SavedModel")


def test_version_option_prints_the_project_version() -> None:
    declared = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]
    result = run("--version")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"dnnmap {declared}" == f"dnnmap {dnnmap.__version__}"
