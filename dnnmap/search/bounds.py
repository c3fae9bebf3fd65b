"""Attainable bounds of one layer (``dnnmap bounds``): for a range of capacities of the on-chip buffer (the
level under the backing store), the proven minimum off-chip traffic (DRAM bytes) or energy of the layer and
the mapping that attains it.

Each point is the optimal mapper (:func:`~dnnmap.search.optimal.optimal_search`) on the architecture with
that capacity (:func:`~dnnmap.arch.variants.with_capacity`), so each value carries its certificate: proven,
or the certified lower bound and the gap when the time budget ran out. Capacities are walked in increasing
order and the best mapping found so far seeds the next search: only the capacity grows, so it still fits,
and the curve of incumbents never rises even where a point is not proven.

The space searched is the optimal mapper's (:class:`OptimalSpace`): the shared tile boundary per level by
default, widened by per-tensor placement and by both-axis unrolling on named levels - what a constraints file
holding only ``placement`` and ``both_axes`` asks for (:meth:`OptimalSpace.of`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.variants import with_capacity
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.mapping.mapping import Mapping
from dnnmap.search.constraints import Constraints, LevelConstraints
from dnnmap.search.mappers import SearchResult
from dnnmap.search.optimal import OptimalResult, optimal_search
from dnnmap.workload.ir import Operator

BOUND_OBJECTIVES = ("dram", "energy")
AUTO_POINTS = 8  # capacities of `auto`: powers of two, the largest holding every tensor the level keeps


@dataclass(frozen=True)
class OptimalSpace:
    """The map space the optimal mapper proves its optimum in: one tile boundary per level shared by the
    tensors it keeps, widened by ``placement`` (each tensor's tile at its own depth in the level's loops) and by
    ``both_axes`` (names of the levels whose 2-D fan-out may split one dimension over both axes) and by
    ``imperfect`` (factors may pad each dimension by up to this fraction of its bound; None: exact factors)."""

    placement: bool = False
    both_axes: tuple[str, ...] = ()
    imperfect: float | None = None

    @classmethod
    def of(cls, constraints: Constraints) -> OptimalSpace:
        """The space of a constraints value holding only ``placement`` and per-level ``both_axes``; any other
        constraint narrows the space, which the optimal mapper does not search: a DnnmapError naming the file
        and the field."""
        level_fields = [f for f in constraints.narrowing_fields() if f.startswith("levels.")]
        if level_fields:
            raise DnnmapError(f"{constraints.prefix()}field '{level_fields[0]}': the optimal mapper, "
                              "which proves each bound, searches the whole space; a constraints file for "
                              "it may only widen it (placement: true, and both_axes: true on levels with a "
                              "2-D fan-out)")
        if constraints.layouts:
            raise DnnmapError(f"{constraints.prefix()}DRAM layouts are not searched by the optimal "
                              "mapper; give only placement and both_axes")
        return cls(constraints.placement, tuple(name for name, c in constraints.levels if c.both_axes),
                   constraints.waste)

    def constraints(self) -> Constraints:
        """The constraints value of this space (:meth:`of`'s inverse)."""
        return Constraints(tuple((name, LevelConstraints(both_axes=True)) for name in self.both_axes),
                           placement=self.placement, waste=self.imperfect)

    @property
    def label(self) -> str:
        """The space in words, for tables and plots."""
        wide = ([] if not self.placement else ["per-tensor placement"]) + \
            ([f"both-axis unrolling on {', '.join(self.both_axes)}"] if self.both_axes else []) + \
            ([f"padding up to {self.imperfect:.0%}"] if self.imperfect is not None else [])
        return f"space with {' and '.join(wide)}" if wide else "shared-boundary space"


@dataclass(frozen=True)
class BoundPoint:
    """One capacity of the curve: the architecture variant and the optimal mapper's result on it (None
    when no mapping of the layer fits that capacity)."""

    capacity: int
    arch: ArchSpec
    found: OptimalResult | None

    @property
    def value(self) -> float:
        """The best objective value found (the proven minimum when :attr:`proven`); inf when nothing fits."""
        return self.found.certificate.incumbent if self.found else math.inf

    @property
    def proven(self) -> bool:
        return self.found is not None and self.found.certificate.proven


def buffer_level(arch: ArchSpec) -> int:
    """Index of the on-chip buffer: the level under the backing store."""
    if len(arch.levels) < 2:
        raise DnnmapError(f"architecture {arch.name!r} has no on-chip level under its backing store "
                          f"{arch.dram.name!r}")
    return len(arch.levels) - 2


def whole_layer_capacity(op: Operator, arch: ArchSpec) -> int:
    """The smallest capacity of the buffer level (in its capacity unit) that holds every tensor it keeps
    whole: above it, the off-chip traffic is the compulsory one. A partitioned level keeps its proportions
    (:func:`with_capacity`), so it is the largest over roles of (tensor size / the role's share)."""
    b = buffer_level(arch)
    lv = arch.levels[b]
    need: dict[str, int] = {}
    for t in op.tensors:
        if t.role in lv.keeps:
            need[t.role] = need.get(t.role, 0) + t.size(op.bounds) * arch.capacity_units_of(lv, t.role)
    if not need:
        raise DnnmapError(f"level {lv.name!r} of {arch.name!r} keeps no tensor of layer {op.name!r}")
    if isinstance(lv.capacity, dict):
        total = sum(lv.capacity.values())
        return max(math.ceil(n * total / lv.capacity[r]) if lv.capacity.get(r) else math.inf
                   for r, n in need.items())
    return sum(need.values())


def auto_capacities(op: Operator, arch: ArchSpec, points: int = AUTO_POINTS) -> tuple[int, ...]:
    """``points`` capacities a factor of two apart, the largest the first power of two at which the level
    holds every tensor of the layer it keeps (:func:`whole_layer_capacity`)."""
    top = 1 << max(0, math.ceil(math.log2(whole_layer_capacity(op, arch))))
    return tuple(top >> k for k in reversed(range(points)) if top >> k >= 1)


def _optimum(op: Operator, arch: ArchSpec, objective: str, budget_seconds: float | None, seeds: list[Mapping],
             space: OptimalSpace, incumbent: SearchResult | None = None) -> OptimalResult | None:
    """The optimal mapper's result in ``space`` (None when no mapping fits)."""
    try:
        return optimal_search(op, arch, objective, budget_seconds, incumbent=incumbent, seeds=seeds,
                              placement=space.placement, both_axes=space.both_axes, imperfect=space.imperfect)
    except MappingError:  # nothing fits this capacity
        return None


def attainable_bounds(op: Operator, arch: ArchSpec, capacities: Sequence[int], objective: str = "dram",
                      budget_seconds: float | None = None,
                      on_point: Callable[[BoundPoint], None] | None = None,
                      space: OptimalSpace = OptimalSpace()) -> list[BoundPoint]:
    """The curve of ``op`` on ``arch`` over ``capacities`` of the buffer level (sorted increasing, repeats
    dropped): per capacity the optimal mapper's result in ``space`` under ``objective`` (``dram`` or
    ``energy``), ``budget_seconds`` per point (None: until proven).

    In a space wider than the shared boundary each point first searches the shared-boundary space (the same
    budget) and starts the wider search from that optimum, a mapping of the wider space too: so the wider curve
    is at or below the shared one even where a wider point is not proven."""
    if objective not in BOUND_OBJECTIVES:
        raise DnnmapError(f"objective {objective!r}: bounds are computed for {' or '.join(BOUND_OBJECTIVES)}")
    space.constraints().check(arch)  # levels the architecture has, with a 2-D fan-out where both_axes
    shared_space = OptimalSpace()
    b = buffer_level(arch)
    points: list[BoundPoint] = []
    seeds: list[Mapping] = []  # the previous point's mapping: it still fits the larger buffer
    shared_seeds: list[Mapping] = []  # the same at the shared boundary, for the shared searches
    for capacity in sorted(set(capacities)):
        variant = with_capacity(arch, b, capacity)
        shared = None
        if space != shared_space:
            shared = _optimum(op, variant, objective, budget_seconds, shared_seeds, shared_space)
            shared_seeds = [shared.result.mapping] if shared is not None else shared_seeds
        found = _optimum(op, variant, objective, budget_seconds, seeds, space,
                         shared.result if shared is not None else None)
        if found is not None:
            seeds = [found.result.mapping]
        point = BoundPoint(capacity, variant, found)
        points.append(point)
        if on_point is not None:
            on_point(point)
    return points
