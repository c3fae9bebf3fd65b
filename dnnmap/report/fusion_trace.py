"""A fused schedule people can look at: Chrome / Perfetto trace-event JSON and a PNG timeline.

``dnnmap map MODEL --fuse auto --trace out.json [--trace-png out.png]`` exports the chosen
schedule (the DP one) as:

- one **process** per group of the schedule (fused groups and single layers, in schedule
  order; groups run one after the other);
- one **thread** per hardware share of the group: an RF section (``RF/N``, temporal fusion), a
  sub-array (``16x8``, spatial fusion) or the whole array (a single layer);
- one **complete event** (``"ph": "X"``) per tile of each fused layer, named ``layer tile k``,
  whose args are the tile's extents (rows, columns, channels of the new multi-tile it
  produces);
- a **counter** (``"ph": "C"``) of the fusion buffer's occupancy in words per fused group.

Timing is an approximation, not a cycle simulation. Tiles run in the schedule's own order
(the executor's: bottom tiles row-major, every layer top first within a tile). A layer's
event at tile ``k`` lasts its mapped cycles (the cost the search used) times the share of
the layer's output pixels that tile produces. In temporal fusion the layers run one after the
other, as the cost model sums them (G2). In spatial fusion each event starts where the group's
pipeline (:mod:`dnnmap.fusion.pipeline`) starts it, so sub-arrays overlap, and the group lasts the
pipeline's latency; the buffer counter keeps the executor's order of samples, each at the latest
time seen so far. Cycles become microseconds with the architecture's clock.

The occupancy counter replays :class:`~dnnmap.fusion.execute.FusedExecutor`'s bookkeeping
without computing values: held map pixels, resident weights and the block in flight, sampled at
the same points; its maximum equals the executor's peak (tests/fusion/test_trace.py), which
the proof bounds by Eq. 5 + Eq. 8.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np

from dnnmap.fusion.buffers import resident_weight_words
from dnnmap.fusion.execute import last_reads
from dnnmap.fusion.network import FusionResult
from dnnmap.fusion.search import GroupSchedule
from dnnmap.fusion.tiling import TilePlan


@dataclass(frozen=True)
class TileEvent:
    """One layer computing its new block at one bottom tile (times in cycles from the schedule start)."""

    group: int
    thread: int
    layer: str
    tile: int  # -1: a single layer, not tiled
    start: float
    cycles: float
    args: dict


@dataclass
class GroupTrace:
    index: int
    name: str
    mode: str
    threads: list[str]
    start: float
    cycles: float
    capacity_words: int | None = None  # Eq. 5 + Eq. 8 of a fused group
    buffer: list[tuple[float, int]] = field(default_factory=list)  # (cycle, words held)


@dataclass
class ScheduleTrace:
    network: str
    arch: str
    clock_mhz: float
    groups: list[GroupTrace]
    events: list[TileEvent]

    def us(self, cycles: float) -> float:
        return cycles / self.clock_mhz


class _Occupancy:
    """FusedExecutor's buffer bookkeeping (held pixel masks, resident weights, the block in flight), no values."""

    def __init__(self, plan: TilePlan) -> None:
        group = plan.group
        self.plan, self.group = plan, group
        self.channels = {m: plan.map_channels(m) for m in group.maps if group.consumers(m)}
        self.held = {m: np.zeros(group.maps[m].hw, dtype=bool) for m in self.channels}
        self.last = last_reads(plan)
        self.streams = plan.out_channel_tile < group.bottom.out_channels
        self.resident = sum(resident_weight_words(plan, g) for g in group.layers  # a banded layer: its largest band
                            if g.has_weights and not (self.streams and g is group.bottom))

    def words(self, transient: int = 0) -> int:
        return sum(int(h.sum()) * self.channels[m] for m, h in self.held.items()) + self.resident + transient

    def fetch(self, i: int, j: int) -> None:
        for m in self.group.external_inputs:
            (y0, y1), (x0, x1) = self.plan.new_box(m, i, j)
            if y1 > y0 and x1 > x0:
                self.held[m][y0:y1, x0:x1] = True

    def chunk_transients(self, name: str, i: int, j: int) -> list[int]:
        """The occupancy after each output-channel chunk of ``name``'s block at tile (i, j)."""
        layer = next(g for g in self.group.layers if g.name == name)
        (y0, y1), (x0, x1) = self.plan.new_box(name, i, j)
        pixels = (y1 - y0) * (x1 - x0)
        chunk = self.plan.out_channel_tile if layer is self.group.bottom else layer.out_channels
        out = []
        for c0 in range(0, layer.out_channels, chunk):
            c1 = min(c0 + chunk, layer.out_channels)
            streamed = layer.weight_words * (c1 - c0) // layer.out_channels \
                if layer.has_weights and layer is self.group.bottom and self.streams else 0
            if c1 == layer.out_channels and name in self.held:
                self.held[name][y0:y1, x0:x1] = True
            written = (c1 - c0) * pixels if name in self.group.outputs and name not in self.held else 0
            out.append(self.words(streamed + written))
        return out

    def evict(self, step: int) -> None:
        for m, h in self.held.items():
            h &= ~(self.last[m] <= step)


