"""Issue 25, second part: inputs that load but mean something impossible, over generated cases. A mapping that
does not fit (``show`` says so first, ``verify`` fails it), Timeloop files whose fields are wrong in kind or range,
``--input-shape`` values a model cannot take, names that are both a preset and a folder, the outputs of
``generate-hw`` and ``compile``, and mapping ``spatial_axis`` entries that place nothing or cannot be placed."""

from __future__ import annotations

import copy
import random
import time
from pathlib import Path

import pytest
import yaml

from dnnmap.arch.spec import load_arch
from dnnmap.mapping.io import load_mapping_file, mapping_from_dict, mapping_to_dict
from dnnmap.search.network import map_layer
from dnnmap.search.options import SearchOptions
from dnnmap.sim import sim_metrics, verify
from dnnmap.workload import zoo
from fuzz_cases import Bases, make_bases, run_case


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return make_bases(tmp_path_factory.mktemp("issue25b"))


# ---- 1. show and verify on a mapping that does not fit ----------------------------------------------------------
def _move_factors(doc: dict, rng: random.Random) -> dict:
    """``doc`` (a mapping file) with a few temporal factors moved from the outer levels to the inner ones, so
    tiles grow and often overfill a level."""
    doc = copy.deepcopy(doc)
    levels = doc["levels"]
    names = list(levels)
    for _ in range(rng.randrange(1, 4)):
        src = rng.choice(names[1:])
        temporal = levels[src].get("temporal") or {}
        if not temporal:
            continue
        dim = rng.choice(sorted(temporal))
        dst = rng.choice(names[:names.index(src)])
        target = levels[dst].setdefault("temporal", {})
        target[dim] = target.get(dim, 1) * temporal.pop(dim)
        levels[dst]["order"] = sorted(target)
        levels[src]["order"] = sorted(temporal)
    return doc


def _independent_excess(path: Path) -> dict[str, float]:
    """Per level, words over capacity of the simulator's literal tiles (not the analytical model's)."""
    _, op, raw = load_mapping_file(path)
    arch = load_arch(raw["arch"])
    mapping = mapping_from_dict(raw, [lv.name for lv in arch.levels], str(path), op)
    report = verify(op, arch, mapping)
    return sim_metrics(report.result, op, arch, mapping).capacity_excess


def test_mappings_that_do_not_fit(b: Bases, tmp_path: Path) -> None:
    rng = random.Random(251)
    seen = {True: 0, False: 0}
    for i in range(8):
        path = tmp_path / f"m{i}.yaml"
        path.write_text(yaml.safe_dump(_move_factors(b.mapping, rng), sort_keys=False))
        shown = run_case("show", ["show", str(path)], tmp_path)
        assert shown.problem is None and shown.exit_code == 0, f"{path}: {shown.problem} {shown.message}"
        over = {level: words for level, words in _independent_excess(path).items() if words > 0}
        seen[bool(over)] += 1
        verified = run_case("verify", ["verify", str(path)], tmp_path, allowed=(0, 1))
        assert verified.problem is None, f"{path}: {verified.problem}"
        if over:
            for o in (shown, verified):
                assert o.message.startswith("DOES NOT FIT: layer 'conv1'"), o.message
                assert any(f"level {level}:" in o.message for level in over), (over, o.message)
                assert "capacity" in o.message and "words" in o.message, o.message
            assert verified.exit_code == 1
        else:
            assert "DOES NOT FIT" not in shown.message and verified.exit_code == 0, verified.message
    assert seen[True] and seen[False], seen  # both outcomes generated


# ---- 2. Timeloop files: fields of the wrong kind or range are refused, naming file and field ------------------
TIMELOOP = Path(__file__).parents[1] / "timeloop" / "fixtures"
HOSTILE_INTS = ["4", "0x10", 4.0, 2.5, True, 0, -8, 2**21, 10**30, None]


