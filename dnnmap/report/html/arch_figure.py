"""A picture of the architecture: its memory levels from DRAM (top) to the MACs, each with its
capacity per instance, the tensors it keeps and its number of instances, and the fan-outs between them."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from dnnmap.report.html.page import num
from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import MAC_COLOR, level_color, shade, tip

BOX_INCHES = 0.62


def capacity_text(level: dict[str, Any]) -> str:
    """``64 KiB``-like text of a level's capacity per instance: words (or bits), per tensor when split."""
    capacity, unit = level.get("capacity"), level.get("capacity_unit", "words")
    if capacity is None:
        return "unbounded"
    if isinstance(capacity, dict):
        return ", ".join(f"{tensor} {num(size)}" for tensor, size in capacity.items()) + f" {unit}"
    return f"{num(capacity)} {unit}"


def arch_figure(run: Run) -> Figure | None:
    """None when the JSON does not describe the levels (written before ``machine.hierarchy`` existed)."""
    levels = list(run.machine.hierarchy)
    if not levels:
        return None
    rows = [*reversed(levels), None]  # DRAM first, the MACs last
    fig = Figure(figsize=(5.2, 0.7 + BOX_INCHES * len(rows)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 7)
    ax.set_ylim(len(rows) - 0.3, -0.9)
    ax.set_axis_off()
    ax.text(0.2, -0.6, f"{run.arch}: memory levels, outermost on top ({run.clock_mhz:g} MHz)", fontsize=10)
    names = run.machine.levels
    for row, level in enumerate(rows):
        if level is None:
            macs = num(run.machine.peak_ops_per_second / (run.clock_mhz * 1e6))
            color, title, detail = MAC_COLOR, f"MAC array: {macs} MACs", "one multiply-accumulate per cycle each"
        else:
            color = level_color(names, level["name"]) if level["name"] in names else MAC_COLOR
            capacity = capacity_text(level)
            title = f"{level['name']}: {capacity}" + (" per instance" if capacity != "unbounded" else "")
            instances = level.get("instances", 1)
            detail = (f"keeps {', '.join(level.get('keeps', [])) or 'nothing'} · {num(instances)} "
                      f"instance{'s' if instances != 1 else ''}")
        ax.add_patch(FancyBboxPatch((0.3, row - 0.32), 6.4, 0.64, boxstyle="round,pad=0.02",
                                    facecolor=shade(color, 1, 3), edgecolor=color, linewidth=1.2,
                                    gid=tip(f"{title}; {detail}")))
        ax.text(0.5, row - 0.08, title, fontsize=8, va="center", weight="bold")
        ax.text(0.5, row + 0.17, detail, fontsize=7, va="center")
        fanout = level.get("fanout") if level else None
        if row + 1 < len(rows):
            ax.annotate("", (3.5, row + 0.68), (3.5, row + 0.32), arrowprops={"arrowstyle": "->", "linewidth": 0.8})
            if fanout:
                ax.text(3.65, row + 0.5, "fan-out " + " x ".join(str(f) for f in fanout), fontsize=7, va="center")
    return fig
