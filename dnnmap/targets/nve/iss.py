"""Cycle-by-cycle instruction-set simulator of the Neuro Vector Engine, compiled with numba.

Semantics (NVE §3.1-3.4; every latency is a spec parameter; docs/nve.md §3):

* **Issue.** All six fields of an instruction (Table 2) issue in the same cycle and read
  the state at the start of the cycle; register results are visible the next cycle
  (register latency 1, §3.1), so a ``mac`` and the ``shift`` that replaces its operand
  may share a cycle.
* **Local buffer** (§3.1 ④). ``rd`` samples the word at issue; its data reach the port's
  output ``read_latency`` cycles later and stay until the next read's data arrive. ``wr``
  on MEMA pops the next word of the input stream (AXI-Stream); it becomes readable
  ``write_to_read_latency`` cycles later. Addresses are ``offset + update`` (Eq. 3.1);
  after every issue of a repetitive instruction the AGU advances ``update`` by ``inc``,
  wrapping to 0 when it would equal ``toggle`` (Eq. 3.2, §3.2), for modes >= 1.
* **Registers** (§3.1 ③). ``set rw`` loads 4 coefficients from port A; ``shift rw``
  moves them down; ``rw[0]`` is broadcast. ``set ri`` loads ri[0-7] from port A and
  ri[8-15] from port B; ``set-shift ri`` loads ri[16-22] from the first 7 pixels of port B
  and shifts the 23-register chain by one in the same cycle; ``shift ri`` shifts.
* **VMAC** (§3.1 ①). ``mac``: accu += rw[0] * ri[0-15]. ``set rb`` latches the
  accumulators for the activation stage (visible ``vmac_to_act_latency`` cycles later) and
  sets them to the bias rw[0]. Each lane is a two's-complement ``acc_bits`` register; the
  kernel adds in int64 and keeps the low ``acc_bits`` bits when latching, which equals
  wrapping on every addition (addition modulo 2^acc_bits).
* **ACT** (§3.1 ②). ``act`` takes lanes 0-7 or 8-15 of the latch, forms the 10-bit LUT
  index of each (arithmetic shift by ``act_shift``, saturation; docs/nve.md §3), reads the
  LUT memory and pushes one 8-pixel word to the output FIFO. The LUT contents are this
  module's own (:func:`act_lut`), not the NumPy reference's, so the bit-exact comparison
  checks the activation stage too.
* **Control FSM** (§3.3, Fig. 11). Init part once, the repetitive part ``iterations +
  drain`` times with stage predicates (an op of stage s in execution k works on iteration
  k - s and is enabled iff 0 <= k - s < iterations + tail), the final part once. The
  engine stalls as a whole (input stall) when a ``wr`` finds the input FIFO empty and
  (output stall) when an ``act`` finds the output FIFO full; stalls do not change
  semantics.

The program is loaded once into an int64 instruction table (:func:`load_program`, one row
per instruction, one column per field part); :func:`run_batch` executes it on several input
streams (the strips of a frame) in lockstep in a numba kernel, :func:`run_program` on one
(helpers inlined and no array slicing in the cycle loop, so the loop creates no array views).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from dnnmap.errors import DnnmapError
from dnnmap.targets.nve.program import (
    COLUMN, ActOpcode, IregOpcode, MemOpcode, NveProgram, Settings, VmacOpcode, WregOpcode, instruction_table,
)
from dnnmap.targets.nve.spec import NveSpec

# First column of each field in the instruction table (program.PARTS). Memory fields: opcode,
# offset, update, mode, stage, tail. Register and VMAC fields: opcode, stage, tail. ACT:
# opcode, half, stage, tail.
_MEMA, _MEMB, _WREG, _IREG, _VMAC, _ACT = (COLUMN[f, "opcode"] for f in ("mema", "memb", "wreg", "ireg", "vmac", "act"))
# Configuration vector of the kernel.
(_LANES, _PPW, _CPW, _PIXEL_BITS, _WEIGHT_BITS, _ACC_BITS, _EXTRA, _READ_LAT, _WRITE_LAT, _ACT_LAT, _WORDS,
 _ACT_SHIFT, _FIFO_DEPTH) = range(13)
# Error codes the kernel reports (code, instruction, cycle).
_PORT_A, _PORT_B, _EXHAUSTED, _MEMB_WRITE, _NO_LATCH, _ADDRESS = range(1, 7)
_MAX_WORD_BITS, _MAX_ACC_BITS = 64, 62  # the kernel keeps words and accumulators in int64


class IssError(DnnmapError):
    """The program is ill-formed for the engine (e.g. a register load with no port data)."""


@dataclass(frozen=True)
class StreamConfig:
    """Rates of the AXI streams around the engine (words per cycle) and the output FIFO depth."""

    input_words_per_cycle: float = 1.0
    output_words_per_cycle: float = 1.0
    output_fifo_depth: int = 16


@dataclass(frozen=True)
class RunStats:
    cycles: int  # wall-clock cycles including stalls
    issued: int  # instructions issued
    input_stalls: int
    output_stalls: int
    mac_ops: int  # vector mac operations executed (16 MACs each)

    def __add__(self, other: RunStats) -> RunStats:
        return RunStats(self.cycles + other.cycles, self.issued + other.issued,
                        self.input_stalls + other.input_stalls, self.output_stalls + other.output_stalls,
                        self.mac_ops + other.mac_ops)

    def macs_per_instruction(self, lanes: int) -> float:
        return lanes * self.mac_ops / self.issued if self.issued else 0.0

    def times(self, runs: int) -> RunStats:
        """The stats of ``runs`` runs like this one (a :func:`run_batch`)."""
        return RunStats(runs * self.cycles, runs * self.issued, runs * self.input_stalls, runs * self.output_stalls,
                        runs * self.mac_ops)


@dataclass(frozen=True)
class LoadedProgram:
    """A program in the instruction buffer: the instruction table, the AGU mode table and the settings."""

    table: np.ndarray  # int64 (instructions, len(PARTS)), program.instruction_table
    modes: np.ndarray  # int64 (modes, 2): (toggle, inc) of mode m at row m - 1
    settings: Settings

    def output_capacity(self) -> int:
        """Output words the program can produce at most (every ``act`` enabled in every execution)."""
        s = self.settings
        acts = self.table[:, _ACT] == ActOpcode.ACT
        in_loop = int(np.count_nonzero(acts[s.loop_start: s.loop_end + 1]))
        return int(np.count_nonzero(acts)) - in_loop + in_loop * (s.iterations + s.drain)


def load_program(program: NveProgram) -> LoadedProgram:
    """Encode ``program`` as the kernel's instruction table (the FSM's first step, NVE Fig. 11)."""
    table = instruction_table(program.instructions)
    modes = np.array(program.settings.modes, dtype=np.int64).reshape(-1, 2)
    used = table[:, [_MEMA + 3, _MEMB + 3]]
    if used.size and (used.min() < 0 or used.max() > len(modes)):
        raise IssError(f"AGU mode {int(used.max())} used but the mode table has {len(modes)} entries")
    return LoadedProgram(table, modes, program.settings)


@lru_cache(maxsize=16)
def act_lut(entries: int, scale: float, pixel_bits: int) -> np.ndarray:
    """The ACT unit's LUT memory (NVE §3.1 ②, Eq. 2.2): entry i = round(top · S((i - entries/2) / scale)).

    Built from the inverse sigmoid, as a table of output steps: the output rises from
    y - 1 to y at the first index whose S value reaches (y - 1/2) / top, i.e. at
    ceil(entries/2 + scale · logit((y - 1/2) / top)). The NumPy reference evaluates S
    forwards instead, so a fault in either table shows up as a mismatch.
    """
    top = (1 << pixel_bits) - 1
    level = (np.arange(1, top + 1) - 0.5) / top
    steps = np.ceil(entries // 2 + scale * np.log(level / (1.0 - level)))
    return np.searchsorted(steps, np.arange(entries), side="right").astype(np.int64)


def _config(spec: NveSpec, config: StreamConfig) -> np.ndarray:
    if spec.word_bits > _MAX_WORD_BITS or spec.acc_bits > _MAX_ACC_BITS or spec.act_shift >= _MAX_WORD_BITS:
        raise IssError(f"the ISS models words up to {_MAX_WORD_BITS} bits, accumulators up to {_MAX_ACC_BITS} "
                       f"bits and activation shifts below {_MAX_WORD_BITS} (spec: {spec.word_bits}, "
                       f"{spec.acc_bits} and {spec.act_shift})")
    return np.array([spec.lanes, spec.pixels_per_word, spec.coeffs_per_word, spec.pixel_bits, spec.weight_bits,
                     spec.acc_bits, spec.extra_image_registers, spec.read_latency, spec.write_to_read_latency,
                     spec.vmac_to_act_latency, spec.local_buffer_words, spec.act_shift, config.output_fifo_depth],
                    dtype=np.int64)


def run_batch(program: NveProgram | LoadedProgram, streams: np.ndarray, spec: NveSpec,
              config: StreamConfig = StreamConfig()) -> tuple[np.ndarray, RunStats]:
    """Execute ``program`` once (init, loop, final) per row of ``streams`` (uint64, runs x words).

    Stalls, AGU addresses and every error depend only on the program, the stream length and
    the stream rates, never on the data, so all runs execute the same control sequence: the
    kernel steps them in lockstep and decodes each instruction once. Returns the output
    words of every run (uint64, runs x words) and the stats of one run.
    """
    loaded = program if isinstance(program, LoadedProgram) else load_program(program)
    s = loaded.settings
    words = np.ascontiguousarray(streams, dtype=np.uint64).view(np.int64)
    out = np.zeros((len(words), loaded.output_capacity()), dtype=np.int64)
    stats = np.zeros(5, dtype=np.int64)
    error = np.zeros(3, dtype=np.int64)
    lut = act_lut(spec.act_lut_entries, spec.act_lut_scale, spec.pixel_bits)
    rates = np.array([config.input_words_per_cycle, config.output_words_per_cycle])
    produced, consumed = _execute(loaded.table, loaded.modes, s.loop_start, s.loop_end, s.iterations, s.drain,
                                  words, _config(spec, config), lut, rates, out, stats, error)
    if error[0]:
        raise IssError(_error_message(*(int(x) for x in error)))
    if consumed != words.shape[1]:
        raise IssError(f"program consumed {consumed} of {words.shape[1]} input words")
    return out[:, :produced].view(np.uint64), RunStats(*(int(x) for x in stats))


def run_program(program: NveProgram | LoadedProgram, input_words: Sequence[int] | np.ndarray, spec: NveSpec,
                config: StreamConfig = StreamConfig()) -> tuple[np.ndarray, RunStats]:
    """Execute ``program`` once on ``input_words``; return its output words (uint64) and stats."""
    out, stats = run_batch(program, np.asarray(input_words, dtype=np.uint64).reshape(1, -1), spec, config)
    return out[0], stats


def _error_message(code: int, instruction: int, cycle: int) -> str:
    return {
        _PORT_A: f"register load at cycle {cycle} finds no data on port A",
        _PORT_B: f"register load at cycle {cycle} finds no data on port B",
        _EXHAUSTED: f"input stream exhausted at instruction {instruction} (program expects more words)",
        _MEMB_WRITE: f"instruction {instruction}: MEMB supports only rd in this engine model",
        _NO_LATCH: f"act at cycle {cycle} before any set rb latched a result",
        _ADDRESS: f"instruction {instruction} at cycle {cycle}: address outside the local buffer",
    }[code]


@njit(cache=True, inline="always")
def _enabled(opcode: int, stage: int, tail: int, k: int, iterations: int) -> bool:
    """Stage predicate: outside the loop (k < 0) always; in execution k iff iteration k - stage exists."""
    return opcode != 0 and (k < 0 or 0 <= k - stage < iterations + tail)


@njit(cache=True, inline="always")
def _wrap(value: int, bits: int) -> int:
    """Two's-complement register of ``bits`` bits: keep the low bits, sign-extend the top one."""
    sign = 1 << (bits - 1)
    return ((value + sign) & ((sign << 1) - 1)) - sign


