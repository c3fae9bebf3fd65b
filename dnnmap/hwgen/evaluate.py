"""Price one hardware point on whole networks: map every layer with the project's mappers, sum per network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dnnmap.arch.area import AreaBreakdown, area_of
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.cost.objective import objective_value
from dnnmap.arch.templates.sparse_simd import sparse_simd_spec
from dnnmap.search.network import NetworkResult, search_network
from dnnmap.search.options import SearchOptions
from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class NetworkCost:
    """Whole-network latency (s) and energy (J) on one point (the arch's energies are in pJ)."""

    network: str
    latency_s: float
    energy_j: float
    utilization: float

    @classmethod
    def of(cls, result: NetworkResult) -> "NetworkCost":
        return cls(result.network, result.latency_s, result.energy * 1e-12, result.utilization)


@dataclass(frozen=True)
class DesignPoint:
    """A template point with its area and its cost on every network (latency and energy summed over them)."""

    params: SparseSimdParams
    area: AreaBreakdown
    networks: tuple[NetworkCost, ...]

    @property
    def latency_s(self) -> float:
        return sum(n.latency_s for n in self.networks)

    @property
    def energy_j(self) -> float:
        return sum(n.energy_j for n in self.networks)

    @property
    def area_mm2(self) -> float:
        return self.area.total

    def objective(self, name: str) -> float:
        """The value to minimise: ``latency``, ``energy`` or ``edp`` (their product)."""
        return objective_value(name, self.energy_j, self.latency_s)


def evaluate_point(params: SparseSimdParams, networks: Sequence[Network], objective: str = "edp",
                   mapper: str = "auto", options: SearchOptions = SearchOptions()) -> DesignPoint:
    """Map ``networks`` onto the point ``params`` (identical layer shapes, across networks too, searched once)."""
    spec = sparse_simd_spec(params)
    shapes: dict = {}
    costs = tuple(NetworkCost.of(search_network(n, spec, objective, mapper, options=options, shapes=shapes)) for n in networks)
    return DesignPoint(params, area_of(params), costs)