def _threads(g: GroupSchedule) -> list[str]:
    if g.mode == "temporal":
        return [f"RF section {k + 1}/{len(g.layers)} ({lc.layer})" for k, lc in enumerate(g.layer_costs)]
    if g.mode == "spatial":
        return [f"sub-array {lc.share} #{k + 1} ({lc.layer})" for k, lc in enumerate(g.layer_costs)]
    return [f"array ({g.layers[0]})"]


def _trace_group(index: int, g: GroupSchedule, start: float, events: list[TileEvent]) -> GroupTrace:
    """Tile events and buffer samples of one group starting at cycle ``start``."""
    name = " + ".join(g.layers)
    if g.tiling is None:  # a single layer: one event over its mapped cycles
        cycles = sum(lc.cost.cycles for lc in g.layer_costs)
        events.append(TileEvent(index, 0, g.layers[0], -1, start, cycles, {"tiles": "whole layer"}))
        return GroupTrace(index, name, g.mode, _threads(g), start, cycles)
    plan = g.tiling.plan
    layer_cycles = {lc.layer: lc.cost.cycles for lc in g.layer_costs}
    area = {n: plan.group.maps[n].hw[0] * plan.group.maps[n].hw[1] for n in g.layers}
    trace = GroupTrace(index, name, g.mode, _threads(g), start, 0.0, g.tiling.buffer.total_words)
    occ = _Occupancy(plan)
    steps = len(plan.group)
    t = start
    timing = g.pipeline
    for k, (i, j) in enumerate(plan.tiles()):
        occ.fetch(i, j)
        trace.buffer.append((t, occ.words()))
        occ.evict(k * steps - 1)
        for p, layer in enumerate(plan.group.layers):
            (y0, y1), (x0, x1) = plan.new_box(layer.name, i, j)
            if y1 > y0 and x1 > x0:
                dur = layer_cycles[layer.name] * (y1 - y0) * (x1 - x0) / area[layer.name]
                begin = t
                if timing is not None:  # spatial fusion: the pipeline's start; the buffer samples stay in order
                    begin, dur = start + float(timing.start[k, p]), float(timing.duration[k, p])
                    t = max(t, begin)
                chunks = occ.chunk_transients(layer.name, i, j)
                for c, words in enumerate(chunks):
                    trace.buffer.append((t + dur * c / len(chunks), words))
                channels = plan.out_channel_tile if layer is plan.group.bottom else layer.out_channels
                events.append(TileEvent(index, p, layer.name, k, begin, dur, {
                    "tile": k, "bottom_tile": [i, j], "rows": [y0, y1], "cols": [x0, x1],
                    "out_channels": layer.out_channels, "channel_chunk": channels, "cycles": dur}))
                t = max(t, begin + dur) if timing is not None else t + dur
            occ.evict(k * steps + p)
            trace.buffer.append((t, occ.words()))
    trace.cycles = timing.cycles if timing is not None else t - start
    return trace


