"""Readable listings in the thesis's table form (NVE Figs. 17, 24, 26: Cyc | MEMA | MEMB | WREG | IREG | VMAC | ACT).

Operand notation follows the figures: ``rd [b w0 w1 w2]`` reads a coefficient word
(bias ``b``, weights ``w<n>`` in MAC order, ``-`` for an empty position);
``rd [s(i+1) w2]`` reads word 2 of window column i+1 (prefixed ``m<k>:`` when the program
reads several input maps and suffixed ``p<φ>`` for subsample phases); ``set ri[0-1]``,
``setsh ri[2]``, ``act [s(i) w0]`` (prefixed ``o<k>:`` in fused programs).
"""

from __future__ import annotations

from dnnmap.targets.nve.compiler import CompiledProgram
from dnnmap.targets.nve.list_scheduler import FlatSchedule
from dnnmap.targets.nve.modulo import LoopSchedule
from dnnmap.targets.nve.taskgraph import FIELDS, CoeffWord, Kind, Op, PixelWord, TaskGraph


def _coeff_names(graph: TaskGraph, cpw: int) -> list[str]:
    """Label of every packed load, e.g. ``[b w0 w1 -]``."""
    labels = []
    multi = len(graph.chains) > 1
    for c in graph.chains:
        pos = 0
        for n in c.loads:
            names = ["b" if k == 0 else f"w{k - 1}" for k in range(pos, pos + n)]
            if multi:
                names = [f"o{c.out_map}.{x}" for x in names]
            labels.append("[" + " ".join(names + ["-"] * (cpw - n)) + "]")
            pos += n
    return labels


def op_label(op: Op, graph: TaskGraph, coeff_labels: list[str]) -> str:
    multi_in = len(graph.in_maps) > 1
    phased = len(graph.layer.phases) > 1
    if op.kind in (Kind.READ, Kind.WRITE):
        if isinstance(op.data, CoeffWord):
            return f"{op.kind.value} {coeff_labels[op.data.index]}"
        assert isinstance(op.data, PixelWord)
        return f"{op.kind.value} [{op.data.label(multi_in, phased)}]"
    if op.kind == Kind.SET_RW:
        load = graph.ops[graph.reads[op.id][0]].data
        assert isinstance(load, CoeffWord)
        return f"set rw{coeff_labels[load.index]}"
    if op.kind == Kind.SET_RI:
        return "set ri[0-1]"
    if op.kind == Kind.SETSH_RI:
        return "setsh ri[2]"
    if op.kind == Kind.ACT:
        prefix = f"o{graph.chains[op.chain - 1].out_map}:" if len(graph.chains) > 1 else ""
        return f"act [{prefix}s(i) w{op.half}]"
    return op.kind.value


def schedule_rows(graph: TaskGraph, cycle_of: tuple[int, ...], length: int, cpw: int) -> list[list[str]]:
    """One row per cycle, one column per VLIW field (empty string = nop)."""
    labels = _coeff_names(graph, cpw)
    rows = [[""] * len(FIELDS) for _ in range(length)]
    for op in graph.ops:
        rows[cycle_of[op.id]][FIELDS.index(op.field)] = op_label(op, graph, labels)
    return rows


def flat_rows(flat: FlatSchedule, cpw: int) -> list[list[str]]:
    """The unpipelined iteration (Figs. 17, 24)."""
    return schedule_rows(flat.graph, flat.time, flat.length, cpw)


def loop_rows(loop: LoopSchedule, cpw: int) -> list[list[str]]:
    """The modulo-scheduled steady state (Fig. 26)."""
    return schedule_rows(loop.flat.graph, loop.slot, loop.ii, cpw)


def format_table(rows: list[list[str]], first_cycle: int = 1) -> str:
    header = ["Cyc", *(f.value for f in FIELDS)]
    body = [[str(i + first_cycle), *r] for i, r in enumerate(rows)]
    widths = [max(len(x[c]) for x in [header, *body]) for c in range(len(header))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in body)])


def program_listing(cp: CompiledProgram, cpw: int) -> str:
    """Settings, init part, repetitive part (table + addresses/stages) of one program."""
    p, s, g = cp.program, cp.program.settings, cp.loop.flat.graph
    lines = [f"program for output maps {list(cp.out_maps)} of layer {cp.layer.name}: {p.size} instructions "
             f"(init {s.loop_start}, loop {s.loop_end - s.loop_start + 1}, final {p.size - s.loop_end - 1}); "
             f"iterations {s.iterations} + drain {s.drain}; MII {cp.loop.mii}, II {cp.loop.ii}; "
             f"AGU modes (toggle, inc) {list(s.modes)}; "
             f"ring slots {cp.layout.ring_slots} x {cp.layout.slot_words} words",
             "", "init part:"]
    coeff_labels = _coeff_names(g, cpw)
    for i, w in enumerate(g.init_words):
        what = coeff_labels[w.index] if isinstance(w, CoeffWord) else f"[m{w.in_map}:col{w.col}p{w.phase} w{w.word}]"
        lines.append(f"  {i:4d}  wr {what} @ {p.instructions[i].mema.offset}")
    lines += ["", "repetitive part:", format_table(loop_rows(cp.loop, cpw)), "", "addresses (offset+update/mode) "
              "and stages:"]
    for slot in range(cp.loop.ii):
        inst = p.instructions[s.loop_start + slot]
        cells = []
        for name in ("mema", "memb"):
            f = getattr(inst, name)
            if f.opcode:
                cells.append(f"{name} {f.opcode.name.lower()} {f.offset}+{f.update}/m{f.mode} s{f.stage}")
        for name in ("wreg", "ireg", "vmac", "act"):
            f = getattr(inst, name)
            if f.opcode:
                cells.append(f"{name} s{f.stage}{'+tail' if f.tail else ''}")
        lines.append(f"  {slot + 1:4d}  " + ", ".join(cells))
    return "\n".join(lines)
