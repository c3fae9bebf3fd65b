"""Functional NMP simulator: executes the per-core programs on a byte-addressed DRAM image.

Independent of the references on purpose: it has its own tile arithmetic (windows of the scratchpad
tiles, its own rounding shift and saturation) and never calls dnnmap.sim or the NumPy reference.

- Machine: #TLE x #TLT cores, each with MB0 / MB1 / MB2 of the architecture's byte capacities, a wide
  accumulator per MB2 element and :data:`BIAS_ENTRIES` 32-bit bias registers. An operation whose tile
  does not fit its scratchpad, a DRAM access outside the image, a store into the weights segment or an
  unknown field value stops the run with :class:`NmpExecutionError` naming layer, core and operation.
- Order: layer by layer; within a layer the TLEs are independent (they meet at the closing all-core
  barrier); the TLTs of a TLE run barrier segment by barrier segment (all TLTs' segment k before any
  segment k+1), so a multicast issued by one TLT lands in every TLT's MB0 at that point.
- DRAM log: every load and store is logged with the byte runs it touched (addresses computed from the
  operation's fields). Bursts are counted from the logged runs: ``bursts`` = sum ceil(run / BURST)
  (TSO Alg. 4's rule) and ``aligned_bursts`` = BURST-aligned blocks touched (what a DRAM would open).
- Time (TSO's machine: no MAC/LOAD overlap, one shared DRAM): a layer takes the busiest core's compute
  cycles / f plus the sum over its transfers of bytes / BW + bursts x CAS. Compute cycles per operation:
  conv T_N T_M ceil(T_R T_C Kh Kw / #MACs) (TSO Eq. 7), pooling T_M ceil(T_R T_C Kh Kw / #MACs), add
  T_M ceil(T_R T_C / #MACs); activation, requantization and barriers take no time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dnnmap.errors import DnnmapError
from dnnmap.targets.nmp.generate import LayerProgram
from dnnmap.targets.nmp.isa import (ACT_CLIP, ACT_RELU, BIAS, FLAG_DEPTHWISE, FLAG_FIRST, FLAG_LAST, FLAG_MULTICAST, MB0, MB1, MB2, MB_NAMES,
                                    FIELDS, POOL_AVG, POOL_MAX, SCOPE_ALL, SCOPE_TLE, Op,
                                    listing_line)

BIAS_ENTRIES = 1024
MAX_SHIFT = 48  # requantization shifts of 8/16-bit data with 32-bit biases stay far below; 2**48 fits int64 sums
SIGNED_FIELDS = ("shift", "hi")  # every other field is a size, offset, address, stride, mode or count


class NmpExecutionError(DnnmapError):
    """A program broke a rule of the machine (capacity, address, field); the message names where."""


@dataclass(frozen=True)
class NmpMachine:
    """The constants the simulator enforces and times with (from the architecture, docs/nmp.md)."""

    tle: int
    tlt: int
    macs: int
    freq_hz: float
    bits: int
    mb_bytes: tuple[int, int, int]
    bw_bytes_per_s: float
    burst_bytes: int
    cas_s: float

    @property
    def elem_bytes(self) -> int:
        return self.bits // 8


@dataclass(frozen=True)
class Transfer:
    """One logged DRAM access: which op of which core, what it moved and its byte runs."""

    layer: str
    tle: int
    tlt: int
    op_index: int
    tensor: str  # IN, W, OUT or BIAS
    multicast: bool
    runs: tuple[tuple[int, int], ...]  # (byte address, bytes)
    bursts: int
    aligned_bursts: int

    @property
    def nbytes(self) -> int:
        return sum(n for _, n in self.runs)


@dataclass
class LayerStats:
    name: str
    core_cycles: list[int]
    transfers: list[Transfer] = field(default_factory=list)

    def mac_seconds(self, m: NmpMachine) -> float:
        """The busiest core's compute time."""
        return max(self.core_cycles) / m.freq_hz

    def totals(self, tensor: str | None = None) -> tuple[int, int, int, int]:
        """(transfers, bytes, bursts, aligned bursts) of one tensor kind or all."""
        ts = [t for t in self.transfers if tensor in (None, t.tensor)]
        return (len(ts), sum(t.nbytes for t in ts), sum(t.bursts for t in ts), sum(t.aligned_bursts for t in ts))


def _sat(v: np.ndarray, bits: int) -> np.ndarray:
    hi = 2 ** (bits - 1)
    return np.minimum(np.maximum(v, -hi), hi - 1)


def _round_shift(v: np.ndarray, s: int) -> np.ndarray:
    """Division by 2**s rounded half up (s > 0), multiplication by 2**-s otherwise."""
    if s <= 0:
        return v * (2 ** -s)
    return np.floor_divide(v + 2 ** (s - 1), 2 ** s)


