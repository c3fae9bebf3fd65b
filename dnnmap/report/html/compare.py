"""Comparison of several runs: a summary table with changes against the first run (the baseline),
per-layer changes for the layers the runs share (matched by name), and figures of them.

Latency is compared in seconds (cycles over each run's own clock), energy in the baseline's unit
(converted between SI units such as pJ and nJ; runs in units that do not convert, e.g. Eyeriss's
``x MAC`` against ``pJ``, are not compared and the page says why), DRAM traffic in bytes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dnnmap.report.html.canvas import Canvas
from dnnmap.report.html.page import num, section, table
from dnnmap.report.html.runs import LayerRun, Run
from dnnmap.report.html.style import TAB10, LayerBars

# energy units that convert into each other, in pJ
SI_ENERGY_PJ = {"fJ": 1e-3, "pJ": 1.0, "nJ": 1e3, "uJ": 1e6, "µJ": 1e6, "mJ": 1e9, "J": 1e12}


def energy_scale(runs: list[Run]) -> list[float] | None:
    """Per run, the factor turning its energy into the baseline's unit; None when the units do not convert."""
    base = runs[0].energy_unit
    if all(run.energy_unit == base for run in runs):
        return [1.0] * len(runs)
    if all(run.energy_unit in SI_ENERGY_PJ for run in runs):
        return [SI_ENERGY_PJ[run.energy_unit] / SI_ENERGY_PJ[base] for run in runs]
    return None


def energy_note(runs: list[Run]) -> str:
    """What the page says about the runs' energy units (empty when they are all the same)."""
    units = {run.energy_unit for run in runs}
    if len(units) == 1:
        return ""
    listed = ", ".join(f"{run.label} in {run.energy_unit}" for run in runs)
    if energy_scale(runs) is None:
        return (f"Energy is not compared: the runs report it in different units ({listed}), and "
                "'x MAC' (multiples of one MAC's energy) does not convert to joules.")
    return f"Energy is compared in {runs[0].energy_unit} ({listed}, converted)."


# per compared metric: key, label, value of a layer in a run (latency in s, energy in the baseline's unit)
Metric = tuple[str, str, Callable[[Run, LayerRun, float], float]]
METRICS: tuple[Metric, ...] = (
    ("latency", "latency", lambda run, layer, _scale: layer.cycles / (run.clock_mhz * 1e6)),
    ("energy", "energy", lambda _run, layer, scale: layer.energy * scale),
    ("dram_bytes", "DRAM bytes", lambda _run, layer, _scale: layer.dram_bytes),
)


def change(value: float, base: float) -> float | None:
    """Relative change against the baseline (None when the baseline is zero)."""
    return (value - base) / base if base else None


def change_cell(value: float | None) -> tuple[str, str]:
    """Text and CSS class of a change (lower is better for every compared metric)."""
    if value is None:
        return "-", ""
    return f"{value:+.1%}", "better" if value < -0.0005 else "worse" if value > 0.0005 else ""


def common_layers(runs: list[Run]) -> list[str]:
    """Names of the layers present in every run, in the baseline's order."""
    shared = set.intersection(*({layer.name for layer in run.layers} for run in runs))
    return [layer.name for layer in runs[0].layers if layer.name in shared]


def run_totals(run: Run, scale: float | None) -> dict[str, float | None]:
    """The compared totals of a run: latency in s, energy in the baseline's unit (None: not comparable), bytes."""
    t = run.totals
    return {"latency": t["cycles"] / (run.clock_mhz * 1e6), "energy": None if scale is None else t["energy"] * scale,
            "dram_bytes": t["dram_bytes"]}


def _delta(value: float | None, base: float | None) -> tuple[str, str]:
    if value is None or base is None:
        return "not compared", ""
    return change_cell(change(value, base))


