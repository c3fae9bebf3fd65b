"""Saved runs (``dnnmap map --json`` files) read back and checked for what the HTML report draws."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnnmap import limits
from dnnmap.errors import InputFileError
from dnnmap.fileio import as_tuples, load_data, validate_strict
from dnnmap.mapping.io import MappingFileSpec

OLDER_JSON_HINT = "written by an older dnnmap? re-run `dnnmap map ... --json FILE`"
MAX_REPORT_LAYERS = 500  # every figure draws one bar per layer; 500 keep the figures readable (120 layers draw in 0.05 s)
REL_TOLERANCE = 1e-6  # totals are sums of the layers' floats, written with full precision


@dataclass(frozen=True)
class Machine:
    peak_ops_per_second: float
    dram_bytes_per_second: float | None  # null when DRAM bandwidth is unlimited
    levels: tuple[str, ...]  # innermost first, the last one is the backing store (DRAM)
    hierarchy: tuple[dict[str, Any], ...] = ()  # per level: capacity, keeps, instances, fanout (newer files only)


@dataclass(frozen=True)
class LayerRun:
    name: str
    kind: str
    macs: int
    operations: int
    cycles: float
    compute_cycles: float
    latency_parts: dict[str, float]  # "compute" and level names -> cycles, summing to ``cycles``
    bottleneck: str  # "compute" or a level name
    energy: float
    energy_by_part: dict[tuple[str, str], float]  # (level, tensor) plus ("network", "") and ("mac", "")
    dram_bytes: float
    dram_bytes_by_tensor: dict[str, float]
    utilization: float
    mapper: str
    reused_from: str | None
    mapping: dict[str, Any]
    loop_nest: str
    tile_words: dict[str, dict[str, float]]
    inputs: tuple[str, ...] | None  # None when the JSON was written without the network


@dataclass(frozen=True)
class Run:
    source: str  # the JSON file, or the command that produced the run
    label: str  # short name in comparisons (the file's stem)
    network: str
    arch: str
    objective: str
    mapper: str
    energy_unit: str
    clock_mhz: float
    tool_version: str
    created: str
    machine: Machine
    layers: tuple[LayerRun, ...]
    totals: dict[str, float]
    phase: str | None = None  # a transformer's inference phase, e.g. "decode, 1 new token, KV cache 128 tokens"

    @property
    def model(self) -> str:
        """The network's name with its phase when it has one."""
        return f"{self.network} ({self.phase})" if self.phase else self.network


