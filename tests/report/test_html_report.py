"""The HTML page: self-contained, every figure an inline SVG, loop nests per layer, comparisons."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest

from dnnmap.report.html.graph import layout
from dnnmap.report.html.page import num
from dnnmap.report.html.report import build_report
from dnnmap.report.html.runs import load_run, run_from_dict

SINGLE_FIGURES = ["energy", "latency", "dram", "utilization", "roofline", "graph", "arch"]


def figure_keys(html: str) -> list[str]:
    return re.findall(r'<figure class="plot" id="fig-([^"]+)"', html)


def assert_self_contained(html: str) -> None:
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert not re.search(r'(src|href)="(https?:)?//', html)


def test_single_run_page(run_files: tuple[Path, Path], tmp_path: Path) -> None:
    run = load_run(run_files[0])
    html = build_report([run], png_dir=tmp_path / "png")
    assert figure_keys(html) == SINGLE_FIGURES
    for key in SINGLE_FIGURES:
        body = html.split(f'id="fig-{key}"', 1)[1].split("</figure>", 1)[0]
        assert "<svg" in body and "<path" in body, key
        assert "<text" in body and 'id="DejaVuSans' not in body, key  # real text, not glyph outlines
        png = (tmp_path / "png" / f"{key}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000
    assert_self_contained(html)
    details = re.findall(r'<details class="layer" data-layer="([^"]+)">(.*?)</details>', html, re.S)
    assert [name for name, _ in details] == [layer.name for layer in run.layers]
    for (_, body), layer in zip(details, run.layers):
        assert layer.loop_nest in unescape(body)
    assert "lenet5 on eyeriss" in html and f"dnnmap {run.tool_version}" in html


def test_every_bar_and_point_has_a_tooltip(run_files: tuple[Path, Path]) -> None:
    run = load_run(run_files[0])
    html = build_report([run])

    def titles(key: str) -> list[str]:
        body = html.split(f'id="fig-{key}"', 1)[1].split("</figure>", 1)[0]
        return [unescape(t) for t in re.findall(r"<title>([^<]*)</title>", body)]

    for layer in run.layers:
        assert f"{layer.name}: utilization {layer.utilization:.1%}" in " ".join(titles("utilization"))
        assert any(t.startswith(f"{layer.name} ({layer.kind}): {layer.cycles:,.0f} cycles") for t in titles("graph"))
    roofline = titles("roofline")
    assert len(roofline) == sum(layer.dram_bytes > 0 and layer.cycles > 0 for layer in run.layers)
    latency = titles("latency")
    assert f"{run.layers[0].name}: compute-bound {run.layers[0].latency_parts['compute']:.4g} cycles" in latency
    arch = titles("arch")
    assert [t.split(":")[0] for t in arch] == [*reversed(run.machine.levels), "MAC array"]
    assert "168 instances" in arch[-2] and "fan-out 14 x 12" in html


def test_graph_needs_layer_inputs(run_files: tuple[Path, Path]) -> None:
    data = json.loads(run_files[0].read_text())
    for layer in data["layers"]:
        del layer["inputs"]
    html = build_report([run_from_dict(data, "api", "api")])
    assert "graph" not in figure_keys(html)
    assert "No layer graph: the JSON lists no layer inputs" in html


def test_comparison_page(run_files: tuple[Path, Path], pages: dict[str, str]) -> None:
    runs = [load_run(path) for path in run_files]
    html = pages["comparison"]
    keys = figure_keys(html)
    assert keys[:3] == ["compare-latency", "compare-energy", "compare-dram_bytes"]
    assert keys[3:] == [f"run{i}-{key}" for i in (1, 2) for key in SINGLE_FIGURES]
    assert_self_contained(html)
    base, other = runs
    expected = (other.totals["cycles"] - base.totals["cycles"]) / base.totals["cycles"]  # same clock
    summary = html.split('id="comparison-summary"', 1)[1].split("</section>", 1)[0]
    assert f"{expected:+.1%}" in summary
    layers = html.split('id="comparison-layers"', 1)[1].split("</section>", 1)[0]
    for a, b in zip(base.layers, other.layers):
        assert f"{(b.energy - a.energy) / a.energy:+.1%}" in layers


def test_comparison_with_different_energy_units(run_files: tuple[Path, Path], tpu_file: Path) -> None:
    runs = [load_run(run_files[0]), load_run(tpu_file)]
    assert runs[0].energy_unit != runs[1].energy_unit
    html = build_report(runs)
    assert "compare-energy" not in figure_keys(html) and "not compared" in html
    assert "Energy is not compared: the runs report it in different units (edp in x MAC, tpu in pJ)" in html
    assert "No per-layer comparison" not in html
    assert figure_keys(html)[:2] == ["compare-latency", "compare-dram_bytes"]


def test_energy_in_convertible_units_is_compared_in_the_baselines_unit(tpu_file: Path) -> None:
    data = json.loads(tpu_file.read_text())
    nano = json.loads(tpu_file.read_text())
    nano["energy_unit"] = "nJ"
    nano["totals"]["energy"] *= 2e-3  # twice the energy, in nJ
    for layer in nano["layers"]:
        layer["energy"] *= 2e-3
    runs = [run_from_dict(data, "a", "pj"), run_from_dict(nano, "b", "nj")]
    html = build_report(runs)
    assert "Energy is compared in pJ (pj in pJ, nj in nJ, converted)." in html
    summary = html.split('id="comparison-summary"', 1)[1].split("</section>", 1)[0]
    assert "+100.0%" in summary and "compare-energy" in figure_keys(html)


def test_layout_rows_are_longest_paths_and_chains_keep_their_column() -> None:
    block = [("a", ("x",)), ("b", ("a",)), ("side", ("a",)), ("c", ("b",)), ("add", ("c", "side"))]
    assert layout(block) == {"x": (0, 0), "a": (0, 1), "b": (0, 2), "side": (1, 2), "c": (0, 3), "add": (0, 4)}
    assert layout([("l", ("x", "y")), ("r", ("y",))]) == {"x": (0, 0), "y": (1, 0), "l": (0, 1), "r": (1, 1)}


@pytest.mark.parametrize("value", [1469.5, 20374.0])
def test_numbers_of_a_thousand_or_more_have_separators(value: float) -> None:
    assert num(value) == f"{value:,.0f}"
