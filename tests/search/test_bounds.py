"""Attainable bounds (``dnnmap bounds``): the proven minimum by buffer capacity, checked against the
exhaustive mapper on each capacity variant (in the shared-boundary space and with placement and both-axis
unrolling), and the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.arch.variants import with_capacity
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.mapping.mapping import validate_mapping
from dnnmap.report.bounds import bounds_table, status
from dnnmap.search import bounds as bounds_module
from dnnmap.search.bounds import OptimalSpace, attainable_bounds, auto_capacities, buffer_level, whole_layer_capacity
from dnnmap.search.constraints import Constraints
from dnnmap.search.mappers import exhaustive_search
from dnnmap.search.optimal import optimal_search
from dnnmap.search.space import MapSpace
from dnnmap.workload import ops
from test_oracle import ARCHS, LAYERS

CASES = [("three_level_1d", ops.conv2d("c", 3, 4, (4, 4), (3, 1))),
         ("two_level_2d", ops.matmul("mm", 4, 6, 3))]


@pytest.mark.parametrize("objective", ["dram", "energy"])
@pytest.mark.parametrize("arch_name,op", CASES, ids=[a for a, _ in CASES])
def test_curve_is_proven_fits_and_equals_the_exhaustive_optimum(arch_name: str, op, objective: str) -> None:
    arch = ARCHS[arch_name]
    caps = auto_capacities(op, arch)
    points = attainable_bounds(op, arch, caps, objective)
    b = buffer_level(arch)
    assert [p.capacity for p in points] == sorted(caps)
    fitting = [p for p in points if p.found is not None]
    assert len(fitting) >= 3
    values = [p.value for p in fitting]
    assert all(later <= earlier for earlier, later in zip(values, values[1:]))  # non-increasing in capacity
    assert values[0] > values[-1]  # a larger buffer saves traffic on these layers
    for p in points:
        assert p.arch.levels[b].capacity == p.capacity
        try:  # the independent check: the exhaustive mapper's optimum on the same variant
            best = exhaustive_search(op, p.arch, objective).cost.objective(objective)[0]
        except MappingError:
            assert p.found is None  # nothing fits: the exhaustive mapper agrees
            continue
        assert p.proven and status(p) == "proven"
        mapping = p.found.result.mapping
        validate_mapping(mapping, op, p.arch)
        cost = CostModel(op, p.arch).evaluate(MappingBatch.from_mappings(op, p.arch, [mapping]))
        assert bool(cost.valid[0])  # fits the variant's capacities
        assert p.value == pytest.approx(best, rel=1e-9)
        assert cost.objective(objective)[0] == pytest.approx(best, rel=1e-9)


def test_an_unproven_point_reports_its_gap_and_an_admissible_bound() -> None:
    op = ops.conv2d("c", 2, 4, (4, 4), (3, 1))
    arch = ARCHS["three_level_1d"]
    point, = attainable_bounds(op, arch, [24], "energy", budget_seconds=0.0)
    best = exhaustive_search(op, point.arch, "energy").cost.energy[0]
    assert not point.proven
    cert = point.found.certificate
    assert cert.lower_bound <= best * (1 + 1e-9) <= point.value * (1 + 1e-9)
    assert status(point).startswith(f"gap {cert.gap:.1%}")
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(bounds_table(op, [point], "energy", point.arch))
    assert status(point) in console.export_text()


def test_capacity_variant_keeps_a_partition_and_auto_reaches_the_whole_layer() -> None:
    eyeriss = load_arch("eyeriss")
    rf = with_capacity(eyeriss, 0, 520)  # input 12, weight 224, output 24 of 260 words, doubled
    assert rf.levels[0].capacity == {"input": 24, "weight": 448, "output": 48}
    assert eyeriss.levels[0].capacity == {"input": 12, "weight": 224, "output": 24}  # the preset is untouched
    op = ops.conv2d("c", 3, 4, (4, 4), (3, 1))  # C3 K4 P2 Q4 R3: input 3x4x4 = 48, output 4x2x4 = 32 words
    assert whole_layer_capacity(op, eyeriss) == 48 + 32  # the GLB keeps inputs and outputs, not weights
    caps = auto_capacities(op, eyeriss)
    assert len(caps) == 8 and caps[-1] == 128 and all(b == 2 * a for a, b in zip(caps, caps[1:]))


def test_command_prints_writes_json_and_png(tmp_path: Path) -> None:
    out_json, out_png = tmp_path / "b.json", tmp_path / "b.png"
    result = CliRunner().invoke(app, ["bounds", "lenet5", "--layers", "fc3", "--capacities", "4,16,64,1k",
                                      "--json", str(out_json), "--png", str(out_png)])
    assert result.exit_code == 0, result.output
    assert "minimum DRAM bytes by GLB capacity" in result.stdout and "proven" in result.stdout
    doc = json.loads(out_json.read_text())
    points = doc["layers"][0]["points"]
    assert [p["capacity"] for p in points] == [4, 16, 64, 1024]
    values = [p["value"] for p in points]
    assert all(p["proven"] for p in points) and values == sorted(values, reverse=True)
    assert values[0] > values[-1]
    assert points[-1]["mapping"]["levels"]
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args,fragment", [
    (["--capacities", "4,x"], "--capacities: 'x' is not a capacity"),
    (["--capacities", "0"], "outside 1"),
    (["--objective", "edp"], "--objective 'edp': choose dram or energy"),
    (["--layers", "nope"], "no layer(s) ['nope']"),
    (["--png", "."], "--png .: is a directory"),
])
def test_command_refuses_bad_input(args: list[str], fragment: str) -> None:
    base = {"--layers": "fc3"}
    flags = [*args] + ([] if "--layers" in args else ["--layers", base["--layers"]])
    result = CliRunner().invoke(app, ["bounds", "lenet5", *flags])
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr and "Traceback" not in result.output
    assert fragment in result.stderr, result.stderr


WIDE_CASES = [("two_level_1d", LAYERS["pointwise"], OptimalSpace(placement=True)),
              ("two_level_2d", ops.matmul("mm", 4, 6, 3), OptimalSpace(placement=True, both_axes=("Buf",))),
              ("three_level_2d", LAYERS["pointwise"], OptimalSpace(placement=True, both_axes=("GLB",)))]


@pytest.mark.parametrize("objective", ["dram", "energy"])
@pytest.mark.parametrize("arch_name,op,space", WIDE_CASES, ids=[a for a, _, _ in WIDE_CASES])
def test_wider_curve_equals_the_exhaustive_optimum_there_and_never_exceeds_the_shared_one(
        arch_name: str, op, space: OptimalSpace, objective: str) -> None:
    """With placement (and both-axis unrolling) every point is the exhaustive mapper's optimum over the same wider
    space on that capacity variant, its mapping validated and fitting; the curve never rises and lies at or below
    the shared-boundary curve, strictly below it at some capacity on these layers."""
    arch = ARCHS[arch_name]
    caps = auto_capacities(op, arch)
    wide = attainable_bounds(op, arch, caps, objective, space=space)
    shared = attainable_bounds(op, arch, caps, objective)
    fitting = [p.value for p in wide if p.found is not None]
    assert len(fitting) >= 3 and all(later <= earlier for earlier, later in zip(fitting, fitting[1:]))
    for p, s in zip(wide, shared):
        assert p.capacity == s.capacity and p.value <= s.value * (1 + 1e-9)
        try:
            best = exhaustive_search(op, p.arch, objective, space=MapSpace(op, p.arch, space.constraints()))
        except MappingError:
            assert p.found is None
            continue
        assert p.proven
        mapping = p.found.result.mapping
        validate_mapping(mapping, op, p.arch)
        cost = CostModel(op, p.arch).evaluate(MappingBatch.from_mappings(op, p.arch, [mapping]))
        assert bool(cost.valid[0])
        assert p.value == pytest.approx(best.cost.objective(objective)[0], rel=1e-9)
        assert cost.objective(objective)[0] == pytest.approx(p.value, rel=1e-9)
    assert any(p.value < s.value * (1 - 1e-9) for p, s in zip(wide, shared) if p.found is not None)


def test_a_wider_point_starts_from_the_shared_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each point of a wider space first searches the shared boundary and starts the wider search from that
    result, so a wider point stopped at once is still at or below the shared point."""
    calls = []

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - records optimal_search's calls
        found = optimal_search(*args, **kwargs)
        calls.append((kwargs["placement"], kwargs["incumbent"], found))
        return found

    monkeypatch.setattr(bounds_module, "optimal_search", spy)
    point, = attainable_bounds(LAYERS["pointwise"], ARCHS["two_level_1d"], [8], "energy", budget_seconds=0.0,
                               space=OptimalSpace(placement=True))
    (shared_placed, shared_start, shared), (wide_placed, wide_start, wide) = calls
    assert not shared_placed and shared_start is None  # the shared search starts from Sunstone
    assert wide_placed and wide_start is shared.result and point.found is wide
    assert point.value <= shared.certificate.incumbent