class _Core:
    def __init__(self, m: NmpMachine) -> None:
        eb = m.elem_bytes
        self.mb = [np.zeros(m.mb_bytes[i] // eb, dtype=np.int64) for i in range(3)]
        self.acc = np.zeros(m.mb_bytes[2] // eb, dtype=np.int64)
        self.bias = np.zeros(BIAS_ENTRIES, dtype=np.int64)
        self.cycles = 0


class NmpSimulator:
    """Executes :class:`LayerProgram` lists on a DRAM image (module docstring)."""

    def __init__(self, m: NmpMachine, dram: np.ndarray, read_only_from: int) -> None:
        self.m, self.dram, self.read_only_from = m, dram, read_only_from
        self.cores = [_Core(m) for _ in range(m.tle * m.tlt)]

    # ---- DRAM -------------------------------------------------------------------
    def _addresses(self, addr: int, dims: tuple[int, int, int], strides: tuple[int, int, int], eb: int,
                   where: str) -> np.ndarray:
        if min(dims) < 1 or min(strides) < 0 or addr < 0:
            raise NmpExecutionError(f"{where}: box {dims} / strides {strides} / address {addr} must be positive")
        if math.prod(dims) * eb > len(self.dram):
            raise NmpExecutionError(f"{where}: a box of {dims} elements is larger than the {len(self.dram)}-byte "
                                    "DRAM image")
        idx = (np.arange(dims[0])[:, None, None] * strides[0] + np.arange(dims[1])[None, :, None] * strides[1]
               + np.arange(dims[2])[None, None, :] * strides[2]).ravel()
        ea = addr + idx * eb
        if ea.max() + eb > len(self.dram):
            raise NmpExecutionError(f"{where}: DRAM access up to byte {int(ea.max()) + eb} beyond the "
                                    f"{len(self.dram)}-byte image")
        return ea

    def _read(self, ea: np.ndarray, eb: int) -> np.ndarray:
        raw = self.dram[ea[:, None] + np.arange(eb)[None, :]]
        return np.ascontiguousarray(raw).view(f"<i{eb}").ravel().astype(np.int64)

    def _write(self, ea: np.ndarray, eb: int, values: np.ndarray) -> None:
        raw = values.astype(f"<i{eb}").view(np.uint8).reshape(-1, eb)
        self.dram[ea[:, None] + np.arange(eb)[None, :]] = raw

    def _log(self, stats: LayerStats, ea: np.ndarray, eb: int, e: int, t: int, i: int, tensor: str,
             multicast: bool) -> None:
        a = np.unique(ea)
        cut = np.flatnonzero(np.diff(a) != eb) + 1
        starts, ends = a[np.r_[0, cut]], a[np.r_[cut - 1, len(a) - 1]] + eb
        b = self.m.burst_bytes
        runs = tuple((int(s), int(x - s)) for s, x in zip(starts, ends, strict=True))
        bursts = int(np.sum(-(-(ends - starts) // b)))
        aligned = int(np.sum((ends - 1) // b - starts // b + 1))
        stats.transfers.append(Transfer(stats.name, e, t, i, tensor, multicast, runs, bursts, aligned))

    # ---- execution ----------------------------------------------------------------
    def run_layer(self, prog: LayerProgram) -> LayerStats:
        m = self.m
        if len(prog.cores) != m.tle * m.tlt:
            raise NmpExecutionError(f"layer {prog.layer!r}: {len(prog.cores)} core programs, the machine has "
                                    f"{m.tle * m.tlt}")
        for core in self.cores:
            core.cycles = 0
        stats = LayerStats(prog.layer, [])
        for e in range(m.tle):
            segments = [self._segments(prog, e, t) for t in range(m.tlt)]
            if len({len(s) for s in segments}) != 1:
                raise NmpExecutionError(f"layer {prog.layer!r} TLE {e}: its TLTs reach different numbers of TLE "
                                        f"barriers ({[len(s) - 1 for s in segments]}): the TLE would deadlock")
            for k in range(len(segments[0])):
                for t in range(m.tlt):
                    for i, op in segments[t][k]:
                        self._execute(op, e, t, i, stats, prog.layer)
        stats.core_cycles = [c.cycles for c in self.cores]
        return stats

    def _segments(self, prog: LayerProgram, e: int, t: int) -> list[list[tuple[int, Op]]]:
        ops = prog.cores[e * self.m.tlt + t]
        where = f"layer {prog.layer!r} TLE {e} TLT {t}"
        if not ops or ops[-1].name != "nmp_barrier" or ops[-1].scope != SCOPE_ALL:
            raise NmpExecutionError(f"{where}: a core program must end with the all-core barrier")
        segs: list[list[tuple[int, Op]]] = [[]]
        for i, op in enumerate(ops[:-1]):
            if op.name == "nmp_barrier":
                if op.scope != SCOPE_TLE:
                    raise NmpExecutionError(f"{where} op {i}: barrier scope {op.scope}; only the last op may be the "
                                            "all-core barrier")
                segs.append([])
            else:
                segs[-1].append((i, op))
        return segs

    def _fits(self, n: int, mb: int, where: str, what: str) -> None:
        cap = len(self.cores[0].mb[mb])
        if n > cap:
            raise NmpExecutionError(f"{where}: {what} needs {n * self.m.elem_bytes} B of {MB_NAMES[mb]}, which holds "
                                    f"{cap * self.m.elem_bytes} B (scratchpad overflow)")

    def _execute(self, op: Op, e: int, t: int, i: int, stats: LayerStats, layer: str) -> None:
        m, core = self.m, self.cores[e * self.m.tlt + t]
        where = f"layer {layer!r} TLE {e} TLT {t} op {i} ({listing_line(op).split()[0]})"
        eb = m.elem_bytes
        for name, value in zip(FIELDS[op.name], op.fields):
            if name == "shift" and abs(value) > MAX_SHIFT:
                raise NmpExecutionError(f"{where}: shift {value} outside -{MAX_SHIFT}..{MAX_SHIFT}")
            if name not in SIGNED_FIELDS and value < 0:
                raise NmpExecutionError(f"{where}: field {name} = {value} must be >= 0")
        if op.name == "nmp_load":
            if op.mb != BIAS or op.elem_bytes != 4 or op.offset < 0 or op.offset + op.count > BIAS_ENTRIES:
                raise NmpExecutionError(f"{where}: nmp_load fills the {BIAS_ENTRIES} 32-bit BIAS registers only")
            ea = self._addresses(op.addr, (op.count, 1, 1), (1, 1, 1), 4, where)
            core.bias[op.offset:op.offset + op.count] = self._read(ea, 4)
            self._log(stats, ea, 4, e, t, i, "BIAS", False)
        elif op.name == "nmp_load3d":
            if op.mb not in (MB0, MB1):
                raise NmpExecutionError(f"{where}: nmp_load3d loads into MB0 or MB1, not {op.mb}")
            dims = (op.d0, op.d1, op.d2)
            ea = self._addresses(op.addr, dims, (op.s0, op.s1, op.s2), eb, where)
            self._fits(op.offset + len(ea), op.mb, where, f"a {dims} tile at offset {op.offset}")
            values = self._read(ea, eb)
            multicast = bool(op.flags & FLAG_MULTICAST)
            targets = self.cores[e * m.tlt:(e + 1) * m.tlt] if multicast else [core]
            for c in targets:
                c.mb[op.mb][op.offset:op.offset + len(ea)] = values
            self._log(stats, ea, eb, e, t, i, "IN" if op.mb == MB0 else "W", multicast)
        elif op.name == "nmp_store3d":
            if op.mb != MB2:
                raise NmpExecutionError(f"{where}: nmp_store3d stores from MB2 only")
            ea = self._addresses(op.addr, (op.d0, op.d1, op.d2), (op.s0, op.s1, op.s2), eb, where)
            self._fits(op.offset + len(ea), MB2, where, "the stored tile")
            if ea.max() + eb > self.read_only_from:
                raise NmpExecutionError(f"{where}: store into the read-only weights segment (from byte "
                                        f"{self.read_only_from})")
            self._write(ea, eb, core.mb[MB2][op.offset:op.offset + len(ea)])
            self._log(stats, ea, eb, e, t, i, "OUT", False)
        elif op.name == "nmp_conv2d":
            self._conv(op, core, where)
        elif op.name == "nmp_pool":
            self._pool(op, core, where)
        elif op.name == "nmp_veop":
            n = op.tm * op.tr * op.tc
            if op.b_off < n:
                raise NmpExecutionError(f"{where}: the second operand (offset {op.b_off}) overlaps the first ({n})")
            self._fits(op.b_off + n, MB0, where, "two add operands")
            self._fits(n, MB2, where, "the add result")
            s = core.mb[MB0][:n] + core.mb[MB0][op.b_off:op.b_off + n]
            core.mb[MB2][:n] = _sat(_round_shift(s, op.shift), m.bits)
            core.cycles += op.tm * -(-op.tr * op.tc // m.macs)
        elif op.name == "nmp_activation":
            if op.mode not in (ACT_RELU, ACT_CLIP):
                raise NmpExecutionError(f"{where}: activation mode {op.mode}; relu ({ACT_RELU}) or clip ({ACT_CLIP})")
            self._fits(op.count, MB2, where, "the activated tile")
            tile = core.mb[MB2][:op.count]
            tile[tile < 0] = 0
            if op.mode == ACT_CLIP:
                tile[tile > op.hi] = op.hi

    def _window(self, tile: np.ndarray, op: Op, r: int, s: int) -> np.ndarray:
        dh, dw = (op.dh, op.dw) if op.name == "nmp_conv2d" else (1, 1)
        return tile[:, r * dh: r * dh + (op.tr - 1) * op.sh + 1: op.sh, s * dw: s * dw + (op.tc - 1) * op.sw + 1: op.sw]

    def _conv(self, op: Op, core: _Core, where: str) -> None:
        m = self.m
        if min(op.tm, op.tn, op.tr, op.tc, op.kh, op.kw, op.sh, op.sw, op.dh, op.dw) < 1:
            raise NmpExecutionError(f"{where}: tile sizes, kernel, stride and dilation must be >= 1")
        th, tl = (op.tr - 1) * op.sh + op.dh * (op.kh - 1) + 1, (op.tc - 1) * op.sw + op.dw * (op.kw - 1) + 1
        n_out = op.tm * op.tr * op.tc
        self._fits(op.tm * op.w_chans * op.kh * op.kw, MB1, where, "the weight tile")
        self._fits(n_out, MB2, where, "the output tile")
        if op.w_ch0 < 0 or op.w_ch0 + op.tn > op.w_chans or op.bias_off < 0 or op.bias_off + op.tm > BIAS_ENTRIES:
            raise NmpExecutionError(f"{where}: weight channels {op.w_ch0}+{op.tn} of {op.w_chans} or bias registers "
                                    f"{op.bias_off}+{op.tm} out of range")
        depthwise = bool(op.flags & FLAG_DEPTHWISE)
        if depthwise and (op.tn, op.w_chans) != (1, 1):
            raise NmpExecutionError(f"{where}: a depthwise nmp_conv2d has tn = w_chans = 1")
        channels = op.tm if depthwise else op.tn  # depthwise: input channel m feeds output channel m only
        self._fits(channels * th * tl, MB0, where, f"the {channels}x{th}x{tl} input tile")
        x = core.mb[MB0][:channels * th * tl].reshape(channels, th, tl)
        w = core.mb[MB1][:op.tm * op.w_chans * op.kh * op.kw].reshape(op.tm, op.w_chans, op.kh, op.kw)
        w = w[:, op.w_ch0:op.w_ch0 + op.tn]
        acc = core.acc[:n_out].reshape(op.tm, op.tr * op.tc)
        if op.flags & FLAG_FIRST:
            acc[:] = core.bias[op.bias_off:op.bias_off + op.tm, None]
        for r in range(op.kh):
            for s in range(op.kw):
                window = self._window(x, op, r, s).reshape(channels, -1)
                acc += w[:, 0, r, s, None] * window if depthwise else w[:, :, r, s] @ window
        if op.flags & FLAG_LAST:
            core.mb[MB2][:n_out] = _sat(_round_shift(acc.ravel(), op.shift), m.bits)
        core.cycles += op.tn * op.tm * -(-op.tr * op.tc * op.kh * op.kw // m.macs)

    def _pool(self, op: Op, core: _Core, where: str) -> None:
        m = self.m
        if min(op.tm, op.tr, op.tc, op.kh, op.kw, op.sh, op.sw) < 1 or op.mode not in (POOL_MAX, POOL_AVG):
            raise NmpExecutionError(f"{where}: tile sizes, window and stride must be >= 1, mode max or avg")
        th, tl = (op.tr - 1) * op.sh + op.kh, (op.tc - 1) * op.sw + op.kw
        n_out = op.tm * op.tr * op.tc
        self._fits(op.tm * th * tl, MB0, where, f"the {op.tm}x{th}x{tl} input tile")
        self._fits(n_out, MB2, where, "the output tile")
        x = core.mb[MB0][:op.tm * th * tl].reshape(op.tm, th, tl)
        windows = [self._window(x, op, r, s) for r in range(op.kh) for s in range(op.kw)]
        if op.mode == POOL_MAX:
            y = np.max(np.stack(windows), axis=0)
        else:
            y = _sat(_round_shift(np.sum(np.stack(windows), axis=0) * op.recip, op.recip_bits), m.bits)
        core.mb[MB2][:n_out] = y.ravel()
        core.cycles += op.tm * -(-op.tr * op.tc * op.kh * op.kw // m.macs)
