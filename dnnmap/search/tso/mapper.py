"""``--mapper tso``: TSO's search (Algorithms 1-4) for one layer, its schedule as a core mapping, and both prices.

TSO minimizes its own time estimate (Eq. 6) whatever the objective; the returned
:class:`TsoSearchResult` carries the core cost model's costs of the chosen mapping (what
``dnnmap map`` tabulates) and the TSO schedule with its estimate (``dnnmap map`` prints both).
Constants come from the architecture (``TsoMachine.from_arch``); the DRAM model is the
architecture's (``--dram-model`` switches it: burst = TSO-burst, volume = TSO-noburst).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.search.mappers import Progress, SearchResult
from dnnmap.search.options import SearchOptions
from dnnmap.search.tso.core_mapping import price, pricing_arch, schedule_mapping
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.search import TsoSchedule, tso_layer_search
from dnnmap.search.registry import Mapper
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class TsoSearchResult(SearchResult):
    """A search result whose mapping is a TSO schedule; ``schedule.seconds`` is TSO's own estimate."""

    schedule: TsoSchedule | None = None


def options_for(arch: ArchSpec, base: TsoOptions | None = None) -> TsoOptions:
    """``base`` (default options) with the DRAM model of ``arch`` (TSO-burst or TSO-noburst)."""
    from dataclasses import replace

    base = base or TsoOptions()
    transfer = arch.dram.transfer
    return replace(base, dram="burst" if transfer is not None and transfer.model == "burst" else "volume")


def tso_search(op: Operator, arch: ArchSpec, objective: str = "latency",
               options: TsoOptions | None = None) -> TsoSearchResult:
    """TSO's best schedule of ``op`` on ``arch``, priced by TSO (Eq. 6) and by the core cost model.
    ``objective`` is not used: TSO minimizes its time estimate."""
    t0 = time.perf_counter()
    opts = options_for(arch, options)
    found = tso_layer_search(tso_layer(op), TsoMachine.from_arch(arch), opts)
    on = pricing_arch(found.best, arch)
    mapping = schedule_mapping(found.best, op, on)
    cost = price(mapping, op, on, CostModel(op, on))
    return TsoSearchResult(op, arch, mapping, cost, found.evaluated, found.evaluated, time.perf_counter() - t0,
                           "tso", found.best)


def search_tso(op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
               progress: Progress | None = None) -> SearchResult:
    return tso_search(op, arch, objective)


MAPPER = Mapper.builtin("tso", search_tso)