def test_space_of_a_constraints_value_and_its_label() -> None:
    both = Constraints(placement=True).with_level("GLB", both_axes=True)
    space = OptimalSpace.of(both)
    assert space == OptimalSpace(True, ("GLB",)) and space.constraints() == both
    assert space.label == "space with per-tensor placement and both-axis unrolling on GLB"
    assert OptimalSpace().label == "shared-boundary space"
    with pytest.raises(DnnmapError, match=r"constraints: field 'levels.GLB.order'"):
        OptimalSpace.of(both.with_level("GLB", order=("K", "C")))
    with pytest.raises(DnnmapError, match=r"field 'levels.RF.both_axes': level RF has no 2-D fan-out"):
        attainable_bounds(ops.matmul("mm", 4, 6, 3), ARCHS["three_level_1d"], [8], "dram",
                          space=OptimalSpace(both_axes=("RF",)))


def test_command_with_placement_and_both_axes_covers_the_wider_space(tmp_path: Path) -> None:
    """``--placement`` and a ``both_axes`` constraints file: the table, JSON and plot say which space the curve
    covers, every point is proven and at or below the shared-boundary curve."""
    wide_file = tmp_path / "wide.yaml"
    wide_file.write_text("levels:\n  GLB:\n    both_axes: true\n")
    base = ["bounds", "lenet5", "--layers", "fc3", "--capacities", "16,64,1k"]
    docs = {}
    for name, extra in (("shared", []), ("wide", ["--placement", "--constraints", str(wide_file)])):
        out_json = tmp_path / f"{name}.json"
        result = CliRunner().invoke(app, [*base, *extra, "--json", str(out_json), "--png", str(tmp_path / "b.png")])
        assert result.exit_code == 0, result.output
        docs[name] = json.loads(out_json.read_text()), result.stdout
    label = "space with per-tensor placement and both-axis unrolling on GLB"
    doc, stdout = docs["wide"]
    assert doc["space"] == {"placement": True, "both_axes": ["GLB"], "imperfect": None, "label": label}
    assert label in stdout and "shared-boundary space" in docs["shared"][1]
    assert docs["shared"][0]["space"]["label"] == "shared-boundary space"
    wide, shared = (d["layers"][0]["points"] for d, _ in (docs["wide"], docs["shared"]))
    assert all(p["proven"] for p in wide)
    assert all(w["value"] <= s["value"] * (1 + 1e-9) for w, s in zip(wide, shared))


@pytest.mark.parametrize("text,fragment", [
    ("levels:\n  GLB:\n    spatial_dims: [K]\n    both_axes: true\n", "field 'levels.GLB.spatial_dims': the optimal"),
    ("levels:\n  RF:\n    both_axes: true\n", "field 'levels.RF.both_axes': level RF has no 2-D fan-out"),
    ("levels:\n  L9:\n    both_axes: true\n", "field 'levels.L9': architecture 'eyeriss' has no level 'L9'"),
    ("placment: true\n", "field 'placment'"),
    (None, "constraints file not found"),
])
def test_command_refuses_other_constraints_and_bad_files(tmp_path: Path, text: str | None, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    if text is not None:
        path.write_text(text)
    result = CliRunner().invoke(app, ["bounds", "lenet5", "--layers", "fc3", "--constraints", str(path)])
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr and "Traceback" not in result.output
    assert str(path) in result.stderr and fragment in result.stderr, result.stderr
