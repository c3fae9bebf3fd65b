"""Marvel vs the baseline dataflows (Marvel Sec. 4.2, Fig. 8 per layer, Fig. 9 whole models) and the
best uniform dataflow.

Every contender is the same search (``marvel_search_objectives``: the off-chip step, then the
on-chip walk under Marvel's switches) over a differently constrained space: Marvel's own space
lets any two loops run in parallel; a baseline (``dataflows.BASELINES``) lets only its two. Each
keeps its latency-optimal mapping for throughput and its energy-optimal mapping for energy
(Algorithm 1's best[runtime] and best[energy]), priced by the core ``CostModel``.

Ratios are the baseline's over Marvel's (cycles for throughput, energy for energy), so > 1 means
Marvel is better; the paper's aggregation is not stated (digest gap 7): we report geometric means
per baseline and over every (layer, baseline) pair.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.marvel.dataflows import BASELINES, Dataflow, two_loop_dataflows
from dnnmap.search.marvel.mapper import marvel_search_objectives
from dnnmap.search.marvel.onchip import MarvelOptions
from dnnmap.studies.marvel.roofline import Roofline, roofline
from dnnmap.search.network import shape_key
from dnnmap.workload.ir import Network, Operator

MARVEL = "Marvel"


@dataclass(frozen=True)
class LayerComparison:
    """One layer: per contender the cycles of its latency-optimal and the energy of its energy-optimal mapping."""

    layer: str
    iterations: int
    roofline: Roofline
    cycles: dict[str, float]
    energy: dict[str, float]
    onchip_energy: dict[str, float]  # the energy-optimal mapping's energy without DRAM's
    evaluated: dict[str, int]
    seconds: dict[str, float]

    def throughput(self, who: str) -> float:
        """Iterations per cycle of ``who``'s latency-optimal mapping."""
        return self.iterations / self.cycles[who]

    def speedup(self, baseline: str) -> float:
        """Marvel's throughput over the baseline's."""
        return self.cycles[baseline] / self.cycles[MARVEL]

    def energy_gain(self, baseline: str, dram: bool = True) -> float:
        """The baseline's energy over Marvel's (``dram`` False: without DRAM's energy)."""
        e = self.energy if dram else self.onchip_energy
        return e[baseline] / e[MARVEL]


def compare_layer(op: Operator, arch: ArchSpec, dataflows: Sequence[Dataflow] = BASELINES,
                  options: MarvelOptions | None = None) -> LayerComparison:
    """Marvel and each of ``dataflows`` on ``op``: the same search over each constrained space."""
    options = options or MarvelOptions()
    cycles, energy, onchip, evaluated, seconds = {}, {}, {}, {}, {}
    for name, df in ((MARVEL, None), *((d.name, d) for d in dataflows)):
        t0 = time.perf_counter()
        best = marvel_search_objectives(op, arch, ("latency", "energy"), replace(options, parallel=df))
        seconds[name] = time.perf_counter() - t0
        cycles[name] = float(best["latency"].cost.cycles[0])
        energy[name] = float(best["energy"].cost.energy[0])
        onchip[name] = energy[name] - float(best["energy"].cost.energy_breakdown[0, len(arch.levels) - 1])
        evaluated[name] = best["latency"].evaluated
    return LayerComparison(op.name, op.iterations, roofline(op, arch), cycles, energy, onchip, evaluated,
                           seconds)


def geomean(values: Sequence[float]) -> float:
    return float(np.exp(np.mean(np.log(values)))) if len(values) else math.nan


@dataclass(frozen=True)
class NetworkComparison:
    """A whole network (Fig. 9): per contender the sum over layers (identical shapes searched once)."""

    network: str
    layers: tuple[tuple[str, LayerComparison], ...]  # (layer name, comparison of its shape)

    def cycles(self, who: str) -> float:
        return sum(c.cycles[who] for _, c in self.layers)

    def energy(self, who: str, dram: bool = True) -> float:
        return sum((c.energy if dram else c.onchip_energy)[who] for _, c in self.layers)

    def speedup(self, baseline: str) -> float:
        return self.cycles(baseline) / self.cycles(MARVEL)

    def energy_gain(self, baseline: str, dram: bool = True) -> float:
        return self.energy(baseline, dram) / self.energy(MARVEL, dram)


def compare_network(network: Network, arch: ArchSpec, dataflows: Sequence[Dataflow] = BASELINES,
                    options: MarvelOptions | None = None) -> NetworkComparison:
    """Every layer of ``network`` compared; layers of identical shape are searched once."""
    return compare_operators(network.name, network.operators, arch, dataflows, options)


def compare_operators(name: str, ops: Sequence[Operator], arch: ArchSpec, dataflows: Sequence[Dataflow] = BASELINES,
                      options: MarvelOptions | None = None) -> NetworkComparison:
    done: dict[tuple, LayerComparison] = {}
    rows = []
    for op in ops:
        key = shape_key(op)
        if key not in done:
            done[key] = compare_layer(op, arch, dataflows, options)
        rows.append((op.name, done[key]))
    return NetworkComparison(name, tuple(rows))


@dataclass(frozen=True)
class UniformDataflow:
    """Each two-loop dataflow applied to every layer: geometric-mean throughput relative to Marvel."""

    names: tuple[str, ...]
    relative: np.ndarray  # (dataflows, layers) Marvel's cycles / the dataflow's (<= 1)

    @property
    def geomean(self) -> np.ndarray:
        return np.exp(np.log(self.relative).mean(axis=1))

    @property
    def best(self) -> str:
        return self.names[int(np.argmax(self.geomean))]


def uniform_dataflow(ops: Sequence[Operator], arch: ArchSpec, options: MarvelOptions | None = None,
                     dataflows: Sequence[Dataflow] | None = None) -> UniformDataflow:
    """Marvel Sec. 4.2's uniform dataflow for throughput: the one dataflow (of every pair of loops by
    default) with the highest geometric-mean throughput over ``ops``, relative to Marvel per layer."""
    options = options or MarvelOptions()
    dataflows = two_loop_dataflows() if dataflows is None else tuple(dataflows)
    marvel = [marvel_search_objectives(op, arch, ("latency",), options)["latency"].cost.cycles[0] for op in ops]
    rel = np.array([[m / marvel_search_objectives(op, arch, ("latency",), replace(options, parallel=df))
                     ["latency"].cost.cycles[0] for op, m in zip(ops, marvel)] for df in dataflows])
    return UniformDataflow(tuple(d.name for d in dataflows), rel)
