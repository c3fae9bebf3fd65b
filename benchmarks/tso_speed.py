"""Speed of the whole-model TSO search: `python benchmarks/tso_speed.py [--runs 5] [--model inceptionv3]`.

Times ``search_network(MODEL, nmp, mapper="tso")`` (what ``dnnmap map MODEL --arch nmp --mapper tso``
runs: TSO's search of every distinct layer shape plus the core cost model's price of each chosen
mapping) after one warm-up run (numba kernels loaded), and prints every run and the medians of wall-clock and process CPU time. The
issue's target for InceptionV3 is <= 5 s on this 2-core machine (docs/tso.md "Speed" has the
before/after figures).
"""

from __future__ import annotations

import argparse
import statistics
import time

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import search_network
from dnnmap.workload import zoo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="inceptionv3")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    arch, net = load_arch("nmp"), zoo.get(args.model)
    search_network(zoo.get("lenet5"), arch, mapper="tso")  # warm-up: numba kernels, imports
    times, cpu = [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        result = search_network(net, arch, mapper="tso")
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    unique = sum(r.reused_from is None for r in result.layers)
    print(f"{args.model}: {len(result.layers)} layers ({unique} searched); whole TSO search, {args.runs} warm runs: "
          + ", ".join(f"{t:.2f}" for t in times) + f" s; median {statistics.median(times):.2f} s wall, "
          f"{statistics.median(cpu):.2f} s CPU (the machine is shared: CPU time is the steadier figure)")


if __name__ == "__main__":
    main()
