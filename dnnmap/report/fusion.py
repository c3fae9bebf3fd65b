"""Tables of a fused schedule (``dnnmap map MODEL --fuse ...``): groups beside the unfused run."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from dnnmap.fusion.costing import Cost, volume_bytes
from dnnmap.fusion.network import FusionResult
from dnnmap.fusion.schedule import Schedule
from dnnmap.fusion.search import GroupSchedule
from dnnmap.report.summary import counted
from dnnmap.report.tables import si


def _tiles(group: GroupSchedule) -> str:
    if group.tiling is None:
        return ""
    plan = group.tiling.plan
    channels = plan.group.bottom.out_channels
    part = "" if plan.out_channel_tile == channels else f", {plan.out_channel_tile} of {channels} output channels"
    block = (f", hidden block {plan.hidden_tile}" if plan.hidden_tile
             else f", key block {plan.key_tile}" if plan.key_tile else "")
    timing, buffer, flight = group.pipeline, group.tiling.buffer.total_words, ""
    if timing is not None and timing.window is not None:  # spatial: the buffer its overlapped tiles need
        buffer, flight = timing.buffer_words, f" ({timing.window} tile{'s' if timing.window > 1 else ''} in flight)"
    return f"{plan.rows.tile}x{plan.cols.tile}{part}{block}, buf {si(buffer)}{flight}"


def _bound(result: FusionResult, group: GroupSchedule) -> str:
    """The group's proven least off-chip bytes (every input pixel read, weight and output word moved once)."""
    return "" if group.tiling is None else si(volume_bytes(result.arch, group.tiling.bound))


def _ratio(new: float, old: float) -> str:
    return f"{new / old:.0%}" if old else "-"


def group_table(result: FusionResult) -> Table:
    """One row per fused group: layers, mode, shares, tiles, then fused and single cost."""
    unit = result.arch.energy_unit
    table = Table(title=f"{result.network} on {result.arch.name}: fused groups (--fuse {result.mode}, "
                  f"--max-fused {result.max_fused}, objective {result.schedule.objective})", title_justify="left")
    for header in ("group", "mode", "shares", "output tile (rows x columns), buffer words", f"energy ({unit})", "vs single",
                   "cycles", "vs single", "DRAM bytes", "vs single", "DRAM bytes, least possible"):
        table.add_column(header, justify="left" if header in ("group", "mode", "shares") or header.startswith("tile")
                         else "right", no_wrap=True)
    for g in result.schedule.fused:
        c, s = g.cost, g.single
        mode = g.mode if g.pipeline is None else f"{g.mode}, overlapped ({g.pipeline.bound}-bound)"
        table.add_row(escape(" + ".join(g.layers)), mode, " ".join(lc.share for lc in g.layer_costs), _tiles(g),
                      si(c.energy), _ratio(c.energy, s.energy), f"{c.cycles:,.0f}", _ratio(c.cycles, s.cycles),
                      si(c.dram_bytes), _ratio(c.dram_bytes, s.dram_bytes), _bound(result, g))
    return table


def _line(label: str, schedule: Schedule, base: Cost) -> str:
    c = schedule.cost
    return (f"{label:<22} energy {si(c.energy)} ({_ratio(c.energy, base.energy)}), {c.cycles:,.0f} cycles "
            f"({_ratio(c.cycles, base.cycles)}), DRAM {c.dram_bytes / 1e6:.2f} MB ({_ratio(c.dram_bytes, base.dram_bytes)}), "
            f"{counted(len(schedule.fused), 'fused group')}, objective {schedule.score:.4g}")


def totals_lines(result: FusionResult) -> list[str]:
    """Unfused, DP and greedy totals, and what the DP adds over greedy restarts."""
    base = result.unfused.cost
    kept = sum(1 for g in result.candidates if g.score(result.schedule.objective) <
               g.single_score(result.schedule.objective))
    gain = result.greedy.score - result.schedule.score
    single = "single layer" if result.baseline == "best" else "row-stationary"
    return [_line(f"unfused ({single})", result.unfused, base),
            _line("fused, DP schedule", result.schedule, base),
            _line("fused, greedy restarts", result.greedy, base),
            f"{len(result.candidates)} legal candidates, {kept} beat single-layer scheduling; DP objective is "
            f"{gain / result.greedy.score:.2%} below greedy; {result.seconds:.1f} s"]
