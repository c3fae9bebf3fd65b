"""Fusion candidates (HW-Flow-Fusion Sec. 4.4, Fig. 11) and their evaluation on temporal or spatial shares.

A candidate is a run of consecutive layers of the network's topological order (residual adds
and 1x1 shortcuts are layers of that order, so a candidate may contain a whole residual block;
one that cuts a block reads or writes the crossing maps from or to DRAM, counted by Eq. 6).
From each start layer the run grows one layer at a time up to ``max_fused``; growth stops at
a layer that cannot be fused or when no tile set fits the buffer (Eq. 5 + Eq. 8 with the
largest tile), as in Fig. 11. Runs that are not connected through on-chip maps, or whose
outputs differ in size, are skipped but do not stop the growth (adding the block's ``add``
can connect them).

Each candidate is costed by mapping every layer with the core mappers on its share
(:mod:`dnnmap.fusion.partition`) and replacing the DRAM part by Eq. 6
(:mod:`dnnmap.fusion.costing`); a spatial candidate's sub-arrays run concurrently and its latency is
its pipeline's (:mod:`dnnmap.fusion.pipeline`), which also chooses its partition. It is kept only when it beats the same layers scheduled singly
on the objective.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.fusion.attention import attention_runs
from dnnmap.fusion.buffers import overlap_buffer, resident_weight_words
from dnnmap.fusion.costing import ZERO, Cost, fused_cost, fused_port_cycles, single_cost
from dnnmap.fusion.baseline import BASELINES, ROW_STATIONARY, PaperTiling, paper_tiling
from dnnmap.fusion.geometry import FusionError, layer_geometry
from dnnmap.fusion.mlp import mlp_runs
from dnnmap.fusion.group import FusedGroup, build_group
from dnnmap.fusion.partition import (
    Shape,
    buffer_words,
    granted_buffer,
    spatial_partitions,
    spatial_share,
    temporal_share,
    with_buffer,
)
from dnnmap.fusion.pipeline import Pipeline, pipeline, tile_shares
from dnnmap.fusion.tile_search import TileChoice, best_tiling
from dnnmap.fusion.tiling import TilePlan
from dnnmap.fusion.volume import LayerTraffic, traffic_by_layer
from dnnmap.search.mappers import SearchResult
from dnnmap.search.network import map_layer, shape_key
from dnnmap.search.options import SearchOptions
from dnnmap.search.refine import refine
from dnnmap.workload.ir import Network

FUSE_MODES = ("temporal", "spatial", "auto")


@dataclass(frozen=True)
class LayerCost:
    layer: str
    cost: Cost
    share: str  # "array", "RF/2" or the sub-array "16x8"
    result: SearchResult  # the core mapping on the share (``result.arch``)
    traffic: LayerTraffic | None = None  # the layer's Eq. 6 traffic when it is fused


@dataclass(frozen=True)
class GroupSchedule:
    """One group of the final schedule: a single layer or a fused run."""

    layers: tuple[str, ...]
    mode: str  # "single", "temporal" or "spatial"
    layer_costs: tuple[LayerCost, ...]
    singles: tuple[LayerCost, ...]  # the same layers scheduled singly
    tiling: TileChoice | None = None
    pipeline: Pipeline | None = None  # spatial fusion: the concurrent sub-arrays' timing

    @property
    def cost(self) -> Cost:
        return sum((c.cost for c in self.layer_costs), ZERO)

    @property
    def single(self) -> Cost:
        return sum((c.cost for c in self.singles), ZERO)

    def score(self, objective: str) -> float:
        """Sum of the layers' objectives (each layer's own EDP for ``edp``, as the per-layer search does)."""
        return layer_score(self.layer_costs, objective)

    def single_score(self, objective: str) -> float:
        return layer_score(self.singles, objective)


def layer_score(costs: tuple[LayerCost, ...], objective: str) -> float:
    return sum(c.cost.objective(objective) for c in costs)


class FusionSearch:
    """Evaluates single layers and fusion candidates of one network on one architecture (cached)."""

    def __init__(self, network: Network, arch: ArchSpec, objective: str = "edp", mapper: str = "auto",
                 max_fused: int = 2, on_search: Callable[[str], None] | None = None,
                 options: SearchOptions = SearchOptions(), baseline: str = "best") -> None:
        if max_fused < 2:
            raise FusionError(f"--max-fused must be at least 2, got {max_fused}")
        if baseline not in BASELINES:
            raise FusionError(f"unknown single-layer baseline {baseline!r}; choose from {', '.join(BASELINES)}")
        self.network, self.arch, self.objective, self.mapper = network, arch, objective, mapper
        self.options, self.baseline = options, baseline
        self.max_fused = max_fused
        self.names = [layer.name for layer in network.layers]
        self.capacity = buffer_words(arch)
        self.on_search = on_search
        self._maps: dict[tuple, SearchResult] = {}

    # ---- core mapper calls --------------------------------------------------------
    def _map(self, name: str, arch: ArchSpec) -> SearchResult:
        """The layer's best mapping on ``arch``; with the paper's baseline, in the row-stationary space (single
        and fused layers alike, so that the fused-vs-single ratios compare the same dataflow)."""
        op = self.network.layer(name).op
        key = (shape_key(op), arch.name)
        if key not in self._maps:
            options = self.options
            if self.baseline == "paper":
                options = replace(options, constraints=ROW_STATIONARY.constraints(op, arch))
            result = map_layer(op, arch, self.objective, self.mapper, options)
            self._maps[key] = refine(result, self.objective) if options.constraints.empty else result
            if self.on_search:
                self.on_search(f"{name} on {arch.name}")
        return self._maps[key]

    def single(self, name: str) -> LayerCost:
        """The layer alone on the whole array: the core model's cost, or with the paper's baseline its
        row-stationary mapping with the Eq. 2/3 off-chip volumes (:mod:`dnnmap.fusion.baseline`)."""
        result = self._map(name, self.arch)
        tiling = self._paper_tiling(name) if self.baseline == "paper" else None
        if tiling is None:
            return LayerCost(name, single_cost(result), "array", result)
        return LayerCost(name, fused_cost(result, self.arch, tiling.traffic), "array", result, tiling.traffic)

    def _paper_tiling(self, name: str) -> PaperTiling | None:
        """Eq. 1-3's tiling of a layer with a sliding-window geometry (others keep the core model's traffic)."""
        try:
            geometry = layer_geometry(self.network.layer(name))
        except FusionError:
            return None
        return paper_tiling(geometry, self.capacity)

    def single_group(self, names: tuple[str, ...]) -> GroupSchedule:
        costs = tuple(self.single(n) for n in names)
        return GroupSchedule(names, "single", costs, costs)

    # ---- candidates (Sec. 4.4) ----------------------------------------------------
    def candidates(self) -> list[tuple[tuple[str, ...], TileChoice]]:
        """Every legal run of 2..max_fused consecutive layers with its best tile set (Fig. 11), and every attention
        (scores, softmax, values) and MLP run that fits, also when it is longer than ``max_fused`` or a shorter run
        of it did not fit (an MLP's first two layers hold all of fc1's weights; the whole MLP may tile its hidden
        dimension)."""
        out = []
        for i in range(len(self.names)):
            for j in range(i + 2, min(i + self.max_fused, len(self.names)) + 1):
                names = tuple(self.names[i:j])
                try:
                    group = build_group(self.network, names)
                except FusionError as err:
                    if "cannot be fused" in str(err) or "batch size" in str(err):
                        break
                    continue
                choice = best_tiling(group, self.capacity)
                if choice is None:
                    break
                out.append((names, choice))
        seen = {names for names, _ in out}
        for names in attention_runs(self.network) + mlp_runs(self.network):  # fused whole (attention.py, mlp.py)
            choice = None if names in seen else best_tiling(build_group(self.network, names), self.capacity)
            if choice is not None:
                out.append((names, choice))
        return out

    # ---- fused evaluation ---------------------------------------------------------
    def fused(self, names: tuple[str, ...], choice: TileChoice, mode: str) -> GroupSchedule:
        """The better of temporal and spatial fusion for ``mode='auto'``, else the one asked for."""
        if mode not in FUSE_MODES:
            raise FusionError(f"unknown fusion mode {mode!r}; choose from {', '.join(FUSE_MODES)}")
        single = self.single_group(names).singles
        options = [m for m in ("temporal", "spatial") if mode in (m, "auto")]
        schedules = [self._temporal(names, choice, single) if m == "temporal" else
                     self._spatial(names, choice, single) for m in options]
        schedules = [s for s in schedules if s is not None]
        if not schedules:
            raise FusionError(f"group {list(names)}: no spatial partition can map every layer, or "
                              "its overlapped tiles do not fit the buffer")
        return min(schedules, key=lambda s: s.score(self.objective))

    def _grants(self, group: FusedGroup, choice: TileChoice, reserved: int | None = None) -> dict[str, ArchSpec]:
        """Each layer's architecture with the buffer it may use: the free space (beside ``reserved`` words, by
        default Eq. 5 + 8) plus its own Eq. 5 terms."""
        free = self.capacity - (choice.buffer.total_words if reserved is None else reserved)
        windows = {m.map: m.input_words for m in choice.buffer.maps}
        out = {}
        for g in group.layers:
            own = resident_weight_words(choice.plan, g) + sum(windows.get(src, 0) for src in g.inputs)
            if g is group.bottom:
                own += choice.buffer.output_words
            out[g.name] = with_buffer(self.arch, granted_buffer(free + own))
        return out

    def _temporal(self, names: tuple[str, ...], choice: TileChoice, single: tuple[LayerCost, ...]) -> GroupSchedule:
        group = choice.plan.group
        traffic = traffic_by_layer(choice.plan)
        grants = self._grants(group, choice)
        costs = []
        for g in group.layers:
            share = temporal_share(grants[g.name], len(group))
            result = self._map(g.name, share)
            costs.append(LayerCost(g.name, fused_cost(result, share, traffic[g.name]), f"RF/{len(group)}", result,
                                   traffic[g.name]))
        return GroupSchedule(names, "temporal", tuple(costs), single, choice)

    def _spatial(self, names: tuple[str, ...], choice: TileChoice, single: tuple[LayerCost, ...]) -> GroupSchedule | None:
        group = choice.plan.group
        overlap = overlap_buffer(choice.plan)
        window = overlap.window(self.capacity, len(group))
        if window is None:
            return None  # even one tile in flight at a time needs more buffer than there is
        needed = overlap.words(window)
        traffic = traffic_by_layer(choice.plan)
        grants = self._grants(group, choice, max(needed, choice.buffer.total_words))
        partitions = spatial_partitions(self.arch, tuple(g.windows[0].kernel for g in group.layers))
        per_layer: list[dict[Shape, LayerCost]] = []
        for k, g in enumerate(group.layers):
            options = {}
            for shape in sorted({p[k] for p in partitions}):
                share = spatial_share(grants[g.name], shape)
                result = self._map(g.name, share)
                options[shape] = LayerCost(g.name, fused_cost(result, share, traffic[g.name]),
                                           f"{shape[0]}x{shape[1]}", result, traffic[g.name])
            per_layer.append(options)
        shares = tile_shares(choice.plan)
        timed = [pipelined(choice.plan, tuple(per_layer[k][s] for k, s in enumerate(p)), shares, window, needed)
                 for p in partitions]
        best = min(timed, default=None, key=lambda t: layer_score(t[0], self.objective))
        if best is None:
            return None
        return GroupSchedule(names, "spatial", best[0], single, choice, best[1])


def pipelined(plan: TilePlan, costs: tuple[LayerCost, ...], shares: np.ndarray, window: int | None = None,
              buffer_words: int = 0) -> tuple[tuple[LayerCost, ...], Pipeline]:
    """Spatially fused layers with their cycles scaled so that they add up to the group's pipelined latency
    (each layer keeps its share of the group's latency in proportion to its own), and that pipeline with at
    most ``window`` tiles in flight (``buffer_words``: the buffer that needs)."""
    ports = {lc.layer: fused_port_cycles(lc.result, lc.result.arch, lc.traffic) for lc in costs if lc.traffic}
    timing = pipeline(plan, {lc.layer: lc.cost.cycles for lc in costs}, {n: b for n, (b, _) in ports.items()},
                      {n: d for n, (_, d) in ports.items()}, shares, window, buffer_words)
    scale = timing.cycles / timing.serial if timing.serial else 1.0
    return tuple(replace(lc, cost=replace(lc.cost, cycles=lc.cost.cycles * scale)) for lc in costs), timing


def beats_single(schedule: GroupSchedule, objective: str) -> bool:
    """Sec. 4.4: a fusion is kept only when it improves the target metric over single-layer scheduling."""
    return schedule.score(objective) < schedule.single_score(objective)