class _Reader:
    """Typed field access that names the file and the field in its errors."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> InputFileError:
        return InputFileError(f"{self.source}: {where}: {message}")

    def get(self, data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
        if key not in data:
            raise self.fail(where, f"missing field '{key}' ({OLDER_JSON_HINT})")
        value = data[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.fail(where, f"field '{key}' must be {names}, not {type(value).__name__}")
        return value

    def number(self, data: dict[str, Any], key: str, where: str, low: float = 0.0,
               high: float = math.inf) -> float:
        """A number in ``low..high`` (default: non-negative): run JSON holds no negative count, cycle or energy."""
        value = float(self.get(data, key, (int, float), where))
        if not low <= value <= high:
            raise self.fail(where, f"field '{key}' = {value:g} is outside {low:g}..{high:g}")
        return value

    def count(self, data: dict[str, Any], key: str, where: str) -> int:
        """A non-negative integer (MACs, operations), written as an integer."""
        value = self.get(data, key, int, where)
        if value < 0:
            raise self.fail(where, f"field '{key}' = {value} is negative")
        return int(value)

    def numbers(self, data: dict[str, Any], key: str, where: str) -> dict[str, float]:
        values = self.get(data, key, dict, where)
        for name, value in values.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise self.fail(where, f"field '{key}.{name}' must be a non-negative number")
        return {name: float(value) for name, value in values.items()}


def _energy_by_part(r: _Reader, layer: dict[str, Any], where: str) -> dict[tuple[str, str], float]:
    by_action = r.get(layer, "energy_by_action", dict, where)
    parts: dict[tuple[str, str], float] = {}
    for level in by_action:
        tensors = r.get(by_action, level, dict, f"{where}: energy_by_action")
        for tensor in tensors:
            parts[(level, tensor)] = sum(r.numbers(tensors, tensor, f"{where}: energy_by_action.{level}").values())
    breakdown = r.numbers(layer, "energy_breakdown", where)
    for extra in ("network", "mac"):
        parts[(extra, "")] = breakdown.get(extra, 0.0)
    return parts


def _layer(r: _Reader, layer: Any, index: int, levels: tuple[str, ...]) -> LayerRun:
    if not isinstance(layer, dict):
        raise r.fail(f"layers[{index}]", "must be an object")
    name = r.get(layer, "name", str, f"layers[{index}]")
    where = f"layer {name!r}"
    parts = r.numbers(layer, "latency_parts", where)
    bottleneck = r.get(layer, "bottleneck", str, where)
    for level in [*parts, bottleneck]:
        if level != "compute" and level not in levels:
            raise r.fail(where, f"unknown level {level!r} (machine levels: {', '.join(levels)})")
    cycles = r.number(layer, "cycles", where)
    if not _close(sum(parts.values()), cycles):
        raise r.fail(where, f"field 'latency_parts' adds up to {sum(parts.values()):g} cycles, not the layer's "
                            f"{cycles:g}")
    inputs = layer.get("inputs")
    tile_words = r.get(layer, "tile_words", dict, where)
    mapping = r.get(layer, "mapping", dict, where)
    validate_strict(MappingFileSpec, as_tuples(mapping), f"{r.source}: {where}", "mapping")
    unknown = sorted(set(mapping["levels"]) - set(levels))
    if unknown:
        raise r.fail(where, f"mapping names unknown level(s) {', '.join(unknown)} (machine levels: "
                            f"{', '.join(levels)})")
    return LayerRun(
        name=name, kind=r.get(layer, "kind", str, where), macs=r.count(layer, "macs", where),
        operations=r.count(layer, "operations", where), cycles=cycles,
        compute_cycles=r.number(layer, "compute_cycles", where), latency_parts=parts, bottleneck=bottleneck,
        energy=r.number(layer, "energy", where), energy_by_part=_energy_by_part(r, layer, where),
        dram_bytes=r.number(layer, "dram_bytes", where),
        dram_bytes_by_tensor=r.numbers(layer, "dram_bytes_by_tensor", where),
        utilization=r.number(layer, "utilization", where, high=1.0), mapper=r.get(layer, "mapper", str, where),
        reused_from=r.get(layer, "reused_from", (str, type(None)), where),
        mapping=mapping, loop_nest=r.get(layer, "loop_nest", str, where),
        tile_words={level: r.numbers(tile_words, level, f"{where}: tile_words") for level in tile_words},
        inputs=tuple(r.get(layer, "inputs", list, where)) if inputs is not None else None)


def load_run(path: Path) -> Run:
    """Read one ``dnnmap map --json`` file; :class:`InputFileError` names the file and field on bad input."""
    data = load_data(path, "file", "json")  # the shared strict loader (docs/robustness.md)
    return run_from_dict(data, str(path), Path(path).stem)


def run_from_dict(data: Any, source: str, label: str) -> Run:
    """A run from the plain data of :func:`dnnmap.report.json_report.to_dict`, checked field by field."""
    r = _Reader(source)
    if not isinstance(data, dict):
        raise InputFileError(f"{source}: expected a JSON object from `dnnmap map --json`")
    machine = r.get(data, "machine", dict, "top level")
    levels = tuple(r.get(machine, "levels", list, "machine"))
    if not levels or not all(isinstance(level, str) for level in levels):
        raise r.fail("machine", "field 'levels' must list the level names, innermost first")
    bandwidth = machine.get("dram_bytes_per_second")
    raw_layers = r.get(data, "layers", list, "top level")
    if not raw_layers:
        raise r.fail("layers", "no layers")
    if len(raw_layers) > MAX_REPORT_LAYERS:
        raise r.fail("layers", f"{len(raw_layers):,} layers; a report draws at most {MAX_REPORT_LAYERS} (every "
                               "figure has a bar per layer): map a part of the network with --layers")
    layers = tuple(_layer(r, layer, i, levels) for i, layer in enumerate(raw_layers))
    twice = sorted({layer.name for layer in layers if [x.name for x in layers].count(layer.name) > 1})
    if twice:
        raise r.fail("layers", f"layer name(s) {', '.join(map(repr, twice[:3]))} given more than once")
    clock_mhz = r.number(data, "clock_mhz", "top level", limits.MIN_RATE, limits.MAX_RATE)
    totals = _totals(r, data, layers, clock_mhz)
    tool = r.get(data, "tool", dict, "top level")
    return Run(
        source=source, label=label, network=r.get(data, "network", str, "top level"),
        arch=r.get(data, "arch", str, "top level"),
        objective=r.get(data, "objective", str, "top level"), mapper=r.get(data, "mapper", str, "top level"),
        energy_unit=r.get(data, "energy_unit", str, "top level"), clock_mhz=clock_mhz,
        tool_version=r.get(tool, "version", str, "tool"), created=r.get(data, "created", str, "top level"),
        machine=Machine(r.number(machine, "peak_ops_per_second", "machine", limits.MIN_RATE, math.inf),
                        None if bandwidth is None else
                        r.number(machine, "dram_bytes_per_second", "machine", limits.MIN_RATE, math.inf), levels,
                        tuple(r.get(machine, "hierarchy", list, "machine")) if "hierarchy" in machine else ()),
        layers=layers, totals=totals, phase=_phase(r, data))


def _phase(r: _Reader, data: dict[str, Any]) -> str | None:
    """The phase's description; None for other networks and for runs saved before phases were written."""
    phase = data.get("phase")
    return None if phase is None else r.get(r.get(data, "phase", dict, "top level"), "description", str, "phase")


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOLERANCE, abs_tol=1e-9)


def _totals(r: _Reader, data: dict[str, Any], layers: tuple[LayerRun, ...], clock_mhz: float) -> dict[str, float]:
    """The run's totals, checked against its layers: MACs, cycles, energy and DRAM bytes are their sums, the
    latency is the cycles at the clock, the utilization a share."""
    totals = r.numbers(data, "totals", "top level")
    sums = {"macs": sum(x.macs for x in layers), "cycles": sum(x.cycles for x in layers),
            "energy": sum(x.energy for x in layers), "dram_bytes": sum(x.dram_bytes for x in layers)}
    expected = {**sums, "latency_ms": sums["cycles"] / (clock_mhz * 1e3)}
    for key, value in expected.items():
        if key not in totals:
            raise r.fail("totals", f"missing field '{key}' ({OLDER_JSON_HINT})")
        if not _close(totals[key], value):
            raise r.fail("totals", f"field '{key}' = {totals[key]:g} is not the layers' {value:g}")
    if "utilization" not in totals or totals["utilization"] > 1.0:
        raise r.fail("totals", "field 'utilization' must be a share in 0..1")
    return totals
