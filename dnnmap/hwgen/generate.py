"""Hardware generation: search the sparse SIMD template under a budget for whole networks (docs/hwgen.md).

Stage 1 evaluates one fitted point per array shape (:func:`~dnnmap.hwgen.space.array_shapes`); stage 2
climbs from the best point so far by the objective, one buffer parameter one grid step at a time
(:func:`~dnnmap.hwgen.space.neighbours`), until no neighbour improves or ``max_candidates`` points are
evaluated. Every point is priced by mapping the whole networks (:func:`~dnnmap.hwgen.evaluate.evaluate_point`);
the Pareto front over (latency, energy, area) is taken over all evaluated points and the chosen point is
the front's best by the objective.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dnnmap.arch.area import area_of
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.cost.objective import check_objective
from dnnmap.errors import DnnmapError
from dnnmap.hwgen.evaluate import DesignPoint, evaluate_point
from dnnmap.hwgen.pareto import pareto_front
from dnnmap.hwgen.space import ARRAY_SIDES, GRIDS, Budget, array_shapes, neighbours
from dnnmap.search.options import SearchOptions
from dnnmap.workload.ir import Network

GENERATION_OBJECTIVES = ("edp", "latency", "energy")
Progress = Callable[[int, int, str], None]  # (points evaluated, points planned, point being evaluated)


@dataclass(frozen=True)
class Generation:
    budget: Budget
    objective: str
    points: tuple[DesignPoint, ...]  # in evaluation order
    front: tuple[DesignPoint, ...]  # by latency
    chosen: DesignPoint


def smallest_point() -> SparseSimdParams:
    """The template's smallest point in the search grids (for the message when nothing fits)."""
    sides = min(ARRAY_SIDES)
    return SparseSimdParams(rows=sides, cols=sides, glb_banks=min(GRIDS["glb_banks"]),
                            **{f: min(GRIDS[f]) for f in GRIDS if f != "glb_banks"})


def _label(p: SparseSimdParams) -> str:
    return f"{p.rows}x{p.cols} PEs, GLB {p.glb_words} words/{p.glb_banks} banks"


def generate_hardware(networks: Sequence[Network], budget: Budget, objective: str = "edp", mapper: str = "auto",
                      max_candidates: int = 40, reference: SparseSimdParams = SparseSimdParams(),
                      progress: Progress | None = None, options: SearchOptions = SearchOptions()) -> Generation:
    """Search template points meeting ``budget`` for ``networks``; see the module docstring."""
    check_objective(objective, GENERATION_OBJECTIVES)
    if not 1 <= max_candidates <= 10_000:
        raise DnnmapError(f"--max-candidates {max_candidates}: must be in 1..10000")
    shapes = array_shapes(budget, reference)
    if not shapes:
        tiny = smallest_point()
        raise DnnmapError(f"no template point meets the budget ({budget.describe()}): the smallest one in the "
                          f"search grids ({_label(tiny)}, smallest SRAMs) has {tiny.pes} PEs and "
                          f"{area_of(tiny).total:.3f} mm^2 (docs/hwgen.md, area model)")
    evaluated: dict[SparseSimdParams, DesignPoint] = {}

    def run(p: SparseSimdParams, planned: int) -> DesignPoint:
        if progress:
            progress(len(evaluated), planned, _label(p))
        evaluated[p] = evaluate_point(p, networks, objective, mapper, options)
        return evaluated[p]

    planned = min(len(shapes), max_candidates)
    for p in shapes[:planned]:
        run(p, planned)
    best = min(evaluated.values(), key=lambda d: d.objective(objective))
    improved = True
    while improved and len(evaluated) < max_candidates:
        improved = False
        fresh = [q for q in neighbours(best.params, budget) if q not in evaluated]
        planned = min(len(evaluated) + len(fresh), max_candidates)
        for q in fresh[:max_candidates - len(evaluated)]:
            point = run(q, planned)
            if point.objective(objective) < best.objective(objective):
                best, improved = point, True
    if progress:
        progress(len(evaluated), len(evaluated), "")
    points = tuple(evaluated.values())
    front = tuple(pareto_front(points))
    chosen = min(front, key=lambda d: d.objective(objective))
    return Generation(budget, objective, points, front, chosen)