def _problem_edit(doc: dict, rng: random.Random) -> str:
    """One hostile edit of conv1d+oc+ic's problem; returns the field the refusal must name."""
    problem = doc["problem"]
    edit = rng.randrange(4)
    if edit == 0:
        dim = rng.choice(list(problem["instance"]))
        problem["instance"][dim] = rng.choice(HOSTILE_INTS)
        return f"problem.instance.{dim}"
    if edit == 1:
        name = rng.choice(["X", "k", "Kk", "densities"])
        problem["instance"][name] = rng.choice([4, {"Weights": 0.5}]) if name == "densities" else 4
        if name == "densities" and not problem["instance"][name]:
            problem["instance"][name] = {"Weights": 0.5}
        return f"problem.instance.{name}"
    if edit == 2:
        problem["shape"]["data-spaces"][1]["projection"][1] = [["R"], ["P", rng.choice([2**21, 10**30, 0, -2])]]
        return "problem.shape.data-spaces[1].projection[1]"
    problem["version"] = rng.choice(["0.1", 1, "5.0", True, "v0.4", 0.5])
    return "problem.version"


def _arch_edit(doc: dict, rng: random.Random) -> str:
    """One hostile edit of 3levelspatial's architecture (v0.2 tree)."""
    chip = doc["architecture"]["subtree"][0]["subtree"][0]
    buffer, regfile = chip["local"][0], chip["subtree"][0]["local"][0]
    edit = rng.randrange(4)
    if edit == 0:
        regfile["attributes"]["depth"] = rng.choice([0, -1, 2.5, "0"])
        return "depth"
    if edit == 1:
        buffer["attributes"]["width"] = rng.choice([0, -8, 2.5, "0"])
        return "width"
    if edit == 2:
        regfile["attributes"]["word-bits"] = rng.choice([0, -8, 2.5, 10**6])
        return "word-bits"
    doc["architecture"]["version"] = rng.choice(["0.1", 1, "5.0", True, 0.5])
    return "architecture.version"


def _ert_edit(doc: dict, rng: random.Random) -> str:
    tables = doc["ERT"]["tables"]
    edit = rng.randrange(3)
    if edit == 0:
        doc["ERT"]["tables"] = rng.choice([{}, [], None])
        return "ERT.tables"
    victim = rng.choice(list(tables))
    if edit == 1:
        del tables[victim]
        return "ERT.tables"
    tables[victim] = {}
    return "ERT.tables"


def _constraints_edit(doc: dict, rng: random.Random) -> str:
    targets = doc["architecture_constraints"]["targets"]
    i = rng.randrange(len(targets))
    edit = rng.randrange(3)
    if edit == 0:
        targets[i]["type"] = rng.choice(["bypas", "keep", "", None, 3])
        return f"architecture_constraints.targets[{i}].type"
    targets[i]["target"] = rng.choice(["", None, 7]) if edit == 1 else rng.choice(["GlobalBufer", "PE", "DRAM"])
    return f"architecture_constraints.targets[{i}].target"


TIMELOOP_EDITS = {  # role -> (base files, the role's file, its edit)
    "problem": (("3levelspatial.arch.yaml", "3level.ert.yaml"), "conv1d+oc+ic.prob.yaml", _problem_edit),
    "arch": (("3level.ert.yaml",), "3levelspatial.arch.yaml", _arch_edit),
    "ert": (("3levelspatial.arch.yaml",), "3level.ert.yaml", _ert_edit),
    "constraints": (("eyeriss.arch.yaml", "eyeriss.ert.yaml"), "eyeriss.constraints.yaml", _constraints_edit),
}


@pytest.mark.parametrize("role", list(TIMELOOP_EDITS))
def test_timeloop_fields_of_the_wrong_kind_or_range(tmp_path: Path, role: str) -> None:
    rng = random.Random(f"tl-{role}")
    others, name, edit = TIMELOOP_EDITS[role]
    for i in range(8):
        doc = yaml.safe_load((TIMELOOP / name).read_text())
        field = edit(doc, rng)
        bad = tmp_path / f"{i}_{name}"
        bad.write_text(yaml.safe_dump(doc, sort_keys=False))
        out = tmp_path / f"out{i}"
        files = [str(TIMELOOP / o) for o in others]
        args = ["import-arch", "timeloop", *files, "-o", str(out / "a.yaml")]
        args += ["--problem", str(bad), "--network-output", str(out / "n.yaml")] if role == "problem" else [str(bad)]
        o = run_case("timeloop-meaning", args, tmp_path, outputs=(out,))
        assert o.problem is None and o.exit_code == 2, f"{field}: {o.problem} exit {o.exit_code} ({o.message})"
        assert str(bad) in o.message and field in o.message, f"{field}: {o.message}"


