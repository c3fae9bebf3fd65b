"""The NMP operations a TLT core executes (TSO Section III's intrinsics), their binary records and listing.

Every operation is one 64-byte little-endian record: opcode (u8), flags (u8), two reserved bytes,
then 15 signed 32-bit fields, of which each opcode uses the first few (:data:`FIELDS`; the rest are 0).
docs/nmp.md documents every field. Scratchpads: MB0 (IN), MB1 (W), MB2 (OUT, with a wide accumulator
per element beside it), BIAS (the core's 32-bit bias registers).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OPCODES = {"nmp_load": 1, "nmp_load3d": 2, "nmp_store3d": 3, "nmp_conv2d": 4, "nmp_pool": 5, "nmp_veop": 6,
           "nmp_activation": 7, "nmp_barrier": 8}
NAMES = {v: k for k, v in OPCODES.items()}
FIELDS: dict[str, tuple[str, ...]] = {
    "nmp_load": ("mb", "offset", "addr", "count", "elem_bytes"),
    "nmp_load3d": ("mb", "offset", "addr", "d0", "d1", "d2", "s0", "s1", "s2"),
    "nmp_store3d": ("mb", "offset", "addr", "d0", "d1", "d2", "s0", "s1", "s2"),
    "nmp_conv2d": ("tm", "tn", "tr", "tc", "kh", "kw", "sh", "sw", "dh", "dw", "w_ch0", "w_chans", "bias_off",
                   "shift"),
    "nmp_pool": ("tm", "tr", "tc", "kh", "kw", "sh", "sw", "mode", "recip", "recip_bits"),
    "nmp_veop": ("tm", "tr", "tc", "b_off", "shift"),
    "nmp_activation": ("count", "mode", "hi"),
    "nmp_barrier": ("scope",),
}
SIZE_FIELDS: dict[str, tuple[str, ...]] = {  # the fields of FIELDS that are extents: every one must be >= 1
    "nmp_load": ("count",),
    "nmp_load3d": ("d0", "d1", "d2"),
    "nmp_store3d": ("d0", "d1", "d2"),
    "nmp_conv2d": ("tm", "tn", "tr", "tc", "kh", "kw", "sh", "sw", "dh", "dw", "w_chans"),
    "nmp_pool": ("tm", "tr", "tc", "kh", "kw", "sh", "sw"),
    "nmp_veop": ("tm", "tr", "tc"),
    "nmp_activation": ("count",),
    "nmp_barrier": (),
}
FLAG_MULTICAST, FLAG_FIRST, FLAG_LAST, FLAG_DEPTHWISE = 1, 2, 4, 8
MB0, MB1, MB2, BIAS = 0, 1, 2, 3
MB_NAMES = ("MB0", "MB1", "MB2", "BIAS")
SCOPE_TLE, SCOPE_ALL = 0, 1
POOL_MAX, POOL_AVG = 0, 1
ACT_RELU, ACT_CLIP = 0, 1  # max(x, 0); min(max(x, 0), hi)
RECORD = struct.Struct("<BBH15i")


@dataclass(frozen=True)
class Op:
    """One operation: its name, flags and the fields of :data:`FIELDS` in order."""

    name: str
    fields: tuple[int, ...]
    flags: int = 0

    def __post_init__(self) -> None:
        if self.name not in FIELDS or len(self.fields) != len(FIELDS[self.name]):
            raise ValueError(f"{self.name}: expected fields {FIELDS.get(self.name)}, got {self.fields}")

    def __getattr__(self, key: str) -> int:
        try:
            return self.fields[FIELDS[self.name].index(key)]
        except ValueError:
            raise AttributeError(key) from None

    @classmethod
    def make(cls, name: str, flags: int = 0, **fields: int) -> "Op":
        return cls(name, tuple(int(fields[f]) for f in FIELDS[name]), flags)


def encode(op: Op) -> bytes:
    values = list(op.fields) + [0] * (15 - len(op.fields))
    return RECORD.pack(OPCODES[op.name], op.flags, 0, *values)


def decode(record: bytes, where: str) -> Op:
    """One record; ValueError naming ``where`` for an unknown opcode or flag, or non-zero unused fields."""
    code, flags, reserved, *values = RECORD.unpack(record)
    if code not in NAMES:
        raise ValueError(f"{where}: unknown opcode {code} (known: {', '.join(f'{v}={k}' for k, v in OPCODES.items())})")
    name = NAMES[code]
    n = len(FIELDS[name])
    if reserved or any(values[n:]) or flags & ~(FLAG_MULTICAST | FLAG_FIRST | FLAG_LAST | FLAG_DEPTHWISE):
        raise ValueError(f"{where}: {name} record has non-zero reserved bytes, unused fields or unknown flags")
    return Op(name, tuple(values[:n]), flags)


def mb_name(mb: int) -> str:
    """The scratchpad's name, or ``MB?<n>`` for a field value that names none (a damaged program)."""
    return MB_NAMES[mb] if 0 <= mb < len(MB_NAMES) else f"MB?{mb}"


def listing_line(op: Op) -> str:
    """One readable line (docs/nmp.md "Listing")."""
    f = op
    if op.name in ("nmp_load3d", "nmp_store3d"):
        mb = f"{mb_name(f.mb)}+{f.offset}"
        arrow = f"{mb} <- DRAM 0x{f.addr:06x}" if op.name == "nmp_load3d" else f"DRAM 0x{f.addr:06x} <- {mb}"
        tail = " multicast" if op.flags & FLAG_MULTICAST else ""
        return f"{op.name:<15}{arrow} box {f.d0}x{f.d1}x{f.d2} strides {f.s0},{f.s1},{f.s2}{tail}"
    if op.name == "nmp_load":
        return f"{op.name:<15}{mb_name(f.mb)}+{f.offset} <- DRAM 0x{f.addr:06x} {f.count} x {f.elem_bytes} B"
    if op.name == "nmp_conv2d":
        marks = "".join(m for m, b in (("depthwise ", FLAG_DEPTHWISE), ("first ", FLAG_FIRST), ("last ", FLAG_LAST))
                        if op.flags & b)
        return (f"{op.name:<15}OUT {f.tm}x{f.tr}x{f.tc} += W[{f.tm}x{f.w_ch0}:{f.w_ch0 + f.tn}/{f.w_chans}x{f.kh}x"
                f"{f.kw}] * IN[{f.tn}], stride {f.sh}x{f.sw}, dilation {f.dh}x{f.dw}, bias+{f.bias_off} "
                f"{marks}shift {f.shift}").rstrip()
    if op.name == "nmp_pool":
        kind = "max" if f.mode == POOL_MAX else f"avg (x{f.recip} >> {f.recip_bits})"
        return f"{op.name:<15}{kind} {f.kh}x{f.kw} stride {f.sh}x{f.sw} -> {f.tm}x{f.tr}x{f.tc}"
    if op.name == "nmp_veop":
        return f"{op.name:<15}add MB0+0, MB0+{f.b_off} -> MB2 {f.tm}x{f.tr}x{f.tc} shift {f.shift}"
    if op.name == "nmp_activation":
        return f"{op.name:<15}{'relu' if f.mode == ACT_RELU else f'clip 0..{f.hi}'} MB2[{f.count}]"
    return f"{op.name:<15}{'TLE' if f.scope == SCOPE_TLE else 'all cores (layer end)'}"
