"""Certified-optimal mapper per layer: time to gap 0, or the gap left at the budget; Sunstone against it.

Run: ``python benchmarks/optimal_bench.py [--nets resnet18,mobilenetv2] [--arch eyeriss]
[--objectives edp,energy] [--budget-seconds 20] [--layers a,b] [--out table.md]``

For every distinct layer shape of each network (layers of identical shape are searched once), the
optimal mapper starts from Sunstone's mapping and runs for at most ``--budget-seconds``. Printed per
layer: the loop bounds, whether the optimum is proven, the seconds spent (time to gap 0 when proven),
the remaining gap ``incumbent / lower bound - 1`` otherwise, the nodes bounded, and Sunstone's
objective over the optimal mapper's incumbent (``sun/opt``; within 1% is the issue's goal where proven),
and the same for Sunstone with ``tile_first`` (``tf/opt``); the better of the two is the incumbent.
Seconds on a 2-core machine shared with other jobs: read them as orders of magnitude.
"""

from __future__ import annotations

import argparse

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import shape_key
from dnnmap.search.optimal import optimal_search
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.workload import zoo


def rows(net_name: str, arch_name: str, objective: str, budget: float,
         only: set[str] | None = None):  # noqa: ANN201 - yields table rows
    arch, seen = load_arch(arch_name), set()
    for layer in zoo.get(net_name).layers:
        if shape_key(layer.op) in seen or (only and layer.name not in only):
            continue
        seen.add(shape_key(layer.op))
        sun = sunstone_search(layer.op, arch, objective)
        tf = sunstone_search(layer.op, arch, objective, tile_first=True)
        start = min(sun, tf, key=lambda r: r.cost.objective(objective)[0])
        opt = optimal_search(layer.op, arch, objective, budget_seconds=budget, incumbent=start)
        c = opt.certificate
        dims = " ".join(f"{d}{n}" for d, n in layer.op.dims if n > 1)
        ratio, tf_ratio = (r.cost.objective(objective)[0] / c.incumbent for r in (sun, tf))
        yield (f"| {net_name} | {objective} | {layer.name} | {dims} | {'yes' if c.proven else 'no'} | "
               f"{c.seconds:.1f} | {c.gap:.1%} | {c.nodes:,} | {ratio:.4f} | {tf_ratio:.4f} |"), c.proven, ratio, tf_ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="resnet18,mobilenetv2")
    ap.add_argument("--arch", default="eyeriss")
    ap.add_argument("--objectives", default="edp,energy")
    ap.add_argument("--budget-seconds", type=float, default=20.0)
    ap.add_argument("--layers", default=None, help="comma list of layer names (default: every distinct layer)")
    ap.add_argument("--out", default=None, help="also append the table to this file")
    args = ap.parse_args()
    head = ("| network | objective | layer | bounds | proven | s | gap | nodes | sun/opt | tf/opt |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    print(head, flush=True)
    for net in args.nets.split(","):
        for objective in args.objectives.split(","):
            proven, n, worst, tf_worst = 0, 0, 1.0, 1.0
            for line, ok, ratio, tf_ratio in rows(net, args.arch, objective, args.budget_seconds,
                                              set(args.layers.split(",")) if args.layers else None):
                print(line, flush=True)
                lines.append(line)
                n += 1
                proven += ok
                worst = max(worst, ratio) if ok else worst
                tf_worst = max(tf_worst, tf_ratio) if ok else tf_worst
            summary = (f"{net} {args.arch} {objective}: {proven}/{n} proven; sunstone worst {worst:.4f}x of a proven "
                       f"optimum, with tile_first {tf_worst:.4f}x")
            print(summary, flush=True)
            lines.append(summary)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
