"""``--mapper sunstone``: the entry point the search layer registers (RTML Sec. 3.2)."""

from __future__ import annotations

import math
import time
from collections.abc import Collection

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.errors import MappingError
from dnnmap.search.mappers import Progress, SearchResult, nothing_fits_message
from dnnmap.search.options import SearchOptions
from dnnmap.search.sunstone.descent import PAIR_WALKS, descend
from dnnmap.search.sunstone.placement import refine_placements, relevance
from dnnmap.search.sunstone.stats import SunstoneStats
from dnnmap.search.sunstone.walk import SunstoneWalk
from dnnmap.search.registry import Mapper
from dnnmap.workload.ir import Operator


def sunstone_search(op: Operator, arch: ArchSpec, objective: str = "edp", stats: SunstoneStats | None = None,
                    model: CostModel | None = None,
                    imperfect: float | None = None,
                    tile_first: bool = False, placement: bool = False, thorough: bool = True,
                    both_axes: Collection[str] = (), relax: frozenset[str] = frozenset()) -> SearchResult:
    """Best mapping the Sunstone walk finds, followed by the factor descent (:mod:`.descent`; the exact and placed
    walks' results); ``stats`` (if given) accumulates the walks' pruning statistics.

    ``tile_first``: also pair each maximal tile of the whole residual with the maximal unrollings of
    what it leaves (the report's order, tile then unrolling; docs/search.md), about 2-3x slower.

    ``imperfect``: also walk the imperfect-factorization space whose factors may pad each dimension
    by up to this fraction of its bound (docs/search.md), and return the better of the two walks'
    results, so the option never returns a worse objective (the walk's pruning is lossy: a padded
    maximal tile or unrolling can crowd out the exact divisor that was best). The padded walk is not
    seeded with the exact result: a step's completed candidate is no lower bound of what the later
    steps reach (the fan-outs above it are still idle in the completion), so on an architecture
    with fan-outs at two levels an exact incumbent cut every padded candidate at the first step.

    ``placement``: the space also holds per-tensor placements (``--placement``): a third walk whose tiles may
    fit with each tensor's free placement, then :func:`.placement.refine_placements` from the best of every
    walk (the shared-boundary ones included, so the option never returns a worse objective). ``thorough`` (the
    default): a second placed walk keeps the tiles maximal for each way of fitting (shared, or one subset of the
    tensors placed) and adds level-0 orders with a filter window loop outermost, and the refinement starts from the
    best of each walk (the walks' pruning is lossy: more candidates can end lower or higher); False: the first placed
    walk only (maximal among the tiles that fit some way, the loop-order trie's orders), the optimal mapper's start
    (docs/search.md, "The placed walk's rules").

    ``both_axes``: names of the levels whose 2-D fan-out may split a dimension over both axes (the constraint
    ``both_axes``): every walk's unrolling step of those levels takes both-axis unrollings too.

    ``relax``: pruning rules of every walk switched off (:data:`.walk.RULES`; a diagnostic: which rule loses a case).
    """
    if imperfect is not None and not imperfect >= 0:
        raise ValueError(f"imperfect waste must be >= 0, got {imperfect!r}")
    t0 = time.perf_counter()
    model = model or CostModel(op, arch)
    names = [lv.name for lv in arch.levels]
    both = frozenset(names.index(name) for name in both_axes)
    walk = SunstoneWalk(op, arch, objective, model, tile_first=tile_first, both_axes=both, relax=relax)
    best = walk.run()
    evaluated = walk.stats.evaluated
    key = (walk.best_score, walk.best_tie)
    if best is not None:  # the walk's pruning is lossy: the factor descent's second look (descent.py)
        down = descend(arch, objective, model, best, both, pairs=walk.stats.evaluated <= PAIR_WALKS)
        best, evaluated, key = down.batch, evaluated + down.evaluated, (down.score, down.tie)
    if stats is not None:
        stats.merge(walk.stats)
    if imperfect is not None and imperfect > 0:
        padded = SunstoneWalk(op, arch, objective, model, waste=imperfect, both_axes=both, relax=relax)
        if padded.run() is not None and (padded.best_score, padded.best_tie) < key:
            best = padded.best
        evaluated += padded.stats.evaluated
        if stats is not None:
            stats.merge(padded.stats)
    if placement:
        starts = [best]
        for rules in (False, True) if thorough else (False,):
            placed = SunstoneWalk(op, arch, objective, model, tile_first=tile_first, placement=True, thorough=rules,
                                  both_axes=both, relax=relax)
            placed.run()
            evaluated += placed.stats.evaluated
            if stats is not None:
                stats.merge(placed.stats)
            if placed.best is not None:
                down = descend(arch, objective, model, placed.best, both, relevant=relevance(op),
                               pairs=placed.stats.evaluated <= PAIR_WALKS)
                starts.append(down.batch)
                evaluated += down.evaluated
        score, tie = math.inf, math.inf
        for start in starts:
            if start is not None:
                refined = refine_placements(op, arch, objective, model, start)
                evaluated += refined.evaluated
                if (refined.score, refined.tie) < (score, tie):
                    best, score, tie = refined.batch, refined.score, refined.tie
    if best is None:
        raise MappingError(nothing_fits_message(op, arch, model))
    cost = model.evaluate(best)
    if not cost.valid[0]:
        raise MappingError(nothing_fits_message(op, arch, model))
    return SearchResult(op, arch, best.mapping(0, op, arch), cost, evaluated, evaluated,
                        time.perf_counter() - t0, "sunstone")


def search_sunstone(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                    progress: Progress | None = None) -> SearchResult:
    space = options.space_constraints()
    return sunstone_search(op, arch, objective, imperfect=options.imperfect, tile_first=options.tile_first,
                           placement=space.placement, both_axes=[name for name, c in space.levels if c.both_axes])


MAPPER = Mapper.builtin("sunstone", search_sunstone)
