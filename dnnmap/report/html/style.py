"""Shared look of the report's figures: one colour per memory level (tensors as shades of it), one for
compute, and per-layer horizontal bar charts sized to the number of layers, each bar with its tooltip."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dnnmap.report.html.axes import LEGEND_ROW, LegendEntry, Plot, legend, legend_rows, linear_ticks, padded, si
from dnnmap.report.html.canvas import RGBA, Canvas, rgba, text_width

# matplotlib's "tab10" colours, C0..C9
TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
COMPUTE_COLOR: RGBA = rgba("#7f7f7f")
NETWORK_COLOR: RGBA = rgba("#bcbd22")
MAC_COLOR: RGBA = rgba("#17becf")
_LEVEL_PALETTE = [rgba(TAB10[i]) for i in (0, 1, 2, 4, 5, 6, 3, 8)]  # no grey, olive, cyan, red first
BAR_INCHES = 0.17  # height of one layer's bar in the per-layer charts
WIDTH = 6.4 * 72  # points
TITLE_FONT = 10.0
NAME_FONT = 7.0


def level_color(levels: Sequence[str], level: str) -> RGBA:
    """The colour of ``level`` (its index in the machine's levels, innermost first); ``compute`` is grey."""
    if level == "compute":
        return COMPUTE_COLOR
    return _LEVEL_PALETTE[list(levels).index(level) % len(_LEVEL_PALETTE)]


def shade(color: RGBA, index: int, count: int) -> RGBA:
    """The ``index``-th of ``count`` shades of ``color``, from full colour towards white."""
    mix = 0.6 * index / max(count - 1, 1) if count > 1 else 0.0
    r, g, b, a = color
    return (r + (1 - r) * mix, g + (1 - g) * mix, b + (1 - b) * mix, a)


@dataclass(frozen=True)
class _Series:
    label: str
    color: RGBA | str
    rows: np.ndarray
    widths: np.ndarray
    lefts: np.ndarray
    tips: tuple[str, ...]
    height: float


@dataclass
class LayerBars:
    """A chart with one horizontal bar slot per layer (first layer on top), x ticks with SI prefixes and
    ``unit``; ``legend_columns`` entries per legend row above the title."""

    names: Sequence[str]
    title: str
    xlabel: str
    unit: str = ""
    legend_columns: int = 4
    xlim: tuple[float, float] | None = None
    zero_line: bool = False
    series: list[_Series] = field(default_factory=list)

    def bars(self, rows: Sequence[float], widths: Sequence[float], tips: Sequence[str], color: RGBA | str,
             label: str, left: Sequence[float] | None = None, height: float = 0.8) -> None:
        """Bars at ``rows`` (layer index, may be fractional), from ``left`` (default 0), each with its tooltip;
        zero-width bars are left out."""
        widths_ = np.asarray(widths, dtype=float)
        lefts = np.zeros(len(widths_)) if left is None else np.asarray(left, dtype=float)
        keep = widths_ != 0
        self.series.append(_Series(label, color, np.asarray(rows, dtype=float)[keep], widths_[keep], lefts[keep],
                                   tuple(t for t, k in zip(tips, keep) if k), height))

    def canvas(self) -> Canvas:
        entries = [LegendEntry(s.label, s.color) for s in self.series if len(s.rows)]
        left = 14.4 + text_width(max(self.names, key=len, default="name"), NAME_FONT) + 6
        plot_width = WIDTH - left - 14.4
        legend_height = LEGEND_ROW * legend_rows(entries, plot_width, self.legend_columns) + 4 if entries else 0
        top = legend_height + 25
        n = len(self.names)
        canvas = Canvas(WIDTH, top + 72 * BAR_INCHES * n + 42)
        starts = [s.lefts for s in self.series] + [s.lefts + s.widths for s in self.series]
        values = np.concatenate(starts) if starts else np.zeros(1)
        xlim = self.xlim or padded(float(values.min(initial=0.0)), float(values.max(initial=0.0)))
        plot = Plot(canvas, left, top, plot_width, 72 * BAR_INCHES * n, xlim, (-0.5, n - 0.5))
        plot.frame(linear_ticks(*xlim), lambda v: si(v, self.unit), list(range(n)), list(self.names))
        plot.xlabel(self.xlabel)
        canvas.text(left, top - 8, self.title, TITLE_FONT)
        if entries:
            legend(canvas, entries, left, 4, plot_width, self.legend_columns)
        for s in self.series:
            for row, width, start, tip in zip(s.rows, s.widths, s.lefts, s.tips):
                x0, x1 = sorted((plot.x(start), plot.x(start + width)))
                y0 = plot.y(row - s.height / 2)
                canvas.rect(x0, y0, x1 - x0, plot.y(row + s.height / 2) - y0, s.color, tip=tip)
        if self.zero_line:
            canvas.line([(plot.x(0), plot.top), (plot.x(0), plot.top + plot.height)], "#000000", 0.8)
        return canvas
