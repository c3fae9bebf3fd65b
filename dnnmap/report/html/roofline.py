"""Roofline of the architecture (peak operations/s and DRAM bandwidth) with every layer placed on it."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, NullFormatter

from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import level_color, tip

LABELLED_LAYERS = 12  # networks up to this many layers get their points labelled


def intensity(ops: float, dram_bytes: float) -> float:
    """Operations per DRAM byte (a layer that moves no DRAM byte sits at infinity)."""
    return ops / dram_bytes if dram_bytes else np.inf


def roofline_figure(run: Run) -> Figure:
    """Log-log: operational intensity (operations per DRAM byte) against attained operations/s,
    under the roof min(peak, bandwidth x intensity); marker area ~ the layer's share of the latency."""
    clock_hz = run.clock_mhz * 1e6
    layers = [layer for layer in run.layers if layer.dram_bytes > 0 and layer.cycles > 0]
    x = np.array([intensity(layer.operations, layer.dram_bytes) for layer in layers])
    y = np.array([layer.operations / (layer.cycles / clock_hz) for layer in layers])
    peak, bandwidth = run.machine.peak_ops_per_second, run.machine.dram_bytes_per_second
    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    low = min(x.min(), peak / bandwidth if bandwidth else x.min()) / 4
    high = max(x.max(), peak / bandwidth if bandwidth else x.max()) * 4
    xs = np.geomspace(low, high, 200)
    roof = np.minimum(peak, bandwidth * xs) if bandwidth else np.full_like(xs, peak)
    ax.plot(xs, roof, color="black", linewidth=1.5, label="roof")
    ax.axhline(peak, color="black", linestyle=":", linewidth=0.8)
    ax.annotate(f"peak {peak:.3g} op/s", (high / 1.3, peak), ha="right", va="bottom", fontsize=7)
    if bandwidth:
        ridge = peak / bandwidth
        ax.annotate(f"{run.machine.levels[-1]} {bandwidth / 1e9:.3g} GB/s, ridge {ridge:.3g} op/B", (ridge, peak),
                    xytext=(low * 1.2, peak * 0.5), fontsize=7, arrowprops={"arrowstyle": "->", "linewidth": 0.6})
    share = np.array([layer.cycles for layer in layers]) / sum(layer.cycles for layer in run.layers)
    levels = run.machine.levels
    for key in ["compute", *levels]:
        rows = [i for i, layer in enumerate(layers) if layer.bottleneck == key]
        label = "compute-bound" if key == "compute" else f"{key} bandwidth-bound"
        for n, i in enumerate(rows):  # one collection per point: each gets its tooltip
            ax.scatter(x[i], y[i], s=15 + 600 * share[i], color=level_color(levels, key), alpha=0.75,
                       edgecolors="black", linewidths=0.4, label=label if n == 0 else "_nolegend_",
                       gid=tip(f"{layers[i].name}: {x[i]:.3g} operations/byte, {y[i]:.3g} operations/s, "
                               f"{share[i]:.1%} of the latency, {label}"))
    if len(layers) <= LABELLED_LAYERS:
        for layer, xi, yi in zip(layers, x, y):
            ax.annotate(layer.name, (xi, yi), xytext=(4, 3), textcoords="offset points", fontsize=7)
    ax.set_xlim(low, high)
    ax.set_ylim(min(y.min(), peak) / 20, peak * 3)
    ax.set_xlabel("operational intensity (operations per DRAM byte)")
    ax.set_ylabel("attained operations per second")
    missing = len(run.layers) - len(layers)
    note = f", {missing} moving no {levels[-1]} byte not shown" if missing else ""
    ax.set_title(f"Roofline of {run.arch}: {len(layers)} layers{note} (area: share of latency)", loc="left",
                 fontsize=10)
    # plain numbers and SI prefixes rather than mathtext powers: clearer and much faster to draw
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    ax.yaxis.set_major_formatter(EngFormatter())
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())
    ax.grid(which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return fig
