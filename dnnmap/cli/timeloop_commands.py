"""``dnnmap import-arch timeloop|zigzag``: a Timeloop design (and optionally its problem and mapping) or a ZigZag
core (:mod:`dnnmap.cli.zigzag_import`) in dnnmap's files.

``show --timeloop-map`` (in :mod:`dnnmap.cli.show_verify`) writes the other direction through
:func:`write_timeloop_map`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.timeloop import ErtMode, import_timeloop_arch
from dnnmap.cli.console import stdout_console, wrote
from dnnmap.cli.errors import user_errors
from dnnmap.cli.options import check_outputs
from dnnmap.cli.zigzag_import import import_zigzag, spec_yaml
from dnnmap.errors import DnnmapError
from dnnmap.mapping.io import save_mapping, write_atomic
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.mapping.timeloop_map import load_timeloop_mapping, save_timeloop_mapping
from dnnmap.report.summary import counted
from dnnmap.workload.importers import save_network
from dnnmap.workload.importers.timeloop_problem import (
    load_timeloop_problem,
    problem_network,
)
from dnnmap.workload.ir import Operator

FORMATS = ("timeloop", "zigzag")


@user_errors
def import_arch_command(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=f"input format; one of {', '.join(FORMATS)}")],
    arch: Annotated[Path, typer.Argument(help="Timeloop architecture YAML (v0.2-v0.4) or ZigZag hardware YAML")],
    components: Annotated[Optional[list[Path]], typer.Argument(
        help="further Timeloop/Accelergy YAML files: ERT, architecture constraints, components")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="dnnmap architecture spec to write (.yaml)")] = Path(
        "arch.yaml"),
    problem: Annotated[Optional[Path], typer.Option(help="Timeloop problem YAML: also write a network file")] = None,
    network_output: Annotated[Optional[Path], typer.Option(
        help="network file for --problem (default: PROBLEM's name with .net.yaml beside --output)")] = None,
    workload: Annotated[Optional[Path], typer.Option(
        help="zigzag: ZigZag workload YAML: also write a network file (its precisions set the word widths)")] = None,
    mapping: Annotated[Optional[Path], typer.Option(
        help="Timeloop mapping (or fully specified constraints) YAML, needs --problem; zigzag: ZigZag mapping "
             "YAML, needs --workload")] = None,
    mapping_output: Annotated[Optional[Path], typer.Option(
        help="dnnmap mapping file for --mapping (default: MAPPING's name with .mapping.yaml beside --output); "
             "zigzag: a directory of one file per layer (default: MAPPING's name with .mappings)")] = None,
    ert_energy: Annotated[str, typer.Option(
        help="per-action: ERT read/write/update energies per action; max: every action costs the level's "
             "largest energy (Timeloop 2020's single vector access energy)")] = "per-action",
    clock_mhz: Annotated[float, typer.Option(help="clock of the imported design (Timeloop/ZigZag give none)")] = 1000.0,
    shared_boundary: Annotated[bool, typer.Option(
        "--shared-boundary", help="zigzag: place each loop at the lowest memory where every operand's tile fits "
        "(one boundary per memory, no per-operand placement) instead of ZigZag's per-operand allocation")] = False,
) -> None:
    """Import a Timeloop design (architecture, ERT, constraints; optionally problem and mapping) or a ZigZag
    hardware file (optionally workload and mapping) into dnnmap files."""
    if fmt not in FORMATS:
        raise DnnmapError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    if fmt == "zigzag":
        if components or problem is not None or ert_energy != "per-action":
            raise DnnmapError("zigzag takes one hardware file, --workload and --mapping (not further files, "
                              "--problem or --ert-energy)")
        import_zigzag(arch, output, workload, mapping, network_output, mapping_output, clock_mhz, shared_boundary)
        return
    if workload is not None:
        raise DnnmapError("--workload is an option of zigzag; timeloop takes --problem")
    if shared_boundary:
        raise DnnmapError("--shared-boundary is an option of zigzag (a Timeloop mapping has one boundary per level)")
    if ert_energy not in ("per-action", "max"):
        raise DnnmapError(f"--ert-energy must be per-action or max, got {ert_energy!r}")
    if mapping is not None and problem is None:
        raise DnnmapError("--mapping needs --problem (the mapping's dimensions and data spaces)")
    mode: ErtMode = "per-action" if ert_energy == "per-action" else "max"
    net_path = None if problem is None else (network_output
                                             or output.parent / f"{problem.name.split('.')[0]}.net.yaml")
    map_path = None if mapping is None else (mapping_output
                                             or output.parent / f"{mapping.name.split('.')[0]}.mapping.yaml")
    check_outputs([(output, "--output", False), (net_path, "--network-output", False),
                   (map_path, "--mapping-output", False)], inputs=[arch, *(components or []), problem, mapping])
    # every input is read and checked before the first file is written
    imported = import_timeloop_arch([arch, *(components or [])], mode, clock_mhz)
    op = None if problem is None else load_timeloop_problem(problem)
    m = None if mapping is None or op is None else _imported_mapping(mapping, op, imported.spec, output)
    out = stdout_console()
    write_atomic(output, spec_yaml(imported.spec))
    wrote(out, output, detail=f"architecture {imported.spec.name!r}, {counted(len(imported.spec.levels), 'level')}, "
                              f"{counted(imported.spec.num_macs, 'MAC')}")
    for note in imported.notes:
        out.print(f"note: {note}", markup=False)
    if op is not None and net_path is not None:
        save_network(problem_network(op), net_path)
        wrote(out, net_path, detail=f"layer {op.name!r}, {counted(op.macs, 'MAC')}")
    if m is not None and map_path is not None and op is not None:
        save_mapping(map_path, m, [lv.name for lv in imported.spec.levels], op)
        wrote(out, map_path, detail=f"mapping of {op.name!r} on {output}")


def _imported_mapping(path: Path, op: Operator, spec: ArchSpec, arch_file: Path) -> Mapping:
    m = load_timeloop_mapping([path], op, spec)
    validate_mapping(m, op, spec)
    return Mapping(m.levels, m.layouts, m.layer, str(arch_file), m.notes)


def write_timeloop_map(path: Path, m: Mapping, op: Operator, spec: ArchSpec) -> None:
    """``show --timeloop-map``: write ``m`` in Timeloop's map format and say so."""
    save_timeloop_mapping(path, m, op, spec)
    wrote(stdout_console(), path, detail="Timeloop mapping")
