"""Cost of a fused layer: the core mapper's result on its share, with Eq. 6 as its off-chip traffic.

HW-Flow-Fusion Sec. 3.8/5.2: fusion changes only the off-chip communication; intermediate maps
still pass through the on-chip buffer. So a fused layer costs what the core cost model says
for its mapping on its hardware share (MACs, register files, NoC, buffer reads to the array and
updates from it), except the transfers between the chip and DRAM: those are exactly the layer's
part of the group's Eq. 6 volume, on both sides of the boundary. DRAM reads and writes those
words, and the buffer fills and drains only those words (:func:`fused_counts`): a map produced
inside the group is neither drained to DRAM by its producer nor filled from DRAM at its consumer.
Energy and level cycles are the core model's prices of these counts. Latency is ``max(compute,
on-chip level cycles, DRAM cycles)`` as in the core model (``overlap: true``; their sum
otherwise). A temporally fused group's latency is the sum of its layers' (one array, interleaved;
Table 5 sums per-layer contributions, G2); a spatially fused group's is its pipeline's
(:mod:`dnnmap.fusion.pipeline`: concurrent sub-arrays, bounded by the shared buffer and DRAM). Operations a fused
schedule adds (attention's online-softmax rescaling, :attr:`LayerTraffic.extra_operations`) are priced on the
layer's unit like its own: energy per operation, and compute cycles at least all operations over the lanes.
``tests/fusion/test_proof.py`` checks these counts against the literal executor's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.units import compute_unit
from dnnmap.cost.objective import objective_value
from dnnmap.cost.transfer import dram_transfer_seconds
from dnnmap.fusion.volume import LayerTraffic, OffChipVolume
from dnnmap.mapping.mapping import Mapping
from dnnmap.search.mappers import SearchResult
from dnnmap.sim.metrics import bandwidth_cycles


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


def _final_share(arch: ArchSpec, role: str) -> float:
    """What one word of ``role`` written out complete costs in words of its width: a group's outputs go to DRAM
    as final values (no partial sums, ``T_if = N_if``), at ``final_output_bits`` (docs/cost-model.md 2b)."""
    return arch.moved_bits(role, True) / arch.bits_of(role)


def dram_terms(arch: ArchSpec, traffic: LayerTraffic) -> tuple[DramTerm, ...]:
    """The layer's Eq. 6 traffic by term, priced with the DRAM level's energies (outputs at the final width)."""
    words = {"input": traffic.input_words, "weight": traffic.weight_words, "output": traffic.output_words}
    return tuple(DramTerm(role, action, words[role], words[role] * arch.bytes_of(role) * _final_share(arch, role),
                          words[role] * arch.dram.energy_of(role, action) * _final_share(arch, role))
                 for role, action in DRAM_TERMS)


def volume_bytes(arch: ArchSpec, volume: OffChipVolume) -> float:
    """Bytes of an off-chip volume, each term at its role's word size (outputs: the final width)."""
    return (volume.input_words * arch.bytes_of("input") + volume.weight_words * arch.bytes_of("weight")
            + volume.output_words * arch.bytes_of("output") * _final_share(arch, "output"))


def _eq6_words(result: SearchResult, traffic: LayerTraffic) -> list[int]:
    """Per tensor of the operator, the words it moves across the chip boundary under Eq. 6: each input
    tensor its map's fetch (0 for an on-chip map), the weights, the output when it is a group output. A concat's
    one input tensor stacks all its maps, so it moves their fetches together."""
    fetch = list(traffic.input_fetch)
    tensors = sum(t.role == "input" for t in result.op.tensors)
    if 0 < tensors < len(fetch):
        fetch[tensors - 1:] = [sum(fetch[tensors - 1:])]
    inputs = iter(fetch)
    by_role = {"weight": traffic.weight_words, "output": traffic.output_words}
    return [next(inputs, 0) if t.role == "input" else by_role.get(t.role, 0) for t in result.op.tensors]


def boundary_level(result: SearchResult, arch: ArchSpec, tensor: str) -> int | None:
    """The on-chip level that exchanges ``tensor`` with DRAM: the outermost level below DRAM keeping it in the
    result's mapping (the buffer, or the register file for a tensor that bypasses the buffer); None if none."""
    top = len(arch.levels) - 1
    return max((i for i in range(top) if tensor in result.mapping.kept_tensors(i, result.op, arch)), default=None)


