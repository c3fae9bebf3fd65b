"""Plain-data form of a :class:`NetworkResult` (what ``dnnmap map --json`` writes).

Besides the per-layer totals and mappings it carries what ``dnnmap report`` draws without
the network or architecture at hand: compute and per-level bandwidth-limited cycles, the
bottleneck, access counts, tile words, the loop nest text, the layer graph and the machine's
roofline parameters."""

from __future__ import annotations

import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from dnnmap.arch.spec import ACTIONS, ALL_ROLES, ArchSpec
from dnnmap.cost.model import COUNT_KINDS, CostBatch
from dnnmap.mapping.io import mapping_to_dict
from dnnmap.mapping.printer import format_loop_nest
from dnnmap.report.summary import latency_ms
from dnnmap.search.network import LayerResult, NetworkResult
from dnnmap.workload.ir import Network, Operator, Phase

COMPUTE = "compute"  # the bottleneck name of a layer limited by its MAC steps rather than a level's bandwidth


def tool_version() -> str:
    try:
        return version("dnnmap")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _breakdown(layer: LayerResult, arch: ArchSpec) -> dict[str, float]:
    names = [lv.name for lv in arch.levels] + ["network", "mac"]
    return {n: float(v) for n, v in zip(names, layer.search.cost.energy_breakdown[0])}


def _energy_by_action(layer: LayerResult, arch: ArchSpec) -> dict[str, dict[str, dict[str, float]]]:
    return energy_by_action_dict(layer.search.cost.energy_by_action()[0], layer.search.op, arch)


def energy_by_action_dict(energy: np.ndarray, op: Operator, arch: ArchSpec) -> dict[str, dict[str, dict[str, float]]]:
    """(L, T, 3) energies -> level -> tensor -> action -> energy, the non-zero entries."""
    tensors = [t.name for t in op.tensors]
    return {lv.name: {t: {a: float(energy[i, j, k]) for k, a in enumerate(ACTIONS) if energy[i, j, k]}
                      for j, t in enumerate(tensors) if energy[i, j].any()}
            for i, lv in enumerate(arch.levels) if energy[i].any()}


def bottleneck(compute_cycles: float, level_cycles: dict[str, float]) -> str:
    """``compute`` or the level whose bandwidth-limited cycles are the largest (ties go to compute)."""
    level, cycles = max(level_cycles.items(), key=lambda item: item[1], default=(COMPUTE, 0.0))
    return level if cycles > compute_cycles else COMPUTE


def latency_parts(cost: CostBatch, arch: ArchSpec) -> dict[str, float]:
    """The layer's cycles split into ``compute`` and per-level bandwidth-bound parts, summing to the cycles.

    Overlapped transfers (the default): the compute steps plus the bottleneck level's excess over them.
    Serial transfers (``overlap: false``): the compute steps plus every level's cycles."""
    levels = {lv.name: float(c) for lv, c in zip(arch.levels, cost.level_cycles[0])}
    return split_latency(float(cost.compute_cycles[0]), levels, float(cost.cycles[0]), arch.overlap)


def split_latency(compute: float, levels: dict[str, float], cycles: float, overlap: bool) -> dict[str, float]:
    """``cycles`` as ``compute`` plus the bottleneck level's excess (``overlap``) or plus every level's cycles."""
    parts = {COMPUTE: compute}
    if not overlap:
        return parts | {name: c for name, c in levels.items() if c > 0}
    limit = bottleneck(compute, levels)
    if limit != COMPUTE:
        parts[limit] = cycles - compute
    return parts


def _per_level_tensor(values: Any, layer: LayerResult, arch: ArchSpec) -> dict[str, dict[str, float]]:
    """(L, T) array -> level -> tensor -> value, the non-zero entries."""
    tensors = [t.name for t in layer.search.op.tensors]
    return {lv.name: {t: float(values[i, j]) for j, t in enumerate(tensors) if values[i, j]}
            for i, lv in enumerate(arch.levels) if values[i].any()}


def _counts(layer: LayerResult, arch: ArchSpec) -> dict[str, dict[str, dict[str, float]]]:
    return counts_dict({k: v[0] for k, v in layer.search.cost.counts.items()}, layer.search.op, arch)


def counts_dict(counts: dict[str, np.ndarray], op: Operator, arch: ArchSpec) -> dict[str, dict[str, dict[str, float]]]:
    """Count kind -> (L, T) words -> level -> tensor -> count kind -> words, the non-zero entries."""
    tensors = [t.name for t in op.tensors]
    return {lv.name: {t: {k: float(counts[k][i, j]) for k in COUNT_KINDS if counts[k][i, j]}
                      for j, t in enumerate(tensors) if any(counts[k][i, j] for k in COUNT_KINDS)}
            for i, lv in enumerate(arch.levels) if any(counts[k][i].any() for k in COUNT_KINDS)}


def _dram_bytes_by_tensor(layer: LayerResult, arch: ArchSpec) -> dict[str, float]:
    """Bytes each tensor moves to or from the backing store (reads and updates; they sum to ``dram_bytes``)."""
    tensors = layer.search.op.tensors
    nbytes = layer.search.cost.dram_bytes_by_tensor(np.array([arch.bytes_of(t.role) for t in tensors]))[0]
    return {t.name: float(nbytes[j]) for j, t in enumerate(tensors)}


