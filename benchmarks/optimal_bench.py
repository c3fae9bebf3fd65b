"""Certified-optimal mapper per layer: time to gap 0, or the gap left at the budget; Sunstone against it.

Run: ``python benchmarks/optimal_bench.py [--nets resnet18,mobilenetv2] [--archs eyeriss,tpu_like]
[--objectives edp,energy] [--budget-seconds 20] [--layers a,b] [--placement] [--both-axes] [--out table.md]``

For every distinct layer shape of each network (layers of identical shape are searched once), the
optimal mapper starts from Sunstone's mapping and runs for at most ``--budget-seconds``. Printed per
layer: the loop bounds, whether the optimum is proven, the seconds spent (time to gap 0 when proven),
the remaining gap ``incumbent / lower bound - 1`` otherwise, the nodes bounded, and Sunstone's
objective over the optimal mapper's incumbent (``sun/opt``; within 1% is the issue's goal where proven),
and the same for Sunstone with ``tile_first`` (``tf/opt``). Sunstone runs in the space the optimum is proven in
(``sunstone_search(..., placement=..., both_axes=...)``, what ``dnnmap map --mapper sunstone`` with those options
returns; its seconds are column ``sun s``), for the two ratios only. The optimal mapper runs as ``dnnmap map --mapper
optimal`` runs it (``optimal_search`` with no incumbent): its own start (Sunstone's walk without the placed walk's
thorough rules, docs/search.md) counts in its seconds and its budget.

``--nets`` takes zoo names and ``bert_gemms``: the distinct matmul layers of one BERT-base encoder layer
(``bert_base``'s ``layer0``: the Q/K/V/output projections, ``fc1`` and ``fc2``). The space is the shared
boundary by default; ``--placement`` adds every per-tensor placement and ``--both-axes`` lets every level
with a 2-D fan-out split a dimension over both axes (the constraint ``both_axes``), as ``dnnmap map
--mapper optimal --placement --constraints`` does.

After each (network, architecture, objective, space) a summary line against the proof goal of issue 28
(every distinct layer proven, median <= 1 s and worst <= 60 s per layer): distinct layers, proven count,
median and worst seconds per layer and the worst gap. A layer's seconds there are what ``dnnmap map
--mapper optimal`` spends on it (column ``s``: its start and its search); ``cpu s`` is the CPU time of that call
(this process's), which on a shared machine says how much of the wall time was work. The budget is wall time,
as ``--budget-seconds``. Seconds on a 2-core machine shared with other jobs: read them as orders of magnitude.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.warmup import compile_kernels
from dnnmap.search.bounds import OptimalSpace
from dnnmap.search.network import shape_key
from dnnmap.search.optimal import optimal_search
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.workload import zoo
from dnnmap.workload.ir import Layer

BERT_GEMMS = "bert_gemms"  # the distinct matmuls of one BERT-base encoder layer
GOAL_MEDIAN_S, GOAL_WORST_S = 1.0, 60.0  # issue 28's proof goal per distinct layer
HEAD = ("| network | arch | space | objective | layer | bounds | proven | sun s | s | cpu s | gap | nodes | sun/opt "
        "| tf/opt |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


@dataclass(frozen=True)
class Row:
    """One distinct layer's result: the table line and what the summary needs."""

    line: str
    proven: bool
    seconds: float  # Sunstone's default walk plus the optimal search, wall
    cpu: float  # the same, CPU time of this process
    gap: float
    ratio: float
    tf_ratio: float


def net_layers(net_name: str) -> list[Layer]:
    """The layers of zoo network ``net_name``, or of :data:`BERT_GEMMS`."""
    if net_name == BERT_GEMMS:
        return [layer for layer in zoo.get("bert_base").layers
                if layer.name.startswith("layer0.") and layer.op.kind == "matmul"]
    return list(zoo.get(net_name).layers)


def both_axes_levels(arch: ArchSpec) -> list[str]:
    """The levels with a 2-D fan-out: those ``--both-axes`` widens."""
    return [lv.name for lv in arch.levels if lv.fanout is not None and len(lv.fanout.shape) == 2]


