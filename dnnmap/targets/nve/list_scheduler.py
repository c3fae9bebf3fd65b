"""Bottom-up list scheduling of one iteration (NVE Alg. 1, fixed) plus the ACT/write post-passes.

NVE Alg. 1 walks the task graph breadth-first from the bottom vertex, placing each
parent at ``t_child - distance`` and backing set-register operations off while their
slot is taken. As printed, Alg. 1 inserts ``t_w`` into the table inside the back-off
loop, revises an already visited vertex without re-checking the table or re-propagating
to its parents, leaves the bottom vertex undefined and checks no field conflict but
port A (docs/nve.md §5). This module keeps the bottom-up idea and the thesis's
tie-breaking (the weight-register load wins a port-A slot, Tables 3-4) but runs it as a
proper reverse list scheduler, which the thesis says gives similar results (NVE §8):

* the bottom vertex is the last ``mac`` of the last chain, at time 0;
* an operation is placed only after all its successors, at the latest time
  ``min(t_succ - distance)`` that is free in its own field and - for set operations -
  whose reads (exactly ``read_latency`` earlier, NVE §3.4) find MEMA/MEMB free;
  port-A back-offs are recorded as conflicts for the coefficient-packing search;
* ready operations are taken latest-first; ties prefer WREG, then IREG, then later ops.

Post-passes (NVE §4.3): activations ASAP after their ``set rb`` + ``vmac_to_act_latency``;
repetitive writes ALAP into free MEMA slots, latest-needed word first, no later than
``write_to_read_latency`` before the first read, prepending cycles when no slot is free
(Fig. 24 cycle 1); finally times are shifted to start at 0.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import SET_KINDS, Field, Kind, TaskGraph

_PRIORITY = {Field.WREG: 0, Field.IREG: 1, Field.VMAC: 2}


@dataclass(frozen=True)
class PortConflict:
    """A set-register op backed off because ``blocker`` (another set op) holds its port-A slot."""

    op: int
    blocker: int


@dataclass(frozen=True)
class FlatSchedule:
    """Issue time (0-based cycle) of every op of one iteration; ``length`` cycles in total."""

    graph: TaskGraph
    time: tuple[int, ...]
    length: int
    conflicts: tuple[PortConflict, ...]

    def vmac_stalls(self) -> int:
        """Idle VMAC cycles between the first ``set rb`` and the last ``mac`` (the cost of conflicts)."""
        g = self.graph
        span = self.time[g.last_mac[-1]] - self.time[g.set_rb[0]] + 1
        return span - g.count(Field.VMAC)

    def at(self, field: Field) -> dict[int, int]:
        """cycle -> op id for one field."""
        return {self.time[o.id]: o.id for o in self.graph.ops if o.field == field}


def schedule_iteration(graph: TaskGraph, spec: NveSpec) -> FlatSchedule:
    """Schedule one iteration of ``graph`` (see module docstring)."""
    ops = graph.ops
    core = [o.id for o in ops if o.field in _PRIORITY]
    is_core = set(core)
    succ: dict[int, list[tuple[int, int]]] = {v: [] for v in core}
    for e in graph.edges:
        if e.src in is_core and e.dst in is_core:
            succ[e.src].append((e.dst, e.distance))
    pending = {v: len(succ[v]) for v in core}
    pred: dict[int, list[int]] = {v: [] for v in core}
    for v in core:
        for w, _ in succ[v]:
            pred[w].append(v)
    time: dict[int, int] = {}
    busy: dict[Field, set[int]] = {f: set() for f in Field}
    conflicts: list[PortConflict] = []
    holder: dict[tuple[Field, int], int] = {}  # (field, cycle) -> op occupying it (for reads: their set op)

    def free(v: int, t: int) -> bool:
        if t in busy[ops[v].field]:
            return False
        return all(t - spec.read_latency not in busy[ops[r].field] for r in graph.reads.get(v, ()))

    def place(v: int, latest: int) -> None:
        t = latest
        while not free(v, t):
            if ops[v].kind in SET_KINDS:
                blocker = holder.get((Field.MEMA, t - spec.read_latency))
                if blocker is not None and ops[blocker].kind in SET_KINDS:
                    conflicts.append(PortConflict(v, blocker))
            t -= 1
        time[v] = t
        busy[ops[v].field].add(t)
        holder[(ops[v].field, t)] = v
        for r in graph.reads.get(v, ()):
            time[r] = t - spec.read_latency
            busy[ops[r].field].add(time[r])
            holder[(ops[r].field, time[r])] = v

    bottom = graph.last_mac[-1]
    if [v for v in core if pending[v] == 0] != [bottom]:
        raise AssertionError("task graph must have the last mac as its only bottom vertex")
    ready: list[tuple[int, int, int, int]] = [(0, _PRIORITY[ops[bottom].field], -bottom, bottom)]
    while ready:
        neg_latest, _, _, v = heapq.heappop(ready)
        place(v, -neg_latest)
        for u in pred[v]:
            pending[u] -= 1
            if pending[u] == 0:
                latest = min(time[w] - d for w, d in succ[u])
                heapq.heappush(ready, (-latest, _PRIORITY[ops[u].field], -u, u))
    if len(time) != sum(1 for o in ops if o.field in _PRIORITY or o.kind == Kind.READ):
        raise AssertionError("task graph has a cycle: not every op could be scheduled")
    _place_acts(graph, spec, time, busy)
    _place_writes(graph, spec, time, busy)
    lo = min(time.values())
    times = tuple(time[o.id] - lo for o in ops)
    return FlatSchedule(graph, times, max(times) + 1, tuple(conflicts))


def _place_acts(graph: TaskGraph, spec: NveSpec, time: dict[int, int], busy: dict[Field, set[int]]) -> None:
    """ASAP: first free ACT cycles at or after ``set rb + vmac_to_act_latency`` (NVE §4.3)."""
    for rb, (a0, a1) in zip(graph.set_rb, graph.acts, strict=True):
        t = time[rb] + spec.vmac_to_act_latency
        for a in (a0, a1):
            while t in busy[Field.ACT]:
                t += 1
            time[a] = t
            busy[Field.ACT].add(t)
            t += 1


def _place_writes(graph: TaskGraph, spec: NveSpec, time: dict[int, int], busy: dict[Field, set[int]]) -> None:
    """ALAP: latest-needed word first, into the latest free MEMA cycle before its first read."""
    first_read: dict[object, int] = {}
    for o in graph.ops:
        if o.kind == Kind.READ:
            first_read[o.data] = min(first_read.get(o.data, time[o.id]), time[o.id])
    writes = [o for o in graph.ops if o.kind == Kind.WRITE]
    deadline = {o.id: first_read[o.data] - spec.write_to_read_latency for o in writes if o.data in first_read}
    for o in writes:  # a word nobody reads this iteration (cannot happen for conv windows) goes first
        deadline.setdefault(o.id, min(time.values()))
    for o in sorted(writes, key=lambda o: (deadline[o.id], o.data), reverse=True):
        t = deadline[o.id]
        while t in busy[Field.MEMA]:
            t -= 1
        time[o.id] = t
        busy[Field.MEMA].add(t)
