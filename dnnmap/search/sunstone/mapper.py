"""``--mapper sunstone``: the entry point the search layer registers (RTML Sec. 3.2)."""

from __future__ import annotations

import time

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.errors import MappingError
from dnnmap.search.sunstone.stats import SunstoneStats
from dnnmap.search.sunstone.walk import SunstoneWalk
from dnnmap.workload.ir import Operator


def sunstone_search(op: Operator, arch: ArchSpec, objective: str = "edp", stats: SunstoneStats | None = None,
                    model: CostModel | None = None) -> "SearchResult":  # noqa: F821 - avoids an import cycle
    """Best mapping the Sunstone walk finds; ``stats`` (if given) accumulates its pruning statistics."""
    from dnnmap.search.mappers import SearchResult, _nothing_fits_message

    t0 = time.perf_counter()
    model = model or CostModel(op, arch)
    walk = SunstoneWalk(op, arch, objective, model)
    best = walk.run()
    if stats is not None:
        stats.merge(walk.stats)
    if best is None:
        raise MappingError(_nothing_fits_message(op, arch, model))
    cost = model.evaluate(best)
    if not cost.valid[0]:
        raise MappingError(_nothing_fits_message(op, arch, model))
    return SearchResult(op, arch, best.mapping(0, op, arch), cost, walk.stats.evaluated, walk.stats.evaluated,
                        time.perf_counter() - t0, "sunstone")