def layer_to_dict(layer: LayerResult, arch: ArchSpec, network: Network | None = None) -> dict[str, Any]:
    """One layer's numbers, counts and mapping on ``arch`` (the architecture its mapping was searched on)."""
    cost, op = layer.search.cost, layer.search.op
    level_names = [lv.name for lv in arch.levels]
    level_cycles = {name: float(c) for name, c in zip(level_names, cost.level_cycles[0])}
    data: dict[str, Any] = {
        "name": layer.layer,
        "kind": layer.kind,
        "macs": layer.macs,
        "operations": op.operations,
        "cycles": layer.cycles,
        "latency_ms": latency_ms(layer.cycles, arch),
        "compute_cycles": float(cost.compute_cycles[0]),
        "level_cycles": level_cycles,
        "latency_parts": latency_parts(cost, arch),
        "bottleneck": bottleneck(float(cost.compute_cycles[0]), level_cycles),
        "energy": layer.energy,
        "energy_onchip": layer.energy_onchip,
        "energy_offchip": layer.energy_offchip,
        "energy_breakdown": _breakdown(layer, arch),
        "energy_by_action": _energy_by_action(layer, arch),
        "dram_bytes": layer.dram_bytes,
        "dram_bytes_by_tensor": _dram_bytes_by_tensor(layer, arch),
        "utilization": layer.utilization,
        "counts": _counts(layer, arch),
        "tile_words": _per_level_tensor(cost.tile_words[0], layer, arch),
        "mapper": layer.search.mapper,
        "evaluated": 0 if layer.reused_from else layer.search.evaluated,
        "reused_from": layer.reused_from,
        "mapping": mapping_to_dict(layer.search.mapping, level_names),
        "loop_nest": format_loop_nest(layer.search.mapping, op, arch),
    }
    if network is not None:
        data["inputs"] = list(network.layer(layer.layer).inputs)
    return data


def dram_bytes_per_second(arch: ArchSpec) -> float | None:
    """The roofline's sloped roof: the DRAM transfer model's bandwidth, else the DRAM level's word bandwidth
    (``bandwidth``, or ``read_bandwidth + write_bandwidth``) in words per cycle at the widest word and the
    clock, an upper bound on the bytes per second a layer can move; None when DRAM is unlimited."""
    dram = arch.dram
    if dram.transfer is not None:
        return dram.transfer.bandwidth_gbps * 1e9
    words = dram.bandwidth
    if words is None and dram.read_bandwidth is not None and dram.write_bandwidth is not None:
        words = dram.read_bandwidth + dram.write_bandwidth
    if words is None:
        return None
    return words * max(arch.bytes_of(role) for role in ALL_ROLES) * arch.clock_mhz * 1e6


def machine_to_dict(arch: ArchSpec) -> dict[str, Any]:
    """What a roofline needs: peak operations per second and the DRAM bandwidth (:func:`dram_bytes_per_second`,
    null when DRAM is unlimited), plus the level names innermost first and, for the architecture's
    picture, every level's capacity, kept tensors, instances and fan-out (``hierarchy``)."""
    transfer = arch.dram.transfer
    return {
        "num_macs": arch.num_macs,
        "peak_ops_per_second": arch.peak_macs_per_second,
        "dram_bytes_per_second": dram_bytes_per_second(arch),
        "dram_transfer_model": transfer.model if transfer is not None else None,
        "overlap": arch.overlap,
        "levels": [lv.name for lv in arch.levels],
        "hierarchy": [{"name": lv.name, "capacity": lv.capacity, "capacity_unit": lv.capacity_unit,
                       "keeps": list(lv.keeps), "instances": arch.instances(i),
                       "fanout": list(lv.fanout.shape) if lv.fanout else None} for i, lv in enumerate(arch.levels)],
    }


def phase_to_dict(phase: Phase | None) -> dict[str, Any] | None:
    """A transformer's inference phase (``name`` prefill or decode, new ``tokens``, ``kv_cache`` tokens cached, and
    the ``description`` the tables print); None for other networks."""
    if phase is None:
        return None
    return {"name": phase.name, "tokens": phase.tokens, "kv_cache": phase.cached, "description": str(phase)}


def run_header(network: str, arch: ArchSpec, objective: str, mapper: str,
               phase: Phase | None = None) -> dict[str, Any]:
    """The fields every saved run starts with: what was mapped onto what (and in which phase), how, by which
    tool, when."""
    return {
        "network": network,
        "phase": phase_to_dict(phase),
        "arch": arch.name,
        "objective": objective,
        "mapper": mapper,
        "energy_unit": arch.energy_unit,
        "clock_mhz": arch.clock_mhz,
        "tool": {"name": "dnnmap", "version": tool_version()},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_to_dict(arch),
    }


def to_dict(result: NetworkResult, network: Network | None = None) -> dict[str, Any]:
    """Per-layer numbers and mappings plus totals; totals are the sums over the layers.

    With ``network`` each layer also lists its ``inputs`` (the graph the report draws)."""
    arch = result.arch
    return {
        **run_header(result.network, arch, result.objective, result.mapper, result.phase),
        "layers": [layer_to_dict(layer, arch, network) for layer in result.layers],
        "totals": {
            "macs": result.macs,
            "cycles": result.cycles,
            "latency_ms": latency_ms(result.cycles, arch),
            "energy": result.energy,
            "energy_onchip": result.energy_onchip,
            "energy_offchip": result.energy_offchip,
            "dram_bytes": result.dram_bytes,
            "utilization": result.utilization,
            "evaluated": result.evaluated,
            "seconds": result.seconds,
        },
    }
