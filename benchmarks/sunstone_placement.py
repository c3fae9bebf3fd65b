"""Sunstone with per-tensor placement against the exhaustive optimum of the placed space, on small cases.

Run: ``python benchmarks/sunstone_placement.py [--random 120] [--seed 0] [--limit 300000]``. Cases: the 20
oracle (architecture, layer) pairs of ``tests/search/test_oracle.py`` x 4 objectives, and ``--random`` random
small (layer, architecture with 2-3 levels and random section 2b options, objective) triples from the test
generator (``tests/support/random_cases.py``), kept when the exhaustive space with placement has at most
``--limit`` mappings and some mapping fits. Per case: Sunstone without and with ``--placement`` and the
exhaustive optimum with and without placement. Prints how often Sunstone --placement is within 1% / 10% of
the optimum, the worst case, and, for every case more than 1% worse, which stage loses it:

* ``shared walk``: Sunstone without placement already misses the shared-boundary optimum by more than 1%
  (its pruning: maximal tiles and unrollings, the loop-order trie, docs/search.md);
* ``factors``: the placed optimum's factors and orders with shared boundaries, refined by
  ``refine_placements``, reach the optimum: the walk did not propose those factors (free-placement fit rule);
* ``refinement``: not even from the optimum's factors: the per-level descent misses a joint choice.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import MappingError
from dnnmap.search.constraints import Constraints
from dnnmap.search.mappers import SearchSpaceTooLarge, exhaustive_search
from dnnmap.search.space import MapSpace
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.search.sunstone.placement import refine_placements

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))  # the test-case generator
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "search"))  # the oracle cases
from random_cases import random_arch, random_arch_options, random_op  # noqa: E402
from test_oracle import ARCHS, LAYERS  # noqa: E402


def cases(n_random: int, seed: int):  # noqa: ANN201 - generator of (label, op, arch, objective)
    for arch_name, arch in ARCHS.items():
        for layer_name, op in LAYERS.items():
            for objective in OBJECTIVES:
                yield f"oracle {arch_name}/{layer_name}", op, arch, objective
    rng = np.random.default_rng(seed)
    for i in range(n_random):
        op = random_op(rng)
        arch = random_arch(rng)
        while len(arch.levels) > 3:
            arch = random_arch(rng)
        yield f"random {i} {op.name}", op, random_arch_options(rng, arch), str(rng.choice(OBJECTIVES))


def lossy_stage(op, arch, objective: str, optimum, shared_sun: float, shared_opt: float) -> str:  # noqa: ANN001
    """Which stage of Sunstone --placement loses the case (module docstring)."""
    if shared_sun > shared_opt * 1.01:
        return "shared walk"
    batch = MappingBatch.from_mappings(op, arch, [optimum.mapping])
    start = MappingBatch(batch.temporal, batch.spatial, batch.order, batch.keeps, batch.layouts, batch.axes, None)
    refined = refine_placements(op, arch, objective, CostModel(op, arch), start)
    return "factors" if refined.score <= optimum.cost.objective(objective)[0] * 1.01 else "refinement"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=3e5)
    args = ap.parse_args()
    ratios, stages, skipped, seconds = [], {}, 0, [0.0, 0.0]
    for label, op, arch, objective in cases(args.random, args.seed):
        placed = MapSpace(op, arch, Constraints(placement=True))
        try:
            optimum = exhaustive_search(op, arch, objective, space=placed, max_space=args.limit)
            shared_opt = exhaustive_search(op, arch, objective).cost.objective(objective)[0]
            t0 = time.process_time()
            sun0 = sunstone_search(op, arch, objective)
            t1 = time.process_time()
            sun1 = sunstone_search(op, arch, objective, placement=True)
            t2 = time.process_time()
        except (SearchSpaceTooLarge, MappingError):
            skipped += 1
            continue
        seconds[0] += t1 - t0
        seconds[1] += t2 - t1
        s0, s1 = sun0.cost.objective(objective)[0], sun1.cost.objective(objective)[0]
        best = optimum.cost.objective(objective)[0]
        ratio = s1 / best if best > 0 else 1.0
        ratios.append((ratio, label, objective, s0 / best if best > 0 else 1.0, shared_opt / best if best > 0 else 1.0))
        assert s1 <= s0 * (1 + 1e-12) and s1 >= best * (1 - 1e-9), (label, objective, s0, s1, best)
        if ratio > 1.01:
            stage = lossy_stage(op, arch, objective, optimum, s0, shared_opt)
            stages[stage] = stages.get(stage, 0) + 1
            print(f"  {label} {objective}: sunstone --placement {ratio:.4f}x the optimum (without placement "
                  f"{s0 / best:.4f}x, shared optimum {shared_opt / best:.4f}x): {stage}")
    r = np.array([x[0] for x in ratios])
    worst = max(ratios)
    print(f"{len(ratios)} cases ({skipped} skipped: space above {args.limit:g} or nothing fits)")
    print(f"sunstone --placement within 1% of the placed optimum: {(r <= 1.01).sum()}, equal: "
          f"{(r <= 1 + 1e-9).sum()}, more than 10% worse: {(r > 1.1).sum()}; worst {worst[0]:.4f}x ({worst[1]}, "
          f"{worst[2]})")
    gained = sum(1 for x in ratios if x[0] < x[3] * (1 - 1e-9))
    below_shared = sum(1 for x in ratios if x[0] < x[4] * (1 - 1e-9))
    print(f"better than sunstone without placement: {gained}; below the shared-boundary optimum: {below_shared}; "
          f"placement below the shared optimum at all: {sum(1 for x in ratios if x[4] > 1 + 1e-9)}")
    print(f"lossy stages: {stages}")
    print(f"sunstone CPU seconds over the cases: {seconds[0]:.1f} without placement, {seconds[1]:.1f} with")


if __name__ == "__main__":
    main()
