"""The executable form of an NVE program: VLIW instructions plus the setting registers.

Instruction fields follow NVE Table 2; the address field of MEMA/MEMB has the three
parts of NVE §3.2, Fig. 9 (offset, update, mode), and every field carries the stage predicate
of :mod:`dnnmap.targets.nve.modulo`. The setting registers (NVE §3.3, written over
AXI-Lite) hold the program size, the repetitive part's start/end, the iteration count and
the AGU mode table (toggle, inc) of Fig. 19; ``drain`` is the extra loop executions of
the stage predication.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np


class MemOpcode(IntEnum):
    NOP = 0
    RD = 1
    WR = 2


class WregOpcode(IntEnum):
    NOP = 0
    SET = 1
    SHIFT = 2


class IregOpcode(IntEnum):
    NOP = 0
    SET = 1
    SETSH = 2
    SHIFT = 3


class VmacOpcode(IntEnum):
    NOP = 0
    SET_RB = 1
    MAC = 2


class ActOpcode(IntEnum):
    NOP = 0
    ACT = 1


@dataclass(frozen=True)
class MemField:
    """A local-buffer access: address = offset + update (NVE Eq. 3.1); mode 0 = fixed."""

    opcode: MemOpcode = MemOpcode.NOP
    offset: int = 0
    update: int = 0
    mode: int = 0
    stage: int = 0
    tail: bool = False


@dataclass(frozen=True)
class OpField:
    """A register/VMAC/ACT operation; ``arg`` is the ACT half (lanes 0-7 or 8-15)."""

    opcode: int = 0
    arg: int = 0
    stage: int = 0
    tail: bool = False


@dataclass(frozen=True)
class Instruction:
    mema: MemField = MemField()
    memb: MemField = MemField()
    wreg: OpField = OpField()
    ireg: OpField = OpField()
    vmac: OpField = OpField()
    act: OpField = OpField()


# The parts of an instruction's six fields in Table 2 order: the columns of :func:`instruction_table`
# (the ISS's instruction table) and the bit fields of the binary encoding, from bit 0.
_MEM_PARTS = ("opcode", "offset", "update", "mode", "stage", "tail")
_OP_PARTS = ("opcode", "stage", "tail")
PARTS: tuple[tuple[str, str], ...] = (
    *(("mema", p) for p in _MEM_PARTS), *(("memb", p) for p in _MEM_PARTS),
    *(("wreg", p) for p in _OP_PARTS), *(("ireg", p) for p in _OP_PARTS), *(("vmac", p) for p in _OP_PARTS),
    ("act", "opcode"), ("act", "arg"), ("act", "stage"), ("act", "tail"),
)
COLUMN = {part: i for i, part in enumerate(PARTS)}


def _parts(ins: Instruction) -> tuple[int, ...]:
    a, b, w, i, v, c = ins.mema, ins.memb, ins.wreg, ins.ireg, ins.vmac, ins.act
    return (a.opcode, a.offset, a.update, a.mode, a.stage, a.tail, b.opcode, b.offset, b.update, b.mode, b.stage,
            b.tail, w.opcode, w.stage, w.tail, i.opcode, i.stage, i.tail, v.opcode, v.stage, v.tail,
            c.opcode, c.arg, c.stage, c.tail)


def instruction_table(instructions: Sequence[Instruction]) -> np.ndarray:
    """int64 (instructions, len(PARTS)): every part of every field, one row per instruction."""
    return np.array([_parts(ins) for ins in instructions], dtype=np.int64).reshape(-1, len(PARTS))


def instructions_from_table(table: np.ndarray) -> tuple[Instruction, ...]:
    """Inverse of :func:`instruction_table`; a memory opcode outside :class:`MemOpcode` raises ValueError."""
    return tuple(Instruction(MemField(MemOpcode(r[0]), *r[1:5], bool(r[5])),
                             MemField(MemOpcode(r[6]), *r[7:11], bool(r[11])),
                             OpField(r[12], 0, r[13], bool(r[14])), OpField(r[15], 0, r[16], bool(r[17])),
                             OpField(r[18], 0, r[19], bool(r[20])), OpField(r[21], r[22], r[23], bool(r[24])))
                 for r in table.tolist())


@dataclass(frozen=True)
class Settings:
    """Setting registers: instructions [0, loop_start) are the init part, [loop_start, loop_end]
    the repetitive part (executed ``iterations + drain`` times), (loop_end, size) the final part."""

    loop_start: int
    loop_end: int
    iterations: int
    drain: int
    modes: tuple[tuple[int, int], ...]  # mode m >= 1 -> (toggle, inc) = modes[m-1]


@dataclass(frozen=True)
class NveProgram:
    instructions: tuple[Instruction, ...]
    settings: Settings

    @property
    def size(self) -> int:
        return len(self.instructions)

    def with_iterations(self, iterations: int) -> NveProgram:
        """The same program with another iteration-count register (a narrower frame)."""
        s = self.settings
        return NveProgram(self.instructions, Settings(s.loop_start, s.loop_end, iterations, s.drain, s.modes))