def rows(net_name: str, arch_name: str, objective: str, budget: float, only: set[str] | None = None,
         placement: bool = False, both_axes: bool = False) -> Iterator[Row]:
    arch, seen = load_arch(arch_name), set()
    compile_kernels(arch)  # not timed: the kernel's first load belongs to no layer
    wide = both_axes_levels(arch) if both_axes else []
    space = OptimalSpace(placement, tuple(wide)).label
    for layer in net_layers(net_name):
        if shape_key(layer.op) in seen or (only and layer.name not in only):
            continue
        seen.add(shape_key(layer.op))
        # Sunstone in the space the optimum is proven in (what ``--mapper sunstone`` returns): the ratios only
        t0 = time.perf_counter()
        sun = sunstone_search(layer.op, arch, objective, placement=placement, both_axes=wide)
        sun_s = time.perf_counter() - t0
        tf = sunstone_search(layer.op, arch, objective, tile_first=True, placement=placement, both_axes=wide)
        # the optimal mapper as ``dnnmap map --mapper optimal`` runs it: its own start inside its budget
        c0 = time.process_time()
        opt = optimal_search(layer.op, arch, objective, budget_seconds=budget, placement=placement, both_axes=wide)
        cpu = time.process_time() - c0
        c = opt.certificate
        dims = " ".join(f"{d}{n}" for d, n in layer.op.dims if n > 1)
        ratio, tf_ratio = (r.cost.objective(objective)[0] / c.incumbent for r in (sun, tf))
        line = (f"| {net_name} | {arch_name} | {space} | {objective} | {layer.name} | {dims} | "
                f"{'yes' if c.proven else 'no'} | {sun_s:.2f} | {c.seconds:.1f} | {cpu:.1f} | {c.gap:.1%} | {c.nodes:,} | "
                f"{ratio:.4f} | {tf_ratio:.4f} |")
        yield Row(line, c.proven, c.seconds, cpu, c.gap, ratio, tf_ratio)


def summary(net: str, arch: str, objective: str, space: str, got: list[Row]) -> str:
    """The summary line of one (network, architecture, objective, space) against the proof goal."""
    if not got:
        return f"{net} {arch} {objective} [{space}]: no layer"
    proven = [r for r in got if r.proven]
    secs = [r.seconds for r in got]
    median, worst = statistics.median(secs), max(secs)
    cpus = [r.cpu for r in got]
    met = len(proven) == len(got) and median <= GOAL_MEDIAN_S and worst <= GOAL_WORST_S
    sun_worst = max((r.ratio for r in proven), default=1.0)
    tf_worst = max((r.tf_ratio for r in proven), default=1.0)
    return (f"{net} {arch} {objective} [{space}]: {len(got)} distinct layers, {len(proven)}/{len(got)} proven; "
            f"seconds per layer median {median:.1f}, worst {worst:.1f} (CPU median {statistics.median(cpus):.1f}, "
            f"worst {max(cpus):.1f}); worst gap {max(r.gap for r in got):.1%}; "
            f"goal (all proven, median <= {GOAL_MEDIAN_S:g} s, worst <= {GOAL_WORST_S:g} s) "
            f"{'met' if met else 'not met'}; sunstone worst {sun_worst:.4f}x of a proven optimum, with tile_first "
            f"{tf_worst:.4f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="resnet18,mobilenetv2", help=f"zoo names or {BERT_GEMMS}")
    ap.add_argument("--archs", "--arch", dest="archs", default="eyeriss", help="comma list of architectures")
    ap.add_argument("--objectives", default="edp,energy")
    ap.add_argument("--budget-seconds", type=float, default=20.0)
    ap.add_argument("--layers", default=None, help="comma list of layer names (default: every distinct layer)")
    ap.add_argument("--placement", action="store_true", help="the space with every per-tensor placement")
    ap.add_argument("--both-axes", action="store_true", help="every level with a 2-D fan-out may split a "
                                                             "dimension over both axes")
    ap.add_argument("--out", default=None, help="also append the table and summaries to this file")
    args = ap.parse_args()
    only = set(args.layers.split(",")) if args.layers else None
    lines, summaries = [HEAD], []
    print(HEAD, flush=True)
    for net in args.nets.split(","):
        for arch in args.archs.split(","):
            wide = both_axes_levels(load_arch(arch)) if args.both_axes else []
            space = OptimalSpace(args.placement, tuple(wide)).label
            for objective in args.objectives.split(","):
                got = []
                for row in rows(net, arch, objective, args.budget_seconds, only, args.placement, args.both_axes):
                    print(row.line, flush=True)
                    lines.append(row.line)
                    got.append(row)
                line = summary(net, arch, objective, space, got)
                print(line, flush=True)
                summaries.append(f"* {line}")
    lines += ["", *summaries]
    print("\n" + "\n".join(summaries), flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
