"""Axes on a :class:`Canvas`: data to points, tick positions (linear and logarithmic), SI tick labels,
the frame with its grid, and legends."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from dnnmap.report.html.canvas import RGBA, Canvas, text_width

TICK_FONT = 7.0
GRID = (0.0, 0.0, 0.0, 0.15)
_PREFIXES = {-24: "y", -21: "z", -18: "a", -15: "f", -12: "p", -9: "n", -6: "µ", -3: "m", 0: "", 3: "k", 6: "M",
             9: "G", 12: "T", 15: "P", 18: "E", 21: "Z", 24: "Y"}


def si(value: float, unit: str = "") -> str:
    """``value`` with an SI prefix, e.g. ``20 M``, ``1.5 GB``, ``0`` (as matplotlib's EngFormatter)."""
    if value == 0:
        return f"0 {unit}".strip()
    exponent = min(max(3 * math.floor(math.log10(abs(value)) / 3), -24), 24)
    mantissa = value / 10 ** exponent
    if round(abs(mantissa), 2) >= 1000 and exponent < 24:
        mantissa, exponent = mantissa / 1000, exponent + 3
    return f"{mantissa:.3g} {_PREFIXES[exponent]}{unit}".strip()


def linear_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) covering ``low`` .. ``high``."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9)
    return [round(k * step, 12) for k in range(first, math.floor(high / step + 1e-9) + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """The powers of ten from ``low`` to ``high``."""
    return [10.0 ** k for k in range(math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9) + 1)]


def padded(low: float, high: float, margin: float = 0.05) -> tuple[float, float]:
    """A bar axis' limits: zero stays at the edge, the other ends get a margin."""
    low, high = min(low, 0.0), max(high, 0.0)
    if high == low:
        return 0.0, 1.0
    span = high - low
    return (low - margin * span if low < 0 else low), (high + margin * span if high > 0 else high)


@dataclass
class Plot:
    """The data area of a figure: ``left``, ``top``, ``width``, ``height`` in points on ``canvas``; x from
    ``xlim[0]`` (left) to ``xlim[1]``, y from ``ylim[0]`` (top) to ``ylim[1]`` (bottom)."""

    canvas: Canvas
    left: float
    top: float
    width: float
    height: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xlog: bool = False
    ylog: bool = False

    def x(self, value: float) -> float:
        return self.left + self.width * _share(value, self.xlim, self.xlog)

    def y(self, value: float) -> float:
        return self.top + self.height * _share(value, self.ylim, self.ylog)

    def frame(self, xticks: Sequence[float], xlabel: Callable[[float], str], yticks: Sequence[float],
              ylabel: Callable[[float], str] | Sequence[str], grid: Literal["x", "both"] = "x") -> None:
        """Grid lines, the frame, tick marks and tick labels (``ylabel``: a formatter or one label per tick)."""
        c, right, bottom = self.canvas, self.left + self.width, self.top + self.height
        for value in xticks:
            c.line([(self.x(value), self.top), (self.x(value), bottom)], GRID, 0.6)
        if grid == "both":
            for value in yticks:
                c.line([(self.left, self.y(value)), (right, self.y(value))], GRID, 0.6)
        c.line([(self.left, self.top), (right, self.top), (right, bottom), (self.left, bottom)], "#000000", 0.8,
               closed=True)
        for value in xticks:
            c.line([(self.x(value), bottom), (self.x(value), bottom + 3.5)], "#000000", 0.8)
            c.text(self.x(value), bottom + 5, xlabel(value), TICK_FONT, "middle", "hanging")
        labels = [ylabel(v) for v in yticks] if callable(ylabel) else list(ylabel)
        for value, label in zip(yticks, labels):
            c.line([(self.left - 3.5, self.y(value)), (self.left, self.y(value))], "#000000", 0.8)
            c.text(self.left - 5, self.y(value), label, TICK_FONT, "end", "middle")

    def xlabel(self, text: str) -> None:
        self.canvas.text(self.left + self.width / 2, self.top + self.height + 26, text, 9, "middle")

    def ylabel(self, text: str, offset: float) -> None:
        self.canvas.text(self.left - offset, self.top + self.height / 2, text, 9, "middle", "middle", rotate=90)


def _share(value: float, limits: tuple[float, float], log: bool) -> float:
    a, b = limits
    if log:
        return (math.log10(value) - math.log10(a)) / (math.log10(b) - math.log10(a))
    return (value - a) / (b - a)


@dataclass(frozen=True)
class LegendEntry:
    label: str
    color: RGBA | str
    marker: Literal["square", "box", "circle", "line"] = "square"  # box: a square with an edge


LEGEND_FONT = 7.0
LEGEND_ROW = 11.5  # points per legend row


def legend_layout(entries: Sequence[LegendEntry], width: float, columns: int) -> tuple[int, float]:
    """How many columns fit into ``width`` points (at most ``columns``) and each column's width."""
    column = max((text_width(e.label, LEGEND_FONT) for e in entries), default=0.0) + 18
    fit = max(1, min(columns, len(entries), int(width // column)))
    return fit, max(column, width / fit if fit == columns else column)


def legend_rows(entries: Sequence[LegendEntry], width: float, columns: int) -> int:
    fit, _ = legend_layout(entries, width, columns)
    return -(-len(entries) // fit)


def legend(canvas: Canvas, entries: Sequence[LegendEntry], left: float, top: float, width: float,
           columns: int) -> None:
    """Entries in rows of up to ``columns``, from (``left``, ``top``)."""
    fit, column = legend_layout(entries, width, columns)
    for i, entry in enumerate(entries):
        x, y = left + column * (i % fit), top + LEGEND_ROW * (i // fit) + LEGEND_ROW / 2
        if entry.marker == "circle":
            canvas.circle(x + 5, y, 3.2, entry.color)
        elif entry.marker == "line":
            canvas.line([(x, y), (x + 10, y)], entry.color, 1.5)
        else:
            canvas.rect(x, y - 3.5, 10, 7, entry.color, "#000000" if entry.marker == "box" else None, 0.6)
        canvas.text(x + 14, y, entry.label, LEGEND_FONT, baseline="middle")
