"""The Timeloop tutorial exercises of fixtures/reference.yaml, imported into dnnmap, and how each
Timeloop statistic maps onto dnnmap's counts (docs/timeloop.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.timeloop import import_timeloop_arch
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.mapping.timeloop_map import load_timeloop_mapping
from dnnmap.workload.importers.timeloop_problem import load_timeloop_problem
from dnnmap.workload.ir import Operator

FIXTURES = Path(__file__).parent / "fixtures"
REFERENCE: dict[str, Any] = yaml.safe_load((FIXTURES / "reference.yaml").read_text())

# Timeloop reuses a sliding-window overlap only between consecutive iterations of the innermost loop above
# a level (the importer sets `halo_reuse: innermost`) and decides its identical-data multicast fan-out by
# fan-out (`multicast_rule: identical`): with both, every count agrees (docs/timeloop.md).


@dataclass(frozen=True)
class Exercise:
    name: str
    ref: dict[str, Any]
    arch: ArchSpec
    op: Operator
    mapping: Mapping


@cache
def exercise(name: str, ert_energy: str = "max") -> Exercise:
    """The exercise's design, problem and mapping as dnnmap objects. Its reference statistics come
    from Timeloop 2020, which charged every access its level's one vector access energy: ``max``."""
    ref = REFERENCE[name]
    arch = import_timeloop_arch([FIXTURES / f for f in ref["arch"]], ert_energy).spec  # type: ignore[arg-type]
    op = load_timeloop_problem(FIXTURES / ref["problem"])
    mapping = load_timeloop_mapping([FIXTURES / ref["mapping"]], op, arch)
    validate_mapping(mapping, op, arch)
    return Exercise(name, ref, arch, op, mapping)


def timeloop_view(counts: dict[str, int], role: str) -> dict[str, int]:
    """dnnmap's counts of one (level, tensor) as Timeloop defines its scalar reads, fills and updates.

    Read-only tensors: the same three counts. Outputs: Timeloop's reads are the reads that serve
    psum reloads plus the read-modify-write reads (reads + accumulate_reads); its fills count every
    word entering the level, zero-initialised ones included, which is the words that leave it
    (drains); updates are the same.
    """
    if role != "output":
        return {"reads": counts["reads"], "fills": counts["fills"], "updates": counts["updates"]}
    return {"reads": counts["reads"] + counts["accumulate_reads"], "fills": counts["drains"],
            "updates": counts["updates"]}


def timeloop_energy(words: int, instances: int, block: int, vector_energy: float) -> float:
    """Timeloop 2020's energy of one (level, data space): each instance's accesses (reads, fills and
    updates together) rounded up to whole blocks, times the vector access energy."""
    per_instance = words / instances
    return math.ceil(per_instance / block - 1e-9) * vector_energy * instances


def reference_rows(name: str) -> list[tuple[str, str, str, int]]:
    """(level, data space, statistic, total over instances) of an exercise's reference statistics."""
    rows = []
    for level, entry in REFERENCE[name]["levels"].items():
        for space, stats in entry.items():
            if isinstance(stats, dict):
                rows += [(level, space, stat, stats[stat] * entry["instances"])
                         for stat in ("reads", "fills", "updates")]
    return rows