# ---- 3. --input-shape: a well-formed shape for an input the model has, else refused ----------------------------
def _tiny_onnx(path: Path) -> Path:
    """A one-convolution ONNX model with the input ``x`` of shape 1x3x8x8."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def hostile_shapes(rng: random.Random, n: int) -> list[str]:
    """Malformed shapes, shapes for inputs that do not exist, and the one right shape ``x=1x3x8x8``."""
    fixed = ["garbage", "=1x3x8x8", "x=", "x", "x=1x0x8x8", "x=1x-3x8x8", "x=1x3.0x8x8", "x=+1x3x8x8",
             "x=1_0x3x8x8", "x= 1x3x8x8", " x=1x3x8x8", "x=\uff11x3x8x8", "x=1xx8", "x=1x3x8x8x", "nosuch=1x3x8x8",
             "x=1x3x8x8"]
    out = list(fixed)
    while len(out) < n:
        dims = [rng.choice(["1", "3", "8", "0", "-1", "", "1e1", "٣", "99999999999"]) for _ in range(rng.randrange(1, 5))]
        out.append(rng.choice(["x", "y", "input", "X"]) + rng.choice(["=", ":", "=="]) + rng.choice("xX*").join(dims))
    return out


def test_input_shapes_a_model_cannot_take(b: Bases, tmp_path: Path) -> None:
    onnx_path = _tiny_onnx(tmp_path / "tiny.onnx")
    models = ["lenet5", "mttkrp:I=8,J=8,K=8,L=8", str(b.root / "lenet.yaml"), str(onnx_path)]
    accepted = 0
    for i, shape in enumerate(hostile_shapes(random.Random(3), 24)):
        for model in models:
            out = tmp_path / f"n{i}.yaml"
            o = run_case("input-shape", ["import", model, "-o", str(out), "--input-shape", shape], tmp_path,
                         outputs=(out,))
            assert o.problem is None, f"{model} {shape!r}: {o.problem} ({o.message})"
            right = model == str(onnx_path) and shape == "x=1x3x8x8"
            assert o.exit_code == (0 if right else 2), f"{model} {shape!r}: exit {o.exit_code} ({o.message})"
            if right:
                accepted += 1
                out.unlink()
            else:
                assert "--input-shape" in o.message, o.message
    assert accepted == 1


# ---- 4. a file or folder named like a preset or zoo model does not shadow it ------------------------------------
def test_preset_and_zoo_names_are_not_shadowed(b: Bases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from itertools import product

    from dnnmap.arch.spec import PRESET_DIR

    monkeypatch.chdir(tmp_path)
    decoy_arch = (PRESET_DIR / "eyeriss.yaml").read_text().replace("name: eyeriss", "name: decoy", 1)
    preset = "eyeriss"  # its kernels are compiled by make_bases (another preset's first run compiles for ~20 s)
    for i, (arch_kind, model_kind, model) in enumerate(product(["folder", "decoy", "garbage"], ["folder", "garbage"],
                                                               ["lenet5", "LeNet5"])):
        for name, kind in ((preset, arch_kind), (model, model_kind)):
            shadow = tmp_path / name
            if kind == "folder":
                shadow.mkdir()
            else:
                shadow.write_text(decoy_arch if kind == "decoy" else "\x00 not a model")
        out = tmp_path / f"run{i}.json"
        o = run_case("shadow", ["map", model, "--arch", preset, "--layers", "conv1", "--mapper", "random",
                                "--budget", "5", "--json", str(out)], tmp_path)
        assert o.problem is None and o.exit_code == 0, f"{preset} {model}: {o.problem} ({o.message})"
        run = json.loads(out.read_text())
        assert (run["arch"], run["network"]) == (preset, model.lower())
        assert f"give ./{model}" in o.message or f"give ./{preset}" in o.message, o.message
        if (tmp_path / preset).is_file() and (tmp_path / preset).read_text() == decoy_arch:
            o = run_case("shadow", ["map", model, "--arch", f"./{preset}", "--layers", "conv1", "--mapper",
                                    "random", "--budget", "5", "--json", str(out)], tmp_path)
            assert o.exit_code == 0 and json.loads(out.read_text())["arch"] == "decoy", o.message
        o = run_case("shadow", ["map", f"./{model}", "--arch", preset], tmp_path)  # the path: not the zoo model
        assert o.problem is None and o.exit_code == 2 and f"{model}" in o.message, o.message
        for name in (preset, model):
            (tmp_path / name).rmdir() if (tmp_path / name).is_dir() else (tmp_path / name).unlink()


# ---- 5. generate-hw and compile: outputs checked before any work -------------------------------------------------
def output_cases(b: Bases, rng: random.Random, root: Path) -> list[tuple[list[str], list[Path]]]:
    """generate-hw and compile command lines whose outputs collide with each other or with an input (a file, or
    for compile a file inside the output folder, which compile replaces whole); returned with their inputs."""
    cases = []
    for i in range(12):
        folder = root / f"case{i}"
        folder.mkdir()
        net, xml, params = folder / "net.yaml", folder / "net.xml", folder / "w.npz"
        net.write_text((b.root / "lenet.yaml").read_text())
        xml.write_text(b.xml)
        params.write_bytes(b"PK not read")
        if rng.random() < 0.5:
            yaml_out, verilog_out = folder / "o.yaml", folder / "o.vh"
            which = rng.randrange(3)
            if which == 0:
                verilog_out = yaml_out
            else:
                (yaml_out, verilog_out)[which - 1].unlink(missing_ok=True)
                yaml_out, verilog_out = (net, verilog_out) if which == 1 else (yaml_out, net)
            args = ["generate-hw", str(net), "--pes", "64", "--yaml", str(yaml_out), "--verilog", str(verilog_out)]
            cases.append((args, [net]))
        else:
            target, source = rng.choice([("nmp", net), ("nve", xml), ("nve", net)])
            out = rng.choice([folder, source, params if target == "nmp" else source])
            args = ["compile", str(source), "--target", target, "-o", str(out)]
            if target == "nmp":
                args += ["--params", str(params)]
            cases.append((args, [source, params]))
    return cases


def test_generate_hw_and_compile_outputs_checked_first(b: Bases, tmp_path: Path) -> None:
    import hashlib

    for args, inputs in output_cases(b, random.Random(5), tmp_path):
        before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs}
        listing = sorted(tmp_path.rglob("*"))
        start = time.process_time()
        o = run_case("outputs", args, tmp_path)
        assert o.problem is None and o.exit_code == 2, f"{args}: {o.problem} exit {o.exit_code} ({o.message})"
        assert time.process_time() - start < 1.0, args
        assert any(s in o.message for s in ("same path", "input file", "holds the input", "not a directory")), \
            f"{args}: {o.message}"
        assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs} == before
        assert sorted(tmp_path.rglob("*")) == listing, f"{args}: files written"


# ---- 6. mapping files: a spatial_axis entry places a spatial loop on an axis the level's fan-out has --------------
@pytest.mark.parametrize("preset", ["eyeriss", "rtml_192pe", "nmp"])  # fan-outs: 2-D; 1-D and 1-D; 1-D and 2-D
def test_spatial_axis_where_it_cannot_place(b: Bases, preset: str) -> None:
    """Generated ``spatial_axis: {DIM: AXIS}`` entries on every level of a searched mapping: refused (exit 2,
    naming the level and the entry) on a level without a fan-out, for a dimension without a spatial factor there,
    for axis 1 of a 1-D fan-out and for 2 (both axes) on a fan-out with one axis; accepted where the axis exists
    and the factors fit."""
    arch = load_arch(preset)
    op = zoo.get("lenet5").layer("conv2").op
    base = mapping_to_dict(map_layer(op, arch, "edp", "random", SearchOptions(budget=300, seed=1)).mapping,
                           [lv.name for lv in arch.levels], op)
    rng = random.Random(preset)
    codes = []
    fanned = [lv for lv in arch.levels if lv.fanout is not None]
    for i in range(16):
        lv = rng.choice(fanned if rng.random() < 0.7 else arch.levels)
        doc = copy.deepcopy(base)
        entry = doc["levels"].setdefault(lv.name, {})
        spatial = entry.get("spatial") or {}
        dim = rng.choice(sorted(spatial)) if spatial and rng.random() < 0.7 else rng.choice(op.dim_names)
        axis = rng.choice([0, 1, 2])
        entry["spatial_axis"] = {**(entry.get("spatial_axis") or {}), dim: axis}
        path = b.root / f"axis_{preset}_{i}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        shape = lv.fanout.shape if lv.fanout is not None else ()
        illegal = not shape or spatial.get(dim, 1) == 1 or axis >= len(shape) and not (axis == 2 and len(shape) == 2)
        o = run_case("mapping", ["show", str(path)], b.root)
        assert o.problem is None, f"{lv.name} {dim}: {axis}: {o.problem} ({o.message})"
        codes.append(o.exit_code)
        named = (f"level {lv.name}: spatial_axis {dim}: {axis}" in o.message  # the mapping's check, or the file's
                 or f"field 'levels.{lv.name}.spatial_axis.{dim}'" in o.message)
        if illegal:
            assert o.exit_code == 2 and named, \
                f"{lv.name} {dim}: {axis} on fan-out {list(shape)}: exit {o.exit_code} ({o.message})"
        elif o.exit_code == 2:  # a legal axis whose factors do not fit it
            assert f"level {lv.name}: spatial factors" in o.message, o.message
    assert 0 in codes and 2 in codes


@pytest.mark.parametrize("preset", ["eyeriss", "rtml_192pe", "nmp"])
def test_constraint_axes_where_the_fan_out_has_none(b: Bases, preset: str) -> None:
    """Generated constraints ``axes: {DIM: AXIS}`` and ``both_axes: true`` on every level: refused (exit 2, naming
    the file and the field) on a level without a fan-out, for an axis the fan-out lacks (2 included: both axes
    is ``both_axes``) and for ``both_axes`` on a fan-out without two axes; accepted otherwise."""
    arch = load_arch(preset)
    rng = random.Random(f"constraints-{preset}")
    codes = []
    for i in range(10):
        lv = rng.choice(arch.levels)
        shape = lv.fanout.shape if lv.fanout is not None else ()
        if rng.random() < 0.6:
            dim, axis = rng.choice("KCPQ"), rng.choice([0, 1, 2])
            level, field, illegal = {"axes": {dim: axis}}, f"levels.{lv.name}.axes.{dim}", axis >= len(shape)
        else:
            level, field, illegal = {"both_axes": True}, f"levels.{lv.name}.both_axes", len(shape) != 2
        if not shape and "axes" in level:  # no fan-out: the level's spatial constraints as a whole
            field = f"levels.{lv.name}"
        path = b.root / f"axes_{preset}_{i}.yaml"
        path.write_text(yaml.safe_dump({"levels": {lv.name: level}}))
        o = run_case("constraints", ["map", "lenet5", "--layers", "conv2", "--arch", preset, "--constraints", str(path),
                                     "--mapper", "random", "--budget", "5"], b.root)
        assert o.problem is None, f"{level}: {o.problem} ({o.message})"
        codes.append(o.exit_code)
        if illegal:
            assert o.exit_code == 2 and f"constraints file {path}: field '{field}'" in o.message, \
                f"{lv.name} {level} on fan-out {list(shape)}: exit {o.exit_code} ({o.message})"
        else:
            assert o.exit_code == 0, f"{lv.name} {level} on fan-out {list(shape)}: {o.message}"
    assert 0 in codes and 2 in codes
