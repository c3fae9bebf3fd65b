"""Sunstone vs random vs certified optimum: mapping quality and wall time per network.

Run: ``python benchmarks/sunstone_bench.py [--nets resnet18,resnet50] [--archs eyeriss,tpu_like]
[--seeds 1,2] [--random-budget 50000,1000000] [--optimal-seconds 0] [--placement]`` (prints one table per network and architecture; 2-core
noisy machines: compare the ratios and medians, not absolute seconds).

Per (network, architecture, objective): the sum over layers of the objective (energy; EDP as
the per-layer sum of energy x cycles) for Sunstone, and for the random mapper at each
``--random-budget`` (samples per layer; ``50000,1000000`` adds the 1 M column, minutes per run)
its total over Sunstone's for each seed; wall time of each column (median of 3 warm runs for
Sunstone, median over seeds for random). With ``--optimal-seconds S > 0`` every distinct layer
is also given to the optimal mapper for S seconds from Sunstone's mapping: its total over
Sunstone's with the certified lower bound's in brackets (the optimum lies between), the layers
proven, Sunstone's worst ratio to a proven optimum, and its seconds. ``--placement`` adds Sunstone with
per-tensor placement: its total over Sunstone's and its seconds (one warm run). ``--random-budget ""``
leaves the random columns out.
"""

from __future__ import annotations

import argparse
import statistics
import time

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import NetworkResult, search_network, shape_key
from dnnmap.search.options import SearchOptions
from dnnmap.search.optimal import optimal_search
from dnnmap.workload import zoo


def total(result: NetworkResult, objective: str) -> float:
    if objective == "edp":
        return sum(layer.energy * layer.cycles for layer in result.layers)
    return result.energy


def timed(fn, repeats: int):  # noqa: ANN001, ANN201 - (result, median seconds)
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def optimal_total(net_name: str, arch_name: str, objective: str, sun: NetworkResult,
                  seconds: float) -> tuple[float, float, int, int, float, float]:
    """Optimal mapper on every distinct layer (Sunstone's mapping as the incumbent, ``seconds`` each):
    (total of the incumbents, total of the certified lower bounds, layers proven, distinct layers,
    Sunstone's worst ratio to a proven optimum, seconds). Layers of identical shape count per use."""
    net, arch = zoo.get(net_name), load_arch(arch_name)
    certs: dict[tuple, object] = {}
    proven, worst, spent, best, lower = 0, 1.0, 0.0, 0.0, 0.0
    for layer, res in zip(net.layers, sun.layers):
        key = shape_key(layer.op)
        if key not in certs:
            cert = optimal_search(layer.op, arch, objective, budget_seconds=seconds, incumbent=res.search).certificate
            certs[key] = cert
            spent += cert.seconds
            if cert.proven:
                proven += 1
                worst = max(worst, res.search.cost.objective(objective)[0] / cert.incumbent)
        best += certs[key].incumbent
        lower += certs[key].lower_bound
    return best, lower, proven, len(certs), worst, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="resnet18")
    ap.add_argument("--archs", default="eyeriss,tpu_like")
    ap.add_argument("--objectives", default="energy,edp")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--random-budget", default="50000",
                    help="comma list of random-mapper samples per layer, e.g. 50000,1000000 (1 M: minutes per run)")
    ap.add_argument("--optimal-seconds", type=float, default=0.0)
    ap.add_argument("--placement", action="store_true", help="also Sunstone --placement")
    args = ap.parse_args()
    budgets = [int(b) for b in args.random_budget.split(",") if b]
    search_network(zoo.get("resnet18"), load_arch("eyeriss"), "edp", "sunstone", layers=["conv1"])  # warm up
    if args.placement:
        search_network(zoo.get("resnet18"), load_arch("eyeriss"), "edp", "sunstone", layers=["conv1"],
                       options=SearchOptions(placement=True))
    cols = "".join(f" | rand {b:,} / sun per seed | rand {b:,} s" for b in budgets)
    opt = " | optimal / sun (bound / sun) | proven | sun worst / proven | opt s" if args.optimal_seconds > 0 else ""
    placed = " | sun --placement / sun | placement s" if args.placement else ""
    print(f"| network | arch | obj | sunstone | sun s{cols}{opt}{placed} |")
    print("|---" * (5 + 2 * len(budgets) + (4 if opt else 0) + (2 if placed else 0)) + "|")
    for net_name in args.nets.split(","):
        net = zoo.get(net_name)
        for arch_name in args.archs.split(","):
            arch = load_arch(arch_name)
            for objective in args.objectives.split(","):
                sun, sun_s = timed(lambda: search_network(net, arch, objective, "sunstone"), 3)
                row = f"| {net_name} | {arch_name} | {objective} | {total(sun, objective):.4g} | {sun_s:.2f}"
                for budget in budgets:
                    rand = [timed(lambda s=s: search_network(net, arch, objective, "random",
                                                             options=SearchOptions(budget=budget, seed=int(s))), 1) for s in args.seeds.split(",")]
                    values = "/".join(f"{total(r, objective) / total(sun, objective):.3f}" for r, _ in rand)
                    row += f" | {values} | {statistics.median(t for _, t in rand):.1f}"
                if args.optimal_seconds > 0:
                    best, lower, proven, n, worst, spent = optimal_total(net_name, arch_name, objective, sun,
                                                                         args.optimal_seconds)
                    ref = total(sun, objective)
                    row += f" | {best / ref:.3f} ({lower / ref:.3f}) | {proven}/{n} | {worst:.4f} | {spent:.0f}"
                if args.placement:
                    run, run_s = timed(lambda: search_network(net, arch, objective, "sunstone",
                                                              options=SearchOptions(placement=True)), 1)
                    row += f" | {total(run, objective) / total(sun, objective):.4f} | {run_s:.1f}"
                print(row + " |", flush=True)


if __name__ == "__main__":
    main()
