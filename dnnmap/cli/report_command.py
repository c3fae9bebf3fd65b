"""``dnnmap report``: the HTML report of saved runs (one run, or a comparison of several)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from dnnmap.cli.console import stdout_console, wrote
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.options import PNG_DIR_HELP, check_outputs, output_path
from dnnmap.cli.progress import item_progress
from dnnmap.mapping.io import write_atomic
from dnnmap.report.html.runs import Run, load_run
from dnnmap.report.summary import counted


def write_report(runs: list[Run], html_path: Path | None, png_dir: Path | None, out: Console) -> None:
    """Draw the figures (progress on stderr), write the HTML page and/or the PNG files, say what was written."""
    from dnnmap.report.html.report import build_report, plan  # matplotlib: imported only when drawing

    specs = [spec for group in plan(runs) for spec in group]
    pngs: dict[str, Path] = {}  # figure key -> the PNG file it wrote
    with item_progress(stderr_console(), "drawing the report", [spec.key for spec in specs], "figure") as done:

        def drawn(key: str, png: Path | None) -> None:
            done(key)
            if png is not None:
                pngs[key] = png

        html = build_report(runs, png_dir, on_figure=drawn)
    if html_path is not None:
        write_atomic(html_path, html)
        wrote(out, html_path)
    if png_dir is not None:
        wrote(out, png_dir, counted(len(pngs), "PNG figure"))
        for spec in specs:
            if spec.key not in pngs:
                out.print(f"note: no {spec.key}.png: {spec.missing}", markup=False)


@user_errors
def report_command(
    runs: Annotated[list[Path], typer.Argument(help="JSON files from `dnnmap map --json`; with several, the "
                                                    "report compares them against the first", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", parser=output_path, help="HTML file to write (into the "
                                                                               "current folder unless a path is "
                                                                               "given)")] = Path("report.html"),
    png_dir: Annotated[Optional[Path], typer.Option(parser=output_path, help=PNG_DIR_HELP)] = None,
) -> None:
    """Write a self-contained HTML report (figures, loop nests, comparison) of saved map runs."""
    check_outputs([(output, "--output", False), (png_dir, "--png-dir", True)], inputs=list(runs))
    write_report([load_run(path) for path in runs], output, png_dir, stdout_console())
