"""Modulo scheduling of the flat iteration schedule (NVE §5.2, Figs. 25-26), with collision handling.

NVE §5.2: MII is the largest number of operations any one VLIW field issues per
iteration (a resource-constrained MII), and the flat schedule is wrapped with
``slot = t mod II``. The thesis wraps naively; it does not say what happens when the
wrapped schedule collides or breaks a loop-carried constraint (docs/nve.md §5). Here the
wrap is checked and II is increased until it is legal:

* every field issues at most one op per slot;
* registers: iteration i+1's first op on ``rw``/``ri`` must not precede iteration i's
  last consumer (anti-dependence, distance 0); its first ``set rb`` must follow the last
  ``mac`` by one cycle (the accumulator is shared);
* activation windows: an ``act`` reads the result latched by its ``set rb`` and must run
  before the next ``set rb``'s latch becomes visible (``vmac_to_act_latency`` later);
* loop-carried write -> read of a pixel word read again in later iterations as an older
  column: ``t_read + k*II >= t_write + write_to_read_latency``;
* the stage count fits the instruction's stage-predicate field.

The same routine, started at the flat length instead of MII, gives the unpipelined
loop of optimization levels 0-1 (Fig. 17/24 run back to back).

Stage predication [choice, docs/nve.md §Control]: instead of emitting prologue and
epilogue copies, every op carries its stage ``s = t // II``; in loop execution ``k`` it
works on iteration ``k - s`` and is enabled when that iteration exists (EPIC-style
stage predicates; the thesis compares the AGU with EPIC rotating registers). An ``act``
drains the result latched by its ``set rb``, which is the *previous* chain's result; for
the first chain that is the previous iteration's last chain, so its acts carry stage
``s + 1``; that chain's ``set rb`` also latches the last iteration and so runs one
iteration longer (``tail``). The loop thus executes ``N + max(stage + tail)`` times.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.targets.nve.list_scheduler import FlatSchedule
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import FIELDS, Field, Kind, PixelWord


@dataclass(frozen=True)
class LoopSchedule:
    """A legal loop body: ``ii`` instructions; per op its slot, predicate stage and tail flag."""

    flat: FlatSchedule
    ii: int
    mii: int
    slot: tuple[int, ...]
    stage: tuple[int, ...]  # predicate stage (iteration offset) per op
    tail: tuple[bool, ...]

    @property
    def epilogue_iterations(self) -> int:
        """Extra loop executions beyond N needed to drain every stage."""
        return max(s + int(t) for s, t in zip(self.stage, self.tail, strict=True))

    @property
    def macs_per_iteration(self) -> int:
        return sum(1 for o in self.flat.graph.ops if o.kind == Kind.MAC)


def minimum_ii(flat: FlatSchedule) -> int:
    """MII = the largest per-field operation count of one iteration (NVE §5.2)."""
    return max(flat.graph.count(f) for f in FIELDS)


def _violation(flat: FlatSchedule, ii: int, spec: NveSpec) -> str | None:
    g, t = flat.graph, flat.time
    for f in FIELDS:
        slots = [t[o.id] % ii for o in g.ops if o.field == f]
        if len(slots) != len(set(slots)):
            return f"{f.value} collision"
    wreg = [t[o.id] for o in g.ops if o.field == Field.WREG]
    ireg = [t[o.id] for o in g.ops if o.field == Field.IREG]
    rb = [t[v] for v in g.set_rb]
    macs = [t[o.id] for o in g.ops if o.kind == Kind.MAC]
    if min(wreg) + ii < max(macs) or min(ireg) + ii < max(macs):
        return "register reused before the previous iteration consumed it"
    if rb[0] + ii < max(macs) + 1:
        return "accumulator reset before the previous iteration's last mac"
    for c, acts in enumerate(g.acts):
        next_latch = rb[c + 1] if c + 1 < len(rb) else rb[0] + ii
        if any(t[a] >= next_latch + spec.vmac_to_act_latency for a in acts):
            return "act after the next latch"
    sw = g.layer.subsample[1]
    writes = {o.data: t[o.id] for o in g.ops if o.kind == Kind.WRITE}
    for o in g.ops:
        if o.kind != Kind.READ or not isinstance(o.data, PixelWord):
            continue
        d = o.data
        for s_w in range(d.col + sw, g.layer.kernel[1], sw):
            tw = writes.get(PixelWord(d.in_map, s_w, d.phase, d.word))
            if tw is not None and t[o.id] + (s_w - d.col) // sw * ii < tw + spec.write_to_read_latency:
                return "loop-carried read before its write"
    if (max(t) // ii) + 2 > spec.max_stages:
        return "too many stages for the stage field"
    return None


def modulo_schedule(flat: FlatSchedule, spec: NveSpec, pipelined: bool = True) -> LoopSchedule:
    """Wrap ``flat`` at the smallest legal II >= MII (or >= its length when not ``pipelined``)."""
    mii = minimum_ii(flat)
    ii = mii if pipelined else max(mii, flat.length)
    while _violation(flat, ii, spec) is not None:
        ii += 1
    g, t = flat.graph, flat.time
    stage = [x // ii for x in t]
    tail = [False] * len(t)
    for a in g.acts[0]:
        stage[a] += 1
    tail[g.set_rb[0]] = True
    return LoopSchedule(flat, ii, mii, tuple(x % ii for x in t), tuple(stage), tuple(tail))
