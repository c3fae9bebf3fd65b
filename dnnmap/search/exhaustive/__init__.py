"""``--mapper exhaustive``: every candidate of the declared space (the optimality oracle; dnnmap.search.mappers)."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.mappers import EXHAUSTIVE_LIMIT, Progress, SearchResult, exhaustive_search
from dnnmap.search.options import SearchOptions
from dnnmap.search.registry import Mapper, register
from dnnmap.search.space import MapSpace
from dnnmap.workload.ir import Operator


def search_exhaustive(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                      progress: Progress | None = None) -> SearchResult:
    """Enumerate up to the larger of :data:`EXHAUSTIVE_LIMIT` and ``options.exhaustive_limit`` mappings."""
    return exhaustive_search(op, arch, objective, max_space=max(EXHAUSTIVE_LIMIT, options.exhaustive_limit),
                             progress=progress, space=MapSpace(op, arch, options.space_constraints()))


MAPPER = Mapper.builtin("exhaustive", search_exhaustive)

register(MAPPER)