def fused_counts(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> dict[str, np.ndarray]:
    """The fused layer's (L, T) access counts by kind: the core mapping's, except every transfer between the
    chip and DRAM, which is replaced by the layer's Eq. 6 words. For each tensor, the on-chip level below
    DRAM that keeps it (the buffer) fills only the words Eq. 6 fetches (none for a map a group layer
    produced: it is already there) and drains only the group-output words (none for a map a later group
    layer reads, and no partial sums, ``T_if = N_if``); DRAM reads and updates exactly those words."""
    counts = {kind: values[0].copy() for kind, values in result.cost.counts.items()}
    top, op = len(arch.levels) - 1, result.op
    for t, (tensor, words) in enumerate(zip(op.tensors, _eq6_words(result, traffic))):
        child = boundary_level(result, arch, tensor.name)
        written = tensor.role == "output"
        for kind in ("reads", "updates", "fills", "drains", "accumulate_reads"):
            counts[kind][top, t] = 0.0
        counts["updates" if written else "reads"][top, t] = words
        if child is not None:
            counts["fills"][child, t] = 0.0 if written else words
            counts["drains"][child, t] = words if written else 0.0
    return counts


def _instances(mapping: Mapping, level: int) -> int:
    """Instances of ``level`` the mapping uses: the spatial factors of the levels above it."""
    return math.prod(f for lv in mapping.levels[level + 1:] for _, f in lv.spatial)


def fused_level_cycles(result: SearchResult, arch: ArchSpec, counts: dict[str, np.ndarray]) -> np.ndarray:
    """(L,) bandwidth cycles of each level moving ``counts`` (busiest instance); DRAM: its transfer model, else
    its word bandwidth as every other level's (as the core model prices it)."""
    cycles = result.cost.level_cycles[0].copy()
    top = len(arch.levels) - 1
    for i, lv in enumerate(arch.levels):
        n = _instances(result.mapping, i)
        reads = (counts["reads"][i] + counts["drains"][i] + counts["accumulate_reads"][i]).sum() / n
        writes = (counts["fills"][i] + counts["updates"][i]).sum() / n
        cycles[i] = bandwidth_cycles(lv, np.array([reads]), np.array([writes]))
    if arch.dram.transfer is not None:
        nbytes = sum((counts["reads"][top, t] + counts["updates"][top, t] * _final_share(arch, x.role))
                     * arch.bytes_of(x.role) for t, x in enumerate(result.op.tensors))
        cycles[top] = dram_cycles(arch, float(nbytes))
    return cycles


def fused_cycle_parts(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> dict[str, float]:
    """The fused layer's latency parts: ``compute``, its busiest on-chip level and the DRAM level (keys are
    level names), each moving the fused counts. Latency is their maximum (``overlap: true``) or their sum."""
    levels = fused_level_cycles(result, arch, fused_counts(result, arch, traffic))
    parts = {"compute": float(result.cost.compute_cycles[0])}
    if traffic.extra_operations:  # the unit's least cycles for all the operations (docs/cost-model.md section 3)
        unit = compute_unit(result.op, arch)
        parts["compute"] = max(parts["compute"], unit.least_cycles(result.op.operations + traffic.extra_operations))
    if levels.size > 1:
        busiest = int(levels[:-1].argmax())
        parts[arch.levels[busiest].name] = float(levels[busiest])
    parts[arch.levels[-1].name] = float(levels[-1])
    return parts


def fused_port_cycles(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> tuple[float, float]:
    """The fused layer's cycles on the on-chip buffer (the level below DRAM) and on DRAM: the shared ports
    that bound a spatially fused group's pipeline (:mod:`dnnmap.fusion.pipeline`)."""
    levels = fused_level_cycles(result, arch, fused_counts(result, arch, traffic))
    return float(levels[-2]), float(levels[-1])


def fused_action_energy(result: SearchResult, arch: ArchSpec, counts: dict[str, np.ndarray]) -> np.ndarray:
    """(L, T, 3) energy of the fused ``counts`` by level, tensor and action (read incl. drains and
    read-modify-write reads, fill, update): the core's prices, final output words at their width - the core
    mapping's (:meth:`~dnnmap.cost.model.CostBatch.final_share`), and the group outputs the buffer drains to
    DRAM, which are complete."""
    drains, updates = result.cost.final_share("drains")[0], result.cost.final_share("updates")[0]
    for t, x in enumerate(result.op.tensors):
        child = boundary_level(result, arch, x.name)
        if x.role == "output" and child is not None:
            drains[child, t] = updates[-1, t] = _final_share(arch, "output")
    words = np.stack([counts["reads"] + counts["drains"] * drains + counts["accumulate_reads"], counts["fills"],
                      counts["updates"] * updates], axis=-1)
    return words * result.cost.action_energy


def fused_energy_breakdown(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> np.ndarray:
    """(L + 2,) energy of each level moving the fused counts, then the core mapping's network hops and MACs."""
    counts = fused_counts(result, arch, traffic)
    breakdown = result.cost.energy_breakdown[0].copy()
    breakdown[:len(arch.levels)] = fused_action_energy(result, arch, counts).sum(axis=(1, 2))
    breakdown[-1] += traffic.extra_operations * compute_unit(result.op, arch).energy
    return breakdown


def fused_cost(result: SearchResult, arch: ArchSpec, traffic: LayerTraffic) -> Cost:
    """The layer's core cost on its share with its chip-DRAM transfers replaced by its Eq. 6 traffic."""
    nbytes = sum(t.bytes for t in dram_terms(arch, traffic))
    energy = float(fused_energy_breakdown(result, arch, traffic).sum())
    parts = fused_cycle_parts(result, arch, traffic).values()
    cycles = max(parts) if arch.overlap else sum(parts)
    return Cost(energy, cycles, nbytes)
