"""Roofline of the architecture (peak operations/s and DRAM bandwidth) with every layer placed on it."""

from __future__ import annotations

import math

import numpy as np

from dnnmap.report.html.axes import LEGEND_ROW, LegendEntry, Plot, legend, legend_layout, log_ticks, si
from dnnmap.report.html.canvas import Canvas, text_width
from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import TITLE_FONT, WIDTH, level_color
from dnnmap.report.summary import counted

LABELLED_LAYERS = 12  # networks up to this many layers get their points labelled
HEIGHT = 4.6 * 72


def intensity(ops: float, dram_bytes: float) -> float:
    """Operations per DRAM byte (a layer that moves no DRAM byte sits at infinity)."""
    return ops / dram_bytes if dram_bytes else np.inf


def roofline_figure(run: Run) -> Canvas:
    """Log-log: operational intensity (operations per DRAM byte) against attained operations/s,
    under the roof min(peak, bandwidth x intensity); marker area ~ the layer's share of the latency."""
    clock_hz = run.clock_mhz * 1e6
    layers = [layer for layer in run.layers if layer.dram_bytes > 0 and layer.cycles > 0]
    x = np.array([intensity(layer.operations, layer.dram_bytes) for layer in layers])
    y = np.array([layer.operations / (layer.cycles / clock_hz) for layer in layers])
    peak, bandwidth = run.machine.peak_ops_per_second, run.machine.dram_bytes_per_second
    low = min(x.min(), peak / bandwidth if bandwidth else x.min()) / 4
    high = max(x.max(), peak / bandwidth if bandwidth else x.max()) * 4
    canvas = Canvas(WIDTH, HEIGHT)
    plot = Plot(canvas, 62, 26, WIDTH - 62 - 12, HEIGHT - 26 - 42, (low, high), (peak * 3, min(y.min(), peak) / 20),
                xlog=True, ylog=True)
    plot.frame(log_ticks(low, high), lambda v: f"{v:g}", log_ticks(plot.ylim[1], plot.ylim[0]), si, grid="both")
    ridge = peak / bandwidth if bandwidth else high
    corners = [low, ridge, high] if low < ridge < high else [low, high]
    canvas.line([(plot.x(v), plot.y(min(peak, bandwidth * v) if bandwidth else peak)) for v in corners],
                "#000000", 1.5)
    canvas.line([(plot.x(low), plot.y(peak)), (plot.x(high), plot.y(peak))], "#000000", 0.8, dash="1,2")
    canvas.text(plot.x(high / 1.3), plot.y(peak) - 2, f"peak {peak:.3g} op/s", 7, "end")
    if bandwidth:
        x0, y0 = plot.x(low * 1.2), plot.y(peak * 0.5)
        label = f"{run.machine.levels[-1]} {bandwidth / 1e9:.3g} GB/s, ridge {ridge:.3g} op/B"
        canvas.text(x0, y0, label, 7)
        canvas.arrow((x0 + text_width(label, 7) + 3, y0 - 3), (plot.x(ridge), plot.y(peak)), 0.6)
    share = np.array([layer.cycles for layer in layers]) / sum(layer.cycles for layer in run.layers)
    levels = run.machine.levels
    entries = [LegendEntry("roof", "#000000", "line")]
    for key in ["compute", *levels]:
        rows = [i for i, layer in enumerate(layers) if layer.bottleneck == key]
        label = "compute-bound" if key == "compute" else f"{key} bandwidth-bound"
        color = level_color(levels, key)
        if rows:
            entries.append(LegendEntry(label, color, "circle"))
        for i in rows:  # marker area 15 + 600 x share square points, as matplotlib's scatter size
            canvas.circle(plot.x(x[i]), plot.y(y[i]), math.sqrt((15 + 600 * share[i]) / math.pi), (*color[:3], 0.75),
                          tip=f"{layers[i].name}: {x[i]:.3g} operations/byte, {y[i]:.3g} operations/s, "
                              f"{share[i]:.1%} of the latency, {label}")
    if len(layers) <= LABELLED_LAYERS:
        for layer, xi, yi in zip(layers, x, y):
            canvas.text(plot.x(xi) + 4, plot.y(yi) - 3, layer.name, 7)
    plot.xlabel("operational intensity (operations per DRAM byte)")
    plot.ylabel("attained operations per second", 46)
    missing = len(run.layers) - len(layers)
    note = f", {missing} moving no {levels[-1]} byte not shown" if missing else ""
    canvas.text(plot.left, 18, f"Roofline of {run.arch}: {counted(len(layers), 'layer')}{note} (area: share of latency)",
                TITLE_FONT)
    _, column = legend_layout(entries, 0, 1)
    left, top = plot.left + plot.width - column - 4, plot.top + plot.height - LEGEND_ROW * len(entries) - 6
    canvas.rect(left - 3, top - 2, column + 4, LEGEND_ROW * len(entries) + 4, (1.0, 1.0, 1.0, 0.8), "#cccccc", 0.6)
    legend(canvas, entries, left, top, column, 1)
    return canvas
