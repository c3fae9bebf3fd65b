"""Compact one-line descriptions of mappings and unit conversions shared by the reports."""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.workload.ir import Operator


def mapping_summary(mapping: Mapping, op: Operator, arch: ArchSpec) -> str:
    """Spatial factors over all levels, then the DRAM level's temporal loops outermost first.

    Example: ``sp C16 M8 Q2 | DRAM M4 P7`` (``sp -`` when nothing is parallel, ``DRAM -``
    when the whole layer fits on chip).
    """
    spatial: dict[str, int] = {}
    for lm in mapping.levels:
        for d, f in lm.spatial:
            if f > 1:
                spatial[d] = spatial.get(d, 1) * f
    dram = mapping.levels[-1]
    outer = [f"{d}{dram.t(d)}" for d in dram.full_order(op.dim_names) if dram.t(d) > 1]
    sp = " ".join(f"{d}{spatial[d]}" for d in op.dim_names if d in spatial) or "-"
    return f"sp {sp} | {arch.dram.name} {' '.join(outer) or '-'}"


def latency_ms(cycles: float, arch: ArchSpec) -> float:
    return cycles / (arch.clock_mhz * 1e3)


def format_energy(energy: float, arch: ArchSpec) -> str:
    return f"{energy:.4g} {arch.energy_unit}"


def plural(noun: str) -> str:
    """The plural of an English noun of dnnmap's output: ``layer`` -> ``layers``, ``layer search`` ->
    ``layer searches``, ``capacity`` -> ``capacities``, ``MAC`` -> ``MACs``."""
    if noun.endswith(("s", "sh", "ch", "x")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + "s"


def counted(n: int, noun: str) -> str:
    """A count with its noun in the right number: ``1 layer``, ``2 layers``, ``1,024 layers``."""
    return f"{n:,} {noun if n == 1 else plural(noun)}"
