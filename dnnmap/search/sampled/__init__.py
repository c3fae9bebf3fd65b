"""``--mapper random``: ``budget`` mappings sampled from the declared space (dnnmap.search.mappers)."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.mappers import Progress, SearchResult, random_search
from dnnmap.search.options import SearchOptions
from dnnmap.search.registry import register
from dnnmap.search.space import MapSpace
from dnnmap.workload.ir import Operator


class RandomMapper:
    name = "random"
    description = "the best of --budget mappings sampled from the declared space (seeded)"
    takes_imperfect = True
    takes_tile_first = False
    takes_constraints = True

    def search(self, op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
               progress: Progress | None = None) -> SearchResult:
        return random_search(op, arch, objective, budget=options.budget, seed=options.seed, progress=progress,
                             space=MapSpace(op, arch, options.space_constraints()))


register(RandomMapper())
