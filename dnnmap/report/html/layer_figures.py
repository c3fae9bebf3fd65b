"""Per-layer bar charts of one run: energy by level and tensor, latency split, DRAM traffic, utilization."""

from __future__ import annotations

import numpy as np

from dnnmap.report.html.canvas import RGBA, Canvas
from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import MAC_COLOR, NETWORK_COLOR, LayerBars, level_color, shade


def _stacked(chart: LayerBars, values: dict[str, np.ndarray], colors: dict[str, RGBA], unit: str) -> Canvas:
    """Stacked bars, one per layer; each segment's tooltip names the layer, the segment and its value."""
    names = chart.names
    left = np.zeros(len(names))
    for label, widths in values.items():
        if widths.any():
            chart.bars(range(len(names)), widths, [f"{n}: {label} {w:.4g} {unit}" for n, w in zip(names, widths)],
                       colors[label], label, left)
            left = left + widths
    return chart.canvas()


def energy_figure(run: Run) -> Canvas:
    """Stacked bars: each level's energy split by tensor (shades of the level's colour), network hops, MACs."""
    names = [layer.name for layer in run.layers]
    levels = run.machine.levels
    parts = sorted({part for layer in run.layers for part in layer.energy_by_part},
                   key=lambda p: (levels.index(p[0]) if p[0] in levels else len(levels) + (p[0] == "mac"), p[1]))
    values: dict[str, np.ndarray] = {}
    colors: dict[str, RGBA] = {}
    for level, tensor in parts:
        label = f"{level} {tensor}".strip()
        values[label] = np.array([layer.energy_by_part.get((level, tensor), 0.0) for layer in run.layers])
        if level in levels:
            tensors = sorted(t for lv, t in parts if lv == level)
            colors[label] = shade(level_color(levels, level), tensors.index(tensor), len(tensors))
        else:
            colors[label] = NETWORK_COLOR if level == "network" else MAC_COLOR
    chart = LayerBars(names, f"Energy per layer by memory level and tensor ({run.energy_unit})",
                      f"energy ({run.energy_unit})", legend_columns=5)
    return _stacked(chart, values, colors, run.energy_unit)


def latency_figure(run: Run) -> Canvas:
    """Stacked bars: compute-bound cycles, then the cycles a level's bandwidth (or DRAM) adds."""
    names = [layer.name for layer in run.layers]
    levels = run.machine.levels
    keys = ["compute", *[lv for lv in levels if any(lv in layer.latency_parts for layer in run.layers)]]
    values = {key: np.array([layer.latency_parts.get(key, 0.0) for layer in run.layers]) for key in keys}
    labels = {key: "compute-bound" if key == "compute" else f"{key} bandwidth-bound" for key in keys}
    chart = LayerBars(names, "Latency per layer: compute-bound and bandwidth-bound cycles", "cycles")
    return _stacked(chart, {labels[k]: v for k, v in values.items()}, {labels[k]: level_color(levels, k) for k in keys},
                    "cycles")


def dram_figure(run: Run) -> Canvas:
    """Stacked bars: bytes each tensor moves to or from DRAM."""
    names = [layer.name for layer in run.layers]
    tensors = sorted({t for layer in run.layers for t, v in layer.dram_bytes_by_tensor.items() if v})
    dram = level_color(run.machine.levels, run.machine.levels[-1])
    values = {t: np.array([layer.dram_bytes_by_tensor.get(t, 0.0) for layer in run.layers]) for t in tensors}
    chart = LayerBars(names, f"{run.machine.levels[-1]} traffic per layer by tensor (bytes)", "bytes", unit="B")
    return _stacked(chart, values, {t: shade(dram, i, len(tensors)) for i, t in enumerate(tensors)}, "bytes")


def utilization_figure(run: Run) -> Canvas:
    """Bars: the share of MAC-cycles doing work, coloured by the layer's bottleneck."""
    names = [layer.name for layer in run.layers]
    levels = run.machine.levels
    chart = LayerBars(names, "MAC array utilization per layer (colour: bottleneck)", "utilization (%)",
                      xlim=(0, 100))
    for key in ["compute", *levels]:
        rows = [i for i, layer in enumerate(run.layers) if layer.bottleneck == key]
        if rows:
            label = "compute-bound" if key == "compute" else f"{key} bandwidth-bound"
            chart.bars(rows, [100 * run.layers[i].utilization for i in rows],
                       [f"{names[i]}: utilization {run.layers[i].utilization:.1%}, {label}" for i in rows],
                       level_color(levels, key), label)
    return chart.canvas()
