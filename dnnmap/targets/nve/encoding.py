"""Binary encoding of NVE programs (the thesis gives none; documented in docs/nve.md §Encoding).

An instruction is a little-endian bit string, fields from the least significant bit in
NVE Table 2 order::

    MEMA  opcode:2 offset:A update:A mode:M stage:S tail:1   (opcode 0 nop, 1 rd, 2 wr)
    MEMB  opcode:2 offset:A update:A mode:M stage:S tail:1   (0 nop, 1 rd)
    WREG  opcode:2 stage:S tail:1                            (0 nop, 1 set rw, 2 shift rw)
    IREG  opcode:2 stage:S tail:1                            (0 nop, 1 set ri, 2 set-shift ri, 3 shift ri)
    VMAC  opcode:2 stage:S tail:1                            (0 nop, 1 set rb, 2 mac)
    ACT   opcode:1 half:1 stage:S tail:1                     (half 0 = lanes 0-7)

with A = address bits (log2 local-buffer words), M = log2 AGU modes, S = stage bits;
padded to whole bytes (11 bytes with the default spec). A program file starts with a
header: magic ``NVEB``, version, A, M, S, instruction bytes, instruction count, the
setting registers (loop start/end, iterations, drain) and the mode table (toggle, inc).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from dnnmap.errors import InputFileError
from dnnmap.targets.nve.program import Instruction, MemField, MemOpcode, NveProgram, OpField, Settings
from dnnmap.targets.nve.spec import NveSpec

MAGIC = b"NVEB"
VERSION = 1
_HEADER = struct.Struct("<4sHBBBHIIIII H")
_MODE = struct.Struct("<II")


@dataclass(frozen=True)
class FieldWidths:
    address: int
    mode: int
    stage: int

    @classmethod
    def of(cls, spec: NveSpec) -> FieldWidths:
        return cls(spec.address_bits, max(1, (spec.agu_modes - 1).bit_length()), spec.stage_bits)

    def layout(self) -> list[tuple[str, str, int]]:
        """(field, part, bits) from the least significant bit."""
        mem = [("opcode", 2), ("offset", self.address), ("update", self.address), ("mode", self.mode),
               ("stage", self.stage), ("tail", 1)]
        reg = [("opcode", 2), ("stage", self.stage), ("tail", 1)]
        act = [("opcode", 1), ("arg", 1), ("stage", self.stage), ("tail", 1)]
        parts: list[tuple[str, str, int]] = []
        for name, spec in (("mema", mem), ("memb", mem), ("wreg", reg), ("ireg", reg), ("vmac", reg),
                           ("act", act)):
            parts.extend((name, p, b) for p, b in spec)
        return parts

    @property
    def instruction_bits(self) -> int:
        return sum(b for _, _, b in self.layout())

    @property
    def instruction_bytes(self) -> int:
        return -(-self.instruction_bits // 8)


def encode_instruction(inst: Instruction, layout: list[tuple[str, str, int]]) -> int:
    """The instruction as an integer, parts placed by ``layout`` (:meth:`FieldWidths.layout`)."""
    value, pos = 0, 0
    for name, part, bits in layout:
        v = int(getattr(getattr(inst, name), part))
        if not 0 <= v < (1 << bits):
            raise ValueError(f"{name}.{part}={v} does not fit {bits} bits")
        value |= v << pos
        pos += bits
    return value


def decode_instruction(value: int, layout: list[tuple[str, str, int]]) -> Instruction:
    """Inverse of :func:`encode_instruction`."""
    parts: dict[str, dict[str, int]] = {n: {} for n in ("mema", "memb", "wreg", "ireg", "vmac", "act")}
    pos = 0
    for name, part, bits in layout:
        parts[name][part] = (value >> pos) & ((1 << bits) - 1)
        pos += bits
    fields: dict[str, MemField | OpField] = {}
    for name, p in parts.items():
        tail = bool(p.pop("tail"))
        if name in ("mema", "memb"):
            fields[name] = MemField(MemOpcode(p["opcode"]), p["offset"], p["update"], p["mode"], p["stage"], tail)
        else:
            fields[name] = OpField(p["opcode"], p.get("arg", 0), p["stage"], tail)
    return Instruction(**fields)  # type: ignore[arg-type]


def encode_program(program: NveProgram, spec: NveSpec) -> bytes:
    w = FieldWidths.of(spec)
    s = program.settings
    head = _HEADER.pack(MAGIC, VERSION, w.address, w.mode, w.stage, w.instruction_bytes, program.size,
                        s.loop_start, s.loop_end, s.iterations, s.drain, len(s.modes))
    modes = b"".join(_MODE.pack(t, i) for t, i in s.modes)
    layout = w.layout()
    body = b"".join(encode_instruction(i, layout).to_bytes(w.instruction_bytes, "little")
                    for i in program.instructions)
    return head + modes + body


def decode_program(data: bytes, source: str = "<bytes>") -> NveProgram:
    """Inverse of :func:`encode_program`; InputFileError names ``source`` on malformed data."""
    if len(data) < _HEADER.size:
        raise InputFileError(f"{source}: too short for an NVE program header ({len(data)} bytes)")
    (magic, version, a_bits, m_bits, s_bits, ibytes, count, loop_start, loop_end, iterations, drain,
     n_modes) = _HEADER.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise InputFileError(f"{source}: not an NVE program (magic {magic!r}, version {version}; "
                             f"expected {MAGIC!r} version {VERSION})")
    widths = FieldWidths(a_bits, m_bits, s_bits)
    if ibytes != widths.instruction_bytes:
        raise InputFileError(f"{source}: header instruction size {ibytes} does not match its field widths")
    off = _HEADER.size
    modes = tuple(_MODE.unpack_from(data, off + i * _MODE.size) for i in range(n_modes))
    off += n_modes * _MODE.size
    if len(data) != off + count * ibytes:
        raise InputFileError(f"{source}: expected {count} instructions of {ibytes} bytes, file has "
                             f"{len(data) - off} bytes of instructions")
    if not 0 <= loop_start <= loop_end < max(count, 1):
        raise InputFileError(f"{source}: loop [{loop_start}, {loop_end}] outside the {count}-instruction program")
    layout = widths.layout()
    insts = tuple(decode_instruction(int.from_bytes(data[off + i * ibytes: off + (i + 1) * ibytes], "little"),
                                     layout) for i in range(count))
    return NveProgram(insts, Settings(loop_start, loop_end, iterations, drain, modes))
