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
from dnnmap.report.summary import counted

PNG_DPI = 150


def plan(runs: list[Run]) -> list[list[PlotSpec]]:
    """The figures of the page: one list per run, preceded by the comparison's when there are several runs."""
    if len(runs) == 1:
        return [run_plots(runs[0])]
    return [comparison_plots(runs, compare.common_layers(runs))] + [run_plots(run, f"run{i + 1}-")
                                                                     for i, run in enumerate(runs)]


def render(spec: PlotSpec, png_dir: Path | None) -> tuple[str, Path | None]:
    """The figure's HTML (or a note when its data is missing) and the PNG file it saved into ``png_dir`` (None: no
    ``png_dir``, or no figure to save)."""
    canvas = spec.build()
    if canvas is None:
        return f'<p class="help">{escape(spec.missing)}</p>', None
    png = None if png_dir is None else png_dir / f"{spec.key}.png"
    if png is not None:
        canvas.png(png, PNG_DPI)
    return figure(spec.key, canvas.svg(), spec.caption), png


def build_report(runs: list[Run], png_dir: Path | None = None,
                 on_figure: Callable[[str, Path | None], None] | None = None) -> str:
    """The self-contained HTML page; ``on_figure(key, png)`` is called after each figure is drawn, with the PNG
    file it wrote (None: no ``png_dir``, or the figure's data is missing and the page shows a note instead)."""

    def draw(specs: list[PlotSpec]) -> str:
        parts = []
        for spec in specs:
            html, png = render(spec, png_dir)
            parts.append(html)
            if on_figure:
                on_figure(spec.key, png)
        return "".join(parts)

    groups = plan(runs)
    version = runs[0].tool_version
    if len(runs) == 1:
        run = runs[0]
        title = f"dnnmap report: {run.model} on {run.arch}"
        subtitle = (f"{counted(len(run.layers), 'layer')} mapped by the {run.mapper} mapper for {run.objective}, "
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

