"""Reports on one mapping: per-level tiles, cost summary, simulated vs analytical counts."""

from __future__ import annotations

from rich.table import Table

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import COUNT_KINDS, CostBatch
from dnnmap.mapping.mapping import Mapping
from dnnmap.mapping.printer import tile_shape
from dnnmap.report.summary import format_energy, latency_ms
from dnnmap.sim.loopnest import SimResult
from dnnmap.workload.ir import Operator


def _capacity_text(capacity: int | dict[str, int] | None) -> str:
    if capacity is None:
        return "unbounded"
    if isinstance(capacity, dict):
        return ", ".join(f"{role} {words}" for role, words in capacity.items())
    return str(capacity)


def tile_table(mapping: Mapping, op: Operator, arch: ArchSpec, cost: CostBatch) -> Table:
    """Per level (outermost first): instances used, tile extents, words per kept tensor, capacity."""
    table = Table(title="tiles per level instance", title_justify="left")
    for header in ("level", "instances", "tile", "words kept", "capacity"):
        table.add_column(header, justify="right" if header in ("instances", "capacity") else "left")
    for i in range(len(arch.levels) - 1, -1, -1):
        lv = arch.levels[i]
        tile = tile_shape(mapping, op, i)
        kept = ", ".join(f"{t.name} {int(cost.tile_words[0, i, j])}" for j, t in enumerate(op.tensors)
                         if cost.tile_words[0, i, j] > 0)
        capacity = _capacity_text(lv.capacity)
        if cost.capacity_excess[0, i] > 0:
            capacity += f" (over by {int(cost.capacity_excess[0, i])})"
        if i == len(arch.levels) - 1:
            kept = "everything (backing store)"
        table.add_row(lv.name, f"{arch.instances(i):,}", " ".join(f"{d}={n}" for d, n in tile.items() if n > 1)
                      or "1", kept or "bypass", capacity)
    return table


def cost_lines(cost: CostBatch, arch: ArchSpec) -> list[str]:
    cycles = float(cost.cycles[0])
    parts = [lv.name for lv in arch.levels] + ["network", "MACs"]
    breakdown = ", ".join(f"{n} {v:.4g}" for n, v in zip(parts, cost.energy_breakdown[0]))
    return [
        f"fits: {'yes' if cost.valid[0] else 'NO (a tile exceeds its level capacity)'}",
        f"cycles {cycles:,.0f} ({latency_ms(cycles, arch):.4f} ms at {arch.clock_mhz:g} MHz), "
        f"compute cycles {float(cost.compute_cycles[0]):,.0f}, utilization {float(cost.utilization[0]):.1%}",
        f"energy {format_energy(float(cost.energy[0]), arch)} ({breakdown})",
        f"DRAM {float(cost.dram_bytes[0]):,.0f} bytes",
    ]


def counts_table(sim: SimResult, cost: CostBatch, op: Operator, arch: ArchSpec) -> tuple[Table, int, int]:
    """Simulated vs analytical words per (level, tensor, kind); returns the table, rows compared, rows differing.

    Equal cells show one number; differing cells show ``simulated / model`` in yellow.
    """
    table = Table(title="access counts: simulated (= model) or simulated / model", title_justify="left")
    for header in ("level", "tensor", *COUNT_KINDS):
        table.add_column(header, justify="left" if header in ("level", "tensor") else "right")
    compared = differing = 0
    for i in range(len(arch.levels) - 1, -1, -1):
        lv = arch.levels[i]
        for j, t in enumerate(op.tensors):
            simulated = sim.count(lv.name, t.name)
            cells = []
            for kind in COUNT_KINDS:
                s, m = getattr(simulated, kind), int(round(float(cost.counts[kind][0, i, j])))
                compared += 1
                if s == m:
                    cells.append(f"{s:,}")
                else:
                    differing += 1
                    cells.append(f"[yellow]{s:,} / {m:,}[/yellow]")
            if any(cell != "0" for cell in cells):
                table.add_row(lv.name, t.name, *cells)
    return table, compared, differing
