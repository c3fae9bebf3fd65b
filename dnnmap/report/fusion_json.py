"""Plain-data form of a fused run (what ``dnnmap map --fuse ... --json`` writes): the same fields as an unfused
run, so ``dnnmap report`` draws it, plus the fused groups.

Each layer is the mapping it runs in the fused schedule, on its hardware share (``fusion.share``: the whole array,
a register-file share ``RF/2`` or a sub-array ``16x8``). A fused layer's numbers are the fused costing's
(docs/fusion.md): its on-chip figures are the core model's for that mapping, its backing-store entries are the
layer's Eq. 6 terms, keyed by tensor role (``input``, ``weight``, ``output``) because Eq. 6 counts maps, not the
operator's tensors. Totals are the sums over the layers; ``fusion`` also carries the unfused and greedy totals."""

from __future__ import annotations

from typing import Any


from dnnmap.arch.spec import ArchSpec
from dnnmap.fusion.costing import (
    Cost,
    dram_terms,
    fused_action_energy,
    fused_counts,
    fused_cycle_parts,
    fused_energy_breakdown,
    fused_level_cycles,
    volume_bytes,
)
from dnnmap.fusion.network import FusionResult
from dnnmap.fusion.pipeline import Pipeline
from dnnmap.fusion.schedule import Schedule
from dnnmap.fusion.search import GroupSchedule, LayerCost
from dnnmap.report.json_report import (
    bottleneck,
    counts_dict,
    energy_by_action_dict,
    layer_to_dict,
    run_header,
    split_latency,
)
from dnnmap.report.summary import latency_ms
from dnnmap.search.network import LayerResult
from dnnmap.workload.ir import Network


def _cost_dict(cost: Cost) -> dict[str, float]:
    return {"energy": cost.energy, "cycles": cost.cycles, "dram_bytes": cost.dram_bytes}


def _on_chip(per_level: dict[str, Any], top: str) -> dict[str, Any]:
    return {level: value for level, value in per_level.items() if level != top}


def fused_layer_to_dict(lc: LayerCost, network: Network) -> dict[str, Any]:
    """One layer of the schedule: :func:`layer_to_dict` of its mapping on its share, with the fused costing's
    counts, latency, energy and backing-store traffic where the layer is fused."""
    op = network.layer(lc.layer).op
    arch = lc.result.arch
    data = layer_to_dict(LayerResult(lc.layer, op.kind, op.macs, lc.result), arch, network)
    if lc.traffic is None:
        return data
    traffic = lc.traffic
    top, terms = arch.levels[-1].name, dram_terms(arch, traffic)
    counts = fused_counts(lc.result, arch, traffic)
    cycles = fused_level_cycles(lc.result, arch, counts)
    parts = fused_cycle_parts(lc.result, arch, traffic)
    breakdown = fused_energy_breakdown(lc.result, arch, traffic)
    names = [lv.name for lv in arch.levels]
    energy = fused_action_energy(lc.result, arch, counts)
    data.update({
        "cycles": lc.cost.cycles,
        "latency_ms": latency_ms(lc.cost.cycles, arch),
        "level_cycles": {name: float(c) for name, c in zip(names, cycles)},
        "latency_parts": _latency_parts(parts, lc.cost.cycles, arch.overlap),
        "bottleneck": bottleneck(parts["compute"], {k: v for k, v in parts.items() if k != "compute"}),
        "energy": lc.cost.energy,
        "energy_breakdown": {**data["energy_breakdown"], **{n: float(e) for n, e in zip(names, breakdown)}},
        "energy_by_action": {**_on_chip(energy_by_action_dict(energy, op, arch), top),
                             top: {t.role: {t.action: t.energy} for t in terms if t.energy}},
        "counts": {**_on_chip(counts_dict(counts, op, arch), top),
                   top: {t.role: {"reads" if t.action == "read" else "updates": float(t.words)}
                         for t in terms if t.words}},
        "dram_bytes": lc.cost.dram_bytes,
        "dram_bytes_by_tensor": {t.role: t.bytes for t in terms},
    })
    return data


