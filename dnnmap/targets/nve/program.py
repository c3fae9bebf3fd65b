"""The executable form of an NVE program: VLIW instructions plus the setting registers.

Instruction fields follow NVE Table 2; the address field of MEMA/MEMB has the three
parts of NVE §3.2, Fig. 9 (offset, update, mode), and every field carries the stage predicate
of :mod:`dnnmap.targets.nve.modulo`. The setting registers (NVE §3.3, written over
AXI-Lite) hold the program size, the repetitive part's start/end, the iteration count and
the AGU mode table (toggle, inc) of Fig. 19; ``drain`` is the extra loop executions of
the stage predication.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


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
