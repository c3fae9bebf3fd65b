"""``dnnmap map``: search the best mapping of every layer and print the per-layer table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dnnmap.api import MapRequest, prepare_map, run_map
from dnnmap.cli.console import load_kernels, stdout_console, wrote
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.options import (INPUT_SHAPE_HELP, PNG_DIR_HELP, BudgetOption, BudgetSecondsOption, ConstraintsOption,
                                ImperfectOption, PlacementOption, SeedOption, TileFirstOption, check_outputs, mapper_help,
                                output_path, parse_input_shapes, parse_layer_list, search_options)
from dnnmap.cli.progress import count_progress, item_progress
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.report.summary import counted
from dnnmap.search.constraints import load_constraints
from dnnmap.search.options import DEFAULT_BUDGET, DEFAULT_BUDGET_SECONDS
from dnnmap.workload.sparsity import parse_density_options


@user_errors
def map_command(
    model: Annotated[str, typer.Argument(help="zoo model name (see `dnnmap models`), a model file "
                                              "(.onnx, .keras, .h5, SavedModel dir, dnnmap .yaml network) or a "
                                              "workload: mttkrp:I=..,J=..,K=..,L=.., ttmc:I=..,J=..,K=..,R=..,S=.. "
                                              "or einsum:EXPR:i=..,...")],
    arch: Annotated[str, typer.Option("--arch", "-a", help="architecture preset (see `dnnmap archs`) or a "
                                                           "YAML spec")] = "eyeriss",
    objective: Annotated[str, typer.Option(help=f"one of {', '.join(OBJECTIVES)}")] = "edp",
    mapper: Annotated[str, typer.Option(help=mapper_help())] = "auto",
    layers: Annotated[Optional[str], typer.Option(help="comma-separated layer names (default: all); with --pass, a "
                                                        "name also maps its training passes (NAME.bwd, NAME.wgt)")] = None,
    budget: BudgetOption = DEFAULT_BUDGET,
    seed: SeedOption = 0,
    budget_seconds: BudgetSecondsOption = DEFAULT_BUDGET_SECONDS,
    json_path: Annotated[Optional[Path], typer.Option("--json", parser=output_path, help="write per-layer and "
                                                      "total results with the mappings to this JSON file")] = None,
    save_mappings: Annotated[Optional[Path], typer.Option(parser=output_path, help="write one mapping YAML per "
                                                          "layer into this directory")] = None,
    input_shape: Annotated[Optional[list[str]], typer.Option(help=INPUT_SHAPE_HELP)] = None,
    html: Annotated[Optional[Path], typer.Option(parser=output_path, help="write a self-contained HTML report "
                                                 "(figures, loop nests) to this file")] = None,
    png_dir: Annotated[Optional[Path], typer.Option(parser=output_path, help=PNG_DIR_HELP)] = None,
    dram_model: Annotated[Optional[str], typer.Option(help="DRAM transfer model: burst (TSO-burst) or volume "
                                                          "(TSO-noburst); default: the architecture's")] = None,
    fuse: Annotated[Optional[str], typer.Option(help="fuse consecutive layers (HW-Flow-Fusion): temporal, "
                                                     "spatial or auto; docs/fusion.md")] = None,
    max_fused: Annotated[int, typer.Option(min=2, help="--fuse: most layers in one fused group")] = 2,
    fuse_baseline: Annotated[str, typer.Option(help="--fuse: the single-layer schedule fused groups are compared "
                                               "with: best (the mapper's best mappings) or paper (row-stationary "
                                               "mappings, tiles re-fetching halos and weights as HW-Flow-Fusion's "
                                               "baseline); docs/fusion.md")] = "best",
    trace: Annotated[Optional[Path], typer.Option("--trace", parser=output_path, help="--fuse: write the fused "
                                                  "schedule as a Chrome/Perfetto trace-event JSON")] = None,
    trace_png: Annotated[Optional[Path], typer.Option("--trace-png", parser=output_path, help="--fuse: write "
                                                      "the fused schedule as a PNG timeline")] = None,
    passes: Annotated[str, typer.Option("--pass", help="training passes to map: forward, backward (backward-data, "
                                        "layers NAME.bwd), weight-update (NAME.wgt) or all; comma-separated for "
                                        "several; docs/ir.md")] = "forward",
    density: Annotated[Optional[list[str]], typer.Option("--density", help="KEY=VALUE: density (share of non-zeros, "
                                                         "0 < VALUE <= 1) of a tensor (W, dO, ...) or role (weights, "
                                                         "activations); repeatable; docs/sparse.md")] = None,
    imperfect: ImperfectOption = False,
    tile_first: TileFirstOption = False,
    placement: PlacementOption = False,
    constraints: ConstraintsOption = None,
    workers: Annotated[Optional[int], typer.Option(help="search the distinct layers in parallel on a new local "
                                                   "Dask cluster of this many processes; not with --fuse")] = None,
    scheduler: Annotated[Optional[str], typer.Option(help="search the distinct layers in parallel on an existing "
                                                     "Dask scheduler, tcp://host:port")] = None,
) -> None:
    """Map every layer of MODEL onto ARCH and print per-layer and total cost."""
    options = search_options(budget, seed, budget_seconds, imperfect, tile_first,
                             None if constraints is None else load_constraints(constraints), placement)
    request = MapRequest(model, arch, objective, mapper, tuple(parse_layer_list(layers) or ()) or None, options,
                         parse_input_shapes(input_shape), passes, parse_density_options(density or []), dram_model,
                         fuse, max_fused, fuse_baseline, workers, scheduler)
    if (trace is not None or trace_png is not None) and fuse is None:
        raise DnnmapError("--trace and --trace-png export a fused schedule; they need --fuse")
    check_outputs([(json_path, "--json", False), (html, "--html", False), (trace, "--trace", False),
                   (trace_png, "--trace-png", False), (save_mappings, "--save-mappings", True),
                   (png_dir, "--png-dir", True)], inputs=[Path(model), Path(arch), constraints])
    prepared = prepare_map(request)
    spec = prepared.arch
    if density and spec.sparsity is None:
        stderr_console().print(f"note: architecture {spec.name!r} has no sparsity support: the layers run dense, "
                               "zeros included (docs/sparse.md)")
    err = stderr_console()
    load_kernels(err, spec)
    # the result printers load the cost model and the report modules: only after every check
    from dnnmap.cli.map_output import print_fused, print_layers
    from dnnmap.cli.report_command import write_report

    if fuse is None:
        with item_progress(err, f"mapping {prepared.network.name}", [op.name for op in prepared.selected],
                           "layer") as done:
            run = run_map(prepared, on_layer=done)
        print_layers(run)
    else:
        with count_progress(err, f"fusing {prepared.network.name} (--fuse {fuse}, --max-fused {max_fused})",
                            "layer search") as update:
            searched = [0]

            def searched_one(what: str) -> None:
                searched[0] += 1
                update(searched[0], 0, what)

            run = run_map(prepared, on_layer=searched_one)
        print_fused(run, trace, trace_png)
    out = stdout_console()
    if json_path is not None:
        run.save_json(json_path)
        wrote(out, json_path)
    if html is not None or png_dir is not None:
        write_report(run.report_runs(f"dnnmap map {model} --arch {arch}"), html, png_dir, out)
    if save_mappings is not None:
        count = run.save_mappings(save_mappings)
        wrote(out, save_mappings, counted(count, "mapping file"))
