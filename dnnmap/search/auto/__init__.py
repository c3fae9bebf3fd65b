"""``--mapper auto`` (the default): exhaustive when the declared space is small, else Sunstone."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.mappers import Progress, SearchResult, exhaustive_size
from dnnmap.search.options import SearchOptions
from dnnmap.search.registry import Mapper, get, register
from dnnmap.search.space import MapSpace
from dnnmap.workload.ir import Operator


def search_auto(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                progress: Progress | None = None) -> SearchResult:
    """The exhaustive mapper when the declared space has at most ``options.exhaustive_limit`` mappings,
    else the Sunstone mapper (better than ``budget`` random samples on every network and preset of
    ``benchmarks/sunstone_bench.py``, in a third of the time or less; with per-tensor placement and both-axis unrolling too); under
    other map-space constraints, which Sunstone does not walk, ``budget`` mappings sampled from the constrained space (random)."""
    space = MapSpace(op, arch, options.space_constraints())
    small = exhaustive_size(space.tables(), space) <= options.exhaustive_limit
    large = "random" if space.constraints.narrowing_fields() else "sunstone"
    return get("exhaustive" if small else large).search(op, arch, objective, options, progress)


MAPPER = Mapper.builtin("auto", search_auto)

register(MAPPER)