def schedule_trace(result: FusionResult) -> ScheduleTrace:
    """The DP schedule of ``result`` as timed tile events and buffer samples (module docstring)."""
    groups: list[GroupTrace] = []
    events: list[TileEvent] = []
    t = 0.0
    for index, g in enumerate(result.schedule.groups):
        groups.append(_trace_group(index, g, t, events))
        t += groups[-1].cycles
    return ScheduleTrace(result.network, result.arch.name, float(result.arch.clock_mhz), groups, events)


def trace_events(trace: ScheduleTrace) -> dict:
    """Chrome trace-event JSON object (``{"traceEvents": [...]}``) that the Perfetto UI opens."""
    out: list[dict] = []
    for g in trace.groups:
        pid = g.index + 1
        label = f"{g.index + 1:02d} {g.mode}: {g.name}"
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for tid, thread in enumerate(g.threads):
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}})
        for cycle, words in g.buffer:
            out.append({"ph": "C", "name": "fusion buffer (words)", "pid": pid, "tid": 0,
                        "ts": trace.us(cycle), "args": {"words": words}})
    for e in trace.events:
        name = e.layer if e.tile < 0 else f"{e.layer} tile {e.tile}"
        out.append({"ph": "X", "name": name, "cat": trace.groups[e.group].mode, "pid": e.group + 1,
                    "tid": e.thread, "ts": trace.us(e.start), "dur": trace.us(e.cycles), "args": e.args})
    return {"traceEvents": out, "displayTimeUnit": "ns",
            "otherData": {"network": trace.network, "arch": trace.arch, "clock_mhz": trace.clock_mhz,
                          "timing": "per-tile share of each layer's mapped cycles (docs/fusion.md)"}}


def trace_json(result: FusionResult) -> str:
    return json.dumps(trace_events(schedule_trace(result))) + "\n"


def timeline_png(result: FusionResult) -> bytes:
    """The same schedule as a PNG: one row per (group, thread), tile bars, and the buffer occupancy below."""
    from matplotlib.figure import Figure

    trace = schedule_trace(result)
    rows = [(g.index, tid, f"{g.index + 1:02d} {label}") for g in trace.groups for tid, label in enumerate(g.threads)]
    row_of = {(gi, tid): r for r, (gi, tid, _) in enumerate(rows)}
    fig = Figure(figsize=(12, 2.5 + 0.28 * len(rows)))
    ax, bx = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [max(len(rows), 3), 3]})
    colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"]
    bars: dict[int, list[tuple[float, float]]] = {}
    for e in trace.events:
        bars.setdefault(row_of[(e.group, e.thread)], []).append((trace.us(e.start), trace.us(e.cycles)))
    for r, spans in bars.items():
        ax.broken_barh(spans, (r - 0.4, 0.8), facecolors=colors[r % len(colors)], edgecolor="black", linewidth=0.2)
    ax.set_yticks(range(len(rows)), [label for _, _, label in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(f"{trace.network} on {trace.arch}: fused schedule (--fuse {result.mode}), tile bars", fontsize=9)
    for g in trace.groups:
        if g.buffer:
            xs = [trace.us(c) for c, _ in g.buffer]
            bx.step(xs, [w for _, w in g.buffer], where="post", linewidth=0.8)
            bx.hlines(g.capacity_words, trace.us(g.start), trace.us(g.start + g.cycles), colors="grey",
                      linestyles="dotted", linewidth=0.8)
    bx.set_ylabel("buffer words", fontsize=8)
    bx.set_xlabel("time (us)", fontsize=8)
    bx.set_title("fusion buffer occupancy (dotted: the buffer the tile search reserved)", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
