"""Coefficient packing: choose how many coefficients each ``set rw`` loads (NVE §5.1, Figs. 20-24).

Always loading four coefficients makes some ``set rw`` want the port-A slot of a
``set ri``; the back-off idles the VMAC. The experts' fix, automated in NVE §5.1, is to
put fewer coefficients into an earlier load so that the following loads start earlier
and move into free port-A slots, repeating until no conflict remains. The thesis does
not give the search strategy, only the example of Figs. 20-22 (docs/nve.md §5). Here:
schedule, take the first (latest in time) port-A conflict, find the load ``k`` involved,
shrink load ``k-1`` by one and re-pack everything after it at full capacity; stop when
no conflict remains or the load before the conflict is already a single coefficient;
keep the best layout seen (fewest VMAC stalls, then shortest iteration, then fewest
loads). For 3x3 this walks [4,4,2] -> [3,4,3] -> [3,3,4], the thesis's Fig. 24. 1x1
kernels, whose image loads use port A every MAC, have no solution and keep full loads
(NVE §5.1).
"""

from __future__ import annotations

from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.list_scheduler import FlatSchedule, schedule_iteration
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import Kind, build_task_graph, full_loads


def _repack(prefix: tuple[int, ...], total: int, capacity: int) -> tuple[int, ...]:
    return prefix + full_loads(total - sum(prefix), capacity)


def _conflict_loads(schedule: FlatSchedule) -> list[int]:
    """Global indices of the loads in port-A conflicts, latest conflict first (bottom-up order)."""
    g = schedule.graph
    return [g.load_of_set[v] for c in schedule.conflicts for v in (c.op, c.blocker)
            if g.ops[v].kind == Kind.SET_RW]


class _Search:
    """Schedules candidate layouts of one chain and remembers the best (stalls, length, #loads)."""

    def __init__(self, layer: ConvLayer, out_map: int, spec: NveSpec) -> None:
        self.layer, self.out_map, self.spec = layer, out_map, spec
        self.best: tuple[tuple[int, int, int], tuple[int, ...]] | None = None

    def schedule(self, loads: tuple[int, ...]) -> FlatSchedule:
        s = schedule_iteration(build_task_graph(self.layer, (self.out_map,), {self.out_map: loads}, self.spec),
                               self.spec)
        key = (s.vmac_stalls(), s.length, len(loads))
        if self.best is None or key < self.best[0]:
            self.best = (key, loads)
        return s


def pack_coefficients(layer: ConvLayer, out_map: int, spec: NveSpec) -> tuple[int, ...]:
    """Loads (coefficients per ``set rw``) for one output map's chain, scheduled on its own.

    First the thesis's repair loop (at most 8 repairs, enough for the small kernels it solves); if conflicts
    remain, a right-to-left greedy that fixes the loads from the bottom of the schedule
    upwards - bottom-up scheduling makes a load's placement independent of the loads
    before it - giving each the largest size whose ``set rw`` is conflict-free.
    """
    total = layer.coefficients(out_map)
    cap = spec.coeffs_per_word
    loads = full_loads(total, cap)
    if layer.kernel == (1, 1):
        return loads
    search = _Search(layer, out_map, spec)
    for _ in range(min(2 * len(loads), 8)):
        conflicts = _conflict_loads(search.schedule(loads))
        if not conflicts:
            return loads
        k = conflicts[0]
        if k == 0 or loads[k - 1] == 1:
            break
        loads = _repack(loads[: k - 1] + (loads[k - 1] - 1,), total, cap)
    suffix: tuple[int, ...] = ()
    while sum(suffix) < total:
        remaining = total - sum(suffix)
        chosen = min(cap, remaining)
        for size in range(min(cap, remaining), 0, -1):
            prefix = full_loads(remaining - size, cap)
            if len(prefix) not in _conflict_loads(search.schedule(prefix + (size,) + suffix)):
                chosen = size
                break
        suffix = (chosen,) + suffix
    search.schedule(suffix)
    assert search.best is not None
    return search.best[1]
