"""Comparison of several runs: a summary table with changes against the first run (the baseline),
per-layer changes for the layers all runs share, and a figure of them."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from dnnmap.report.html.page import num, section, table
from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import layer_bar_figure, legend_on_top

METRICS = (("cycles", "cycles"), ("energy", "energy"), ("dram_bytes", "DRAM bytes"))


def change(value: float, base: float) -> float | None:
    """Relative change against the baseline (None when the baseline is zero)."""
    return (value - base) / base if base else None


def change_cell(value: float | None) -> tuple[str, str]:
    """Text and CSS class of a change (lower is better for every compared metric)."""
    if value is None:
        return "-", ""
    return f"{value:+.1%}", "better" if value < -0.0005 else "worse" if value > 0.0005 else ""


def comparable_energy(runs: list[Run]) -> bool:
    return len({run.energy_unit for run in runs}) == 1


def common_layers(runs: list[Run]) -> list[str]:
    """Names of the layers present in every run, in the baseline's order."""
    shared = set.intersection(*({layer.name for layer in run.layers} for run in runs))
    return [layer.name for layer in runs[0].layers if layer.name in shared]


def summary_html(runs: list[Run]) -> str:
    base = runs[0]
    headers = ["run", "model", "architecture", "mapper", "objective", "cycles", "Δ", "energy", "Δ", "DRAM MB", "Δ",
               "util", "evaluated", "time (s)"]
    rows, classes = [], []
    for run in runs:
        t = run.totals
        deltas = [change_cell(change(t[key], base.totals[key])) for key, _ in METRICS]
        if not comparable_energy(runs):
            deltas[1] = ("units differ", "")
        rows.append([run.label, run.network, run.arch, run.mapper, run.objective, num(t["cycles"]), deltas[0][0],
                     f"{t['energy']:.4g} {run.energy_unit}", deltas[1][0], f"{t['dram_bytes'] / 1e6:.4g}",
                     deltas[2][0], f"{t['utilization']:.1%}", num(t["evaluated"]), f"{t['seconds']:.2f}"])
        classes.append(["", "", "", "", "", "", deltas[0][1], "", deltas[1][1], "", deltas[2][1], "", "", ""])
    numeric = [False] * 5 + [True] * 9
    return section("comparison-summary", f"Comparison of {len(runs)} runs",
                   table(headers, rows, numeric, classes),
                   f"Δ: change against the first run ({base.label}); negative (green) is better.")


def layer_deltas_html(runs: list[Run], names: list[str]) -> str:
    if not names:
        return section("comparison-layers", "Per-layer changes", "<p>The runs share no layer names.</p>")
    layer_maps = [{layer.name: layer for layer in run.layers} for run in runs]
    headers = ["layer"]
    for run in runs[1:]:
        headers += [f"{run.label} cycles Δ", f"{run.label} energy Δ", f"{run.label} DRAM Δ"]
    rows, classes = [], []
    for name in names:
        base = layer_maps[0][name]
        row, cls = [name], [""]
        for layers in layer_maps[1:]:
            other = layers[name]
            for key, _ in METRICS:
                text, css = change_cell(change(getattr(other, key), getattr(base, key)))
                if key == "energy" and not comparable_energy(runs):
                    text, css = "units differ", ""
                row.append(text)
                cls.append(css)
        rows.append(row)
        classes.append(cls)
    return section("comparison-layers", "Per-layer changes", table(headers, rows, [False] + [True] * (
        len(headers) - 1), classes), f"Layers all runs share ({len(names)}), changes against {runs[0].label}.")


def delta_figure(runs: list[Run], names: list[str], key: str, label: str) -> Figure | None:
    """Grouped bars: per layer, the relative change of ``key`` in every run against the baseline."""
    if not names or (key == "energy" and not comparable_energy(runs)):
        return None
    base = {layer.name: getattr(layer, key) for layer in runs[0].layers}
    fig, ax = layer_bar_figure(names, f"Per-layer change in {label} against {runs[0].label} (%)",
                               f"{label} change (%)")
    height = 0.8 / (len(runs) - 1)
    for r, run in enumerate(runs[1:]):
        values = {layer.name: getattr(layer, key) for layer in run.layers}
        deltas = [100 * (change(values[n], base[n]) or 0.0) for n in names]
        ax.barh(np.arange(len(names)) - 0.4 + height * (r + 0.5), deltas, height=height, label=run.label)
    ax.axvline(0, color="black", linewidth=0.8)
    legend_on_top(fig, ax)
    return fig
