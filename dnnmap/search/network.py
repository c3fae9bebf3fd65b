"""Whole-network mapping: every layer searched independently, identical layers searched once."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from dnnmap import limits
from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import DnnmapError, UnknownNameError
from dnnmap.search.marvel.mapper import marvel_search
from dnnmap.search.mappers import OBJECTIVES, SearchResult, SearchSpaceTooLarge, exhaustive_search, random_search
from dnnmap.search.optimal import optimal_search
from dnnmap.search.options import SearchOptions
from dnnmap.search.space import MapSpace
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.search.tso.mapper import tso_search
from dnnmap.workload.ir import Network, Operator
from dnnmap.workload.sparsity import op_densities

MAPPERS = ("auto", "exhaustive", "random", "sunstone", "optimal", "tso", "marvel")
IMPERFECT_MAPPERS = ("auto", "exhaustive", "random", "sunstone")  # take map_layer's ``imperfect``
SUNSTONE_MAPPERS = ("auto", "sunstone")  # run the Sunstone walk, so take map_layer's ``tile_first``
CONSTRAINED_MAPPERS = ("auto", "exhaustive", "random")  # walk the map space, so honour its constraints


@dataclass(frozen=True)
class LayerResult:
    layer: str
    kind: str
    macs: int
    search: SearchResult
    reused_from: str | None = None  # a layer of identical shape whose search result is reused

    @property
    def cycles(self) -> float:
        return float(self.search.cost.cycles[0])

    @property
    def energy(self) -> float:
        return float(self.search.cost.energy[0])

    @property
    def energy_offchip(self) -> float:
        """Energy of the backing-store level (the off-chip memory or link: its reads, fills and updates)."""
        return float(self.search.cost.energy_breakdown[0, -3])  # columns: the levels, network hops, MACs

    @property
    def energy_onchip(self) -> float:
        """Every other level's energy, the on-chip networks' hops and the MACs: ``energy - energy_offchip``."""
        return self.energy - self.energy_offchip

    @property
    def dram_bytes(self) -> float:
        return float(self.search.cost.dram_bytes[0])

    @property
    def utilization(self) -> float:
        return float(self.search.cost.utilization[0])


@dataclass(frozen=True)
class NetworkResult:
    network: str
    arch: ArchSpec
    objective: str
    mapper: str
    layers: tuple[LayerResult, ...]
    seconds: float

    @property
    def cycles(self) -> float:
        return sum(r.cycles for r in self.layers)

    @property
    def energy(self) -> float:
        return sum(r.energy for r in self.layers)

    @property
    def energy_offchip(self) -> float:
        return sum(r.energy_offchip for r in self.layers)

    @property
    def energy_onchip(self) -> float:
        return sum(r.energy_onchip for r in self.layers)

    @property
    def latency_s(self) -> float:
        """Whole-network latency in seconds at the arch's clock."""
        return self.cycles / (self.arch.clock_mhz * 1e6)

    @property
    def dram_bytes(self) -> float:
        return sum(r.dram_bytes for r in self.layers)

    @property
    def macs(self) -> int:
        return sum(r.macs for r in self.layers)

    @property
    def utilization(self) -> float:
        ops = sum(r.search.cost.utilization[0] * r.cycles for r in self.layers)
        return ops / self.cycles if self.cycles else 0.0

    @property
    def evaluated(self) -> int:
        return sum(r.search.evaluated for r in self.layers if r.reused_from is None)


def shape_key(op: Operator) -> tuple:
    """Operators with equal keys have identical loop nests, accesses and densities (names aside)."""
    return (op.kind, op.dims, op.tensors, tuple(sorted(op_densities(op).items())))


