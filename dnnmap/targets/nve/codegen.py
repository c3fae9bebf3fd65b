"""Emit the init / repetitive / final parts of one program (NVE §4.4, Fig. 11) and its stream layout.

Init part: one ``wr`` per coefficient word (fixed addresses) and per pixel word of the
first ``kW - sw`` columns (their ring slots, fixed addresses), then the
``write_to_read_latency`` padding the first loop reads need. Repetitive part: the
modulo-scheduled body, memory ops with circular AGU addressing. Final part: empty - the
stage predicates drain the pipeline inside the loop (see :mod:`modulo`).

The stream layout tells the host in which order the AXI stream must deliver words (the
order in which enabled ``wr`` ops execute) and how to interpret the output stream (one
8-pixel half vector per enabled ``act``).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.targets.nve.buffer_alloc import BufferLayout
from dnnmap.targets.nve.modulo import LoopSchedule
from dnnmap.targets.nve.program import (
    ActOpcode, Instruction, IregOpcode, MemField, MemOpcode, NveProgram, OpField, Settings, VmacOpcode, WregOpcode,
)
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import CoeffWord, Field, Kind, PixelWord

_OPCODES = {
    Kind.SET_RW: WregOpcode.SET, Kind.SHIFT_RW: WregOpcode.SHIFT,
    Kind.SET_RI: IregOpcode.SET, Kind.SETSH_RI: IregOpcode.SETSH, Kind.SHIFT_RI: IregOpcode.SHIFT,
    Kind.SET_RB: VmacOpcode.SET_RB, Kind.MAC: VmacOpcode.MAC, Kind.ACT: ActOpcode.ACT,
}
_ATTR = {Field.MEMA: "mema", Field.MEMB: "memb", Field.WREG: "wreg", Field.IREG: "ireg", Field.VMAC: "vmac",
         Field.ACT: "act"}


@dataclass(frozen=True)
class LoopWrite:
    slot: int
    stage: int
    word: PixelWord  # col is the kernel column of the window of iteration (k - stage)


@dataclass(frozen=True)
class LoopAct:
    slot: int
    stage: int  # iteration whose result is drained = k - stage
    out_map: int
    half: int


@dataclass(frozen=True)
class StreamLayout:
    """Host-side view: input words in stream order (init), loop writes/acts by slot, coefficient loads."""

    init_words: tuple[PixelWord | CoeffWord, ...]  # PixelWord.col is the absolute column here
    loop_writes: tuple[LoopWrite, ...]
    loop_acts: tuple[LoopAct, ...]
    loads: tuple[tuple[int, int, int], ...]  # (out_map, first coefficient within the chain, count) per load
    out_maps: tuple[int, ...]
    in_maps: tuple[int, ...]


def emit_program(loop: LoopSchedule, layout: BufferLayout, iterations: int, spec: NveSpec
                 ) -> tuple[NveProgram, StreamLayout]:
    g = loop.flat.graph
    init: list[Instruction] = []
    for w in g.init_words:
        addr = w.index if isinstance(w, CoeffWord) else layout.pixel_address(w.in_map, w.col, w.phase, w.word)
        init.append(Instruction(mema=MemField(MemOpcode.WR, addr)))
    first_read = min((loop.slot[o.id] for o in g.ops if o.kind == Kind.READ and loop.stage[o.id] == 0), default=0)
    init.extend(Instruction() for _ in range(max(0, spec.write_to_read_latency - 1 - first_read)))

    body: list[dict[str, object]] = [{} for _ in range(loop.ii)]
    writes: list[LoopWrite] = []
    acts: list[LoopAct] = []
    for o in g.ops:
        slot, stage, tail = loop.slot[o.id], loop.stage[o.id], loop.tail[o.id]
        if o.field in (Field.MEMA, Field.MEMB):
            opcode = MemOpcode.WR if o.kind == Kind.WRITE else MemOpcode.RD
            if isinstance(o.data, CoeffWord):
                field = MemField(opcode, o.data.index, 0, 0, stage, tail)
            else:
                assert isinstance(o.data, PixelWord)
                offset, update = layout.circular(o.data, stage)
                field = MemField(opcode, offset, update, 1, stage, tail)
                if o.kind == Kind.WRITE:
                    writes.append(LoopWrite(slot, stage, o.data))
        else:
            field = OpField(_OPCODES[o.kind], o.half if o.kind == Kind.ACT else 0, stage, tail)
            if o.kind == Kind.ACT:
                source = g.chains[o.chain - 1]  # the previous chain's result; chain 0 drains the last chain
                acts.append(LoopAct(slot, stage, source.out_map, o.half))
        body[slot][_ATTR[o.field]] = field
    start = len(init)
    instructions = (*init, *(Instruction(**fields) for fields in body))  # type: ignore[arg-type]
    settings = Settings(start, start + loop.ii - 1, iterations, loop.epilogue_iterations, layout.modes)
    loads = tuple((c.out_map, sum(c.loads[:i]), n) for c in g.chains for i, n in enumerate(c.loads))
    stream = StreamLayout(g.init_words, tuple(sorted(writes, key=lambda w: w.slot)),
                          tuple(sorted(acts, key=lambda a: a.slot)), loads, tuple(c.out_map for c in g.chains),
                          g.in_maps)
    return NveProgram(instructions, settings), stream