@njit(cache=True, inline="always")
def _field(word: int, index: int, bits: int) -> int:
    """Unsigned sub-word ``index`` of ``bits`` bits (little-endian)."""
    return (word >> (bits * index)) & ((1 << bits) - 1)


@njit(cache=True, inline="always")
def _advance(update: int, mode: int, modes: np.ndarray) -> int:
    """The AGU step after an issue (Eq. 3.2); mode 0 keeps a fixed address."""
    if mode == 0:
        return update
    nxt = update + modes[mode - 1, 1]
    return 0 if nxt == modes[mode - 1, 0] else nxt


@njit(cache=True, inline="always")
def _activate(latch: np.ndarray, run: int, half: int, cfg: np.ndarray, lut: np.ndarray) -> int:
    """One ``act``: 8 lanes of the latch -> saturated 10-bit LUT index -> 8 packed output pixels."""
    ppw = cfg[_PPW]
    centre = lut.shape[0] // 2
    word = 0
    for j in range(ppw):
        index = min(max(latch[run, half * ppw + j] >> cfg[_ACT_SHIFT], -centre), centre - 1) + centre
        word |= lut[index] << (cfg[_PIXEL_BITS] * j)
    return word


@njit(cache=True, inline="always")
def _set_ri(ri: np.ndarray, run: int, opcode: int, port_a: int, port_b: int, cfg: np.ndarray) -> None:
    """IREG: set ri (ri[0-7] <- port A, ri[8-15] <- port B), set-shift ri or shift ri."""
    ppw, bits, last = cfg[_PPW], cfg[_PIXEL_BITS], ri.shape[1] - 1
    if opcode == IregOpcode.SET:
        for j in range(ppw):
            ri[run, j] = _field(port_a, j, bits)
            ri[run, ppw + j] = _field(port_b, j, bits)
        return
    for j in range(last):
        ri[run, j] = ri[run, j + 1]
    ri[run, last] = 0
    if opcode == IregOpcode.SETSH:
        for j in range(cfg[_EXTRA]):
            ri[run, cfg[_LANES] - 1 + j] = _field(port_b, j, bits)


