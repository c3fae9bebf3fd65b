"""``dnnmap models`` and ``dnnmap archs``: what is built in."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from dnnmap.arch.spec import load_arch, preset_names
from dnnmap.cli.console import stdout_console
from dnnmap.cli.errors import user_errors
from dnnmap.report.summary import counted
from dnnmap.report.tables import si
from dnnmap.workload import zoo
from dnnmap.workload.ir import Network


def _models_table() -> Table:
    table = Table(title="model zoo", title_justify="left")
    for header in ("name", "layers", "MACs", "description"):
        table.add_column(header, justify="right" if header in ("layers", "MACs") else "left")
    for name in zoo.names():
        network = zoo.get(name)
        table.add_row(name, str(len(network.layers)), si(network.macs), escape(zoo.describe(name)))
    return table


def _layers_table(network: Network) -> Table:
    table = Table(title=f"{network.name}: {counted(len(network.layers), 'layer')}, {si(network.macs)} MACs",
                  title_justify="left")
    for header in ("#", "layer", "kind", "dims", "output shape", "MACs", "inputs"):
        table.add_column(header, justify="right" if header in ("#", "MACs") else "left")
    for i, layer in enumerate(network.layers):
        op = layer.op
        table.add_row(str(i), escape(layer.name), op.kind, " ".join(f"{d}={b}" for d, b in op.dims if b > 1),
                      "x".join(map(str, layer.output_shape)), si(op.macs), escape(", ".join(layer.inputs)))
    return table


@user_errors
def models_command(
    layers: Annotated[Optional[str], typer.Option("--layers", metavar="NAME",
                                                  help="list the layers of this model instead")] = None,
) -> None:
    """List the model zoo (or, with --layers NAME, the layers of one model)."""
    stdout_console().print(_layers_table(zoo.get(layers)) if layers else _models_table())


@user_errors
def archs_command() -> None:
    """List the architecture presets."""
    table = Table(title="architecture presets (use the name with --arch, or a path to your own YAML)",
                  title_justify="left")
    for header in ("name", "MACs", "levels", "clock", "energy unit", "source"):
        table.add_column(header, justify="right" if header in ("MACs", "clock") else "left")
    for name in preset_names():
        arch = load_arch(name)
        table.add_row(name, f"{arch.num_macs:,}", " < ".join(lv.name for lv in arch.levels),
                      f"{arch.clock_mhz:g} MHz", escape(arch.energy_unit), escape(arch.source))
    stdout_console().print(table)
