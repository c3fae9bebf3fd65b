"""``dnnmap generate-hw``: search the sparse SIMD template for whole networks under an area or PE budget,
print the Pareto front and the chosen point, write it as an architecture YAML and a Verilog header."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from dnnmap.api import check_mapper_options, model_path
from dnnmap.cli.console import load_kernels, stdout_console, wrote
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.hw_inputs import DENSITY_HELP, networks_of
from dnnmap.cli.options import (BudgetOption, BudgetSecondsOption, ImperfectOption, SeedOption, TileFirstOption,
                                check_outputs, mapper_help, output_path, search_options)
from dnnmap.cli.progress import count_progress
from dnnmap.fileio import write_text_atomic
from dnnmap.hwgen.evaluate import DesignPoint
from dnnmap.hwgen.generate import GENERATION_OBJECTIVES, Generation, generate_hardware
from dnnmap.hwgen.outputs import arch_yaml, verilog_header
from dnnmap.hwgen.space import Budget
from dnnmap.report.summary import counted
from dnnmap.search.options import DEFAULT_BUDGET, DEFAULT_BUDGET_SECONDS


def front_table(gen: Generation) -> Table:
    table = Table(title=f"Pareto front (latency, energy, area) of {len(gen.points)} evaluated points; "
                        f"budget {gen.budget.describe()}")
    for col in ("", "rows x cols", "PE in/psum", "row SRAM", "GLB words/banks", "area mm^2", "latency ms",
                "energy mJ", "EDP mJ*ms"):
        table.add_column(col, justify="right")
    for p in gen.front:
        q = p.params
        table.add_row("*" if p is gen.chosen else "", f"{q.rows} x {q.cols}", f"{q.pe_input_words}/{q.pe_psum_words}",
                      str(q.row_sram_words), f"{q.glb_words}/{q.glb_banks}", f"{p.area_mm2:.3f}",
                      f"{p.latency_s * 1e3:.3f}", f"{p.energy_j * 1e3:.3f}",
                      f"{p.latency_s * p.energy_j * 1e6:.3f}")
    return table


def chosen_lines(p: DesignPoint, objective: str) -> list[str]:
    lines = [f"chosen (best {objective} on the front): {p.params.rows} x {p.params.cols} = {p.params.pes} PEs, "
             f"{p.area_mm2:.3f} mm^2, {p.latency_s * 1e3:.3f} ms, {p.energy_j * 1e3:.3f} mJ"]
    lines += [f"  {n.network}: {n.latency_s * 1e3:.3f} ms, {n.energy_j * 1e3:.3f} mJ, utilization "
              f"{n.utilization:.1%}" for n in p.networks]
    return lines


@user_errors
def generate_hw_command(
    models: Annotated[list[str], typer.Argument(help="zoo model names or model files; the hardware is searched for "
                                                     "all of them together (latency and energy summed)")],
    area_mm2: Annotated[Optional[float], typer.Option("--area-mm2", help="area budget in mm^2 (area model: "
                                                      "docs/hwgen.md)")] = None,
    pes: Annotated[Optional[int], typer.Option("--pes", help="PE budget: at most this many PEs")] = None,
    objective: Annotated[str, typer.Option(help=f"mapping and selection objective: "
                                                f"{', '.join(GENERATION_OBJECTIVES)}")] = "edp",
    mapper: Annotated[str, typer.Option(help=mapper_help("per-layer mapper: "))] = "auto",
    passes: Annotated[str, typer.Option("--pass", help="training passes to map: forward, backward, "
                                        "weight-update or all (docs/ir.md)")] = "forward",
    density: Annotated[Optional[list[str]], typer.Option("--density", help=DENSITY_HELP)] = None,
    max_candidates: Annotated[int, typer.Option(min=1, help="most template points to evaluate")] = 40,
    budget: BudgetOption = DEFAULT_BUDGET,
    seed: SeedOption = 0,
    budget_seconds: BudgetSecondsOption = DEFAULT_BUDGET_SECONDS,
    imperfect: ImperfectOption = False,
    tile_first: TileFirstOption = False,
    out_dir: Annotated[Path, typer.Option("--out-dir", "-o", parser=output_path, help="folder of the two output "
                                          "files (created if missing); default: the current folder", show_default=False)] = Path("."),
    yaml_path: Annotated[Path, typer.Option("--yaml", parser=output_path, help="architecture YAML of the chosen "
                                            "point (loadable by dnnmap map --arch); a relative path is taken in "
                                            "--out-dir")] = Path("generated_hw.yaml"),
    verilog_path: Annotated[Path, typer.Option("--verilog", parser=output_path, help="Verilog parameter header "
                                               "of the chosen point; a relative path is taken in "
                                               "--out-dir")] = Path("generated_hw.vh"),
) -> None:
    """Generate sparse SIMD hardware for MODELS under an area (--area-mm2) or PE (--pes) budget: writes the
    architecture YAML and the Verilog header of the chosen point (generated_hw.yaml and generated_hw.vh in the
    current folder unless -o/--yaml/--verilog say otherwise)."""
    yaml_path, verilog_path = out_dir / yaml_path, out_dir / verilog_path  # an absolute path stays as given
    area_budget = Budget(area_mm2, pes)
    options = search_options(budget, seed, budget_seconds, imperfect, tile_first)
    check_mapper_options(mapper, options)
    check_outputs([(yaml_path, "--yaml", False), (verilog_path, "--verilog", False)],
                  [model_path(m) for m in models])
    networks = networks_of(models, passes, density)
    err = stderr_console()
    load_kernels(err)
    with count_progress(err, f"generating hardware for {', '.join(n.name for n in networks)}", "point") as update:
        gen = generate_hardware(networks, area_budget, objective, mapper, max_candidates, progress=update,
                                options=options)
    out = stdout_console()
    out.print(front_table(gen))
    for line in chosen_lines(gen.chosen, objective):
        out.print(line)
    note = (f"dnnmap generate-hw {' '.join(models)} ({area_budget.describe()}, objective {objective}, mapper {mapper}, "
            f"passes {passes}{''.join(f', density {d}' for d in density or [])})\n"
            f"{counted(len(gen.points), 'point')} evaluated; chosen: latency {gen.chosen.latency_s * 1e3:.3f} ms, energy "
            f"{gen.chosen.energy_j * 1e3:.3f} mJ")
    write_text_atomic(yaml_path, arch_yaml(gen.chosen.params, note))
    write_text_atomic(verilog_path, verilog_header(gen.chosen.params, note))
    wrote(out, yaml_path, "the architecture YAML", f"use it: dnnmap map MODEL --arch {yaml_path}")
    wrote(out, verilog_path, "the Verilog parameter header")
