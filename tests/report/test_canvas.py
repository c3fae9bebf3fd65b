"""The report's own figure writer: SI tick labels, tick positions, SVG output (valid XML, real text,
tooltips, geometry of the bars) and PNG output."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PIL import Image

from dnnmap.report.html.axes import linear_ticks, log_ticks, padded, si
from dnnmap.report.html.canvas import Canvas
from dnnmap.report.html.style import WIDTH, LayerBars

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(("value", "unit", "text"), [
    (0, "", "0"), (0, "B", "0 B"), (1500, "", "1.5 k"), (2e7, "B", "20 MB"), (-50, "", "-50"),
    (999_999, "", "1 M"), (2.5e-3, "", "2.5 m"), (1.25e9, "", "1.25 G")])
def test_si_labels(value: float, unit: str, text: str) -> None:
    assert si(value, unit) == text


def test_linear_ticks_are_round_and_cover_the_range() -> None:
    assert linear_ticks(0, 105) == [0, 20, 40, 60, 80, 100]
    assert linear_ticks(-30, 12) == [-30, -20, -10, 0, 10]
    assert linear_ticks(0, 14) == [0, 2.5, 5, 7.5, 10, 12.5]
    ticks = linear_ticks(0, 1.31e9)
    assert ticks[0] == 0 and ticks[-1] <= 1.31e9 < ticks[-1] + (ticks[1] - ticks[0])


def test_log_ticks_and_bar_limits() -> None:
    assert log_ticks(0.04, 400) == [0.1, 1, 10, 100]
    assert padded(0, 100) == (0, 105) and padded(-10, 0) == (-10.5, 0) and padded(0, 0) == (0, 1)


def test_svg_is_valid_xml_with_real_text_and_escaped_tooltips() -> None:
    canvas = Canvas(100, 50)
    canvas.rect(10, 10, 20, 5, (1.0, 0.0, 0.0, 0.5), tip="a<b & c")
    canvas.text(5, 40, "layer <1>", 7, "end", "middle")
    root = ET.fromstring(canvas.svg())
    assert root.get("viewBox") == "0 0 100 50"
    path = root.find(f"{SVG}path")
    assert path is not None and path.get("d") == "M10 10 L30 10 L30 15 L10 15 Z"
    assert path.get("fill") == "#ff0000" and path.get("fill-opacity") == "0.5"
    assert path.findtext(f"{SVG}title") == "a<b & c"
    text = root.find(f"{SVG}text")
    assert text is not None and text.text == "layer <1>" and text.get("text-anchor") == "end"


def test_bar_lengths_are_proportional_and_empty_bars_left_out() -> None:
    chart = LayerBars(["a", "b", "c"], "title", "x", xlim=(0, 100))
    chart.bars(range(3), [50, 0, 100], ["a: 50", "b: 0", "c: 100"], "#00ff00", "green")
    chart.bars(range(3), [0, 0, 0], ["", "", ""], "#0000ff", "blue")
    root = ET.fromstring(chart.canvas().svg())
    bars = {path.findtext(f"{SVG}title"): path.get("d") for path in root.iter(f"{SVG}path")
            if path.find(f"{SVG}title") is not None}
    assert set(bars) == {"a: 50", "c: 100"}
    widths = {tip: float(re.findall(r"[-\d.]+", d)[2]) - float(re.findall(r"[-\d.]+", d)[0])
              for tip, d in bars.items()}
    assert widths["c: 100"] == pytest.approx(2 * widths["a: 50"], abs=0.02)
    assert 0.5 * WIDTH < widths["c: 100"] < WIDTH
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "green" in labels and "blue" not in labels  # the legend lists drawn series only
    assert ["a", "b", "c"] == [label for label in labels if label in {"a", "b", "c"}]


def test_png_draws_shapes_where_the_svg_does(tmp_path: Path) -> None:
    canvas = Canvas(72, 36)
    canvas.rect(36, 0, 36, 36, "#ff0000")
    canvas.text(2, 20, "text", 7)
    canvas.png(tmp_path / "out" / "f.png", dpi=144)
    image = Image.open(tmp_path / "out" / "f.png").convert("RGB")
    assert image.size == (144, 72)
    assert image.getpixel((100, 36)) == (255, 0, 0) and image.getpixel((60, 70)) == (255, 255, 255)
