"""The simulator's counts beside TSO's estimate of the schedule it ran (docs/nmp.md "Simulator vs model").

For each layer, TSO's Eqs. 3-9 and Alg. 4 price the executed schedule (same slice, dataflow and tiles,
exact edge tiles) twice: with ``alpha="literal"`` (Eqs. 3-5 as printed, what the mapper minimizes) and
with ``alpha="per_tlt"`` (every transfer a real program makes: IN multicast once per TLE, W and OUT per
TLT). The simulator's figures come from its DRAM log (bias loads, which TSO does not model, are left
out) and its per-core cycle counts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dnnmap.search.tso.machine import TsoMachine
from dnnmap.search.tso.search import TsoSchedule
from dnnmap.search.tso.timing import Breakdown, Tiles, breakdown
from dnnmap.targets.nmp.simulator import LayerStats, NmpMachine


@dataclass(frozen=True)
class LayerCheck:
    """One layer: simulator vs model (per_tlt and literal) transfers, bytes, bursts and seconds."""

    name: str
    schedule: str
    sim_transfers: int
    sim_bytes: int
    sim_bursts: int
    sim_aligned_bursts: int
    sim_dram_s: float
    sim_mac_s: float  # busiest core
    sim_mac_mean_s: float  # all cores' cycles / cores (TSO Eq. 8's perfect balance)
    model: Breakdown  # per_tlt
    literal: Breakdown

    def model_value(self, key: str) -> float:
        return float(np.asarray(getattr(self.model, key)).ravel()[0])

    @property
    def exact(self) -> bool:
        """Transfers, bytes and bursts of the run equal the per_tlt model's."""
        return (self.sim_transfers, self.sim_bytes, self.sim_bursts) == (
            round(self.model_value("transfers")), round(self.model_value("dram_bytes")),
            round(self.model_value("bursts")))


def _price(sched: TsoSchedule, tso: TsoMachine, alpha: str) -> Breakdown:
    one = Tiles(*(np.array([v], dtype=np.int64) for v in (sched.TR, sched.TC, sched.TN, sched.TM)))
    return breakdown(sched.layer, tso, replace(sched.options, alpha=alpha), sched.slice, sched.q, one)


def check_layer(sched: TsoSchedule, stats: LayerStats, tso: TsoMachine, m: NmpMachine) -> LayerCheck:
    moved = [t for t in stats.transfers if t.tensor != "BIAS"]
    seconds = sum(t.nbytes / m.bw_bytes_per_s + t.bursts * m.cas_s for t in moved)
    return LayerCheck(stats.name, f"{sched.p}+{sched.q}", len(moved), sum(t.nbytes for t in moved),
                      sum(t.bursts for t in moved), sum(t.aligned_bursts for t in moved), seconds,
                      max(stats.core_cycles) / m.freq_hz, sum(stats.core_cycles) / len(stats.core_cycles) / m.freq_hz,
                      _price(sched, tso, "per_tlt"), _price(sched, tso, "literal"))
