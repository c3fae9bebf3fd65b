"""A picture of the architecture: its memory levels from DRAM (top) to the MACs, each with its
capacity per instance, the tensors it keeps and its number of instances, and the fan-outs between them."""

from __future__ import annotations

from typing import Any

from dnnmap.report.html.axes import Plot
from dnnmap.report.html.canvas import Canvas
from dnnmap.report.html.page import num
from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import MAC_COLOR, TITLE_FONT, level_color, shade

BOX_INCHES = 0.62


def capacity_text(level: dict[str, Any]) -> str:
    """``64 KiB``-like text of a level's capacity per instance: words (or bits), per tensor when split."""
    capacity, unit = level.get("capacity"), level.get("capacity_unit", "words")
    if capacity is None:
        return "unbounded"
    if isinstance(capacity, dict):
        return ", ".join(f"{tensor} {num(size)}" for tensor, size in capacity.items()) + f" {unit}"
    return f"{num(capacity)} {unit}"


def arch_figure(run: Run) -> Canvas | None:
    """None when the JSON does not describe the levels (written before ``machine.hierarchy`` existed)."""
    levels = list(run.machine.hierarchy)
    if not levels:
        return None
    rows = [*reversed(levels), None]  # DRAM first, the MACs last
    canvas = Canvas(5.2 * 72, 72 * (0.7 + BOX_INCHES * len(rows)))
    p = Plot(canvas, 0, 0, canvas.width, canvas.height, (0, 7), (-0.9, len(rows) - 0.3))
    canvas.text(p.x(0.2), p.y(-0.6), f"{run.arch}: memory levels, outermost on top ({run.clock_mhz:g} MHz)",
                TITLE_FONT, baseline="middle")
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
        canvas.rect(p.x(0.3), p.y(row - 0.32), p.x(6.7) - p.x(0.3), p.y(row + 0.32) - p.y(row - 0.32),
                    shade(color, 1, 3), color, 1.2, tip=f"{title}; {detail}")
        canvas.text(p.x(0.5), p.y(row - 0.08), title, 8, baseline="middle", bold=True)
        canvas.text(p.x(0.5), p.y(row + 0.17), detail, 7, baseline="middle")
        fanout = level.get("fanout") if level else None
        if row + 1 < len(rows):
            canvas.arrow((p.x(3.5), p.y(row + 0.32)), (p.x(3.5), p.y(row + 0.68)))
            if fanout:
                canvas.text(p.x(3.65), p.y(row + 0.5), "fan-out " + " x ".join(str(f) for f in fanout), 7,
                            baseline="middle")
    return canvas
