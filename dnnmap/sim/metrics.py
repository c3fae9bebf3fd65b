"""Every number the cost model reports, derived from a literal simulation (docs/cost-model.md 2b and 3).

:func:`sim_metrics` applies the architecture's prices and limits to the words a
:class:`~dnnmap.sim.loopnest.SimResult` counted: energies per (level, tensor, action), hop and
MAC energy; per-level bandwidth cycles of the busiest instance; per-fan-out network cycles of
the busiest instance (ingress and egress words); the backing store's transfer
time from the DRAM transfer log (bytes at each tensor's width, bursts from
:func:`~dnnmap.sim.transfers.dram_bursts`); latency with and without overlap; utilization; and
each level's literal tile sizes checked against its capacity. Like the rest of ``dnnmap.sim``
it does not use the cost model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import Action, ArchSpec, Fanout, Level
from dnnmap.arch.units import compute_unit
from dnnmap.mapping.mapping import Mapping
from dnnmap.sim.loopnest import SimResult
from dnnmap.sim.transfers import dram_bursts
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class SimMetrics:
    """Costs of one simulated mapping (docs/cost-model.md 2b, 3). Keys are level and tensor names."""

    action_energy: dict[tuple[str, str, Action], float]  # (level, tensor, action) -> energy
    level_energy: dict[str, float]  # per level, all tensors and actions
    hop_energy: float  # words through each fan-out x its hop energy
    mac_energy: float  # executed operations (lane-steps x operations per iteration) x the unit's energy
    energy: float
    compute_cycles: float  # temporal steps x the unit's cycles per step, at least the cycles the unit needs
    level_cycles: dict[str, float]  # busiest instance's bandwidth cycles; last level: also its transfer model
    transfer_cycles: float  # the backing store's transfer model alone (0 without one)
    network_cycles: dict[str, float]  # per level with a fan-out: busiest instance's max(ingress / ingress
    # bandwidth, egress / egress bandwidth), 0 without those bandwidths
    latency_overlap: float  # max(compute, level cycles)
    latency_serial: float  # compute + sum of level cycles
    cycles: float  # the one of the two that ``overlap`` selects
    dram_bytes: float  # backing-store reads + updates, each tensor at its own width
    dram_bursts: int  # with a ``burst`` transfer model, else 0
    utilization: float  # operations / (cycles x lanes of the unit running the layer)
    tile_words: dict[tuple[str, str], int]  # largest tile of one instance (backing store: the tensor)
    capacity_excess: dict[str, float]  # per level: worst partition's use minus its capacity (0: unbounded)
    valid: bool  # every partition fits


def bandwidth_cycles(lv: Level, reads: np.ndarray, writes: np.ndarray) -> float:
    """Cycles of the busiest instance: the largest of reads / read bandwidth, writes / write
    bandwidth and (reads + writes) / bandwidth, for the bandwidths given (section 2b)."""
    cycles = np.zeros(len(reads))
    for limit, words in ((lv.bandwidth, reads + writes), (lv.read_bandwidth, reads), (lv.write_bandwidth, writes)):
        if limit is not None:
            cycles = np.maximum(cycles, words / limit)
    return float(cycles.max()) if len(cycles) else 0.0


def _network_cycles(fanout: Fanout, ingress: np.ndarray, egress: np.ndarray) -> float:
    """Network cycles of a fan-out: over the owning level's instances, the largest of ingress words /
    ingress bandwidth and egress words / egress bandwidth, for the bandwidths given (section 2b)."""
    cycles = np.zeros(len(ingress))
    for limit, words in ((fanout.ingress_bandwidth, ingress), (fanout.egress_bandwidth, egress)):
        if limit is not None:
            cycles = np.maximum(cycles, words / limit)
    return float(cycles.max()) if len(cycles) else 0.0


def _capacity_excess(op: Operator, arch: ArchSpec, lv: Level, tiles: dict[str, int]) -> float:
    """Worst partition's use minus its capacity (capacity / buffers) in ``capacity_unit``; one
    partition per role of the operator's tensors when the capacity is per role, else one."""
    if lv.capacity is None:
        return 0.0
    used: dict[str, float] = {}
    for t in op.tensors:
        key = t.role if isinstance(lv.capacity, dict) else "input"
        width = arch.capacity_units_of(lv, t.role)
        used[key] = used.get(key, 0.0) + tiles.get(t.name, 0) * width
    return max(words - lv.capacity_for(role) for role, words in used.items())


