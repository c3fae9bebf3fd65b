"""Sunstone's CPU seconds on whole networks (the issue's goals: ResNet-18 <= 1.5 s, ResNet-50 <= 3 s warm).

Run: ``PYTHONPATH=CHECKOUT python benchmarks/sunstone_speed.py [--nets resnet18,resnet50] [--archs eyeriss]
[--objectives edp,energy] [--repeats 3]``; to compare two commits, run it once per checkout (``PYTHONPATH``) in
the same session, alternating. Per (network, architecture, objective): one warm-up run (numba compilation,
workload building), then ``--repeats`` runs of ``search_network(..., "sunstone")`` each timed with
``time.process_time`` after clearing every ``lru_cache`` of ``dnnmap.search`` (the unrolling and tile tables, so
each run pays for them as a first network would); prints the mappings priced, the totals and the min / median /
max CPU seconds.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import time

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import search_network
from dnnmap.workload import zoo


def clear_search_caches() -> None:
    """Empties every ``functools.lru_cache`` defined in ``dnnmap.search``."""
    for obj in gc.get_objects():
        if isinstance(obj, functools._lru_cache_wrapper) and getattr(obj, "__module__", "").startswith("dnnmap.search"):
            obj.cache_clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", default="resnet18,resnet50")
    ap.add_argument("--archs", default="eyeriss")
    ap.add_argument("--objectives", default="edp,energy")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| network | arch | objective | mappings priced | energy | cycles | CPU s min / median / max |")
    print("|---|---|---|---|---|---|---|")
    for arch_name in args.archs.split(","):
        arch = load_arch(arch_name)
        for net in args.nets.split(","):
            for objective in args.objectives.split(","):
                search_network(zoo.get(net), arch, objective, "sunstone")  # warm-up
                seconds = []
                for _ in range(args.repeats):
                    clear_search_caches()
                    t0 = time.process_time()
                    result = search_network(zoo.get(net), arch, objective, "sunstone")
                    seconds.append(time.process_time() - t0)
                print(f"| {net} | {arch_name} | {objective} | {result.evaluated:,} | {result.energy:.6e} | "
                      f"{result.cycles:.6e} | {min(seconds):.2f} / {statistics.median(seconds):.2f} / "
                      f"{max(seconds):.2f} |")


if __name__ == "__main__":
    main()
