"""TSO's own time estimate (Eq. 6) beside the core cost model's latency, per layer (``dnnmap map --mapper tso``)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from dnnmap.search.network import NetworkResult


def tso_comparison(result: NetworkResult) -> Table:
    """Per layer: the TSO schedule, TSO's Eq. 6 terms and total, and the core model's latency of the same mapping."""
    clock = result.arch.clock_mhz * 1e6
    table = Table(title="TSO mapper's time estimate vs the core cost model, same schedule (docs/tso.md says why "
                        "they differ)", title_justify="left")
    for header in ("layer", "TSO schedule", "MAC us", "LOAD+STORE us", "TSO us", "core us", "core/TSO"):
        table.add_column(header, justify="left" if header in ("layer", "TSO schedule") else "right", no_wrap=True)
    tso_total = core_total = 0.0
    for layer in result.layers:
        sched = getattr(layer.search, "schedule", None)
        if sched is None:
            continue
        tso_us, core_us = sched.seconds * 1e6, layer.cycles / clock * 1e6
        tso_total, core_total = tso_total + tso_us, core_total + core_us
        table.add_row(escape(layer.layer), escape(sched.describe()), f"{sched.time.mac[0] * 1e6:,.1f}",
                      f"{sched.time.dram[0] * 1e6:,.1f}", f"{tso_us:,.1f}", f"{core_us:,.1f}",
                      f"{core_us / tso_us:.2f}" if tso_us else "-")
    table.add_section()
    table.add_row("total", "", "", "", f"{tso_total:,.1f}", f"{core_total:,.1f}",
                  f"{core_total / tso_total:.2f}" if tso_total else "-", style="bold")
    return table
