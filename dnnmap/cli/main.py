"""The ``dnnmap`` command line (typer app ``app``)."""

from __future__ import annotations

import typer

import dnnmap
from dnnmap.cli.bounds_command import bounds_command
from dnnmap.cli.catalog import archs_command, models_command
from dnnmap.cli.generate_hw_command import generate_hw_command
from dnnmap.cli.map_command import map_command
from dnnmap.cli.report_command import report_command
from dnnmap.cli.show_verify import show_command, verify_command
from dnnmap.cli.sweep_command import sweep_command
from dnnmap.cli.timeloop_commands import import_arch_command
from dnnmap.cli.toolchain import compile_command, import_command, simulate_command

app = typer.Typer(help="dnnmap: map convolutional neural networks onto DNN accelerators.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)


def _print_version(value: bool) -> None:
    """``--version``: print the installed version and stop before any command runs."""
    if value:
        typer.echo(f"dnnmap {dnnmap.__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """dnnmap: map convolutional neural networks onto DNN accelerators."""


app.command("map")(map_command)
app.command("report")(report_command)
app.command("models")(models_command)
app.command("archs")(archs_command)
app.command("show")(show_command)
app.command("verify")(verify_command)
app.command("import")(import_command)
app.command("compile")(compile_command)
app.command("simulate")(simulate_command)
app.command("import-arch")(import_arch_command)
app.command("generate-hw")(generate_hw_command)
app.command("sweep")(sweep_command)
app.command("bounds")(bounds_command)

if __name__ == "__main__":
    app()
