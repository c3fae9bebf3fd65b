"""Cycle-by-cycle instruction-set simulator of the Neuro Vector Engine.

Semantics (NVE §2.2-2.6; every latency is a spec parameter):

* **Issue.** All six fields of an instruction issue in the same cycle and read the state
  at the start of the cycle; register results are visible the next cycle (register
  latency 1), so a ``mac`` and the ``shift`` that replaces its operand may share a cycle.
* **Local buffer.** ``rd`` samples the word at issue; its data reach the port's output
  ``read_latency`` cycles later and stay until the next read's data arrive. ``wr`` on
  MEMA pops the next word of the input stream (AXI-Stream); it becomes readable
  ``write_to_read_latency`` cycles later. Addresses are ``offset + update`` (Eq. 3.1);
  after every issue of a repetitive instruction the AGU advances ``update`` by ``inc``,
  wrapping to 0 when it would equal ``toggle`` (Eq. 3.2), for modes >= 1.
* **Registers.** ``set rw`` loads 4 coefficients from port A; ``shift rw`` moves them
  down; ``rw[0]`` is broadcast. ``set ri`` loads ri[0-7] from port A and ri[8-15] from
  port B; ``set-shift ri`` loads ri[16-22] from the first 7 pixels of port B and shifts
  the 23-register chain by one in the same cycle; ``shift ri`` shifts.
* **VMAC/ACT.** ``mac``: accu += rw[0] * ri[0-15]. ``set rb`` latches the accumulator for
  the activation stage (visible ``vmac_to_act_latency`` cycles later) and sets it to the
  bias rw[0]. ``act`` looks up lanes 0-7 or 8-15 of the latch in the LUT and pushes one
  8-pixel word to the output FIFO.
* **Control FSM** (Fig. 11). Init part once, the repetitive part ``iterations + drain``
  times with stage predicates (an op of stage s in execution k works on iteration k - s
  and is enabled iff 0 <= k - s < iterations + tail), the final part once. The engine
  stalls as a whole (input stall) when a ``wr`` finds the input FIFO empty and (output
  stall) when an ``act`` finds the output FIFO full; stalls do not change semantics.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dnnmap.errors import DnnmapError
from dnnmap.targets.nve.program import (
    ActOpcode, IregOpcode, MemOpcode, NveProgram, VmacOpcode, WregOpcode,
)
from dnnmap.targets.nve.reference import activate, activation_lut, wrap_acc
from dnnmap.targets.nve.spec import NveSpec


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


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def run_program(program: NveProgram, input_words: Sequence[int], spec: NveSpec,
                config: StreamConfig = StreamConfig()) -> tuple[list[int], RunStats]:
    """Execute ``program`` once (init, loop, final) on ``input_words``; return output words and stats."""
    st = program.settings
    ins = program.instructions
    lanes = spec.lanes
    pmask = (1 << spec.pixel_bits) - 1
    wbits = spec.weight_bits
    wmask = (1 << wbits) - 1
    ppw, cpw = spec.pixels_per_word, spec.coeffs_per_word
    lut = activation_lut(spec)
    mem = [0] * spec.local_buffer_words
    pending_mem: deque[tuple[int, int, int]] = deque()
    port_pending: dict[str, deque[tuple[int, int]]] = {"A": deque(), "B": deque()}
    port: dict[str, int | None] = {"A": None, "B": None}
    latch_pending: deque[tuple[int, np.ndarray]] = deque()
    latch: np.ndarray | None = None
    rw = [0] * cpw
    ri = np.zeros(spec.image_registers, dtype=np.int64)
    accu = np.zeros(lanes, dtype=np.int64)
    update = {i: (ins[i].mema.update, ins[i].memb.update) for i in range(st.loop_start, st.loop_end + 1)}
    outputs: list[int] = []
    in_pos = 0
    in_arrived = 0
    in_credit = 0.0
    out_fifo = 0
    out_credit = 0.0
    tau = 0
    wall = 0
    in_stalls = out_stalls = mac_ops = 0
    total_in = len(input_words)

    def pixels(word: int) -> list[int]:
        return [(word >> (spec.pixel_bits * i)) & pmask for i in range(ppw)]

    def coeffs(word: int) -> list[int]:
        return [_signed((word >> (wbits * i)) & wmask, wbits) for i in range(cpw)]

    def port_value(p: str) -> int:
        v = port[p]
        if v is None:
            raise IssError(f"register load at cycle {tau} finds no data on port {p}")
        return v

    def enabled(stage: int, tail: bool, k: int | None) -> bool:
        return k is None or 0 <= k - stage < st.iterations + int(tail)

    sequence: list[tuple[int, int | None]] = [(i, None) for i in range(st.loop_start)]
    for k in range(st.iterations + st.drain):
        sequence.extend((i, k) for i in range(st.loop_start, st.loop_end + 1))
    sequence.extend((i, None) for i in range(st.loop_end + 1, len(ins)))

    for i, k in sequence:
        inst = ins[i]
        ma, mb = inst.mema, inst.memb
        ma_on = ma.opcode != MemOpcode.NOP and enabled(ma.stage, ma.tail, k)
        mb_on = mb.opcode != MemOpcode.NOP and enabled(mb.stage, mb.tail, k)
        act_on = inst.act.opcode == ActOpcode.ACT and enabled(inst.act.stage, inst.act.tail, k)
        while True:  # stall until the streams allow this instruction to issue
            in_credit += config.input_words_per_cycle
            while in_credit >= 1 and in_arrived < total_in:
                in_arrived += 1
                in_credit -= 1
            out_credit += config.output_words_per_cycle
            while out_credit >= 1 and out_fifo > 0:
                out_fifo -= 1
                out_credit -= 1
            out_credit = min(out_credit, 1.0)
            wall += 1
            if ma_on and ma.opcode == MemOpcode.WR and in_pos >= in_arrived:
                if in_arrived >= total_in:
                    raise IssError(f"input stream exhausted at instruction {i} (program expects more words)")
                in_stalls += 1
                continue
            if act_on and out_fifo >= config.output_fifo_depth:
                out_stalls += 1
                continue
            break
        while pending_mem and pending_mem[0][0] <= tau:
            _, a, v = pending_mem.popleft()
            mem[a] = v
        for p in ("A", "B"):
            q = port_pending[p]
            while q and q[0][0] <= tau:
                port[p] = q.popleft()[1]
        while latch_pending and latch_pending[0][0] <= tau:
            latch = latch_pending.popleft()[1]
        addr_a = ma.offset + (update[i][0] if k is not None else ma.update)
        addr_b = mb.offset + (update[i][1] if k is not None else mb.update)
        # memory fields
        if ma_on:
            if ma.opcode == MemOpcode.RD:
                port_pending["A"].append((tau + spec.read_latency, mem[addr_a]))
            else:
                pending_mem.append((tau + spec.write_to_read_latency, addr_a, int(input_words[in_pos])))
                in_pos += 1
        if mb_on:
            if mb.opcode != MemOpcode.RD:
                raise IssError(f"instruction {i}: MEMB supports only rd in this engine model")
            port_pending["B"].append((tau + spec.read_latency, mem[addr_b]))
        # register fields (compute from start-of-cycle state)
        w0 = rw[0]
        new_rw = rw
        wr_op = inst.wreg
        if wr_op.opcode != WregOpcode.NOP and enabled(wr_op.stage, wr_op.tail, k):
            new_rw = coeffs(port_value("A")) if wr_op.opcode == WregOpcode.SET else rw[1:] + [0]
        ir_op = inst.ireg
        old_ri = ri
        if ir_op.opcode != IregOpcode.NOP and enabled(ir_op.stage, ir_op.tail, k):
            ri = ri.copy()
            if ir_op.opcode == IregOpcode.SET:
                ri[: ppw] = pixels(port_value("A"))
                ri[ppw: lanes] = pixels(port_value("B"))
            else:
                ri[:-1] = old_ri[1:]
                ri[-1] = 0
                if ir_op.opcode == IregOpcode.SETSH:
                    extra = spec.extra_image_registers
                    ri[lanes - 1: lanes - 1 + extra] = pixels(port_value("B"))[:extra]
        vm = inst.vmac
        if vm.opcode != VmacOpcode.NOP and enabled(vm.stage, vm.tail, k):
            if vm.opcode == VmacOpcode.SET_RB:
                latch_pending.append((tau + spec.vmac_to_act_latency, wrap_acc(accu, spec)))
                accu = np.full(lanes, w0, dtype=np.int64)
            else:
                accu = accu + w0 * old_ri[:lanes]
                mac_ops += 1
        if act_on:
            if latch is None:
                raise IssError(f"act at cycle {tau} before any set rb latched a result")
            half = inst.act.arg
            vals = activate(latch[half * ppw: (half + 1) * ppw], spec, lut)
            outputs.append(sum(int(v) << (spec.pixel_bits * j) for j, v in enumerate(vals)))
            out_fifo += 1
        rw = new_rw
        if k is not None:  # AGU: rewrite the address fields of repetitive instructions (Eq. 3.2)
            ua, ub = update[i]
            update[i] = (_advance(ua, ma.mode, st.modes), _advance(ub, mb.mode, st.modes))
        tau += 1
    if in_pos != total_in:
        raise IssError(f"program consumed {in_pos} of {total_in} input words")
    return outputs, RunStats(wall, tau, in_stalls, out_stalls, mac_ops)


def _advance(update: int, mode: int, modes: tuple[tuple[int, int], ...]) -> int:
    if mode == 0:
        return update
    toggle, inc = modes[mode - 1]
    return update + inc if update + inc != toggle else 0
