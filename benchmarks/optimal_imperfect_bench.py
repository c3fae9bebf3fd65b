"""The optimal mapper over the padded space (``--mapper optimal --imperfect``) against the exact space and Sunstone.

Run: ``python benchmarks/optimal_imperfect_bench.py NET LAYER[,LAYER...] ARCH [--objectives energy,edp]
[--budget-seconds 120] [--waste 0.15] [--padded-only]`` (docs/search.md, "The optimal mapper over the padded
space"). One line per (layer, objective, space): Sunstone's objective, utilization and seconds
(``sunstone_search(imperfect=)``), then the optimal mapper's incumbent, utilization, whether it is proven, its
gap and certified lower bound, seconds and nodes (``optimal_search(budget_seconds=, imperfect=)``); exact space
first, then the padded one (``--padded-only``: only the padded one).
"""

from __future__ import annotations

import argparse
import time

from dnnmap.arch.spec import load_arch
from dnnmap.search.optimal import optimal_search
from dnnmap.search.options import DEFAULT_WASTE
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.workload import zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("net")
    parser.add_argument("layers", help="comma-separated layer names")
    parser.add_argument("arch")
    parser.add_argument("--objectives", default="energy,edp")
    parser.add_argument("--budget-seconds", type=float, default=120.0)
    parser.add_argument("--waste", type=float, default=DEFAULT_WASTE)
    parser.add_argument("--padded-only", action="store_true")
    args = parser.parse_args()
    arch = load_arch(args.arch)
    pads = (args.waste,) if args.padded_only else (None, args.waste)
    for layer in args.layers.split(","):
        op = zoo.get(args.net).layer(layer).op
        for objective in args.objectives.split(","):
            for pad in pads:
                t = time.perf_counter()
                sun = sunstone_search(op, arch, objective, imperfect=pad)
                sun_s = time.perf_counter() - t
                t = time.perf_counter()
                found = optimal_search(op, arch, objective, budget_seconds=args.budget_seconds, imperfect=pad)
                opt_s = time.perf_counter() - t
                cert = found.certificate
                print(f"{args.net} {layer} {args.arch} {objective} imperfect={pad}: sunstone "
                      f"{sun.cost.objective(objective)[0]:.6g} util {sun.cost.utilization[0]:.1%} {sun_s:.1f}s | "
                      f"optimal {cert.incumbent:.6g} util {found.result.cost.utilization[0]:.1%} "
                      f"proven={cert.proven} gap={cert.gap:.3g} lb={cert.lower_bound:.6g} {opt_s:.1f}s "
                      f"nodes={cert.nodes}", flush=True)


if __name__ == "__main__":
    main()
