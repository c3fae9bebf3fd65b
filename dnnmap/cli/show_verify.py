"""``dnnmap show`` and ``dnnmap verify``: inspect and simulate one saved mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from dnnmap.cli.console import load_kernels, stdout_console
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.mapping_file import LoadedMapping, load_mapping_with_arch
from dnnmap.cli.timeloop_commands import write_timeloop_map
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.capacity import overflows
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.errors import DnnmapError
from dnnmap.limits import check_seed
from dnnmap.mapping.dataflow_directives import format_directives
from dnnmap.mapping.printer import format_loop_nest
from dnnmap.report.mapping_report import cost_lines, counts_table, tile_table
from dnnmap.sim import verify
from dnnmap.sim.loopnest import MAX_LANE_STEPS
from dnnmap.sim.nest import build_loop_nest

MappingPath = Annotated[Path, typer.Argument(help="mapping YAML/JSON with the operator embedded "
                                                  "(written by `dnnmap map --save-mappings`)")]
ArchOption = Annotated[Optional[str], typer.Option("--arch", "-a", help="architecture preset or YAML spec "
                                                                        "(default: the file's 'arch' field)")]


def _cost(loaded: LoadedMapping) -> CostBatch:
    load_kernels(stderr_console(), loaded.arch)
    return CostModel(loaded.op, loaded.arch).evaluate(
        MappingBatch.from_mappings(loaded.op, loaded.arch, [loaded.mapping]))


def _say_if_it_does_not_fit(loaded: LoadedMapping, cost: CostBatch) -> bool:
    """Print ``DOES NOT FIT: level ...: tensor words > capacity`` (red, stderr, one line per overfilled
    capacity) when the mapping's tiles exceed a level's capacity; True when they do."""
    lines = overflows(cost, loaded.op, loaded.arch)
    for line in lines:
        stderr_console().print(Text(f"DOES NOT FIT: layer {loaded.op.name!r} on {loaded.arch.name!r}: {line}",
                                    style="bold red"), soft_wrap=True)
    return bool(lines)


@user_errors
def show_command(mapping: MappingPath, arch: ArchOption = None,
                 timeloop_map: Annotated[Optional[Path], typer.Option(
                     help="also write the mapping in Timeloop's map format (YAML) to this file")] = None,
                 dataflow: Annotated[bool, typer.Option(
                     "--dataflow", help="print the mapping as MAESTRO data-centric directives (SpatialMap / "
                     "TemporalMap / Cluster) instead; docs/marvel.md")] = False) -> None:
    """Print a mapping's loop nest, per-level tiles and analytical cost.

    A mapping whose tiles exceed a level's capacity is shown all the same (exit code 0), after a first line
    ``DOES NOT FIT: ...`` on stderr naming the level, the tensors and their words against the capacity.
    """
    loaded = load_mapping_with_arch(mapping, arch)
    cost = _cost(loaded)
    _say_if_it_does_not_fit(loaded, cost)
    out = stdout_console()
    if dataflow:
        out.print(format_directives(loaded.mapping, loaded.op, loaded.arch), markup=False, highlight=False,
                  soft_wrap=True)
    else:
        out.print(format_loop_nest(loaded.mapping, loaded.op, loaded.arch), markup=False)
        out.print()
        out.print(tile_table(loaded.mapping, loaded.op, loaded.arch, cost))
        for line in cost_lines(cost, loaded.arch):
            out.print(line, markup=False)
    if timeloop_map is not None:  # last, so the final line says where the file went
        write_timeloop_map(timeloop_map, loaded.mapping, loaded.op, loaded.arch)


@user_errors
def verify_command(mapping: MappingPath, arch: ArchOption = None,
                   seed: Annotated[int, typer.Option(help="seed of the random input tensors")] = 0) -> None:
    """Simulate a mapping literally: output check against NumPy and access counts against the cost model.

    Exit code 1 when the output is not bit-exact or the mapping does not fit (a tile exceeds its level's
    capacity: ``DOES NOT FIT: ...`` on stderr names the level, the tensors and their words).
    """
    check_seed(seed)
    loaded = load_mapping_with_arch(mapping, arch)
    nest = build_loop_nest(loaded.op, loaded.mapping)
    if nest.steps * nest.lanes > MAX_LANE_STEPS:
        raise DnnmapError(f"layer {loaded.op.name!r} is too large for the reference simulator: {nest.steps:,} "
                          f"steps x {nest.lanes:,} lanes = {nest.steps * nest.lanes:,} lane-steps "
                          f"(limit {MAX_LANE_STEPS:,}); verify a smaller layer or a reduced shape")
    cost = _cost(loaded)
    does_not_fit = _say_if_it_does_not_fit(loaded, cost)
    report = verify(loaded.op, loaded.arch, loaded.mapping, seed=seed)
    table, compared, differing = counts_table(report.result, cost, loaded.op, loaded.arch)
    out = stdout_console()
    title, verdict = report.text.splitlines()[:2]
    out.print(title, markup=False)
    out.print(verdict, style="green" if report.ok else "red", markup=False)
    out.print(table)
    if differing:
        out.print(f"counts: {differing} of {compared} differ from the analytical model "
                  "(the model is exact for perfect factorizations; see docs/cost-model.md)", style="yellow")
    else:
        out.print(f"counts: all {compared} equal to the analytical model", style="green")
    if does_not_fit:
        out.print("fits: NO (see DOES NOT FIT above); the mapping fails verification", style="red")
    if not report.ok or does_not_fit:
        raise typer.Exit(1)
