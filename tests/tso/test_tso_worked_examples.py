"""TSO's worked examples from TSO's own search and burst counter: Fig. 1 (bursts and times of three
slicings of one channel) and the tiles of InceptionV3's 5th convolution under TSO-burst and TSO-noburst."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.cost.transfer import box_bursts
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import FIG1_BANDWIDTH_GBPS, FIG1_CAS_NS, TsoMachine, TsoOptions
from dnnmap.search.tso.search import tso_layer_search
from dnnmap.search.tso.timing import calc_data_transfer
from dnnmap.workload import zoo

# Fig. 1: one 128 x 128 16-bit channel; (slices, rows, columns) of each slicing and the quoted bursts and us
FIG1 = (((8, 128, 16), 1024, 84.0), ((4, 128, 32), 512, 58.0), ((4, 64, 64), 256, 46.0))


def _slicing_bursts(slices: int, rows: int, cols: int, m: TsoMachine) -> int:
    return slices * int(box_bursts([np.int64(rows), np.int64(cols)], [128, 128], m.elem_bytes, m.burst_bytes))


def test_fig1_burst_counts(fig1_machine: TsoMachine) -> None:
    assert [_slicing_bursts(*s, fig1_machine) for s, _, _ in FIG1] == [1024, 512, 256]


def test_fig1_times_fit_alg4_with_the_documented_constants(fig1_machine: TsoMachine) -> None:
    """Alg. 4's time is linear in the bursts: a least-squares line through Fig. 1's three (bursts, time) points
    gives the documented CAS, and its burst-free part moves the 32 KB channel in and out at the documented BW."""
    bursts = np.array([b for _, b, _ in FIG1], dtype=float)
    times = np.array([t for _, _, t in FIG1]) * 1e-6
    cas, base = np.polyfit(bursts, times, 1)
    assert cas * 1e9 == pytest.approx(FIG1_CAS_NS, abs=0.5)
    assert 2 * 128 * 128 * 2 / base / 1e9 == pytest.approx(FIG1_BANDWIDTH_GBPS, rel=0.03)
    for (shape, _, quoted) in FIG1:
        b = _slicing_bursts(*shape, fig1_machine)
        estimate = calc_data_transfer(fig1_machine, 2 * 128 * 128 * 2, b, burst_model=True)
        assert estimate * 1e6 == pytest.approx(quoted, abs=2.5)  # the fit's residuals are below 2.5 us


@pytest.fixture(scope="module")
def conv5():
    return tso_layer(zoo.get("inceptionv3").layer("conv2d_4a_3x3").op)


def test_inception_conv5_is_the_papers_fifth_convolution(conv5) -> None:
    assert (conv5.N, conv5.H, conv5.L, conv5.M, conv5.Kh, conv5.R, conv5.C) == (80, 73, 73, 192, 3, 71, 71)


@pytest.mark.parametrize("alpha", ["literal", "tlt_rounds"])
@pytest.mark.parametrize("constants", [(FIG1_BANDWIDTH_GBPS, FIG1_CAS_NS), (6.0, 14.0)],
                         ids=["fig1-fitted", "6GBps-14ns"])
def test_inception_conv5_tiles_burst_vs_noburst(conv5, fig1_machine: TsoMachine, constants, alpha: str) -> None:
    m = fig1_machine.with_dram(*constants)
    burst = tso_layer_search(conv5, m, TsoOptions(dram="burst", alpha=alpha)).best
    volume = tso_layer_search(conv5, m, TsoOptions(dram="volume", alpha=alpha)).best
    assert (burst.in_depth, burst.TH, burst.TL) == (14, 4, 73)
    assert burst.in_tile_bursts(m) == 70
    assert (volume.in_depth, volume.TH, volume.TL) == (16, 11, 20)
    assert volume.in_tile_bursts(m) == 176
    assert (burst.p, burst.q, volume.p, volume.q) == ("OFM", "IS", "OFM", "IS")


def test_nominal_bandwidth_does_not_reproduce_the_noburst_tile(conv5, nmp) -> None:
    """At the nominal 17 GB/s the volume model's choice differs (the documented reason to calibrate)."""
    volume = tso_layer_search(conv5, TsoMachine.from_arch(nmp), TsoOptions(dram="volume")).best
    assert (volume.in_depth, volume.TH, volume.TL) != (16, 11, 20)