def sim_metrics(result: SimResult, op: Operator, arch: ArchSpec, mapping: Mapping) -> SimMetrics:
    """The costs of ``result`` (a simulation of ``mapping`` of ``op`` on ``arch``) by sections 2b and 3."""
    action_energy: dict[tuple[str, str, Action], float] = {}
    for (level, tensor), c in result.counts.items():
        lv, role = arch.levels[arch.level_index(level)], op.tensor(tensor).role
        final = arch.moved_bits(role, True) / arch.bits_of(role)  # a final output word's energy per word
        for action, words in (("read", c.read_words + c.final_drains * (final - 1)), ("fill", c.fills),
                              ("update", c.updates + c.final_updates * (final - 1))):
            action_energy[(level, tensor, action)] = words * lv.energy_of(role, action)
    level_energy = {lv.name: sum(e for (name, _, _), e in action_energy.items() if name == lv.name)
                    for lv in arch.levels}
    hop_energy = sum(result.hop_words[lv.name] * lv.fanout.hop_energy for lv in arch.levels if lv.fanout is not None)
    unit = compute_unit(op, arch)  # the MAC array, or the vector unit for non-MAC kinds
    operations = result.macs * unit.ops_per_iteration
    mac_energy = operations * unit.energy
    compute = max(float(result.temporal_steps) * unit.cycles, unit.least_cycles(operations))

    dram_bytes = sum((len(log.word) if log.compressed_words is None else log.compressed_words)
                     * arch.moved_bits(log.role, log.final) / 8 for log in result.dram_log)
    transfer = arch.dram.transfer
    bursts = dram_bursts(result, arch, mapping) if transfer is not None and transfer.model == "burst" else 0
    transfer_cycles = 0.0
    if transfer is not None:  # TSO Alg. 4: bytes / bandwidth, plus CAS per burst in the burst model
        seconds = dram_bytes / (transfer.bandwidth_gbps * 1e9) + bursts * transfer.cas_ns * 1e-9
        transfer_cycles = seconds * arch.clock_mhz * 1e6
    level_cycles = {lv.name: bandwidth_cycles(lv, result.instance_reads[lv.name], result.instance_writes[lv.name])
                    for lv in arch.levels}
    level_cycles[arch.dram.name] = max(level_cycles[arch.dram.name], transfer_cycles)
    network_cycles = {lv.name: _network_cycles(lv.fanout, result.network_ingress[lv.name],
                                               result.network_egress[lv.name])
                      for lv in arch.levels if lv.fanout is not None}
    latency_overlap = max([compute, *level_cycles.values(), *network_cycles.values()])
    latency_serial = compute + sum(level_cycles.values()) + sum(network_cycles.values())
    cycles = latency_overlap if arch.overlap else latency_serial

    excess = {lv.name: _capacity_excess(op, arch, lv, {t: n for (name, t), n in result.tile_words.items()
                                                       if name == lv.name}) for lv in arch.levels}
    energy = sum(level_energy.values()) + hop_energy + mac_energy
    return SimMetrics(
        action_energy=action_energy, level_energy=level_energy, hop_energy=hop_energy, mac_energy=mac_energy,
        energy=energy, compute_cycles=compute, level_cycles=level_cycles,
        transfer_cycles=transfer_cycles, network_cycles=network_cycles, latency_overlap=latency_overlap, latency_serial=latency_serial,
        cycles=cycles, dram_bytes=dram_bytes, dram_bursts=bursts,
        utilization=operations / (cycles * unit.lanes), tile_words=dict(result.tile_words),
        capacity_excess=excess, valid=all(e <= 0 for e in excess.values()))
