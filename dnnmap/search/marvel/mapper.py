"""``--mapper marvel``: the off-chip step fixes DRAM tiles, order and layouts; the on-chip step searches the rest.

Marvel Sec. 3 (Fig. 5): the DB model picks the level-3 tile and layouts (``offchip``), the on-chip
subspace under the pruning switches is walked exhaustively (``onchip``) and every candidate is
priced by the core ``CostModel`` (Marvel prices them with MAESTRO; the core prices the L2-to-PE
network's ingress and egress bandwidth separately, docs/cost-model.md section 2b; docs/marvel.md
says where the two still differ).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.mappers import SearchResult
from dnnmap.search.marvel.baseline import baseline_search_objectives
from dnnmap.search.marvel.offchip import OffchipResult, offchip_search
from dnnmap.search.marvel.onchip import MarvelOptions, onchip_search_objectives
from dnnmap.search.mappers import Progress
from dnnmap.search.options import SearchOptions
from dnnmap.search.registry import Mapper
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class MarvelSearchResult(SearchResult):
    """A search result with Marvel's off-chip mapping and the on-chip step's statistics."""

    offchip: OffchipResult | None = None
    factor_choices: int = 0
    sampled: bool = False
    utilization_relaxed: bool = False


def marvel_search(op: Operator, arch: ArchSpec, objective: str = "edp",
                  options: MarvelOptions | None = None) -> MarvelSearchResult:
    """Marvel's best mapping of ``op`` on ``arch`` for ``objective`` (latency, energy, edp, dram)."""
    return marvel_search_objectives(op, arch, (objective,), options)[objective]


def marvel_search_objectives(op: Operator, arch: ArchSpec, objectives: tuple[str, ...],
                             options: MarvelOptions | None = None) -> dict[str, MarvelSearchResult]:
    """Marvel's best mapping for each of ``objectives`` from one off-chip step and one on-chip walk.

    With a baseline dataflow (``options.parallel.fixes_schedule``) the baseline picks its own level-3
    tile (``baseline.py``), unless ``options.published_pe_tile`` asks for its fixed schedule on
    Marvel's tile."""
    t0 = time.perf_counter()
    options = options or MarvelOptions()
    df = options.parallel
    if df is not None and df.fixes_schedule and not options.published_pe_tile:
        found = baseline_search_objectives(op, arch, df, objectives, options)
    else:
        off = offchip_search(op, arch, options.db_settings())
        found = {o: (on, off) for o, on in onchip_search_objectives(op, arch, off, objectives, options).items()}
    seconds = time.perf_counter() - t0
    out = {}
    for objective, (on, off) in found.items():
        tile = ", ".join(f"{d}={t}" for d, t in zip(op.dim_names, off.tile) if t > 1)
        note = (f"marvel off-chip: level-3 tile {tile or 'all 1'}; innermost {off.layout}; DRAM order "
                f"{' '.join(off.order) or '-'}; DMC {float(off.dmc):.4g} blocks/iteration")
        if df is not None:
            note += f"; dataflow {df.name} ({df.label}{', ' + df.stationary + ' stationary' if df.stationary else ''})"
        mapping = on.batch.mapping(0, op, arch)
        mapping = type(mapping)(mapping.levels, mapping.layouts, mapping.layer, mapping.arch, (note,))
        out[objective] = MarvelSearchResult(op, arch, mapping, on.cost, on.evaluated, on.valid, seconds, "marvel",
                                            off, on.factor_choices, on.sampled, on.utilization_relaxed)
    return out


def search_marvel(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                  progress: Progress | None = None) -> SearchResult:
    return marvel_search(op, arch, objective)


MAPPER = Mapper.builtin("marvel", search_marvel)