def summary_html(runs: list[Run]) -> str:
    scales = energy_scale(runs) or [None] * len(runs)
    base = run_totals(runs[0], scales[0])
    headers = ["run", "model", "architecture", "mapper", "objective", "clock (MHz)", "latency (ms)", "Δ", "cycles",
               "energy", "Δ", "DRAM MB", "Δ", "util", "evaluated", "time (s)"]
    rows, classes = [], []
    for run, scale in zip(runs, scales):
        t, mine = run.totals, run_totals(run, scale)
        deltas = [_delta(mine[key], base[key]) for key, _, _ in METRICS]
        rows.append([run.label, run.network, run.arch, run.mapper, run.objective, f"{run.clock_mhz:g}",
                     f"{mine['latency'] * 1e3:.4g}", deltas[0][0], num(t["cycles"]),
                     f"{t['energy']:.4g} {run.energy_unit}", deltas[1][0], f"{t['dram_bytes'] / 1e6:.4g}",
                     deltas[2][0], f"{t['utilization']:.1%}", num(t["evaluated"]), f"{t['seconds']:.2f}"])
        classes.append([""] * 7 + [deltas[0][1], "", "", deltas[1][1], "", deltas[2][1], "", "", ""])
    numeric = [False] * 5 + [True] * 11
    help_text = (f"Δ: change against the first run ({runs[0].label}); negative (green) is better. Latency is "
                 "cycles divided by each run's own clock. " + energy_note(runs))
    return section("comparison-summary", f"Comparison of {len(runs)} runs",
                   table(headers, rows, numeric, classes, css_class="comparison"), help_text.strip())


def layer_values(runs: list[Run], names: list[str], key: str) -> list[list[float]] | None:
    """Per run, the metric ``key`` of every layer in ``names``; None when the runs' energies do not compare."""
    scales = energy_scale(runs)
    if key == "energy" and scales is None:
        return None
    value = next(get for k, _, get in METRICS if k == key)
    values = []
    for run, scale in zip(runs, scales or [1.0] * len(runs)):
        by_name = {layer.name: layer for layer in run.layers}
        values.append([value(run, by_name[name], scale) for name in names])
    return values


def layer_deltas_html(runs: list[Run], names: list[str]) -> str:
    if not names:
        return section("comparison-layers", "Per-layer changes", "<p>The runs share no layer names.</p>")
    headers, columns, numeric = ["layer"], [], [False]
    for r, run in enumerate(runs[1:], start=1):
        for key, label, _ in METRICS:
            values = layer_values(runs, names, key)
            headers.append(f"{run.label} {label} Δ")
            columns.append([("not compared", "")] * len(names) if values is None
                           else [change_cell(change(v, b)) for v, b in zip(values[r], values[0])])
            numeric.append(True)
    rows = [[name] + [column[i][0] for column in columns] for i, name in enumerate(names)]
    classes = [[""] + [column[i][1] for column in columns] for i in range(len(names))]
    help_text = (f"Layers the runs share, matched by name ({len(names)} of {len(runs[0].layers)} in "
                 f"{runs[0].label}), changes against {runs[0].label}. " + energy_note(runs))
    return section("comparison-layers", "Per-layer changes", table(headers, rows, numeric, classes,
                                                                    css_class="layer-deltas"), help_text.strip())


def delta_figure(runs: list[Run], names: list[str], key: str, label: str) -> Canvas | None:
    """Grouped bars: per layer, the relative change of ``key`` in every run against the baseline
    (None when the runs share no layer or their energies do not compare)."""
    values = layer_values(runs, names, key) if names else None
    if values is None:
        return None
    chart = LayerBars(names, f"Per-layer change in {label} against {runs[0].label} (%)", f"{label} change (%)",
                      zero_line=True)
    height = 0.8 / (len(runs) - 1)
    for r, run in enumerate(runs[1:], start=1):
        deltas = [100 * (change(v, b) or 0.0) for v, b in zip(values[r], values[0])]
        chart.bars(np.arange(len(names)) - 0.4 + height * (r - 0.5), deltas,
                   [f"{n}: {label} {d:+.1f}% in {run.label}" for n, d in zip(names, deltas)],
                   TAB10[(r - 1) % len(TAB10)], run.label, height=height)
    return chart.canvas()
