"""One sweep task (an architecture, a network, an objective, a mapper) and its result row."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.network import search_network
from dnnmap.search.options import SearchOptions
from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class SweepTask:
    """``arch`` labels the candidate in tables (a preset name, a file, a template point); ``area_mm2`` is
    known for template points only."""

    arch: str
    spec: ArchSpec
    network: Network
    objective: str
    mapper: str = "auto"
    area_mm2: float | None = None
    options: SearchOptions = SearchOptions()
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", task_key(self.spec, self.network, self.objective, self.mapper, self.options))


def task_key(spec: ArchSpec, network: Network, objective: str, mapper: str,
             options: SearchOptions = SearchOptions()) -> str:
    """Content hash of everything that determines a task's result: the spec's fields, the network's
    operators (names included), the objective, the mapper and the search options (the defaults add nothing,
    so stores written before options existed stay valid). Equal keys mean equal results."""
    digest = hashlib.sha256()
    digest.update(json.dumps(spec.model_dump(mode="json"), sort_keys=True).encode())
    digest.update(repr((network.name, network.operators)).encode())
    digest.update(f"{objective}|{mapper}".encode())
    if options != SearchOptions():
        digest.update(repr(options).encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class SweepRow:
    """The result of one task: latency in s, energy in the arch's ``energy_unit`` (pJ for the template)."""

    key: str
    arch: str
    model: str
    objective: str
    mapper: str
    latency_s: float
    energy: float
    energy_unit: str
    area_mm2: float | None
    cycles: float
    macs: int
    utilization: float
    seconds: float

    def energy_text(self) -> str:
        """``1.23 mJ`` when the unit is pJ, else the value in the arch's own unit (``1.8e+07 x MAC``)."""
        return f"{self.energy * 1e-9:.4g} mJ" if self.energy_unit == "pJ" else f"{self.energy:.4g} {self.energy_unit}"


def run_task(task: SweepTask) -> SweepRow:
    """Map the whole network of ``task`` (this runs on a Dask worker or in the main process)."""
    start = time.perf_counter()
    result = search_network(task.network, task.spec, task.objective, task.mapper, options=task.options)
    return SweepRow(task.key, task.arch, task.network.name, task.objective, task.mapper,
                    result.latency_s, result.energy, task.spec.energy_unit, task.area_mm2,
                    result.cycles, result.macs, result.utilization, time.perf_counter() - start)
