"""``--mapper random``: ``budget`` mappings sampled from the declared space (dnnmap.search.mappers)."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.mappers import Progress, SearchResult, random_search
from dnnmap.search.options import SearchOptions
from dnnmap.search.registry import Mapper, register
from dnnmap.search.space import MapSpace
from dnnmap.workload.ir import Operator


def search_random(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                  progress: Progress | None = None) -> SearchResult:
    return random_search(op, arch, objective, budget=options.budget, seed=options.seed, progress=progress,
                         space=MapSpace(op, arch, options.space_constraints()))


MAPPER = Mapper.builtin("random", search_random)

register(MAPPER)
