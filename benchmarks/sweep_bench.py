"""Sweep throughput (serial vs Dask with 2 workers) and the RTML 192-PE reproduction (docs/hwgen.md).

Run: ``python benchmarks/sweep_bench.py [--model resnet18] [--points 8] [--train-batch 1] [--density W=0.1]
[--skip-throughput] [--skip-repro] [--inference-only]``.

1. Throughput: ``--points`` template points (rows x cols grid) x ``--model`` mapped with the auto mapper,
   once serially and once on a Dask LocalCluster of 2 single-threaded worker processes, each into a fresh
   SQLite store (``dnnmap.sweep``); configurations per minute with and without the cluster's start-up.
2. Reproduction: the ``rtml_192pe`` preset (16 x 12 PEs, dense form) on ResNet-50 inference (batch 1) and
   training (forward, backward-data and weight-update passes at ``--train-batch``), per image, beside
   the report's Tables 2-3 (seed 003: 21.1 ms / 8.9 mJ; 52 ms / 15.8 mJ), with the wall time, the energy
   split into on-chip and off-chip (the link: the report measured the chip's GDSII, not its FPGA memory).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dnnmap.arch.spec import load_arch
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.arch.templates.sparse_simd import sparse_simd_spec
from dnnmap.cost.warmup import compile_kernels
from dnnmap.search.network import search_network
from dnnmap.sweep.engine import dask_client, run_sweep
from dnnmap.sweep.store import ResultStore
from dnnmap.sweep.tasks import SweepTask
from dnnmap.workload import zoo
from dnnmap.workload.sparsity import ROLE_ALIASES, apply_densities, parse_density_options
from dnnmap.workload.training import training_network

# Seed 003 Tables 2-3, per image: inference batch 1; training = batch value / batch (60, 60, 64).
REPORT = {"inference": (21.1, 8.9), "forward": (1130 / 60, 513.9 / 60), "backward": (1010 / 60, 185.5 / 60),
          "weight-update": (1050 / 64, 267.9 / 64)}
SHAPES = ((8, 8), (8, 12), (12, 12), (16, 8), (16, 12), (12, 16), (16, 16), (24, 12), (24, 16), (32, 12))


def throughput(model: str, points: int) -> None:
    net = zoo.get(model)
    tasks = [SweepTask(f"simd_{r}x{c}", sparse_simd_spec(SparseSimdParams(rows=r, cols=c)), net, "edp")
             for r, c in SHAPES[:points]]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        serial = run_sweep(tasks, ResultStore(Path(tmp) / "serial.sqlite"))
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        with dask_client(2, None) as client:
            client.run(compile_kernels)  # load the kernels in each worker (counted in the start-up)
            t_ready = time.perf_counter()
            parallel = run_sweep(tasks, ResultStore(Path(tmp) / "dask.sqlite"), client)
            t_run = time.perf_counter() - t_ready
        t_dask = time.perf_counter() - t0
    same = [(r.latency_s, r.energy) for r in serial] == [(r.latency_s, r.energy) for r in parallel]
    print(f"sweep of {len(tasks)} template points x {model}: results equal serial vs Dask: {same}")
    print(f"  serial            {t_serial:7.1f} s  {len(tasks) / t_serial * 60:6.1f} configurations/min")
    print(f"  Dask, 2 workers   {t_dask:7.1f} s  {len(tasks) / t_dask * 60:6.1f} configurations/min "
          f"(incl. {t_dask - t_run:.1f} s cluster start-up); {len(tasks) / t_run * 60:.1f}/min after start-up")
    print(f"  speed-up {t_serial / t_dask:.2f}x with start-up, {t_serial / t_run:.2f}x without")


def reproduction(train_batch: int, densities: dict[str, float], inference_only: bool) -> None:
    arch = load_arch("rtml_192pe")
    t0 = time.perf_counter()
    rows = []
    runs = (("inference", ("forward",), 1), ("forward", ("forward",), train_batch),
            ("backward", ("backward",), train_batch), ("weight-update", ("weight-update",), train_batch))
    for name, passes, batch in runs[:1] if inference_only else runs:
        net = training_network(zoo.get("resnet50", batch=batch), passes)
        names = {t.name for op in net.operators for t in op.inputs}  # weight-update has no W input: dense
        net = apply_densities(net, {k: d for k, d in densities.items() if k in names or k in ROLE_ALIASES})
        result = search_network(net, arch, "edp")
        ms = result.cycles / (arch.clock_mhz * 1e3) / batch
        rows.append((name, batch, ms, result.energy * 1e-9 / batch, result.energy_onchip * 1e-9 / batch,
                     result.energy_offchip * 1e-9 / batch, result.utilization, result.dram_bytes / batch / 1e6))
    wall = time.perf_counter() - t0
    form = ", ".join(f"density {k}={v:g}" for k, v in densities.items()) or "dense form"
    print(f"RTML 192-PE point (rtml_192pe, {form}) on ResNet-50, per image; wall time {wall:.1f} s")
    print(f"  {'pass':<14}{'batch':>6}{'ms':>9}{'report':>9}{'mJ':>9}{'on-chip':>9}{'off-chip':>9}{'report':>9}"
          f"{'util':>7}{'DRAM MB':>9}")
    for name, batch, ms, mj, chip, link, util, mb in rows:
        rep_ms, rep_mj = REPORT[name]
        print(f"  {name:<14}{batch:>6}{ms:>9.2f}{rep_ms:>9.2f}{mj:>9.2f}{chip:>9.2f}{link:>9.2f}{rep_mj:>9.2f}"
              f"{util:>7.1%}{mb:>9.1f}")
    if not inference_only:
        train = [sum(r[i] for r in rows[1:]) for i in (2, 3, 4, 5)]
        print(f"  {'training':<14}{train_batch:>6}{train[0]:>9.2f}{52.07:>9.2f}{train[1]:>9.2f}{train[2]:>9.2f}"
              f"{train[3]:>9.2f}{15.84:>9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--points", type=int, default=8, help=f"template points, at most {len(SHAPES)}")
    parser.add_argument("--train-batch", type=int, default=1)
    parser.add_argument("--density", action="append", default=[], help="KEY=VALUE as dnnmap map --density, "
                        "e.g. W=0.1 (the weights of the passes that read them)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-repro", action="store_true")
    parser.add_argument("--inference-only", action="store_true", help="reproduce only the batch-1 inference row")
    args = parser.parse_args()
    compile_kernels()
    if not args.skip_throughput:
        throughput(args.model, args.points)
    if not args.skip_repro:
        reproduction(args.train_batch, parse_density_options(args.density), args.inference_only)


if __name__ == "__main__":
    main()
