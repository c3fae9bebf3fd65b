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

import numpy as np

from dnnmap.errors import InputFileError
from dnnmap.targets.nve.program import PARTS, NveProgram, Settings, instruction_table, instructions_from_table
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
        """(field, part, bits) from the least significant bit, in :data:`PARTS` order."""
        bits = {"offset": self.address, "update": self.address, "mode": self.mode, "stage": self.stage,
                "tail": 1, "arg": 1, "opcode": 2}
        return [(name, part, 1 if (name, part) == ("act", "opcode") else bits[part]) for name, part in PARTS]

    @property
    def instruction_bits(self) -> int:
        return sum(b for _, _, b in self.layout())

    @property
    def instruction_bytes(self) -> int:
        return -(-self.instruction_bits // 8)


def _encode_instructions(table: np.ndarray, widths: FieldWidths) -> bytes:
    """Pack every row of an :func:`instruction_table` into ``instruction_bytes`` little-endian bytes."""
    layout = widths.layout()
    bits = np.array([b for _, _, b in layout])
    outside = (table < 0) | (table >= 1 << bits)
    if outside.any():
        row, col = np.argwhere(outside)[0]
        name, part, width = layout[col]
        raise ValueError(f"{name}.{part}={table[row, col]} does not fit {width} bits")
    planes = [(table[:, [c]] >> np.arange(b)) & 1 for c, b in enumerate(bits)]
    planes.append(np.zeros((len(table), 8 * widths.instruction_bytes - int(bits.sum())), dtype=np.int64))
    return np.packbits(np.concatenate(planes, axis=1).astype(np.uint8), axis=1, bitorder="little").tobytes()


def _decode_instructions(body: bytes, count: int, widths: FieldWidths) -> np.ndarray:
    """Inverse of :func:`_encode_instructions`: the instruction table of ``count`` encoded instructions."""
    rows = np.frombuffer(body, dtype=np.uint8).reshape(count, widths.instruction_bytes)
    planes = np.unpackbits(rows, axis=1, bitorder="little").astype(np.int64)
    bits = [b for _, _, b in widths.layout()]
    start = np.cumsum([0, *bits])
    return np.stack([(planes[:, start[c]: start[c] + b] << np.arange(b)).sum(axis=1) for c, b in enumerate(bits)],
                    axis=1).reshape(count, len(bits))


def encode_program(program: NveProgram, spec: NveSpec) -> bytes:
    w = FieldWidths.of(spec)
    s = program.settings
    head = _HEADER.pack(MAGIC, VERSION, w.address, w.mode, w.stage, w.instruction_bytes, program.size,
                        s.loop_start, s.loop_end, s.iterations, s.drain, len(s.modes))
    modes = b"".join(_MODE.pack(t, i) for t, i in s.modes)
    return head + modes + _encode_instructions(instruction_table(program.instructions), w)


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
    insts = instructions_from_table(_decode_instructions(data[off:], count, widths))
    return NveProgram(insts, Settings(loop_start, loop_end, iterations, drain, modes))
