"""The DDR3 timing simulator on hand-derived traces (DDR3-2133: CL = tRCD = tRP = 14, CWL = 10, tRAS = 36,
tWR = 16, tCCD = 4 clocks; 8 banks of 8 KB rows, 64 B bursts), and the burst addresses of boxes against
a NumPy enumeration of their bytes."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.sim.dram_timing import DDR3_2133, box_burst_addresses, replay

ROW = DDR3_2133.row_bytes
BANK_STRIDE = ROW  # the next row of addresses is the next bank
SAME_BANK_NEXT_ROW = ROW * DDR3_2133.banks


def cycles(addresses: list[int], writes: list[bool] | None = None) -> float:
    r = replay(np.array(addresses), np.array(writes or [False] * len(addresses)))
    return r.seconds / (DDR3_2133.tck_ns * 1e-9)


def test_one_read_of_an_empty_bank_is_act_rcd_cl_and_the_burst() -> None:
    assert cycles([0]) == pytest.approx(14 + 14 + 4)  # ACT at 0, CAS at tRCD, data CL later for BL/2


def test_row_hits_stream_one_burst_per_tccd() -> None:
    assert cycles([0, 64]) == pytest.approx(32 + 4)  # second CAS at 18, its data 32..36
    assert cycles(list(range(0, 64 * 10, 64))) == pytest.approx(32 + 9 * 4)
    r = replay(np.arange(0, 640, 64), np.zeros(10, dtype=bool))
    assert (r.hits, r.empty, r.conflicts) == (9, 1, 0)


def test_row_conflict_waits_tras_then_precharges_and_activates() -> None:
    # first: ACT 0, CAS 14, data 28..32; second (same bank, another row): PRE at max(CAS 14, ACT + tRAS 36),
    # ACT at 36 + tRP = 50, CAS at 64, data 78..82
    assert cycles([0, SAME_BANK_NEXT_ROW]) == pytest.approx(82)
    r = replay(np.array([0, SAME_BANK_NEXT_ROW, 0]), np.zeros(3, dtype=bool))
    assert (r.hits, r.empty, r.conflicts) == (0, 1, 2)


def test_another_bank_activates_behind_the_previous_cas() -> None:
    # second bank: ACT at the first CAS (14), CAS at 28, data 42..46: the banks overlap
    assert cycles([0, BANK_STRIDE]) == pytest.approx(46)


def test_write_latency_and_write_recovery_before_precharge() -> None:
    assert cycles([0], [True]) == pytest.approx(14 + 10 + 4)  # CWL instead of CL
    # write data 24..28, recovery until 28 + tWR = 44 > ACT + tRAS = 36: PRE 44, ACT 58, CAS 72, data 86..90
    assert cycles([0, SAME_BANK_NEXT_ROW], [True, False]) == pytest.approx(90)


def test_data_never_overlaps_on_the_bus() -> None:
    # read (data 28..32) then a write hit whose CWL would put data at 18 + 10 = 28: pushed to 32..36
    assert cycles([0, 64], [False, True]) == pytest.approx(36)


def test_box_bursts_are_the_aligned_bursts_touching_the_box_bytes() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        full = rng.integers(1, 9, size=4)
        origin = np.array([rng.integers(0, f) for f in full])
        extent = np.array([rng.integers(1, f - o + 1) for f, o in zip(full, origin)])
        base, word, burst = int(rng.integers(0, 4)) * 64, int(rng.choice([1, 2])), int(rng.choice([16, 64]))
        got, box = box_burst_addresses(origin[None], extent[None], full[None], np.array([base]), np.array([0]),
                                       word, burst)
        idx = np.indices(extent).reshape(4, -1).T + origin
        flat = np.ravel_multi_index(idx.T, full)
        touched = np.unique(np.concatenate([(base + flat * word + b) // burst for b in range(word)])) * burst
        assert np.array_equal(got, touched), (full, origin, extent)
        assert (box == 0).all()
