"""``dnnmap bounds``: the proven minimum off-chip traffic (or energy) of a layer by on-chip buffer capacity."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from dnnmap.api import MapRequest, prepare_map
from dnnmap.cli.console import load_kernels, stdout_console, wrote
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.options import (BudgetSecondsOption, ConstraintsOption, ImperfectOption, PlacementOption,
                                check_outputs, output_path, parse_layer_list, search_options)
from dnnmap.cli.progress import item_progress
from dnnmap.errors import DnnmapError
from dnnmap.fileio import write_text_atomic
from dnnmap.limits import MAX_CAPACITY
from dnnmap.report.bounds import bounds_png, bounds_table, bounds_to_dict
from dnnmap.search.bounds import BOUND_OBJECTIVES, OptimalSpace, attainable_bounds, auto_capacities
from dnnmap.search.constraints import load_constraints
from dnnmap.search.options import DEFAULT_BUDGET_SECONDS

_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
MAX_POINTS = 64  # capacities per curve


def parse_capacities(value: str) -> list[int] | None:
    """``"1k,2k,4096"`` -> ``[1024, 2048, 4096]`` (k = 1024, M = 1024**2, G = 1024**3); ``auto`` -> None."""
    if value.strip().lower() == "auto":
        return None
    out = []
    for item in value.split(","):
        m = re.fullmatch(r"\s*([0-9]{1,15})\s*([kKmMgG]?)\s*", item)
        if not m:
            raise DnnmapError(f"--capacities: {item.strip()!r} is not a capacity (an integer with an optional k, M "
                              "or G suffix, e.g. 1k,2k,4k; or auto)")
        capacity = int(m.group(1)) * _SUFFIX[m.group(2).lower()]
        if not 1 <= capacity <= MAX_CAPACITY:
            raise DnnmapError(f"--capacities: {item.strip()!r} is outside 1 .. {MAX_CAPACITY:,}")
        out.append(capacity)
    if len(set(out)) > MAX_POINTS:
        raise DnnmapError(f"--capacities: {len(set(out))} capacities, at most {MAX_POINTS}")
    return out


@user_errors
def bounds_command(
    model: Annotated[str, typer.Argument(help="zoo model name (see `dnnmap models`), a model file or a workload "
                                              "(as for `dnnmap map`)")],
    layers: Annotated[str, typer.Option(help="comma-separated layer names: one curve per layer")],
    arch: Annotated[str, typer.Option("--arch", "-a", help="architecture preset (see `dnnmap archs`) or a "
                                                           "YAML spec")] = "eyeriss",
    capacities: Annotated[str, typer.Option(help="capacities of the on-chip buffer (the level under DRAM) in "
                                            "its capacity unit (words, or bits where the spec says so): "
                                            "1k,2k,... (k = 1024) or auto (8 powers of two up to the one that "
                                            "holds the whole layer)")] = "auto",
    objective: Annotated[str, typer.Option(help="dram (off-chip bytes) or energy")] = "dram",
    budget_seconds: BudgetSecondsOption = DEFAULT_BUDGET_SECONDS,
    placement: PlacementOption = False,
    imperfect: ImperfectOption = False,
    constraints: ConstraintsOption = None,
    png: Annotated[Optional[Path], typer.Option("--png", parser=output_path, help="plot the curves to this "
                                                "PNG file")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", parser=output_path, help="write every point "
                                                      "with its mapping to this JSON file")] = None,
) -> None:
    """For a range of on-chip buffer capacities, the proven minimum DRAM traffic (or energy) of each
    layer and the mapping that attains it (the optimal mapper on each capacity; --placement, --imperfect and a
    --constraints file holding placement and both_axes widen the space it proves the minimum in)."""
    if objective not in BOUND_OBJECTIVES:
        raise DnnmapError(f"--objective {objective!r}: choose {' or '.join(BOUND_OBJECTIVES)}")
    asked = parse_capacities(capacities)
    names = parse_layer_list(layers)
    if not names:
        raise DnnmapError("--layers: name at least one layer")
    options = search_options(budget_seconds=budget_seconds, imperfect=imperfect,
                             constraints=None if constraints is None else load_constraints(constraints),
                             placement=placement)
    space = OptimalSpace.of(options.space_constraints())  # only placement and both_axes: before the mapper's check
    prepared = prepare_map(MapRequest(model, arch, objective, "optimal", tuple(names), options))
    spec = prepared.arch
    check_outputs([(png, "--png", False), (json_path, "--json", False)],
                  inputs=[Path(model), Path(arch), constraints])
    err, out = stderr_console(), stdout_console()
    plan = [(op, asked if asked is not None else list(auto_capacities(op, spec))) for op in prepared.selected]
    load_kernels(err, spec)
    curves = []
    for op, caps in plan:
        with item_progress(err, f"bounds of {op.name}", [f"{c:,}" for c in sorted(set(caps))], "capacity") as done:
            points = attainable_bounds(op, spec, caps, objective, budget_seconds,
                                       on_point=lambda p: done(f"{p.capacity:,}"), space=space)
        curves.append((op, points))
        out.print(bounds_table(op, points, objective, spec, space))
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(bounds_to_dict(model, spec, objective, curves, space), indent=1) + "\n")
        wrote(out, json_path)
    if png is not None:
        write_text_atomic(png, bounds_png(curves, objective, spec, space))
        wrote(out, png)
