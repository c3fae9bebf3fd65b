"""``dnnmap map``: search the best mapping of every layer and print the per-layer table."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from dnnmap.api import resolve_arch, resolve_network
from dnnmap.arch.spec import ArchSpec
from dnnmap.cli.console import load_kernels, stdout_console
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.options import (INPUT_SHAPE_HELP, check_writable, mapper_help, output_path, parse_input_shapes,
                                parse_layer_list)
from dnnmap.cli.progress import item_progress
from dnnmap.cli.report_command import PNG_DIR_HELP, write_report
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.fileio import write_text_atomic
from dnnmap.fusion.network import fuse_network
from dnnmap.report.fusion import group_table, totals_lines
from dnnmap.fusion.trace import timeline_png, trace_json
from dnnmap.mapping.io import save_mapping, write_atomic
from dnnmap.report.html.runs import run_from_dict
from dnnmap.report.json_report import to_dict
from dnnmap.report.tables import layer_table, totals_line
from dnnmap.search.tso.arch_views import with_dram_model
from dnnmap.report.tso import tso_comparison
from dnnmap.search import registry
from dnnmap.search.network import NetworkResult, check_search_limits, search_network, select_layers
from dnnmap.search.options import DEFAULT_BUDGET, DEFAULT_WASTE, SearchOptions
from dnnmap.workload.ir import Network
from dnnmap.workload.sparsity import apply_densities, parse_density_options
from dnnmap.workload.training import parse_passes, training_network


def run_fused(network: Network, spec: ArchSpec, fuse: str, max_fused: int, objective: str, mapper: str,
              layer_names: list[str] | None, err: Console, trace: Path | None = None,
              trace_png: Path | None = None) -> None:
    """``--fuse``: the fused groups and totals beside the unfused schedule (dnnmap/fusion)."""
    if layer_names:
        raise DnnmapError("--layers does not apply with --fuse: fusion schedules the whole layer sequence")
    with err.status(f"fusing {network.name} (--fuse {fuse}, --max-fused {max_fused})"):
        result = fuse_network(network, spec, fuse, max_fused, objective, mapper)
    out = stdout_console()
    out.print(group_table(result))
    for line in totals_lines(result):
        out.print(line)
    if trace is not None:
        write_text_atomic(trace, trace_json(result))
        out.print(f"wrote {trace} (Chrome trace-event JSON; open in https://ui.perfetto.dev)")
    if trace_png is not None:
        write_text_atomic(trace_png, timeline_png(result))
        out.print(f"wrote {trace_png}")


def mapping_file_name(index: int, layer: str) -> str:
    """``03_layer1.0.conv1.yaml``: layer order first, characters unsafe in file names replaced."""
    return f"{index:02d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', layer)}.yaml"


def save_layer_mappings(result: NetworkResult, network: Network, directory: Path) -> None:
    """One self-contained mapping file per layer (operator embedded) for ``dnnmap show``/``verify``."""
    level_names = [lv.name for lv in result.arch.levels]
    for i, layer in enumerate(result.layers):
        mapping = replace(layer.search.mapping, layer=layer.layer, arch=result.arch.name)
        save_mapping(directory / mapping_file_name(i, layer.layer), mapping, level_names, network.layer(layer.layer).op)


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
    layers: Annotated[Optional[str], typer.Option(help="comma-separated layer names (default: all)")] = None,
    budget: Annotated[int, typer.Option(min=1, help="random mapper: mappings sampled per layer")] = DEFAULT_BUDGET,
    seed: Annotated[int, typer.Option(help="random mapper seed")] = 0,
    budget_seconds: Annotated[Optional[float], typer.Option(min=0.0, help="optimal mapper: seconds per layer "
                                                            "before it stops with a certified gap")] = 60.0,
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
    imperfect: Annotated[bool, typer.Option("--imperfect", help="imperfect factorization: factors may pad a "
                                            "dimension by up to 15% of its bound (edge tiles; auto, exhaustive, "
                                            "random and sunstone mappers; docs/search.md)")] = False,
    tile_first: Annotated[bool, typer.Option("--tile-first", help="Sunstone (auto, sunstone mappers): also walk "
                                             "the report's tile-first order; closes its last 1-2% gaps on some "
                                             "layers at ~2.7x the search time (docs/search.md)")] = False,
) -> None:
    """Map every layer of MODEL onto ARCH and print per-layer and total cost."""
    chosen_passes = parse_passes(passes)
    if fuse is not None and chosen_passes != ("forward",):
        raise DnnmapError("--fuse applies to the forward pass only (--pass forward)")
    network = training_network(resolve_network(model, parse_input_shapes(input_shape)), chosen_passes)
    network = apply_densities(network, parse_density_options(density or []))
    spec = resolve_arch(arch)
    if density and spec.sparsity is None:
        stderr_console().print(f"note: architecture {spec.name!r} has no sparsity support: the layers run dense, "
                               "zeros included (docs/sparse.md)")
    if dram_model is not None:
        spec = with_dram_model(spec, dram_model)
    layer_names = parse_layer_list(layers)
    selected = select_layers(network, layer_names)
    options = SearchOptions(budget=budget, seed=seed, budget_seconds=budget_seconds,
                            imperfect=DEFAULT_WASTE if imperfect else None, tile_first=tile_first)
    check_search_limits(selected, spec, options)
    for path, option, is_dir in ((json_path, "--json", False), (html, "--html", False), (trace, "--trace", False),
                                 (trace_png, "--trace-png", False), (save_mappings, "--save-mappings", True),
                                 (png_dir, "--png-dir", True)):
        if path is not None:
            check_writable(path, option, directory=is_dir)
    err = stderr_console()
    load_kernels(err, spec)
    chosen = registry.get(mapper)
    if imperfect and (fuse is not None or not chosen.takes_imperfect):
        raise DnnmapError(f"--imperfect applies to the {', '.join(registry.names(registry.takes_imperfect))} "
                          "mappers without --fuse")
    if tile_first and (fuse is not None or not chosen.takes_tile_first):
        raise DnnmapError(f"--tile-first applies to the {', '.join(registry.names(registry.takes_tile_first))} "
                          "mappers without --fuse")
    if (trace is not None or trace_png is not None) and fuse is None:
        raise DnnmapError("--trace and --trace-png export a fused schedule; they need --fuse")
    if fuse is not None:
        run_fused(network, spec, fuse, max_fused, objective, mapper, layer_names, err, trace, trace_png)
        return
    with item_progress(err, f"mapping {network.name}", [op.name for op in selected], "layers") as done:
        result = search_network(network, spec, objective, mapper, layer_names, options, on_layer=done)
    out = stdout_console()
    out.print(layer_table(result))
    out.print(totals_line(result))
    if mapper == "tso":
        out.print(tso_comparison(result))
    data = to_dict(result, network)
    if json_path is not None:
        write_atomic(json_path, json.dumps(data, indent=2) + "\n")
        out.print(f"wrote {json_path}")
    if html is not None or png_dir is not None:
        write_report([run_from_dict(data, f"dnnmap map {model} --arch {arch}", f"{network.name}-{spec.name}")],
                     html, png_dir, out)
    if save_mappings is not None:
        save_layer_mappings(result, network, save_mappings)
        out.print(f"wrote {len(result.layers)} mapping files to {save_mappings}/")
