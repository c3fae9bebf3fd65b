"""Whole-network fusion: ``dnnmap map MODEL --fuse temporal|spatial|auto [--max-fused N]``.

A flow of small steps: map every layer singly (the baseline), generate the Sec. 4.4 candidates,
cost each on its hardware share, keep those that beat single-layer scheduling, then choose the
schedule by dynamic programming (and, for comparison, by greedy restarts).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.fusion.schedule import Schedule, dp_schedule, greedy_schedule
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.search import FUSE_MODES, FusionSearch, GroupSchedule, beats_single
from dnnmap.search.options import SearchOptions
from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class FusionResult:
    network: str
    arch: ArchSpec
    mode: str
    max_fused: int
    baseline: str
    unfused: Schedule
    schedule: Schedule  # dynamic programming
    greedy: Schedule
    candidates: tuple[GroupSchedule, ...]  # every legal candidate, kept or not
    seconds: float


def fuse_network(network: Network, arch: ArchSpec, mode: str = "auto", max_fused: int = 2,
                 objective: str = "edp", mapper: str = "auto",
                 on_search: Callable[[str], None] | None = None,
                 options: SearchOptions = SearchOptions(), baseline: str = "best") -> FusionResult:
    """Fused schedule of ``network`` on ``arch`` (see the module docstring); ``baseline``: the single-layer
    schedule fusion is compared with, ``best`` (the core mapper's) or ``paper`` (:mod:`dnnmap.fusion.baseline`)."""
    if mode not in FUSE_MODES:
        raise FusionError(f"unknown fusion mode {mode!r}; choose from {', '.join(FUSE_MODES)}")
    t0 = time.perf_counter()
    search = FusionSearch(network, arch, objective, mapper, max_fused, on_search, options, baseline)
    singles = [search.single_group((name,)) for name in search.names]
    index = {name: i for i, name in enumerate(search.names)}
    evaluated = [search.fused(names, choice, mode) for names, choice in search.candidates()]
    kept = {(index[g.layers[0]], index[g.layers[-1]] + 1): g for g in evaluated if beats_single(g, objective)}
    return FusionResult(network.name, arch, mode, max_fused, baseline, Schedule(tuple(singles), objective),
                        dp_schedule(singles, kept, objective), greedy_schedule(singles, kept, objective),
                        tuple(evaluated), time.perf_counter() - t0)
