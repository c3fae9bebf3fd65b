"""A DRAM timing simulator with row buffers: replays a trace of burst addresses (reads and writes, in
issue order) through one DDR3 channel and returns the time until the last data beat.

Model (docs/tso.md "DRAM trace validation"): one channel, one rank, ``banks`` banks, open-page policy
(a row stays open until another row of its bank is needed), address mapping row : bank : column (a DRAM
row of ``row_bytes`` holds consecutive addresses; consecutive rows go to consecutive banks). Requests are
served in order, each a BL8 burst of ``burst_bytes``; a request's commands may start once the previous
request's CAS is issued, so an activation in another bank overlaps the data of earlier requests.

- row hit: CAS at max(previous CAS + tCCD, this bank's ACT + tRCD);
- empty bank: ACT at the previous CAS, CAS at max(ACT + tRCD, previous CAS + tCCD);
- row conflict: PRE at max(previous CAS, ACT + tRAS, write recovery), ACT = PRE + tRP, CAS as above;
- data: CL (reads) or CWL (writes) after the CAS, BL/2 clocks long, never overlapping earlier data on the
  bus (the CAS is delayed instead); a write's bank may precharge tWR after its data.

Not modelled: refresh, tRRD/tFAW activation windows, read/write turnaround (tWTR, tRTW), command-bus
conflicts, multiple ranks or channels. The whole replay is one sequential pass (numba).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit


@dataclass(frozen=True)
class DramTimings:
    """DDR3 channel timings in clock cycles of ``tck_ns``. Defaults: DDR3-2133N (14-14-14) on a 64-bit
    channel of x8 devices, from JEDEC JESD79-3F (DDR3 SDRAM standard), the DDR3-2133 speed bin
    (tCK 0.938 ns, CL = tRCD = tRP = 14, CWL = 10, tRAS >= 33 ns, tWR = 15 ns, BL8, tCCD = 4) and
    8 banks of 1 KB pages per x8 device (e.g. Micron MT41K512M8, 4 Gb x8), i.e. 8 KB rows across the
    eight devices of a 64-bit rank: 17.07 GB/s peak, the NMP preset's 17 GB/s."""

    tck_ns: float = 0.9375  # 1066.67 MHz clock, 2133 MT/s
    cl: int = 14
    cwl: int = 10
    trcd: int = 14
    trp: int = 14
    tras: int = 36  # 33 ns / 0.9375 ns, rounded up
    twr: int = 16  # 15 ns / 0.9375 ns
    tccd: int = 4  # = BL / 2: one BL8 burst on the bus
    burst_bytes: int = 64  # BL8 x 8 bytes
    banks: int = 8
    row_bytes: int = 8192


DDR3_2133 = DramTimings()


@dataclass(frozen=True)
class Replay:
    """Outcome of :func:`replay`: seconds until the last data beat and the row-buffer events."""

    seconds: float
    bursts: int
    hits: int
    empty: int  # activations of a bank with no open row
    conflicts: int  # precharge + activation


@njit(cache=True)
def _replay(addresses: np.ndarray, writes: np.ndarray, banks: int, row_bytes: int, cl: int, cwl: int, trcd: int,
            trp: int, tras: int, twr: int, tccd: int) -> tuple[int, int, int, int]:
    open_row = np.full(banks, -1, dtype=np.int64)
    act = np.zeros(banks, dtype=np.int64)
    recover = np.zeros(banks, dtype=np.int64)  # earliest precharge after a write
    prev_cas = -tccd  # so that the first CAS may issue at 0
    bus_free = 0
    hits = empty = conflicts = 0
    for i in range(addresses.shape[0]):
        a = addresses[i] // row_bytes
        b = a % banks
        row = a // banks
        if open_row[b] == row:
            cas = max(prev_cas + tccd, act[b] + trcd)
            hits += 1
        else:
            start = max(prev_cas, 0)
            if open_row[b] < 0:
                empty += 1
            else:
                start = max(start, act[b] + tras, recover[b]) + trp
                conflicts += 1
            act[b] = start
            open_row[b] = row
            cas = max(start + trcd, prev_cas + tccd)
        lat = cwl if writes[i] else cl
        data = max(cas + lat, bus_free)
        cas = data - lat
        bus_free = data + tccd
        if writes[i]:
            recover[b] = bus_free + twr
        prev_cas = cas
    return bus_free, hits, empty, conflicts


def replay(addresses: np.ndarray, writes: np.ndarray, timings: DramTimings = DDR3_2133) -> Replay:
    """Serve the bursts at byte ``addresses`` (each the start of a ``timings.burst_bytes`` burst) in order;
    ``writes`` marks stores."""
    t = timings
    cycles, hits, empty, conflicts = _replay(np.asarray(addresses, dtype=np.int64), np.asarray(writes, dtype=np.bool_),
                                             t.banks, t.row_bytes, t.cl, t.cwl, t.trcd, t.trp, t.tras, t.twr, t.tccd)
    return Replay(cycles * t.tck_ns * 1e-9, len(addresses), hits, empty, conflicts)


@njit(cache=True)
def _box_bursts(origin: np.ndarray, extent: np.ndarray, full: np.ndarray, base: np.ndarray, tensor: np.ndarray,
                elem_bytes: int, burst_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    n = 0
    for t in range(origin.shape[0]):  # upper bound: every contiguous run of every box, one burst more
        e = extent[t]
        n += e[0] * e[1] * e[2] * ((e[3] * elem_bytes) // burst_bytes + 2)
    out = np.empty(n, dtype=np.int64)
    box = np.empty(n, dtype=np.int64)
    k = 0
    for t in range(origin.shape[0]):
        o, e, f = origin[t], extent[t], full[tensor[t]]
        last = -1
        for i0 in range(o[0], o[0] + e[0]):
            for i1 in range(o[1], o[1] + e[1]):
                for i2 in range(o[2], o[2] + e[2]):
                    start = base[tensor[t]] + (((i0 * f[1] + i1) * f[2] + i2) * f[3] + o[3]) * elem_bytes
                    first, stop = start // burst_bytes, (start + e[3] * elem_bytes - 1) // burst_bytes
                    for b in range(max(first, last + 1), stop + 1):  # a burst shared with the previous run once
                        out[k] = b * burst_bytes
                        box[k] = t
                        k += 1
                    last = max(last, stop)
    return out[:k], box[:k]


def box_burst_addresses(origin: np.ndarray, extent: np.ndarray, full: np.ndarray, base: np.ndarray,
                        tensor: np.ndarray, elem_bytes: int, burst_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Byte addresses of the aligned bursts that move each box (rows ``origin``/``extent`` of 4 axes,
    outermost first) of row-major tensors (``full[tensor]`` extents at ``base[tensor]``), box after box,
    in ascending address order within a box; and the box of every burst."""
    return _box_bursts(np.ascontiguousarray(origin, dtype=np.int64), np.ascontiguousarray(extent, dtype=np.int64),
                       np.ascontiguousarray(full, dtype=np.int64), np.asarray(base, dtype=np.int64),
                       np.asarray(tensor, dtype=np.int64), int(elem_bytes), int(burst_bytes))
