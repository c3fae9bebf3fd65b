"""Core benchmarks: cost-model throughput and whole-network mapping wall time.

Run: ``python benchmarks/core_bench.py`` (prints medians of repeated runs; 2-core noisy machines:
compare ratios, not absolute figures). ``--model-only``: the cost-model throughput and the machine
reference only (about 30 s; alternate several such processes to compare two versions of the kernel).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from numba import njit

from dnnmap.arch.spec import load_arch
from dnnmap.cost.model import CostModel
from dnnmap.search.network import search_network
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.workload import zoo


def cost_model_throughput(repeats: int = 9, n: int = 400_000) -> dict[str, tuple[float, float]]:
    """(median, best) mappings per second of ``CostModel.evaluate`` on ~28k random mappings with legal
    spatial factors (82% over capacity): as the mappers call it (reused output buffers) and with
    fresh output arrays, interleaved so both see the same machine load."""
    arch = load_arch("eyeriss")
    op = zoo.get("resnet18").layer("layer1.1.conv1").op
    space = MapSpace(op, arch)
    rng = np.random.default_rng(0)
    factors = np.stack([t[rng.integers(len(t), size=n)] for t in space.tables()], axis=1)
    factors = factors[space.spatial_legal(factors)]
    order = np.argsort(rng.random((len(factors), len(arch.levels), len(op.dim_names))), axis=2)
    batch = space.to_batch(factors, order)
    model = CostModel(op, arch)
    modes = {"search path, reused buffers": True, "fresh output arrays": False}
    rates: dict[str, list[float]] = {name: [] for name in modes}
    for reuse in modes.values():
        model.evaluate(batch, reuse_buffers=reuse)
    for _ in range(repeats):
        for name, reuse in modes.items():
            t0 = time.perf_counter()
            model.evaluate(batch, reuse_buffers=reuse)
            rates[name].append(len(batch) / (time.perf_counter() - t0))
    return {name: (statistics.median(r), max(r)) for name, r in rates.items()}


def sampling_throughput(repeats: int = 5, n: int = 50_000) -> float:
    """Median legal candidates per second drawn by the compiled sampler on the same layer."""
    space = MapSpace(zoo.get("resnet18").layer("layer1.1.conv1").op, load_arch("eyeriss"))
    CandidateSampler(space, 0).sample(100)
    rates = []
    for seed in range(repeats):
        sampler = CandidateSampler(space, seed)
        t0 = time.perf_counter()
        batch = sampler.sample(n)
        rates.append(len(batch) / (time.perf_counter() - t0))
    return statistics.median(rates)


@njit(cache=True)
def _reference_loop(n: int) -> int:
    """A fixed integer workload (xorshift steps) whose rate tracks how fast this machine runs right now."""
    x = 88172645463325252
    for _ in range(n):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
    return x


def machine_reference(n: int = 20_000_000, repeats: int = 5) -> float:
    """Median reference-loop iterations per second (compare runs by the model/reference ratio)."""
    _reference_loop(10)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _reference_loop(n)
        rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates)


def network_wall_time(name: str, repeats: int = 3) -> tuple[float, int, float]:
    arch = load_arch("eyeriss")
    net = zoo.get(name)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = search_network(net, arch)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), res.evaluated, res.cycles


def main(model_only: bool = False) -> None:
    before = machine_reference()
    results = cost_model_throughput()
    after = machine_reference()
    reference = (before + after) / 2
    for name, (median, best) in results.items():
        print(f"cost model throughput (resnet18 layer1.1.conv1, eyeriss, 1 process, {name}): median {median:,.0f}, "
              f"best {best:,.0f} mappings/s (target 1,000,000/s)")
    median = results["search path, reused buffers"][0]
    print(f"machine reference loop: {reference / 1e6:,.0f} M iterations/s (before {before / 1e6:,.0f}, after "
          f"{after / 1e6:,.0f}); model/reference = {median / reference * 1e3:.2f} mappings per 1000 iterations")
    if model_only:
        return
    print(f"candidate sampling (same layer): median {sampling_throughput():,.0f} legal candidates/s")
    for name in ("resnet18", "resnet50"):
        wall, evaluated, cycles = network_wall_time(name)
        print(f"search_network {name} on eyeriss (default mapper): median {wall:.2f} s, "
              f"{evaluated:,} mappings evaluated, {evaluated / wall:,.0f} mappings/s, total {cycles:,.0f} cycles")


if __name__ == "__main__":
    main(model_only="--model-only" in sys.argv[1:])