def _latency_parts(parts: dict[str, float], cycles: float, overlap: bool) -> dict[str, float]:
    """The layer's latency split (compute, then the bottleneck's excess or every level); a layer of a pipelined
    group gets its share of the group's latency, so its parts are scaled by that share over its own latency."""
    levels = {k: v for k, v in parts.items() if k != "compute"}
    own = max(parts.values()) if overlap else sum(parts.values())
    split = split_latency(parts["compute"], levels, own, overlap)
    return {k: v * cycles / own for k, v in split.items()} if own else split


def _group_dict(index: int, group: GroupSchedule, arch: ArchSpec) -> dict[str, Any]:
    """A group of the schedule; ``dram_bytes_least``: the proven least off-chip bytes of any schedule of its
    layers (every input pixel read, weight and output word moved once), beside its ``cost.dram_bytes``."""
    tiling = group.tiling
    return {
        "index": index,
        "layers": list(group.layers),
        "mode": group.mode,
        "shares": [lc.share for lc in group.layer_costs],
        "tile": None if tiling is None else {"rows": tiling.plan.rows.tile, "cols": tiling.plan.cols.tile,
                                             "out_channels": tiling.plan.out_channel_tile,
                                             "hidden": tiling.plan.hidden_tile or None,
                                             "keys": tiling.plan.key_tile or None,
                                             "buffer_words": tiling.buffer.total_words},
        "cost": _cost_dict(group.cost),
        "dram_bytes_least": None if tiling is None else volume_bytes(arch, tiling.bound),
        "single": _cost_dict(group.single),
        "pipeline": None if group.pipeline is None else _pipeline_dict(group.pipeline),
    }


def _pipeline_dict(timing: Pipeline) -> dict[str, Any]:
    """A spatial group's concurrent sub-arrays: its latency, what bounds it, and the serial sum it replaces.
    Each layer's ``cycles`` is its share of the group's latency; ``stage_cycles`` its own on its sub-array;
    ``tiles_in_flight`` how far producers may run ahead, ``buffer_words`` the buffer that overlap needs."""
    return {"cycles": timing.cycles, "bound": timing.bound, "pipeline_cycles": timing.critical,
            "buffer_cycles": timing.buffer_floor, "dram_cycles": timing.dram_floor, "serial_cycles": timing.serial,
            "slowest_layer": timing.layers[timing.slowest], "fill_cycles": timing.fill, "drain_cycles": timing.drain,
            "stage_cycles": dict(zip(timing.layers, timing.stage_cycles)),
            "tiles_in_flight": timing.window, "buffer_words": timing.buffer_words}


def _totals(schedule: Schedule) -> dict[str, float]:
    return {**_cost_dict(schedule.cost), "objective": schedule.score, "fused_groups": len(schedule.fused)}


def fused_to_dict(result: FusionResult, network: Network, mapper: str) -> dict[str, Any]:
    """The fused (dynamic-programming) schedule as a saved run, layers in network order."""
    arch, schedule = result.arch, result.schedule
    layers = [fused_layer_to_dict(lc, network) | {"fusion": {"group": index, "mode": group.mode, "share": lc.share,
                                                             "share_arch": lc.result.arch.name}}
              for index, group in enumerate(schedule.groups) for lc in group.layer_costs]
    searches = {id(lc.result): lc.result for group in schedule.groups for lc in group.layer_costs}
    cycles = sum(layer["cycles"] for layer in layers)
    busy = sum(layer["utilization"] * layer["cycles"] for layer in layers)
    return {
        **run_header(result.network, arch, schedule.objective, mapper, network.phase),
        "layers": layers,
        "totals": {
            "macs": sum(layer["macs"] for layer in layers),
            "cycles": cycles,
            "latency_ms": latency_ms(cycles, arch),
            "energy": sum(layer["energy"] for layer in layers),
            "dram_bytes": sum(layer["dram_bytes"] for layer in layers),
            "utilization": busy / cycles if cycles else 0.0,
            "evaluated": sum(search.evaluated for search in searches.values()),
            "seconds": result.seconds,
        },
        "fusion": {
            "mode": result.mode,
            "max_fused": result.max_fused,
            "baseline": result.baseline,
            "groups": [_group_dict(i, g, arch) for i, g in enumerate(schedule.groups)],
            "fused": _totals(schedule),
            "unfused": _totals(result.unfused),
            "greedy": _totals(result.greedy),
            "candidates": len(result.candidates),
        },
    }
