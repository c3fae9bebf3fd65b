"""TSO's equations as implemented: Alg. 2 slices, Eqs. 3-5 access counts against hand formulas, Eq. 2 on every
choice, GetFilters, the burst counter against the core's, the depth pruning, channelwise layers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dnnmap.cost.transfer import bursts_of_box
from dnnmap.cost.transfer import box_bursts
from dnnmap.search.tso.edges import Axis, summed_bursts, tile_classes
from dnnmap.search.tso.layer import TsoLayer, tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.search import best_tiling, tso_layer_search
from dnnmap.search.tso.slicing import DATAFLOWS, SLICINGS, tle_slicing
from dnnmap.search.tso.tiling import fits, get_filters
from dnnmap.search.tso.timing import Tiles, breakdown
from dnnmap.workload import ops, zoo

ceil = math.ceil


def test_alg2_slices_of_inception_conv5() -> None:
    got = {p: (s.rows, s.filters) for p in SLICINGS for s in [tle_slicing(p, 71, 192, 4)]}
    assert got == {"KS": (71, 48), "KS&OFM": (36, 96), "OFM": (18, 192)}


def test_box_bursts_equal_the_core_burst_counter_on_random_boxes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        full = rng.integers(1, 12, size=int(rng.integers(1, 5)))
        ext = np.array([int(rng.integers(1, f + 1)) for f in full])
        word, burst = float(rng.choice([1, 2])), int(rng.choice([4, 8, 16, 128]))
        ours = box_bursts([np.int64(e) for e in ext], [int(f) for f in full], word, burst)
        assert int(ours) == int(bursts_of_box(ext[None], full, word, burst)[0]), (ext, full)


def test_summed_bursts_equal_the_sum_over_every_class_combination() -> None:
    """The per-axis factorization of sum(count x CalBurstCount) against the combinations formed one by one."""
    rng = np.random.default_rng(11)
    for _ in range(300):
        full = [int(f) for f in rng.integers(1, 14, size=int(rng.integers(1, 5)))]
        tiles = [int(rng.integers(1, f + 1)) for f in full]
        exact, word, burst = bool(rng.integers(2)), float(rng.choice([1, 2])), int(rng.choice([4, 8, 16, 128]))
        axes = [Axis.cut(f, np.array([t]), exact) for f, t in zip(full, tiles)]
        brute = 0
        for combo in itertools.product(*(tile_classes(f, np.int64(t), exact) for f, t in zip(full, tiles))):
            count = math.prod(int(c) for c, _ in combo)
            brute += count * int(box_bursts([np.int64(e) for _, e in combo], full, word, burst))
        assert int(summed_bursts(axes, full, word, burst)[0]) == brute, (full, tiles, exact)


LAYER = TsoLayer("t", "conv2d", N=20, M=48, R=13, C=11, Kh=3, Kw=3)


@pytest.mark.parametrize("alpha", ["literal", "tlt_rounds"])
@pytest.mark.parametrize("q", DATAFLOWS)
@pytest.mark.parametrize("p", SLICINGS)
def test_eqs_3_to_5_access_counts_with_ceil_edges(nmp, p: str, q: str, alpha: str) -> None:
    """Volume model, ceil edges: each term is alpha x tile bytes / BW with the hand-written alpha of Eqs. 3-5
    (``tlt_rounds``: M-rounds over the TLT's ceil(TLE_W / #TLT) filters)."""
    m = TsoMachine.from_arch(nmp)
    opts = TsoOptions(dram="volume", edges="ceil", alpha=alpha)
    s = tle_slicing(p, LAYER.R, LAYER.M, m.tle)
    TR, TC, TN = 3, 4, 6
    TM = int(get_filters(LAYER, m, opts, s, q, np.array([TR]), np.array([TC]), np.array([TN]))[0])
    b = breakdown(LAYER, m, opts, s, q, Tiles(*(np.array([v]) for v in (TR, TC, TN, TM))))
    E, N, K = m.tle, LAYER.N, 3
    base = E * ceil(s.rows / TR) * ceil(LAYER.C / TC) * ceil(N / TN)
    round_filters = s.filters if alpha == "literal" else ceil(s.filters / m.tlt)
    rounds = {"IS": 1, "OS": ceil(round_filters / TM), "WS": ceil(round_filters / TM)}[q]
    a_in = base * rounds
    a_w = E * ceil(round_filters / TM) if q == "WS" else base * rounds
    a_out = ceil(LAYER.R / TR) * ceil(LAYER.C / TC) * (1 if q == "IS" else ceil(LAYER.M / TM))
    unit = m.elem_bytes / m.bw_bytes_per_s
    assert b.load_in[0] == pytest.approx(a_in * TN * ((TR - 1) + K) * ((TC - 1) + K) * unit)
    assert b.load_w[0] == pytest.approx(a_w * TM * (N if q == "WS" else TN) * K * K * unit)
    assert b.store_out[0] == pytest.approx(a_out * TM * TR * TC * unit)
    assert b.transfers[0] == a_in + a_w + a_out
    mac = ceil(LAYER.M / TM) * ceil(N / TN) * ceil(LAYER.R / TR) * ceil(LAYER.C / TC) * TN * TM * ceil(TR * TC * 9 / 8)
    assert b.mac[0] * m.freq_hz * m.tle * m.tlt == pytest.approx(mac)  # Eqs. 7-8 over #TLE x #TLT cores


def test_exact_edges_load_each_input_row_once_per_tile(nmp) -> None:
    """Exact edges: IS IN bytes = #TLEs x sum over the actual tiles (the last tile of each dimension is smaller)."""
    m = TsoMachine.from_arch(nmp)
    s = tle_slicing("OFM", LAYER.R, LAYER.M, m.tle)  # TLE_R = 4
    t = Tiles(*(np.array([v]) for v in (3, 4, 6, 6)))
    b = breakdown(LAYER, m, TsoOptions(dram="volume"), s, "IS", t)
    rows = [3, 1]  # TLE_R = 4 rows in tiles of 3
    cols = [4, 4, 3]  # C = 11 in tiles of 4
    chans = [6, 6, 6, 2]  # N = 20 in tiles of 6
    words = sum(n * (r + 2) * (c + 2) for n in chans for r in rows for c in cols)
    assert b.load_in[0] == pytest.approx(m.tle * words * m.elem_bytes / m.bw_bytes_per_s)


def test_every_chosen_tiling_satisfies_eq2_and_get_filters(nmp) -> None:
    m = TsoMachine.from_arch(nmp)
    net = zoo.get("resnet50_v1")
    for name in ("conv1", "layer1.0.conv2", "layer3.0.conv1", "layer4.2.conv3", "fc"):
        layer = tso_layer(net.layer(name).op)
        found = tso_layer_search(layer, m)
        for (p, q), s in found.by_strategy.items():
            t = Tiles(*(np.array([v]) for v in (s.TR, s.TC, s.TN, s.TM)))
            assert fits(layer, m, q, t)[0], (name, p, q)
            if q == "IS":
                assert s.TM == ceil(s.slice.filters / m.tlt)
            assert s.seconds >= found.best.seconds


def test_ws_is_infeasible_when_one_filter_exceeds_mb1(nmp) -> None:
    """N = 512, 3x3, 16 bit: one filter with all channels is 9 KB > 8 KB (digest ambiguity 3)."""
    layer = tso_layer(ops.conv2d("big", 512, 512, 9, 3, padding=1))
    found = tso_layer_search(layer, TsoMachine.from_arch(nmp))
    assert not any(q == "WS" for _, q in found.by_strategy)
    assert found.best.q in ("IS", "OS")


@pytest.mark.parametrize("name", ["conv2d_2a_3x3", "mixed_6b/branch7x7_2", "mixed_7c/branch3x3_2a"])
def test_depth_pruning_is_lossless_with_ceil_edges(nmp, name: str) -> None:
    layer = tso_layer(zoo.get("inceptionv3").layer(name).op)
    m = TsoMachine.from_arch(nmp)
    for p, q in (("OFM", "IS"), ("KS", "OS"), ("KS&OFM", "WS")):
        s = tle_slicing(p, layer.R, layer.M, m.tle)
        pruned, n_pruned = best_tiling(layer, m, TsoOptions(edges="ceil"), s, q)
        full, n_full = best_tiling(layer, m, TsoOptions(edges="ceil", prune_depth=False), s, q)
        assert (pruned is None) == (full is None)
        if full is not None:
            assert n_pruned < n_full
            assert pruned.seconds == pytest.approx(full.seconds, rel=1e-12)


def test_channelwise_layers_share_one_schedule_for_the_three_dataflows(nmp) -> None:
    m = TsoMachine.from_arch(nmp)
    for op in (ops.depthwise("dw", 96, 56, 3, 2, 1), ops.pool("mp", 64, 55, 3, 2),
               ops.eltwise("add", 24, 56), ops.concat("cat", 256, 28)):
        layer = tso_layer(op)
        assert layer.channelwise and layer.N == 1
        found = tso_layer_search(layer, m)
        for p in SLICINGS:
            times = {found.by_strategy[(p, q)].seconds for q in DATAFLOWS}
            assert len(times) == 1
        assert found.best.time.load_w[0] == (0.0 if not layer.weights else found.best.time.load_w[0])
        assert found.best.TN == 1


def test_unsupported_layers_raise_a_clear_error() -> None:
    from dnnmap.errors import MappingError

    with pytest.raises(MappingError, match="TSO mapper handles"):
        tso_layer(ops.matmul("mm", 4, 8, 16))
    with pytest.raises(MappingError, match="batch 1"):
        tso_layer(ops.conv2d("b2", 3, 8, 8, 3, batch=2))
