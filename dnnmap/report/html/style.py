"""Shared look of the report's figures: one colour per memory level (tensors as shades of it),
one for compute, and per-layer bar charts sized to the number of layers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import EngFormatter

RGBA = tuple[float, float, float, float]
COMPUTE_COLOR: RGBA = to_rgba("#7f7f7f")
NETWORK_COLOR: RGBA = to_rgba("#bcbd22")
MAC_COLOR: RGBA = to_rgba("#17becf")
_LEVEL_PALETTE = [colormaps["tab10"](i) for i in (0, 1, 2, 4, 5, 6, 3, 8)]  # no grey, olive, cyan, red first
TIP_PREFIX = "tip:"  # an artist's gid starting so becomes an SVG <title> (a tooltip) in render.svg_of
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


# margins of the per-layer charts, in inches: fixed rather than matplotlib's constrained layout, which
# lays every text out several times and made drawing twice as slow
TITLE_INCHES, XAXIS_INCHES, LEGEND_ROW_INCHES, LABEL_CHAR_INCHES = 0.35, 0.5, 0.16, 0.055


def _margins(fig: Figure, left: float, top: float) -> None:
    """Place the axes ``left`` inches from the left and ``top`` inches from the top of ``fig``."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=left / width, right=1 - 0.2 / width, bottom=XAXIS_INCHES / height,
                        top=1 - top / height)


def layer_bar_figure(names: Sequence[str], title: str, xlabel: str) -> tuple[Figure, Axes]:
    """A figure with one horizontal bar slot per layer, first layer on top."""
    fig = Figure(figsize=(WIDTH_INCHES, 1.0 + BAR_INCHES * len(names)))
    ax = fig.add_subplot()
    _margins(fig, 0.2 + LABEL_CHAR_INCHES * max(map(len, names), default=4), TITLE_INCHES)
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_yticks(range(len(names)), labels=list(names), fontsize=7)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.xaxis.set_major_formatter(EngFormatter())
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def legend_on_top(fig: Figure, ax: Axes, columns: int = 4) -> None:
    """The axes' legend above the title, outside the plot: the figure grows by the legend's rows."""
    handles, labels = ax.get_legend_handles_labels()
    legend_inches = LEGEND_ROW_INCHES * -(-len(labels) // columns) + 0.05
    width, height = fig.get_size_inches()
    left = fig.subplotpars.left * width
    fig.set_size_inches(width, height + legend_inches)
    _margins(fig, left, TITLE_INCHES + legend_inches)
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(left / width, 1), ncols=columns, fontsize=7,
               frameon=False, borderaxespad=0.2)


def tip(text: str) -> str:
    """The gid that gives an artist the tooltip ``text`` in the SVG."""
    return TIP_PREFIX + text


def bars(ax: Axes, rows: Sequence[float], widths: Sequence[float], tips: Sequence[str], color: RGBA | str,
         label: str, left: Sequence[float] | None = None, height: float = 0.8) -> None:
    """Horizontal bars, each with its tooltip; zero-width bars are left out. Faster than ``Axes.barh`` for
    many bars: the data limits are updated once, not per bar."""
    lefts = np.zeros(len(rows)) if left is None else np.asarray(left, dtype=float)
    first = True
    for row, width, start, text in zip(rows, widths, lefts, tips):
        if width:
            ax.add_artist(Rectangle((start, row - height / 2), width, height, facecolor=color, gid=tip(text),
                                    label=label if first else "_nolegend_"))
            first = False
    ends = lefts + np.asarray(widths, dtype=float)
    if len(rows):
        ax.update_datalim([(min(lefts.min(), ends.min()), min(rows)), (max(lefts.max(), ends.max()), max(rows))])
        ax.autoscale_view(scaley=False)
