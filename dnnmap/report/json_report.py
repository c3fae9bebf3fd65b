"""Plain-data form of a :class:`NetworkResult` (what ``dnnmap map --json`` writes)."""

from __future__ import annotations

from typing import Any

from dnnmap.arch.spec import ACTIONS
from dnnmap.mapping.io import mapping_to_dict
from dnnmap.report.summary import latency_ms
from dnnmap.search.network import LayerResult, NetworkResult


def _breakdown(layer: LayerResult, result: NetworkResult) -> dict[str, float]:
    names = [lv.name for lv in result.arch.levels] + ["network", "mac"]
    return {n: float(v) for n, v in zip(names, layer.search.cost.energy_breakdown[0])}


def _energy_by_action(layer: LayerResult, result: NetworkResult) -> dict[str, dict[str, dict[str, float]]]:
    """level -> tensor -> action -> energy, the non-zero entries."""
    energy = layer.search.cost.energy_by_action()[0]
    tensors = [t.name for t in layer.search.op.tensors]
    return {lv.name: {t: {a: float(energy[i, j, k]) for k, a in enumerate(ACTIONS) if energy[i, j, k]}
                      for j, t in enumerate(tensors) if energy[i, j].any()}
            for i, lv in enumerate(result.arch.levels) if energy[i].any()}


def layer_to_dict(layer: LayerResult, result: NetworkResult) -> dict[str, Any]:
    level_names = [lv.name for lv in result.arch.levels]
    return {
        "name": layer.layer,
        "kind": layer.kind,
        "macs": layer.macs,
        "cycles": layer.cycles,
        "latency_ms": latency_ms(layer.cycles, result.arch),
        "energy": layer.energy,
        "energy_breakdown": _breakdown(layer, result),
        "energy_by_action": _energy_by_action(layer, result),
        "dram_bytes": layer.dram_bytes,
        "utilization": layer.utilization,
        "mapper": layer.search.mapper,
        "evaluated": 0 if layer.reused_from else layer.search.evaluated,
        "reused_from": layer.reused_from,
        "mapping": mapping_to_dict(layer.search.mapping, level_names),
    }


def to_dict(result: NetworkResult) -> dict[str, Any]:
    """Per-layer numbers and mappings plus totals; totals are the sums over the layers."""
    arch = result.arch
    return {
        "network": result.network,
        "arch": arch.name,
        "objective": result.objective,
        "mapper": result.mapper,
        "energy_unit": arch.energy_unit,
        "clock_mhz": arch.clock_mhz,
        "layers": [layer_to_dict(layer, result) for layer in result.layers],
        "totals": {
            "macs": result.macs,
            "cycles": result.cycles,
            "latency_ms": latency_ms(result.cycles, arch),
            "energy": result.energy,
            "dram_bytes": result.dram_bytes,
            "utilization": result.utilization,
            "evaluated": result.evaluated,
            "seconds": result.seconds,
        },
    }