def map_layer(op: Operator, arch: ArchSpec, objective: str = "edp", mapper: str = "auto",
              options: SearchOptions = SearchOptions(),
              progress: Callable[[int], None] | None = None) -> SearchResult:
    """Best mapping of one operator. ``auto``: exhaustive when the declared space is at most
    ``options.exhaustive_limit`` mappings, else the Sunstone mapper (better than ``budget`` random samples on
    every network and preset of ``benchmarks/sunstone_bench.py``, in a third of the time or less).
    ``options.imperfect``: factors may pad each dimension by up to this fraction of its bound (imperfect
    factorization, docs/search.md); the auto, exhaustive, random and sunstone mappers take it.
    ``options.tile_first``: Sunstone (also under ``auto``) also walks the report's tile-first order
    (docs/search.md: closes its last 1-2% gaps at ~2.7x the search time). ``options.constraints``: the
    auto, exhaustive and random mappers walk the constrained map space; ``auto`` then samples ``budget``
    mappings (random) instead of running Sunstone when the space is too large to enumerate."""
    imperfect, tile_first = options.imperfect, options.tile_first
    if objective not in OBJECTIVES:
        raise UnknownNameError(f"unknown objective {objective!r}; choose from {', '.join(OBJECTIVES)}")
    if mapper not in MAPPERS:
        raise UnknownNameError(f"unknown mapper {mapper!r}; choose from {', '.join(MAPPERS)}")
    if imperfect is not None and mapper not in IMPERFECT_MAPPERS:
        raise DnnmapError(f"imperfect factorization is an option of the {', '.join(IMPERFECT_MAPPERS)} mappers, "
                          f"not of {mapper!r}")
    if tile_first and mapper not in SUNSTONE_MAPPERS:
        raise DnnmapError(f"tile_first is an option of the {', '.join(SUNSTONE_MAPPERS)} mappers, not of {mapper!r}")
    constrained = not options.constraints.empty
    if constrained and mapper not in CONSTRAINED_MAPPERS:
        raise DnnmapError(f"map-space constraints apply to the {', '.join(CONSTRAINED_MAPPERS)} mappers; the "
                          f"{mapper!r} mapper builds its own candidates and would ignore them")
    if mapper == "sunstone":
        return sunstone_search(op, arch, objective, imperfect=imperfect, tile_first=tile_first)
    if mapper == "tso":
        return tso_search(op, arch, objective)
    if mapper == "marvel":
        return marvel_search(op, arch, objective)
    if mapper == "optimal":
        return optimal_search(op, arch, objective, budget_seconds=options.budget_seconds).result
    space = MapSpace(op, arch, replace(options.constraints, waste=imperfect))
    if mapper in ("auto", "exhaustive"):
        try:
            return exhaustive_search(op, arch, objective, max_space=options.exhaustive_limit if mapper == "auto" else 5e6,
                                     progress=progress, space=space)
        except SearchSpaceTooLarge:
            if mapper == "exhaustive":
                raise
            if not constrained:
                return sunstone_search(op, arch, objective, imperfect=imperfect, tile_first=tile_first)
    return random_search(op, arch, objective, budget=options.budget, seed=options.seed, progress=progress,
                         space=space)


def select_layers(network: Network, names: list[str] | None) -> list[Operator]:
    if not names:
        return list(network.operators)
    known = {layer.name: layer.op for layer in network.layers}
    missing = [n for n in names if n not in known]
    if missing:
        sample = ", ".join(list(known)[:12])
        raise UnknownNameError(f"network {network.name!r} has no layer(s) {missing}; layers include: {sample}, ... "
                               "(`dnnmap models --layers NAME` lists them all)")
    return [known[n] for n in names]


def check_search_limits(ops: Sequence[Operator], arch: ArchSpec, options: SearchOptions) -> None:
    """Refuse, before any search, options and layers the mappers cannot finish (dnnmap.limits)."""
    options.check()
    options.constraints.check(arch, tuple(ops))
    slots = len(arch.levels) + sum(len(lv.fanout.shape) for lv in arch.levels if lv.fanout)
    for op in ops:
        limits.check_map_space(op.name, op.dims, slots, arch.name)


def search_network(network: Network, arch: ArchSpec, objective: str = "edp", mapper: str = "auto",
                   layers: list[str] | None = None, options: SearchOptions = SearchOptions(),
                   on_layer: Callable[[str], None] | None = None,
                   shapes: dict[tuple, tuple[str, SearchResult]] | None = None) -> NetworkResult:
    """Map every selected layer; layers of identical shape reuse the first one's search. Budgets, seeds
    and layers the mappers cannot finish are refused first (:func:`check_search_limits`). ``shapes``:
    searches shared across calls with the same arch and options (shape key -> first layer, result),
    read and filled in, so several networks search a shape they share once."""
    check_search_limits(select_layers(network, layers), arch, options)
    t0 = time.perf_counter()
    results: list[LayerResult] = []
    done: dict[tuple, tuple[str, SearchResult]] = {} if shapes is None else shapes
    for op in select_layers(network, layers):
        key = shape_key(op)
        if key in done:
            first, res = done[key]
            results.append(LayerResult(op.name, op.kind, op.macs, res, first))
        else:
            res = map_layer(op, arch, objective, mapper, options)
            done[key] = (op.name, res)
            results.append(LayerResult(op.name, op.kind, op.macs, res))
        if on_layer:
            on_layer(op.name)
    return NetworkResult(network.name, arch, objective, mapper, tuple(results), time.perf_counter() - t0)


def compile_kernels(arch: ArchSpec | None = None) -> None:
    """Compile (first run) or load from numba's on-disk cache the cost kernel as ``arch`` (default: the
    Eyeriss preset) needs it - with or without the burst code, and the network pass when a fan-out has a
    network bandwidth (docs/cost-model.md section 5) - by evaluating one mapping of a tiny layer. The first
    run on a machine takes about 25 s (Eyeriss; with the burst code about 35 s), later runs well under 1 s;
    the random mapper's sampler compiles on its first use (~2 s)."""
    from dnnmap.arch.spec import load_arch
    from dnnmap.workload.ops import conv2d

    arch = arch or load_arch("eyeriss")
    op = conv2d("warm-up", 2, 2, (2, 2), 1)
    L, D = len(arch.levels), len(op.dim_names)
    temporal = np.ones((1, L, D), dtype=np.int64)
    temporal[0, L - 1] = [op.bounds[d] for d in op.dim_names]  # the whole layer at the backing store
    order = np.broadcast_to(np.arange(D), (1, L, D))
    batch = MappingBatch(temporal, np.ones_like(temporal), order, MappingBatch.default_keeps(op, arch))
    CostModel(op, arch).evaluate(batch)
