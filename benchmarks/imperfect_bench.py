"""Imperfect factorization in the Sunstone mapper: objective and utilization with and without it.

Run: ``python benchmarks/imperfect_bench.py [--nets resnet18,mobilenetv2] [--archs eyeriss,tpu_like]
[--objectives edp,energy] [--waste 0.15] [--layers]`` (prints one row per network, architecture and
objective; ``--layers`` adds every distinct layer whose result changed).

Per row: the sum over layers of the objective (EDP as the per-layer sum of energy x cycles) with
exact divisors only and with ``imperfect=waste``, their ratio, the MAC utilization over the network
(MACs / (cycles x lanes), cycle-weighted) both ways, the distinct layers that improved, and the
search seconds both ways (one warm run each; the imperfect search includes the exact walk, whose
result is its incumbent). The ``k1000`` network holds two layers with a 1000-wide dimension: ResNet-18's
classifier (``fc``, K = 1000, C = 512, DRAM-bound at batch 1) and a SqueezeNet-style 1x1 classifier
convolution (``conv10``, 512 -> 1000 channels on 13 x 13, compute-bound).
"""

from __future__ import annotations

import argparse
import time

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import NetworkResult, search_network
from dnnmap.search.options import DEFAULT_WASTE, SearchOptions
from dnnmap.workload import ops, zoo
from dnnmap.workload.ir import Layer, Network


def total(result: NetworkResult, objective: str) -> float:
    """The network's objective: per-layer sum (EDP as energy x cycles per layer)."""
    if objective == "edp":
        return sum(layer.energy * layer.cycles for layer in result.layers)
    if objective == "latency":
        return result.cycles
    if objective == "dram":
        return result.dram_bytes
    return result.energy


def network(name: str) -> Network:
    """A zoo network, or ``k1000``: two layers with a dimension of 1000 (module docstring)."""
    if name != "k1000":
        return zoo.get(name)
    fc = zoo.get("resnet18").layer("fc").op
    conv10 = ops.pointwise("conv10", 512, 1000, 13)
    return Network("k1000", (Layer(fc, ("input",), (1, 1000)), Layer(conv10, ("input",), (1, 1000, 13, 13))),
                   (("input", (1, 512)),), source="benchmark")


def layer_objective(layer, objective: str) -> float:  # noqa: ANN001 - a LayerResult
    return float(layer.search.cost.objective(objective)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="resnet18,mobilenetv2,k1000")
    ap.add_argument("--archs", default="eyeriss,tpu_like")
    ap.add_argument("--objectives", default="edp,energy")
    ap.add_argument("--waste", type=float, default=DEFAULT_WASTE)
    ap.add_argument("--layers", action="store_true", help="print the distinct layers whose result changed")
    args = ap.parse_args()
    search_network(zoo.get("resnet18"), load_arch("eyeriss"), "edp", "sunstone", layers=["fc"],
                   options=SearchOptions(imperfect=args.waste))  # compile / load the kernels
    print(f"imperfect factorization, padding cap {args.waste:.0%} per dimension (Sunstone mapper)")
    print("| network | arch | objective | exact | imperfect | imperfect/exact | util exact | util imperfect "
          "| layers improved | exact s | imperfect s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    changed: list[str] = []
    for net_name in args.nets.split(","):
        net, layers = network(net_name), None
        for arch_name in args.archs.split(","):
            arch = load_arch(arch_name)
            for objective in args.objectives.split(","):
                t0 = time.perf_counter()
                exact = search_network(net, arch, objective, "sunstone", layers)
                t1 = time.perf_counter()
                padded = search_network(net, arch, objective, "sunstone", layers, SearchOptions(imperfect=args.waste))
                t2 = time.perf_counter()
                distinct = [(a, b) for a, b in zip(exact.layers, padded.layers) if a.reused_from is None]
                better = [(a, b) for a, b in distinct
                          if layer_objective(b, objective) < layer_objective(a, objective) * (1 - 1e-9)]
                e, p = total(exact, objective), total(padded, objective)
                print(f"| {net_name} | {arch_name} | {objective} | {e:.4g} | {p:.4g} | {p / e:.3f} | "
                      f"{exact.utilization:.1%} | {padded.utilization:.1%} | {len(better)}/{len(distinct)} | "
                      f"{t1 - t0:.1f} | {t2 - t1:.1f} |", flush=True)
                for a, b in better:
                    dims = " ".join(f"{d}{n}" for d, n in a.search.op.dims if n > 1)
                    padded_dims = " ".join(f"{d}{b.search.mapping.total(d)}/{n}" for d, n in a.search.op.dims
                                           if b.search.mapping.total(d) > n)
                    changed.append(f"| {net_name} | {arch_name} | {objective} | {a.layer} ({dims}) | "
                                   f"{layer_objective(b, objective) / layer_objective(a, objective):.3f} | "
                                   f"{a.utilization:.1%} | {b.utilization:.1%} | {padded_dims or '-'} |")
    if args.layers and changed:
        print("\n| network | arch | objective | layer | imperfect/exact | util exact | util imperfect "
              "| padded dims (covered/bound) |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(changed))


if __name__ == "__main__":
    main()
