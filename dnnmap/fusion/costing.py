"""Cost of a fused layer: the core mapper's result on its share, with Eq. 6 as its DRAM traffic.

HW-Flow-Fusion Sec. 3.8/5.2: fusion changes only the off-chip communication; intermediate maps
still pass through the on-chip buffer. So a fused layer costs what the core cost model says
for its mapping on its hardware share (MACs, register files, NoC, buffer), minus that mapping's
own DRAM energy and time, plus the layer's part of the group's Eq. 6 volume priced with the
same DRAM energies and transfer model. Latency is ``max(compute, on-chip level cycles, DRAM
cycles)`` as in the core model (``overlap: true``; their sum otherwise); a group's latency is the
sum of its layers' (Table 5 sums per-layer contributions, G2), also for spatial fusion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.objective import objective_value
from dnnmap.cost.transfer import dram_transfer_seconds
from dnnmap.fusion.volume import LayerTraffic
from dnnmap.search.mappers import SearchResult


@dataclass(frozen=True)
class Cost:
    """Energy (arch energy unit), latency (cycles) and DRAM bytes of a layer or a group."""

    energy: float
    cycles: float
    dram_bytes: float

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.energy + other.energy, self.cycles + other.cycles, self.dram_bytes + other.dram_bytes)

    def objective(self, name: str) -> float:
        """The value a schedule minimizes: ``latency``, ``energy``, ``edp`` or ``dram``."""
        return objective_value(name, self.energy, self.cycles, self.dram_bytes)


ZERO = Cost(0.0, 0.0, 0.0)


def single_cost(result: SearchResult) -> Cost:
    """A layer scheduled alone: the core model's figures unchanged."""
    c = result.cost
    return Cost(float(c.energy[0]), float(c.cycles[0]), float(c.dram_bytes[0]))


def dram_cycles(arch: ArchSpec, nbytes: float) -> float:
    """Cycles to move ``nbytes`` with the DRAM level's transfer model (volume or bursts)."""
    spec = arch.dram.transfer
    if spec is None:
        return 0.0
    bursts = math.ceil(nbytes / spec.burst_bytes)
    return float(dram_transfer_seconds(spec, nbytes, bursts)) * arch.clock_mhz * 1e6


def fused_cost(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> Cost:
    """The layer's core cost on its share with its DRAM part replaced by its Eq. 6 traffic."""
    c, dram = result.cost, arch.dram
    nbytes = (traffic.input_words * arch.bytes_of("input") + traffic.weight_words * arch.bytes_of("weight")
              + traffic.output_words * arch.bytes_of("output"))
    energy = (float(c.energy[0]) - float(c.energy_breakdown[0, len(arch.levels) - 1])
              + traffic.input_words * dram.energy_of("input", "read")
              + traffic.weight_words * dram.energy_of("weight", "read")
              + traffic.output_words * dram.energy_of("output", "update"))
    onchip = float(c.level_cycles[0, :-1].max(initial=0.0))
    parts = (float(c.compute_cycles[0]), onchip, dram_cycles(arch, nbytes))
    cycles = max(parts) if arch.overlap else sum(parts)
    return Cost(energy, cycles, nbytes)
