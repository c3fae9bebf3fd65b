"""``dnnmap sweep``: hardware candidates (``--arch`` presets or YAMLs, ``--param`` template grids) x models x
objectives, on a Dask cluster or serially, resumable from a SQLite store, printed as one table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from dnnmap.api import check_mapper_options, resolve_arch
from dnnmap.arch.area import area_of
from dnnmap.arch.templates.sparse_simd import sparse_simd_spec
from dnnmap.cli.console import load_kernels, shown, stdout_console, wrote
from dnnmap.cli.errors import stderr_console, user_errors
from dnnmap.cli.hw_inputs import DENSITY_HELP, networks_of
from dnnmap.cli.options import (BudgetOption, BudgetSecondsOption, ImperfectOption, SeedOption, TileFirstOption,
                                check_outputs, mapper_help, output_path, search_options)
from dnnmap.cli.progress import item_progress
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.fileio import write_text_atomic
from dnnmap.report.sweep_export import rows_to_csv, rows_to_json
from dnnmap.search.options import DEFAULT_BUDGET, DEFAULT_BUDGET_SECONDS
from dnnmap.sweep.candidates import GRID_FIELDS, template_points
from dnnmap.sweep.engine import check_dask, check_workers, dask_client, pending_tasks, run_sweep
from dnnmap.sweep.scheduler_probe import check_scheduler
from dnnmap.sweep.store import ResultStore
from dnnmap.sweep.tasks import SweepRow, SweepTask

DEFAULT_WORKERS = 2  # Dask LocalCluster worker processes when --workers is not given


def sweep_table(rows: list[SweepRow]) -> Table:
    table = Table(title="sweep results")
    for col in ("arch", "model", "objective", "latency ms", "energy", "area mm^2", "utilization"):
        table.add_column(col, justify="left" if col in ("arch", "model", "objective") else "right")
    for r in rows:
        table.add_row(r.arch, r.model, r.objective, f"{r.latency_s * 1e3:.4g}", r.energy_text(),
                      "-" if r.area_mm2 is None else f"{r.area_mm2:.3f}", f"{r.utilization:.1%}")
    return table


@user_errors
def sweep_command(
    models: Annotated[list[str], typer.Argument(help="zoo model names or model files")],
    arch: Annotated[Optional[list[str]], typer.Option("--arch", "-a", help="architecture preset or YAML spec "
                                                      "(repeat for several)")] = None,
    param: Annotated[Optional[list[str]], typer.Option(help="sparse SIMD template grid NAME=V1,V2,... (repeat; the "
                                                       f"product is swept); NAME one of {', '.join(GRID_FIELDS)}")
                     ] = None,
    objective: Annotated[Optional[list[str]], typer.Option(help=f"mapping objective (repeat for several): "
                                                           f"{', '.join(OBJECTIVES)}")] = None,
    mapper: Annotated[str, typer.Option(help=mapper_help())] = "auto",
    passes: Annotated[str, typer.Option("--pass", help="training passes: forward, backward, weight-update or "
                                        "all")] = "forward",
    density: Annotated[Optional[list[str]], typer.Option("--density", help=DENSITY_HELP)] = None,
    store: Annotated[Path, typer.Option(parser=output_path, help="SQLite result store; rerunning the same "
                                        "command skips what it holds; written into the current folder unless a "
                                        "path is given")] = Path("sweep.sqlite"),
    workers: Annotated[Optional[int], typer.Option(help="Dask LocalCluster worker processes [default: "
                                                   f"{DEFAULT_WORKERS}]; not with --serial or --scheduler")] = None,
    scheduler: Annotated[Optional[str], typer.Option(help="an existing Dask scheduler, tcp://host:port")] = None,
    serial: Annotated[bool, typer.Option("--serial", help="run in this process, without Dask")] = False,
    csv_path: Annotated[Optional[Path], typer.Option("--csv", parser=output_path, help="also write the results "
                                                     "as CSV (one row per task, latency in s)")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", parser=output_path, help="also write the results "
                                                      "as a JSON list")] = None,
    budget: BudgetOption = DEFAULT_BUDGET,
    seed: SeedOption = 0,
    budget_seconds: BudgetSecondsOption = DEFAULT_BUDGET_SECONDS,
    imperfect: ImperfectOption = False,
    tile_first: TileFirstOption = False,
) -> None:
    """Sweep hardware candidates x MODELS x objectives; print one table."""
    objectives = objective or ["edp"]
    unknown = [o for o in objectives if o not in OBJECTIVES]
    if unknown:
        raise DnnmapError(f"unknown objective(s) {unknown}; choose from {', '.join(OBJECTIVES)}")
    options = search_options(budget, seed, budget_seconds, imperfect, tile_first)
    check_mapper_options(mapper, options)
    if not arch and not param:
        raise DnnmapError("give hardware candidates: --arch NAME_OR_YAML (repeat) and/or --param NAME=V1,V2")
    if serial and scheduler:
        raise DnnmapError("--serial and --scheduler exclude each other")
    if workers is not None and (serial or scheduler):
        raise DnnmapError(f"--workers sizes a new local Dask cluster; it does not apply with "
                          f"{'--serial' if serial else '--scheduler'} (give one of them)")
    workers = DEFAULT_WORKERS if workers is None else workers
    check_workers(workers)
    if not serial:
        check_dask()
    if scheduler is not None:
        check_scheduler(scheduler)  # before the store exists: a peer that is not a Dask scheduler is refused
    networks = networks_of(models, passes, density)
    candidates = [(a, resolve_arch(a), None) for a in arch or []]
    candidates += [(p.name, sparse_simd_spec(p), area_of(p).total) for p in template_points(param or [])]
    tasks = [SweepTask(label, spec, net, obj, mapper, area, options) for label, spec, area in candidates
             for net in networks for obj in objectives]
    check_outputs([(store, "--store", False), (csv_path, "--csv", False), (json_path, "--json", False)],
                  inputs=[Path(m) for m in models] + [Path(a) for a in arch or []])
    store.parent.mkdir(parents=True, exist_ok=True)  # like every other output (SQLite creates no folders)
    results = ResultStore(store)
    err = stderr_console()
    todo = pending_tasks(tasks, results)
    err.print(f"{len(tasks)} tasks, {len(tasks) - len(todo)} already in {store}, {len(todo)} to run", highlight=False,
              soft_wrap=True)
    if todo:
        load_kernels(err)
    names = [f"{t.arch} / {t.network.name} / {t.objective}" for t in todo]
    with item_progress(err, "sweeping", names, "task") as done:
        if serial or not todo:  # nothing left to compute: no cluster to start
            rows = run_sweep(tasks, results, on_done=lambda r: done(r.key))
        else:
            with dask_client(workers, scheduler) as client:
                rows = run_sweep(tasks, results, client, on_done=lambda r: done(r.key))
    results.close()
    out = stdout_console()
    out.print(sweep_table(rows))
    for path, text in ((csv_path, rows_to_csv), (json_path, rows_to_json)):
        if path is not None:
            write_text_atomic(path, text(rows))
    out.print(f"results stored in {shown(store)}")
    for path, kind in ((csv_path, "CSV"), (json_path, "JSON")):
        if path is not None:
            wrote(out, path, f"the {kind} table")
