"""Rich tables of a network mapping result (``dnnmap map``)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from dnnmap.report.summary import counted, format_energy, latency_ms, mapping_summary
from dnnmap.search.network import NetworkResult


def si(value: float) -> str:
    """``118013952`` -> ``118.0M``."""
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.1f}{suffix}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def network_label(result: NetworkResult) -> str:
    """The network's name with its inference phase when it has one: ``gpt2 (decode, 1 new token, KV cache 128 tokens)``."""
    return f"{result.network} ({result.phase})" if result.phase else result.network


def layer_table(result: NetworkResult) -> Table:
    """One row per layer, then a totals row."""
    arch = result.arch
    table = Table(title=f"{escape(network_label(result))} on {arch.name} (objective {result.objective}, "
                        f"mapper {result.mapper})",
                  title_justify="left")
    for header in ("layer", "kind", "MACs", "mapping (spatial | DRAM loops)", "cycles",
                   f"energy ({arch.energy_unit})", "on-chip", "off-chip", "DRAM bytes", "util", "mapper"):
        numeric = header in ("MACs", "cycles", "on-chip", "off-chip", "DRAM bytes", "util") or header.startswith("energy")
        table.add_column(header, justify="right" if numeric else "left", no_wrap=True)
    for layer in result.layers:
        op = layer.search.op
        mapper = f"= {escape(layer.reused_from)}" if layer.reused_from else layer.search.mapper
        table.add_row(escape(layer.layer), layer.kind, si(layer.macs), mapping_summary(layer.search.mapping, op, arch),
                      f"{layer.cycles:,.0f}", si(layer.energy), si(layer.energy_onchip), si(layer.energy_offchip),
                      si(layer.dram_bytes), f"{layer.utilization:.0%}",
                      mapper)
    table.add_section()
    table.add_row("total", "", si(result.macs), "", f"{result.cycles:,.0f}", si(result.energy),
                  si(result.energy_onchip), si(result.energy_offchip), si(result.dram_bytes), f"{result.utilization:.0%}", "", style="bold")
    return table


def totals_line(result: NetworkResult) -> str:
    arch = result.arch
    phase = f" ({result.phase})" if result.phase else ""
    return (f"{counted(len(result.layers), 'layer')}{phase}: {result.cycles:,.0f} cycles = "
            f"{latency_ms(result.cycles, arch):.3f} ms at {arch.clock_mhz:g} MHz, "
            f"energy {format_energy(result.energy, arch)} (on-chip {format_energy(result.energy_onchip, arch)}, "
            f"off-chip {format_energy(result.energy_offchip, arch)}), DRAM {result.dram_bytes / 1e6:.2f} MB, "
            f"utilization {result.utilization:.1%}, {counted(result.evaluated, 'mapping')} evaluated in "
            f"{result.seconds:.1f} s")
