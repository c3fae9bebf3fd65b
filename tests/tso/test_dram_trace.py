"""TSO schedules as address traces, end to end on small layers: the tile transfers store every OUT element
exactly once and load every IN and W element the outputs need, the replayed DDR3 trace moves the transfers'
bursts no faster than the channel's peak and no slower than one row conflict per burst, and the burst
model's price lies above the volume model's by CalBurstCount x CAS."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine
from dnnmap.search.tso.search import tso_layer_search
from dnnmap.search.tso.transfers import IN, OUT, W, analytical_seconds, schedule_transfers, trace_replay
from dnnmap.sim.dram_timing import DDR3_2133, box_burst_addresses
from dnnmap.workload import ops

LAYERS = [ops.conv2d("conv", 6, 20, 12, 3, padding=1), ops.conv2d("strided", 5, 12, 11, 3, stride=2),
          ops.pointwise("pw", 24, 40, 7), ops.fully_connected("fc", 50, 9), ops.depthwise("dw", 12, 9, 3, padding=1)]


def coverage(t, tid: int) -> np.ndarray:
    """How often each element of tensor ``tid`` is moved by the transfers."""
    count = np.zeros(t.full[tid], dtype=np.int64)
    for o, e in zip(t.origin[t.tensor == tid], t.extent[t.tensor == tid]):
        count[tuple(slice(a, a + b) for a, b in zip(o, e))] += 1
    return count


@pytest.mark.parametrize("op", LAYERS, ids=lambda op: op.name)
def test_schedule_transfers_cover_the_layer_and_replay_within_physical_bounds(op) -> None:
    m = TsoMachine.from_arch(load_arch("nmp"))
    layer = tso_layer(op)
    for (p, q), s in tso_layer_search(layer, m).by_strategy.items():
        t = schedule_transfers(s, m)
        assert (coverage(t, OUT) == 1).all(), (p, q)
        w = coverage(t, W)
        assert (w >= 1).all(), (p, q)
        needed = np.zeros(t.full[IN], dtype=bool)  # the padded IFM rows/cols the outputs read
        needed[..., : (layer.R - 1) * layer.Sh + layer.Kh, : (layer.C - 1) * layer.Sw + layer.Kw] = True
        assert ((coverage(t, IN) >= 1) == needed).all(), (p, q)
        addresses, _ = box_burst_addresses(t.origin, t.extent, t.full, t.base, t.tensor, int(m.elem_bytes),
                                           DDR3_2133.burst_bytes)
        r = trace_replay(t, m)
        assert r.bursts == len(addresses) == r.hits + r.empty + r.conflicts
        tck = DDR3_2133.tck_ns * 1e-9
        worst = DDR3_2133.tras + DDR3_2133.trp + DDR3_2133.trcd + DDR3_2133.cl + DDR3_2133.twr + DDR3_2133.tccd
        assert r.bursts * DDR3_2133.tccd * tck <= r.seconds <= r.bursts * worst * tck
        burst, volume = analytical_seconds(t, m, True), analytical_seconds(t, m, False)
        nbytes = sum(int(np.prod(e)) for e in t.extent) * m.elem_bytes
        assert volume == pytest.approx(nbytes / m.bw_bytes_per_s)
        assert burst > volume
