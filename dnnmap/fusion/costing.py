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
        return {"latency": self.cycles, "energy": self.energy, "edp": self.energy * self.cycles,
                "dram": self.dram_bytes}[name]


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


DRAM_TERMS = (("input", "read"), ("weight", "read"), ("output", "update"))
"""Eq. 6's three terms: the tensor role and the DRAM action each is priced with."""


@dataclass(frozen=True)
class DramTerm:
    """One Eq. 6 term of a fused layer: its words, bytes and DRAM energy."""

    role: str
    action: str
    words: int
    bytes: float
    energy: float


def dram_terms(arch: ArchSpec, traffic: LayerTraffic) -> tuple[DramTerm, ...]:
    """The layer's Eq. 6 traffic by term, priced with the DRAM level's energies."""
    words = {"input": traffic.input_words, "weight": traffic.weight_words, "output": traffic.output_words}
    return tuple(DramTerm(role, action, words[role], words[role] * arch.bytes_of(role),
                          words[role] * arch.dram.energy_of(role, action)) for role, action in DRAM_TERMS)


def fused_cycle_parts(result: SearchResult, arch: ArchSpec, dram_bytes: float) -> dict[str, float]:
    """The fused layer's latency parts: ``compute``, its busiest on-chip level and the DRAM level moving
    ``dram_bytes`` (keys are level names). Latency is their maximum (``overlap: true``) or their sum."""
    c = result.cost
    parts = {"compute": float(c.compute_cycles[0])}
    onchip = c.level_cycles[0, :-1]
    if onchip.size:
        busiest = int(onchip.argmax())
        parts[arch.levels[busiest].name] = float(onchip[busiest])
    parts[arch.levels[-1].name] = dram_cycles(arch, dram_bytes)
    return parts


def fused_cost(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> Cost:
    """The layer's core cost on its share with its DRAM part replaced by its Eq. 6 traffic."""
    c, terms = result.cost, dram_terms(arch, traffic)
    nbytes = sum(t.bytes for t in terms)
    energy = float(c.energy[0]) - float(c.energy_breakdown[0, len(arch.levels) - 1])
    for term in terms:  # added one by one: the same rounding as summing the three terms onto the on-chip energy
        energy += term.energy
    parts = fused_cycle_parts(result, arch, nbytes).values()
    cycles = max(parts) if arch.overlap else sum(parts)
    return Cost(energy, cycles, nbytes)
