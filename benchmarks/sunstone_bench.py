"""Sunstone vs random vs certified optimum: mapping quality and wall time per network.

Run: ``python benchmarks/sunstone_bench.py [--nets resnet18,resnet50] [--archs eyeriss,tpu_like]
[--seeds 1,2] [--optimal-seconds 0]`` (prints one table per network and architecture; 2-core
noisy machines: compare the ratios and medians, not absolute seconds).

Per (network, architecture, objective): the sum over layers of the objective (energy; EDP as
the per-layer sum of energy x cycles) for Sunstone and for the random mapper (50,000 samples
per layer, each seed), their ratio, and the wall time (median of 3 warm runs for Sunstone,
one run per seed for random). With ``--optimal-seconds S > 0`` every distinct layer is also
given to the optimal mapper for S seconds: the table then counts the layers it proved and
Sunstone's worst ratio to a proven optimum.
"""

from __future__ import annotations

import argparse
import statistics
import time

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import NetworkResult, search_network, shape_key
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


def optimal_check(net_name: str, arch_name: str, objective: str, sun: NetworkResult, seconds: float) -> str:
    net, arch = zoo.get(net_name), load_arch(arch_name)
    proven, worst, spent, seen = 0, 1.0, 0.0, set()
    for layer, res in zip(net.layers, sun.layers):
        if shape_key(layer.op) in seen:
            continue
        seen.add(shape_key(layer.op))
        opt = optimal_search(layer.op, arch, objective, budget_seconds=seconds, incumbent=res.search)
        spent += opt.certificate.seconds
        if opt.certificate.proven:
            proven += 1
            worst = max(worst, res.search.cost.objective(objective)[0] / opt.certificate.incumbent)
    return f"optimal: {proven}/{len(seen)} layers proven in {spent:.0f} s, sunstone worst {worst:.4f}x of proven"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="resnet18")
    ap.add_argument("--archs", default="eyeriss,tpu_like")
    ap.add_argument("--objectives", default="energy,edp")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--optimal-seconds", type=float, default=0.0)
    args = ap.parse_args()
    search_network(zoo.get("resnet18"), load_arch("eyeriss"), "edp", "sunstone", layers=["conv1"])  # warm up
    print(f"{'network':10s} {'arch':9s} {'obj':6s} {'sunstone':>10s} {'best rand':>10s} {'sun/rand':>8s} "
          f"{'sun s':>6s} {'rand s':>6s} {'evals sun/rand':>15s}")
    for net_name in args.nets.split(","):
        net = zoo.get(net_name)
        for arch_name in args.archs.split(","):
            arch = load_arch(arch_name)
            for objective in args.objectives.split(","):
                sun, sun_s = timed(lambda: search_network(net, arch, objective, "sunstone"), 3)
                rand = [timed(lambda s=s: search_network(net, arch, objective, "random", seed=int(s)), 1)
                        for s in args.seeds.split(",")]
                best = min(total(r, objective) for r, _ in rand)
                rand_s = statistics.median(t for _, t in rand)
                evals = f"{sun.evaluated / rand[0][0].evaluated:.4f}"
                print(f"{net_name:10s} {arch_name:9s} {objective:6s} {total(sun, objective):10.4g} {best:10.4g} "
                      f"{total(sun, objective) / best:8.3f} {sun_s:6.2f} {rand_s:6.2f} {evals:>15s}", flush=True)
                if args.optimal_seconds > 0:
                    print("    " + optimal_check(net_name, arch_name, objective, sun, args.optimal_seconds))


if __name__ == "__main__":
    main()
