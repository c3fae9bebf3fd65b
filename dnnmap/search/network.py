"""Whole-network mapping: every layer searched independently, identical layers searched once."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dnnmap import limits
from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.objective import check_objective
from dnnmap.errors import UnknownNameError, did_you_mean
from dnnmap.search import registry
from dnnmap.search.options import SearchOptions
from dnnmap.workload.ir import Network, Operator, Phase
from dnnmap.workload.sparsity import op_densities

if TYPE_CHECKING:  # the mappers (and the cost kernel) load with the first search, not with the layer checks
    from dnnmap.search.mappers import SearchResult


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
    phase: Phase | None = None  # the network's inference phase (transformers)

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
    """Best mapping of one operator by the mapper registered as ``mapper`` (dnnmap.search.registry;
    ``auto``: exhaustive when the declared space is at most ``options.exhaustive_limit`` mappings, else
    Sunstone). ``options.imperfect`` (imperfect factorization, docs/search.md) and ``options.tile_first``
    (Sunstone also walks the report's tile-first order) are refused by mappers that do not take them.
    ``progress``: candidates evaluated, for the exhaustive and random mappers."""
    check_objective(objective)
    return registry.check_options(mapper, options).search(op, arch, objective, options, progress)


def select_layers(network: Network, names: list[str] | None) -> list[Operator]:
    if not names:
        return list(network.operators)
    known = {layer.name: layer.op for layer in network.layers}
    missing = [n for n in names if n not in known]
    if missing:
        sample = ", ".join(list(known)[:12])
        hint = "".join(did_you_mean(n, known) for n in missing)
        raise UnknownNameError(f"network {network.name!r} has no layer(s) {missing};{hint} layers include: {sample}, ... "
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
    return NetworkResult(network.name, arch, objective, mapper, tuple(results), time.perf_counter() - t0,
                         network.phase)
