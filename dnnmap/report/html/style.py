"""Shared look of the report's figures: one colour per memory level (tensors as shades of it),
one for compute, and per-layer bar charts sized to the number of layers."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter

RGBA = tuple[float, float, float, float]
COMPUTE_COLOR: RGBA = to_rgba("#7f7f7f")
NETWORK_COLOR: RGBA = to_rgba("#bcbd22")
MAC_COLOR: RGBA = to_rgba("#17becf")
_LEVEL_PALETTE = [colormaps["tab10"](i) for i in (0, 1, 2, 4, 5, 6, 3, 8)]  # no grey, olive, cyan, red first
BAR_INCHES = 0.17  # height of one layer's bar in the per-layer charts
WIDTH_INCHES = 6.4


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


def layer_bar_figure(names: Sequence[str], title: str, xlabel: str) -> tuple[Figure, Axes]:
    """A figure with one horizontal bar slot per layer, first layer on top."""
    fig = Figure(figsize=(WIDTH_INCHES, 1.6 + BAR_INCHES * len(names)), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_yticks(range(len(names)), labels=list(names), fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def legend_on_top(fig: Figure, ax: Axes, columns: int = 4) -> None:
    """The axes' legend above the plot, outside it (the constrained layout makes room)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper left", ncols=columns, fontsize=7, frameon=False)
