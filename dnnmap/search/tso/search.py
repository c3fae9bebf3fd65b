"""TSO Algorithm 1: for one layer, every TLE slicing p (Alg. 2) x TLT dataflow q, the best tiling
(Alg. 3) by the Eq. 6 estimate; the overall best and the best per (p, q) (the fixed-strategy
baselines of Table I are minima over rows or columns of that 3 x 3 table).

Ties (equal estimated time, common under the volume model) go to the tiling with fewer tile
transfers, i.e. fewer, larger tiles (the paper's choices T_N = 14 and 16 suggest it; digest
ambiguity 5), then to the smaller T_N, T_C, T_R (of equal counts, the evenly split tiles).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dnnmap.errors import MappingError
from dnnmap.cost.transfer import box_bursts
from dnnmap.search.tso.layer import TsoLayer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.slicing import DATAFLOWS, SLICINGS, TleSlice, tle_slicing
from dnnmap.search.tso.timing import Breakdown, Tiles, breakdown, in_cols, in_rows
from dnnmap.search.tso.tiling import tilings


@dataclass(frozen=True)
class TsoSchedule:
    """One TSO decision for a layer: slice, dataflow, tile sizes and the Eq. 6 terms (seconds)."""

    layer: TsoLayer
    slice: TleSlice
    q: str
    TR: int
    TC: int
    TN: int
    TM: int
    time: Breakdown  # arrays of length 1
    options: TsoOptions

    @property
    def p(self) -> str:
        return self.slice.p

    @property
    def TH(self) -> int:
        return int(in_rows(self.layer, np.int64(self.TR)))

    @property
    def TL(self) -> int:
        return int(in_cols(self.layer, np.int64(self.TC)))

    @property
    def in_depth(self) -> int:
        return self.TM if self.layer.channelwise else self.TN

    @property
    def seconds(self) -> float:
        return float(self.time.total[0])

    def in_tile_bursts(self, m: TsoMachine) -> int:
        """CalBurstCount of one full IN tile (the paper's 70 and 176 for InceptionV3's 5th conv)."""
        ly = self.layer
        full = [ly.M if ly.channelwise else ly.N, ly.H, ly.L]
        return int(box_bursts([np.int64(self.in_depth), np.int64(self.TH), np.int64(self.TL)], full,
                              m.elem_bytes, m.burst_bytes))

    def describe(self) -> str:
        """The schedule in the user's words: slice and dataflow, input tile (channels x rows x columns), filters
        per tile, output tile (rows x columns)."""
        return (f"{self.p}+{self.q}, input tile {self.in_depth}x{self.TH}x{self.TL}, {self.TM} filters, "
                f"output tile {self.TR}x{self.TC}")


@dataclass(frozen=True)
class TsoLayerResult:
    """Alg. 1's map entry for one layer plus the best schedule of every (p, q)."""

    best: TsoSchedule
    by_strategy: dict[tuple[str, str], TsoSchedule]
    evaluated: int

    def best_with(self, p: str | None = None, q: str | None = None) -> TsoSchedule:
        """Best schedule with a fixed slicing ``p`` and/or dataflow ``q`` (Table I's fixed baselines)."""
        found = [s for (pp, qq), s in self.by_strategy.items() if p in (None, pp) and q in (None, qq)]
        if not found:
            raise ValueError(f"layer {self.best.layer.name!r}: no feasible schedule with slicing {p} dataflow {q}")
        return min(found, key=lambda s: s.seconds)


def _pick(b: Breakdown, t: Tiles) -> int:
    """Index of the fastest tiling; ties to fewer transfers, then smaller (evenly split) T_N, T_C, T_R."""
    total = b.total
    near = np.flatnonzero(total <= total.min() * (1 + 1e-12))  # the fastest, equal up to float noise
    return int(near[np.lexsort((t.TR[near], t.TC[near], t.TN[near], b.transfers[near]))[0]])


def best_tiling(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice,
                q: str) -> tuple[TsoSchedule | None, int]:
    """Alg. 3: the best feasible tiling for (slice, q), and how many tilings were priced."""
    t = tilings(layer, m, opts, s, q)
    if len(t.TR) == 0:
        return None, 0
    b = breakdown(layer, m, opts, s, q, t)
    i = _pick(b, t)
    one = Tiles(*(a[i:i + 1] for a in (t.TR, t.TC, t.TN, t.TM)))
    return (TsoSchedule(layer, s, q, int(one.TR[0]), int(one.TC[0]), int(one.TN[0]), int(one.TM[0]),
                        breakdown(layer, m, opts, s, q, one), opts), len(t.TR))


def tso_layer_search(layer: TsoLayer, m: TsoMachine, opts: TsoOptions = TsoOptions()) -> TsoLayerResult:
    """Algorithm 1 for one convolution: the best (p, q, tiling) and the best tiling of each (p, q)."""
    table: dict[tuple[str, str], TsoSchedule] = {}
    evaluated = 0
    for p in SLICINGS:
        s = tle_slicing(p, layer.R, layer.M, m.tle)
        for q in DATAFLOWS if not layer.channelwise else ("IS",):
            sched, n = best_tiling(layer, m, opts, s, q)
            evaluated += n
            if sched is not None:
                table[(p, q)] = sched
    if layer.channelwise:  # one schedule: the three dataflows coincide when N = 1 (docs/tso.md)
        table.update({(p, q): replace(s, q=q) for (p, _), s in list(table.items()) for q in DATAFLOWS})
    if not table:
        raise MappingError(f"layer {layer.name!r}: no TSO tiling fits the scratchpads (MB0 {m.mb_in}, MB1 {m.mb_w}, "
                           f"MB2 {m.mb_out} elements); a single filter or window is larger than a scratchpad")
    fastest = min(s.seconds for s in table.values())
    best = min((s for s in table.values() if s.seconds <= fastest * (1 + 1e-12)), key=lambda s: float(s.time.transfers[0]))
    return TsoLayerResult(best, table, evaluated)
