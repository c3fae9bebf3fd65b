"""Sunstone per layer against independent searches: where is it more than 1% worse than the best other mapper?

Run: ``python benchmarks/sunstone_quality.py [--nets resnet18,mobilenetv2] [--archs eyeriss,tpu_like]
[--objectives edp,energy] [--random-budget 200000] [--seeds 1,2] [--optimal-seconds 20]
[--reference ref.json] [--out sun.json] [--all] [--tile-first]``

Per distinct layer (``shape_key``) of each network, architecture and objective: the objective of
Sunstone's mapping against the best of the random mapper (``--random-budget`` samples, each seed)
and the optimal mapper's incumbent after ``--optimal-seconds`` started from that best random
mapping (so the reference never depends on Sunstone). The reference takes about an hour for the
default networks (the optimal mapper's budget per case); ``--reference FILE`` stores it and reuses
what the file holds, so Sunstone versions can be compared against one reference. Prints every case
where Sunstone's ratio to the reference exceeds 1.01 (``--all``: every case) and a summary line;
``--out FILE`` writes Sunstone's objective per case (JSON) for before/after tables; ``--tile-first``
runs Sunstone with its tile-first pairs (docs/search.md).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dnnmap.arch.spec import load_arch
from dnnmap.search.mappers import random_search
from dnnmap.search.network import shape_key
from dnnmap.search.optimal import optimal_search
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.workload import zoo


def reference(op, arch, objective: str, budget: int, seeds: list[int], seconds: float) -> dict:  # noqa: ANN001
    """Best of the random runs and of the optimal mapper's incumbent from the best random mapping."""
    runs = [random_search(op, arch, objective, budget=budget, seed=s) for s in seeds]
    best = min(runs, key=lambda r: r.cost.objective(objective)[0])
    opt = optimal_search(op, arch, objective, budget_seconds=seconds, incumbent=best)
    return {"random": [float(r.cost.objective(objective)[0]) for r in runs],
            "optimal": float(opt.result.cost.objective(objective)[0]),
            "lower_bound": float(opt.certificate.lower_bound), "proven": bool(opt.certificate.proven)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nets", default="resnet18,mobilenetv2")
    ap.add_argument("--archs", default="eyeriss,tpu_like")
    ap.add_argument("--objectives", default="edp,energy")
    ap.add_argument("--random-budget", type=int, default=200_000)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--optimal-seconds", type=float, default=20.0)
    ap.add_argument("--reference", type=Path, help="JSON file of reference results: read, completed, written")
    ap.add_argument("--out", type=Path, help="write Sunstone's objective per case here (JSON)")
    ap.add_argument("--all", action="store_true", help="print every case, not only those worse than 1%%")
    ap.add_argument("--tile-first", action="store_true", help="Sunstone also pairs maximal tiles first")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    ref = json.loads(args.reference.read_text()) if args.reference and args.reference.exists() else {}
    sun_out: dict[str, float] = {}
    worse, cases, sun_seconds = 0, 0, 0.0
    print("| network | layer | arch | obj | sunstone | best other | other | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for net_name in args.nets.split(","):
        net = zoo.get(net_name)
        distinct: dict[tuple, object] = {}
        for layer in net.layers:
            distinct.setdefault(shape_key(layer.op), layer)
        for arch_name in args.archs.split(","):
            arch = load_arch(arch_name)
            for objective in args.objectives.split(","):
                for layer in distinct.values():
                    key = f"{net_name}|{layer.name}|{arch_name}|{objective}"
                    if key not in ref:
                        ref[key] = reference(layer.op, arch, objective, args.random_budget, seeds,
                                             args.optimal_seconds)
                        if args.reference:
                            args.reference.write_text(json.dumps(ref, indent=1))
                    t0 = time.perf_counter()
                    found = sunstone_search(layer.op, arch, objective, tile_first=args.tile_first)
                    sun = float(found.cost.objective(objective)[0])
                    sun_seconds += time.perf_counter() - t0
                    sun_out[key] = sun
                    r = ref[key]
                    other = min(min(r["random"]), r["optimal"])
                    kind = ("optimal (proven)" if r["proven"] else "optimal") if r["optimal"] < min(r["random"]) \
                        else "random"
                    ratio = sun / other
                    cases += 1
                    worse += ratio > 1.01
                    if args.all or ratio > 1.01:
                        print(f"| {net_name} | {layer.name} | {arch_name} | {objective} | {sun:.4g} | {other:.4g}"
                              f" | {kind} | {ratio:.4f} |", flush=True)
    if args.out:
        args.out.write_text(json.dumps(sun_out, indent=1))
    print(f"\n{worse} of {cases} cases more than 1% worse than the best other mapper; "
          f"Sunstone {sun_seconds:.1f} s in all")


if __name__ == "__main__":
    main()
