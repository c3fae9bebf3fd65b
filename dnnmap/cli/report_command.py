"""``dnnmap report``: the HTML report of saved runs (one run, or a comparison of several)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from dnnmap.cli.console import shown, stdout_console
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.options import PNG_DIR_HELP, check_outputs, output_path
from dnnmap.cli.progress import item_progress
from dnnmap.mapping.io import write_atomic
from dnnmap.report.html.runs import Run, load_run

def write_report(runs: list[Run], html_path: Path | None, png_dir: Path | None, out: Console) -> None:
    """Draw the figures (progress on stderr), write the HTML page and/or the PNG files, say what was written."""
    from dnnmap.report.html.report import build_report, plan  # matplotlib: imported only when drawing

    keys = [spec.key for specs in plan(runs) for spec in specs]
    with item_progress(stderr_console(), "drawing the report", keys, "figures") as done:
        html = build_report(runs, png_dir, on_figure=done)
    if html_path is not None:
        write_atomic(html_path, html)
        out.print(f"wrote {shown(html_path)}")
    if png_dir is not None:
        written = sum((png_dir / f"{key}.png").exists() for key in keys)
        out.print(f"wrote {written} PNG figures to {png_dir}/")


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
