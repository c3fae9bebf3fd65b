"""The ``dnnmap`` command line (typer app ``app``).

Commands load lazily: ``dnnmap --help`` and ``--version`` import no command module (the listing reads each
command's one-line help from its module's source), and ``dnnmap CMD ...`` imports only CMD's module, so a
refused input costs the interpreter and the checks, not the search packages and the compiled cost kernel.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

import dnnmap

# command name -> (module, function); the order is the help listing's
COMMANDS: dict[str, tuple[str, str]] = {
    "map": ("dnnmap.cli.map_command", "map_command"),
    "report": ("dnnmap.cli.report_command", "report_command"),
    "models": ("dnnmap.cli.catalog", "models_command"),
    "archs": ("dnnmap.cli.catalog", "archs_command"),
    "show": ("dnnmap.cli.show_verify", "show_command"),
    "verify": ("dnnmap.cli.show_verify", "verify_command"),
    "import": ("dnnmap.cli.toolchain", "import_command"),
    "compile": ("dnnmap.cli.toolchain", "compile_command"),
    "simulate": ("dnnmap.cli.toolchain", "simulate_command"),
    "import-arch": ("dnnmap.cli.timeloop_commands", "import_arch_command"),
    "generate-hw": ("dnnmap.cli.generate_hw_command", "generate_hw_command"),
    "sweep": ("dnnmap.cli.sweep_command", "sweep_command"),
    "bounds": ("dnnmap.cli.bounds_command", "bounds_command"),
}


def command_function(name: str) -> Callable[..., Any]:
    """The function behind the command ``name`` (its module imported)."""
    module, function = COMMANDS[name]
    return getattr(importlib.import_module(module), function)


def command_summary(name: str) -> str:
    """The first paragraph of command ``name``'s docstring, read from its module's source without importing it."""
    module, function = COMMANDS[name]
    spec = importlib.util.find_spec(module)
    source = spec.loader.get_source(module) if spec is not None and spec.loader is not None else None
    tree = ast.parse(source or "")
    doc = next((ast.get_docstring(node) for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == function), None)
    return (doc or "").split("\n\n")[0]


class LazyCommands(TyperGroup):
    """The command group: a placeholder per command (name and summary) for the help listing; the command itself
    is built from its module when it is run (or its own ``--help`` shown)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name in COMMANDS:
            self.commands[name] = TyperCommand(name=name, help=None)
        self._loaded: dict[str, typer.core.TyperCommand] = {}

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The placeholder, its help text filled in on first use (listing the commands)."""
        command = self.commands.get(cmd_name)
        if command is not None and cmd_name not in self._loaded and command.help is None:
            command.help = command_summary(cmd_name)
        return self._loaded.get(cmd_name, command)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        """The command to run: built from its module (imported only now)."""
        name, command, rest = super().resolve_command(ctx, args)
        if name in COMMANDS and name not in self._loaded:
            one = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
            one.command(name)(command_function(name))
            self._loaded[name] = typer.main.get_command(one)
        return name, self._loaded.get(name or "", command), rest


app = typer.Typer(cls=LazyCommands, help="dnnmap: map convolutional neural networks onto DNN accelerators.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)


def _print_version(value: bool) -> None:
    """``--version``: print the installed version and stop before any command runs."""
    if value:
        typer.echo(f"dnnmap {dnnmap.__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """dnnmap: map convolutional neural networks onto DNN accelerators."""


if __name__ == "__main__":
    app()
