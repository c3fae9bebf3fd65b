"""Sunstone against the exhaustive optimum of each map space (shared boundaries, placement, both axes), on small cases.

Run: ``python benchmarks/sunstone_placement.py [--random 120] [--seed 0] [--limit 300000]
[--spaces shared,placement,both,both+placement] [--generator cases|bounds] [--why]``. Cases: the 20 oracle
(architecture, layer) pairs of ``tests/search/test_oracle.py`` x 4 objectives, and ``--random`` random small
(layer, architecture with 2-3 levels and random section 2b options, objective) triples from the test generator
(``--generator cases``: ``tests/support/random_cases.py``; ``bounds``: the optimal mapper's soundness test's
layers and architectures, ``tests/search/test_optimal_bounds.py``, without the oracle cases), kept when the exhaustive space has at most ``--limit`` mappings and some
mapping fits. The spaces: ``shared`` (the declared space), ``placement`` (every per-tensor placement), ``both``
(a dimension may split over both axes of every 2-D fan-out; only the cases with one) and ``both+placement``.
Per space and case: Sunstone in that space against the exhaustive optimum of it; for ``both`` also Sunstone
without it (what it returned before it took both_axes). Prints per space how often Sunstone is equal to / within
1% / more than 10% above the optimum and the worst case; for every case more than 1% above, with ``--why``, which
pruning rule loses it: the rules (:data:`dnnmap.search.sunstone.walk.RULES`) whose switching off alone brings
Sunstone within 1% of the optimum (``none alone`` when no single one does, then ``all`` if switching them all off
does), and for the placed spaces ``refinement`` when even the walk without pruning misses it (the per-level
descent of ``refine_placements``). Sunstone is ``sunstone_search`` whole: the walks, the factor descent
(``dnnmap/search/sunstone/descent.py``) and the placement stage; a rule is named when the walk with it off,
followed by the same descent, reaches 1%.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import MappingError
from dnnmap.search.constraints import Constraints, LevelConstraints
from dnnmap.search.mappers import SearchSpaceTooLarge, exhaustive_search
from dnnmap.search.space import MapSpace
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.search.sunstone.walk import RULES

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))  # the test-case generator
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "search"))  # the oracle cases
from random_cases import random_arch, random_arch_options, random_op  # noqa: E402
from test_optimal_bounds import random_arch as bounds_arch, random_layer as bounds_layer  # noqa: E402
from test_oracle import ARCHS, LAYERS  # noqa: E402

SPACES = ("shared", "placement", "both", "both+placement")


def cases(n_random: int, seed: int, generator: str = "cases"):  # noqa: ANN201 - (label, op, arch, objective)
    if generator == "bounds":
        rng = np.random.default_rng(seed)
        for i in range(n_random):
            arch, op = bounds_arch(rng, i), bounds_layer(rng, i)
            yield f"bounds {i} {op.name}", op, arch, str(rng.choice(OBJECTIVES))
        return
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


def two_d_levels(arch) -> list[str]:  # noqa: ANN001
    return [lv.name for lv in arch.levels if lv.fanout is not None and len(lv.fanout.shape) == 2]


def space_of(arch, name: str) -> tuple[Constraints, dict] | None:  # noqa: ANN001
    """The exhaustive mapper's constraints and Sunstone's options for space ``name``; None where the space is
    the declared one (``both`` on an architecture without a 2-D fan-out)."""
    both = two_d_levels(arch) if "both" in name else []
    if "both" in name and not both:
        return None
    placement = "placement" in name
    return (Constraints(tuple((lv, LevelConstraints(both_axes=True)) for lv in both), placement=placement),
            {"placement": placement, "both_axes": both})


def losing_rules(op, arch, objective: str, options: dict, best: float) -> str:  # noqa: ANN001
    """The pruning rules whose switching off alone brings Sunstone within 1% of ``best`` (module docstring)."""
    def reaches(relax: frozenset[str]) -> bool:
        return sunstone_search(op, arch, objective, relax=relax, **options).cost.objective(objective)[0] <= best * 1.01
    alone = [rule for rule in RULES if reaches(frozenset({rule}))]
    if alone:
        return "+".join(alone) if len(alone) == 1 else " or ".join(alone)
    if reaches(frozenset(RULES)):
        return "none alone, all"
    return "refinement" if options["placement"] else "none (the walk without pruning misses it)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=120)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=3e5)
    ap.add_argument("--spaces", default=",".join(SPACES))
    ap.add_argument("--generator", choices=("cases", "bounds"), default="cases")
    ap.add_argument("--why", action="store_true", help="name the pruning rule behind every case more than 1% above")
    args = ap.parse_args()
    spaces = args.spaces.split(",")
    unknown = sorted(set(spaces) - set(SPACES))
    if unknown:
        sys.exit(f"error: --spaces: unknown {', '.join(unknown)}; choose from {', '.join(SPACES)}")
    ratios = {s: [] for s in spaces}  # (ratio, label, objective, ratio of sunstone without the widening)
    rules = {s: {} for s in spaces}
    skipped = {s: 0 for s in spaces}
    seconds = {s: 0.0 for s in spaces}
    for label, op, arch, objective in cases(args.random, args.seed, args.generator):
        for name in spaces:
            space = space_of(arch, name)
            if space is None:
                continue
            constraints, options = space
            try:
                optimum = exhaustive_search(op, arch, objective, space=MapSpace(op, arch, constraints),
                                            max_space=args.limit)
                t0 = time.process_time()
                found = sunstone_search(op, arch, objective, **options)
                seconds[name] += time.process_time() - t0
                plain = sunstone_search(op, arch, objective, placement=options["placement"]) if "both" in name \
                    else found
            except (SearchSpaceTooLarge, MappingError):
                skipped[name] += 1
                continue
            best = optimum.cost.objective(objective)[0]
            value, without = found.cost.objective(objective)[0], plain.cost.objective(objective)[0]
            ratio = value / best if best > 0 else 1.0
            ratios[name].append((ratio, label, objective, without / best if best > 0 else 1.0))
            assert value >= best * (1 - 1e-9), (name, label, objective, value, best)
            if ratio > 1.01:
                why = losing_rules(op, arch, objective, options, best) if args.why else ""
                rules[name][why] = rules[name].get(why, 0) + 1
                print(f"  {name}: {label} {objective}: {ratio:.4f}x the optimum" + (f" ({why})" if why else ""))
    print("| space | cases | equal | within 1% | more than 10% above | worst | Sunstone CPU s |")
    print("|---|---|---|---|---|---|---|")
    for name in spaces:
        if not ratios[name]:
            continue
        r = np.array([x[0] for x in ratios[name]])
        worst = max(ratios[name])
        print(f"| {name} | {len(r)} ({skipped[name]} skipped) | {(r <= 1 + 1e-9).sum()} | {(r <= 1.01).sum()} | "
              f"{(r > 1.1).sum()} | {worst[0]:.4f}x ({worst[1]}, {worst[2]}) | {seconds[name]:.1f} |")
    for name in spaces:
        if "both" in name and ratios[name]:
            r0 = np.array([x[3] for x in ratios[name]])
            print(f"{name}: Sunstone without both_axes within 1% of this optimum in {(r0 <= 1.01).sum()} of {len(r0)}, "
                  f"worst {r0.max():.4f}x")
        if rules[name] and args.why:
            print(f"{name}: rules losing the cases more than 1% above: {rules[name]}")


if __name__ == "__main__":
    main()