@njit(cache=True, inline="always")
def _set_rw(rw: np.ndarray, run: int, opcode: int, port_a: int, cfg: np.ndarray) -> None:
    """WREG: set rw (signed coefficients from port A) or shift rw."""
    last = rw.shape[1] - 1
    if opcode == WregOpcode.SET:
        for j in range(last + 1):
            rw[run, j] = _wrap(_field(port_a, j, cfg[_WEIGHT_BITS]), cfg[_WEIGHT_BITS])
        return
    for j in range(last):
        rw[run, j] = rw[run, j + 1]
    rw[run, last] = 0


@njit(cache=True, inline="always")
def _ring(latency: int) -> int:
    """Size of a ring of pending results: the smallest power of two above ``latency``."""
    size = 1
    while size <= latency:
        size <<= 1
    return size


@njit(cache=True)
def _execute(table: np.ndarray, modes: np.ndarray, loop_start: int, loop_end: int, iterations: int, drain: int,
             words: np.ndarray, cfg: np.ndarray, lut: np.ndarray, rates: np.ndarray, out: np.ndarray,
             stats: np.ndarray, error: np.ndarray) -> tuple[int, int]:
    """Run init, loop and final part once per row of ``words`` in lockstep; fill ``out``/``stats``/``error``;
    return (output words per run, input words used per run)."""
    lanes, acc_bits, runs = cfg[_LANES], cfg[_ACC_BITS], words.shape[0]
    n = table.shape[0]
    body = loop_end - loop_start + 1
    executions = iterations + drain
    # Pending results in rings indexed by the cycle they land in (latencies are fixed; sizes powers of two)
    ring_mem, ring_port, ring_latch = _ring(cfg[_WRITE_LAT]), _ring(cfg[_READ_LAT]), _ring(cfg[_ACT_LAT])
    # Control state is shared by the runs; data state has a leading run axis.
    mem = np.zeros((runs, cfg[_WORDS]), np.int64)
    mem_due = np.full(ring_mem, -1, np.int64)
    mem_addr = np.zeros(ring_mem, np.int64)
    mem_value = np.zeros((runs, ring_mem), np.int64)
    port_due = np.full((2, ring_port), -1, np.int64)
    port_value = np.zeros((runs, 2, ring_port), np.int64)
    port = np.zeros((runs, 2), np.int64)
    port_valid = np.zeros(2, np.bool_)
    latch_due = np.full(ring_latch, -1, np.int64)
    latch_ring = np.zeros((runs, ring_latch, lanes), np.int64)
    latch = np.zeros((runs, lanes), np.int64)
    latch_valid = False
    rw = np.zeros((runs, cfg[_CPW]), np.int64)
    ri = np.zeros((runs, lanes + cfg[_EXTRA]), np.int64)
    accu = np.zeros((runs, lanes), np.int64)
    update = np.empty((n, 2), np.int64)  # the AGU's update parts of MEMA and MEMB
    update[:, 0] = table[:, _MEMA + 2]
    update[:, 1] = table[:, _MEMB + 2]
    in_pos = in_arrived = produced = fifo = 0
    in_credit = out_credit = 0.0
    tau = wall = in_stalls = out_stalls = mac_ops = 0
    total = loop_start + executions * body + (n - loop_end - 1)
    for t in range(total):
        # position in the FSM (Fig. 11): instruction i, loop execution k (-1 outside the loop)
        if t < loop_start:
            i, k = t, -1
        elif t < loop_start + executions * body:
            k, i = divmod(t - loop_start, body)
            i += loop_start
        else:
            i, k = t - executions * body + body, -1
        ma_on = _enabled(table[i, _MEMA], table[i, _MEMA + 4], table[i, _MEMA + 5], k, iterations)
        mb_on = _enabled(table[i, _MEMB], table[i, _MEMB + 4], table[i, _MEMB + 5], k, iterations)
        act_on = _enabled(table[i, _ACT], table[i, _ACT + 2], table[i, _ACT + 3], k, iterations)
        writes = ma_on and table[i, _MEMA] == MemOpcode.WR
        while True:  # stall until the streams allow this instruction to issue
            in_credit += rates[0]
            while in_credit >= 1 and in_arrived < words.shape[1]:
                in_arrived += 1
                in_credit -= 1
            out_credit += rates[1]
            while out_credit >= 1 and fifo > 0:
                fifo -= 1
                out_credit -= 1
            out_credit = min(out_credit, 1.0)
            wall += 1
            if writes and in_pos >= in_arrived:
                if in_arrived >= words.shape[1]:
                    error[0], error[1], error[2] = _EXHAUSTED, i, tau
                    return produced, in_pos
                in_stalls += 1
                continue
            if act_on and fifo >= cfg[_FIFO_DEPTH]:
                out_stalls += 1
                continue
            break
        # results that land in this cycle
        slot = tau & (ring_mem - 1)
        if mem_due[slot] == tau:
            for r in range(runs):
                mem[r, mem_addr[slot]] = mem_value[r, slot]
        slot = tau & (ring_port - 1)
        for p in range(2):
            if port_due[p, slot] == tau:
                for r in range(runs):
                    port[r, p] = port_value[r, p, slot]
                port_valid[p] = True
        slot = tau & (ring_latch - 1)
        if latch_due[slot] == tau:
            for r in range(runs):
                for lane in range(lanes):
                    latch[r, lane] = latch_ring[r, slot, lane]
            latch_valid = True
        # memory fields
        for p in range(2):
            base = _MEMA if p == 0 else _MEMB
            if not (ma_on if p == 0 else mb_on):
                continue
            addr = table[i, base + 1] + (update[i, p] if k >= 0 else table[i, base + 2])
            if addr < 0 or addr >= mem.shape[1]:
                error[0], error[1], error[2] = _ADDRESS, i, tau
                return produced, in_pos
            if table[i, base] == MemOpcode.RD:
                land = (tau + cfg[_READ_LAT]) & (ring_port - 1)
                port_due[p, land] = tau + cfg[_READ_LAT]
                for r in range(runs):
                    port_value[r, p, land] = mem[r, addr]
            elif p == 1:
                error[0], error[1], error[2] = _MEMB_WRITE, i, tau
                return produced, in_pos
            else:
                land = (tau + cfg[_WRITE_LAT]) & (ring_mem - 1)
                mem_due[land], mem_addr[land] = tau + cfg[_WRITE_LAT], addr
                for r in range(runs):
                    mem_value[r, land] = words[r, in_pos]
                in_pos += 1
        # VMAC first: it reads rw[0] and ri[0-15] as they are at the start of the cycle
        if _enabled(table[i, _VMAC], table[i, _VMAC + 1], table[i, _VMAC + 2], k, iterations):
            if table[i, _VMAC] == VmacOpcode.SET_RB:
                land = (tau + cfg[_ACT_LAT]) & (ring_latch - 1)
                latch_due[land] = tau + cfg[_ACT_LAT]
                for r in range(runs):
                    for lane in range(lanes):
                        latch_ring[r, land, lane] = _wrap(accu[r, lane], acc_bits)
                        accu[r, lane] = rw[r, 0]
            else:
                for r in range(runs):
                    w0 = rw[r, 0]
                    for lane in range(lanes):
                        accu[r, lane] += w0 * ri[r, lane]
                mac_ops += 1
        if _enabled(table[i, _WREG], table[i, _WREG + 1], table[i, _WREG + 2], k, iterations):
            if not port_valid[0] and table[i, _WREG] == WregOpcode.SET:
                error[0], error[1], error[2] = _PORT_A, i, tau
                return produced, in_pos
            for r in range(runs):
                _set_rw(rw, r, table[i, _WREG], port[r, 0], cfg)
        if _enabled(table[i, _IREG], table[i, _IREG + 1], table[i, _IREG + 2], k, iterations):
            op = table[i, _IREG]
            if not port_valid[0] and op == IregOpcode.SET:
                error[0], error[1], error[2] = _PORT_A, i, tau
                return produced, in_pos
            if not port_valid[1] and (op == IregOpcode.SET or op == IregOpcode.SETSH):
                error[0], error[1], error[2] = _PORT_B, i, tau
                return produced, in_pos
            for r in range(runs):
                _set_ri(ri, r, op, port[r, 0], port[r, 1], cfg)
        if act_on:
            if not latch_valid:
                error[0], error[1], error[2] = _NO_LATCH, i, tau
                return produced, in_pos
            for r in range(runs):
                out[r, produced] = _activate(latch, r, table[i, _ACT + 1], cfg, lut)
            produced += 1
            fifo += 1
        if k >= 0:  # AGU: rewrite the address fields of repetitive instructions (Eq. 3.2)
            update[i, 0] = _advance(update[i, 0], table[i, _MEMA + 3], modes)
            update[i, 1] = _advance(update[i, 1], table[i, _MEMB + 3], modes)
        tau += 1
    stats[0], stats[1], stats[2], stats[3], stats[4] = wall, tau, in_stalls, out_stalls, mac_ops
    return produced, in_pos
