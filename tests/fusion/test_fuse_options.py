"""``dnnmap map --fuse``: every output option writes the fused run, every search option reaches the fused search,
and the API runs the same flow (the fresh-machine issue: they were checked for writability, then ignored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dnnmap
from dnnmap.cli.main import app
from dnnmap.fusion import search as fusion_search
from dnnmap.search.options import SearchOptions

FUSE = ["map", "lenet5", "--arch", "hwff_config1", "--fuse", "auto", "--objective", "energy"]


def run(*args: object) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def fused_outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("fused")
    stdout = run(*FUSE, "--json", out / "run.json", "--html", out / "run.html", "--png-dir", out / "png",
                 "--save-mappings", out / "maps")
    return out, stdout


def test_json_is_the_fused_schedule(fused_outputs: tuple[Path, str]) -> None:
    out, stdout = fused_outputs
    data = json.loads((out / "run.json").read_text())
    fusion = data["fusion"]
    assert fusion["mode"] == "auto" and fusion["fused"]["fused_groups"] >= 1
    names = [layer["name"] for layer in data["layers"]]
    assert names == [n for g in fusion["groups"] for n in g["layers"]]  # every layer once, in schedule order
    for key in ("energy", "cycles", "dram_bytes"):
        total = sum(layer[key] for layer in data["layers"])
        assert total == pytest.approx(data["totals"][key], rel=1e-12)
        assert total == pytest.approx(fusion["fused"][key], rel=1e-12)
        assert sum(g["cost"][key] for g in fusion["groups"]) == pytest.approx(total, rel=1e-12)
    fused = [layer for layer in data["layers"] if layer["fusion"]["mode"] != "single"]
    assert fused
    for layer in fused:  # a fused layer's parts add up to its fused totals
        assert sum(layer["energy_breakdown"].values()) == pytest.approx(layer["energy"], rel=1e-9)
        assert sum(layer["latency_parts"].values()) == pytest.approx(layer["cycles"], rel=1e-9)
        assert sum(layer["dram_bytes_by_tensor"].values()) == pytest.approx(layer["dram_bytes"], rel=1e-9)
        for level, by_tensor in layer["energy_by_action"].items():  # the fused counts' energies, level by level
            spent = sum(e for actions in by_tensor.values() for e in actions.values())
            assert spent == pytest.approx(layer["energy_breakdown"][level], rel=1e-9)
    # the DP schedule printed on stdout is the one saved
    assert f"{data['totals']['cycles']:,.0f} cycles" in stdout


def test_html_png_and_mapping_files(fused_outputs: tuple[Path, str]) -> None:
    out, stdout = fused_outputs
    html = (out / "run.html").read_text()
    assert "<html" in html.lower() and "lenet5" in html
    assert list((out / "png").glob("*.png"))
    maps = sorted((out / "maps").glob("*.yaml"))
    data = json.loads((out / "run.json").read_text())
    assert len(maps) == len(data["layers"])
    shared = [m for m in maps if "archs/" in m.read_text()]
    assert shared, "a fused layer's mapping names its hardware share's spec"
    for path in (maps[0], shared[0]):  # show and verify read the share's spec written beside the mapping
        shown = run("show", path)
        assert "fits: yes" in shown
    assert f"wrote {len(maps)} mapping files" in stdout


def test_search_options_reach_the_fused_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[SearchOptions] = []
    results = []
    real = fusion_search.map_layer

    def spy(op, arch, objective, mapper, options=SearchOptions(), progress=None):  # type: ignore[no-untyped-def]
        seen.append(options)
        results.append(real(op, arch, objective, mapper, options, progress))
        return results[-1]

    monkeypatch.setattr(fusion_search, "map_layer", spy)
    run(*FUSE, "--mapper", "random", "--budget", "60", "--seed", "7", "--imperfect", "--json", tmp_path / "r.json")
    assert seen and all(o.budget == 60 and o.seed == 7 and o.imperfect == 0.15 for o in seen)
    data = json.loads((tmp_path / "r.json").read_text())
    assert results and all(r.mapper == "random" and r.evaluated <= 60 for r in results)  # the mapper's budget
    # each layer's count adds the widened local search's evaluations to the mapper's (docs/fusion.md)
    assert all(layer["mapper"] == "random" and layer["evaluated"] >= 1 for layer in data["layers"])
    seen.clear()
    run(*FUSE, "--mapper", "optimal", "--budget-seconds", "0.3")
    assert seen and all(o.budget_seconds == 0.3 for o in seen)
    seen.clear()
    run(*FUSE, "--tile-first")
    assert seen and all(o.tile_first for o in seen)


def test_seed_changes_the_fused_random_search(tmp_path: Path) -> None:
    runs = []
    for seed in (1, 2):
        run(*FUSE, "--mapper", "random", "--budget", "30", "--seed", seed, "--json", tmp_path / f"{seed}.json")
        runs.append(json.loads((tmp_path / f"{seed}.json").read_text()))
    assert [layer["mapping"] for layer in runs[0]["layers"]] != [layer["mapping"] for layer in runs[1]["layers"]]


def test_api_runs_the_same_fused_flow(fused_outputs: tuple[Path, str]) -> None:
    out, _ = fused_outputs
    cli = json.loads((out / "run.json").read_text())
    api = dnnmap.map_network("lenet5", arch="hwff_config1", objective="energy", fuse="auto").to_dict()
    for key in ("energy", "cycles", "dram_bytes"):
        assert api["totals"][key] == cli["totals"][key]
    assert api["fusion"]["groups"] == cli["fusion"]["groups"]


@pytest.mark.parametrize("extra, message", [
    (["--layers", "conv1"], "--layers does not apply with --fuse"),
    (["--pass", "backward"], "forward pass only"),
])
def test_fuse_refuses_what_it_cannot_honour(extra: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*FUSE, *extra, "--json", str(tmp_path / "x.json")])
    assert result.exit_code == 2 and message in result.stderr
    assert not (tmp_path / "x.json").exists()


def test_fused_outputs_move_at_the_final_width(tmp_path: Path) -> None:
    """With ``final_output_bits`` (docs/cost-model.md 2b) a fused layer's group outputs go to DRAM as final values:
    its DRAM output bytes are its output words at the final width (4 of hwff_config1's 8 bits), its DRAM update
    energy that of those words, and its parts still add up to its totals (fused and core costing agree)."""
    import yaml

    from dnnmap.arch.spec import PRESET_DIR
    spec = yaml.safe_load((PRESET_DIR / "hwff_config1.yaml").read_text())
    spec["final_output_bits"] = 4
    arch = tmp_path / "narrow.yaml"
    arch.write_text(yaml.safe_dump(spec))
    run(*FUSE[:3], arch, *FUSE[4:], "--json", tmp_path / "run.json")
    data = json.loads((tmp_path / "run.json").read_text())
    top = spec["levels"][-1]
    written = [layer for layer in data["layers"] if layer["fusion"]["mode"] != "single"
               and layer["counts"].get(top["name"], {}).get("output")]
    assert written
    for layer in written:
        words = layer["counts"][top["name"]]["output"]["updates"]
        assert layer["dram_bytes_by_tensor"]["output"] == pytest.approx(words * 4 / 8)
        update = top.get("energy", {}).get("output", {}).get("update", top["write_energy"])
        assert layer["energy_by_action"][top["name"]]["output"]["update"] == pytest.approx(words * update * 4 / 8)
        assert sum(layer["dram_bytes_by_tensor"].values()) == pytest.approx(layer["dram_bytes"], rel=1e-9)
        assert sum(layer["energy_breakdown"].values()) == pytest.approx(layer["energy"], rel=1e-9)
