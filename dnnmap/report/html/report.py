"""Assemble the report page of one run, or the comparison of several, and export its figures."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from pathlib import Path

from dnnmap.report.html import compare
from dnnmap.report.html.page import figure, page, section
from dnnmap.report.html.plots import PlotSpec, comparison_plots, run_plots
from dnnmap.report.html.run_section import run_html
from dnnmap.report.html.runs import Run

PNG_DPI = 150


def plan(runs: list[Run]) -> list[list[PlotSpec]]:
    """The figures of the page: one list per run, preceded by the comparison's when there are several runs."""
    if len(runs) == 1:
        return [run_plots(runs[0])]
    return [comparison_plots(runs, compare.common_layers(runs))] + [run_plots(run, f"run{i + 1}-")
                                                                     for i, run in enumerate(runs)]


def render(spec: PlotSpec, png_dir: Path | None) -> str:
    """The figure's HTML (or a note when its data is missing), saving its PNG into ``png_dir`` if given."""
    canvas = spec.build()
    if canvas is None:
        return f'<p class="help">{escape(spec.missing)}</p>'
    if png_dir is not None:
        canvas.png(png_dir / f"{spec.key}.png", PNG_DPI)
    return figure(spec.key, canvas.svg(), spec.caption)


def build_report(runs: list[Run], png_dir: Path | None = None,
                 on_figure: Callable[[str], None] | None = None) -> str:
    """The self-contained HTML page; ``on_figure(key)`` is called after each figure is drawn."""

    def draw(specs: list[PlotSpec]) -> str:
        parts = []
        for spec in specs:
            parts.append(render(spec, png_dir))
            if on_figure:
                on_figure(spec.key)
        return "".join(parts)

    groups = plan(runs)
    version = runs[0].tool_version
    if len(runs) == 1:
        run = runs[0]
        title = f"dnnmap report: {run.model} on {run.arch}"
        subtitle = (f"{len(run.layers)} layers mapped by the {run.mapper} mapper for {run.objective}, "
                    f"{run.totals['latency_ms']:.4g} ms, {run.totals['energy']:.4g} {run.energy_unit}")
        return page(title, subtitle, run_html(run, draw(groups[0])), f"dnnmap {version} · {run.source}")
    names = compare.common_layers(runs)
    figures = f'<div class="figures">{draw(groups[0])}</div>'
    body = (compare.summary_html(runs) + section("comparison-figures", "Per-layer changes (figures)", figures)
            + compare.layer_deltas_html(runs, names))
    for i, (run, specs) in enumerate(zip(runs, groups[1:]), start=1):
        body += (f'<h1 id="run{i}">Run {i}: {escape(run.label)} ({escape(run.model)} on {escape(run.arch)})</h1>'
                 + run_html(run, draw(specs), f"run{i}-"))
    title = "dnnmap comparison: " + " vs ".join(run.label for run in runs)
    return page(title, f"{len(runs)} runs, baseline {runs[0].label}", body,
                f"dnnmap {version} · " + ", ".join(run.source for run in runs))

