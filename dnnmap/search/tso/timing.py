"""TSO's time estimate of a tiling (Section IV-D/E): access counts Eqs. 3-5, MAC time Eqs. 7-8,
DRAM time Eq. 9 with Algorithm 4 (burst or volume model), total Eq. 6. Vectorized over candidates.

Eq. 6: T_CONV = T_MAC + T_DRAM + T_SW. The NMP does not overlap MAC and LOAD, so the terms add.
Eq. 9: T_DRAM = alpha_in x CalcDataTransfer(IN) + alpha_w x CalcDataTransfer(W) + alpha_out x CalcDataTransfer(OUT).
Alg. 4: CalcDataTransfer(tile) = bytes / BW (+ bursts x CAS for TSO-burst).

With ``edges="exact"`` each alpha, a product of tile counts, is split into its full and remainder
tiles (:mod:`dnnmap.search.tso.edges`) and every transfer is priced at its true tile size.
Channelwise layers (depthwise, pooling, add, concat; :mod:`dnnmap.search.tso.layer`) use the
counts documented in docs/tso.md: every TLT loads its own channels (no multicast), W once per
channel tile, and the three dataflows coincide.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.cost.transfer import box_bursts
from dnnmap.search.tso.edges import Classes, combine, tile_classes
from dnnmap.search.tso.layer import TsoLayer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.slicing import TleSlice


@dataclass(frozen=True)
class Tiles:
    """Candidate tilings (arrays of one length): OFM rows/columns, input channels and filters per tile."""

    TR: np.ndarray
    TC: np.ndarray
    TN: np.ndarray
    TM: np.ndarray


@dataclass(frozen=True)
class Breakdown:
    """Eq. 6 terms per candidate (seconds), with the bytes, bursts and transfers behind T_DRAM."""

    mac: np.ndarray
    load_in: np.ndarray
    load_w: np.ndarray
    store_out: np.ndarray
    sw: np.ndarray
    transfers: np.ndarray  # tile transfers (alpha_in + alpha_w + alpha_out)
    dram_bytes: np.ndarray
    bursts: np.ndarray

    @property
    def dram(self) -> np.ndarray:
        return self.load_in + self.load_w + self.store_out

    @property
    def total(self) -> np.ndarray:
        """Eq. 6."""
        return self.mac + self.dram + self.sw


def calc_data_transfer(m: TsoMachine, nbytes: np.ndarray | float, bursts: np.ndarray | float,
                       burst_model: bool) -> np.ndarray | float:
    """Algorithm 4 (CalcDataTransfer): tile_size / BW, plus nbursts x CAS for TSO-burst."""
    return nbytes / m.bw_bytes_per_s + (bursts * m.cas_s if burst_model else 0.0)


class _Pricer:
    """Algorithm 4 for one tensor: sums count x CalcDataTransfer over classes of tiles, keeping bytes and bursts."""

    def __init__(self, m: TsoMachine, burst_model: bool) -> None:
        self.m, self.burst_model = m, burst_model
        self.seconds = self.bytes = self.bursts = self.transfers = 0.0

    def add(self, count: np.ndarray, box: tuple[np.ndarray, ...], full: list[int]) -> None:
        m = self.m
        elems = np.ones((), dtype=np.int64)
        for e in box:
            elems = elems * e
        nbytes = elems * m.elem_bytes
        bursts = box_bursts(list(box), full, m.elem_bytes, m.burst_bytes)
        t = calc_data_transfer(m, nbytes, bursts, self.burst_model)
        self.seconds = self.seconds + count * t
        self.bytes = self.bytes + count * nbytes
        self.bursts = self.bursts + count * bursts
        self.transfers = self.transfers + count


def _total(classes: Classes) -> np.ndarray:
    return sum(c for c, _ in classes)


def in_rows(layer: TsoLayer, tr: np.ndarray) -> np.ndarray:
    """Eq. 1: T_H = (T_R - 1) S + K (with dilation: the window's extent)."""
    return (tr - 1) * layer.Sh + layer.Dh * (layer.Kh - 1) + 1


def in_cols(layer: TsoLayer, tc: np.ndarray) -> np.ndarray:
    return (tc - 1) * layer.Sw + layer.Dw * (layer.Kw - 1) + 1


def tile_mac_seconds(layer: TsoLayer, m: TsoMachine, tn: np.ndarray, tm: np.ndarray, tr: np.ndarray,
                     tc: np.ndarray) -> np.ndarray:
    """Eq. 7: Tile_MAC = T_N x T_M x ceil(T_R x T_C x K x K / #MACs) / Freq."""
    return tn * tm * np.ceil(tr * tc * layer.Kh * layer.Kw / m.macs) / m.freq_hz


def mac_seconds(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, t: Tiles) -> np.ndarray:
    """Eq. 8: T_MAC = ceil(M/T_M) ceil(N/T_N) ceil(R/T_R) ceil(C/T_C) Tile_MAC / cores (edge tiles at their size
    when ``edges="exact"``); cores = #TLE x #TLT (the text) or #TLT (as printed)."""
    exact = opts.edges == "exact"
    cores = m.tle * m.tlt if opts.mac_divisor == "all" else m.tlt
    total = 0.0
    for count, (tm, tn, tr, tc) in combine(tile_classes(layer.M, t.TM, exact), tile_classes(layer.N, t.TN, exact),
                                           tile_classes(layer.R, t.TR, exact), tile_classes(layer.C, t.TC, exact)):
        total = total + count * tile_mac_seconds(layer, m, tn, tm, tr, tc)
    return total * max(1, layer.n_inputs - 1) / cores


def breakdown(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice, q: str, t: Tiles) -> Breakdown:
    """Eq. 6 terms of every candidate of ``t`` under TLE slice ``s`` and TLT dataflow ``q``."""
    burst = opts.dram == "burst"
    p_in, p_w, p_out = _Pricer(m, burst), _Pricer(m, burst), _Pricer(m, burst)
    if layer.channelwise:
        _channelwise(layer, m, opts, s, t, p_in, p_w, p_out)
    else:
        _convolution(layer, m, opts, s, q, t, p_in, p_w, p_out)
    g = layer.groups
    transfers = (p_in.transfers + p_w.transfers + p_out.transfers) * g
    shape = np.shape(t.TR)
    return Breakdown(mac=np.broadcast_to(mac_seconds(layer, m, opts, t) * g, shape),
                     load_in=np.broadcast_to(p_in.seconds * g, shape),
                     load_w=np.broadcast_to(p_w.seconds * g, shape),
                     store_out=np.broadcast_to(p_out.seconds * g, shape),
                     sw=np.broadcast_to(transfers * opts.sw_s_per_transfer, shape),
                     transfers=np.broadcast_to(transfers, shape),
                     dram_bytes=np.broadcast_to((p_in.bytes + p_w.bytes + p_out.bytes) * g, shape),
                     bursts=np.broadcast_to((p_in.bursts + p_w.bursts + p_out.bursts) * g, shape))


def _convolution(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice, q: str, t: Tiles,
                 p_in: _Pricer, p_w: _Pricer, p_out: _Pricer) -> None:
    """Eqs. 3 (IS), 4 (OS), 5 (WS); ``alpha="per_tlt"`` counts W and OUT per TLT and M-rounds per TLT."""
    exact = opts.edges == "exact"
    N, M, K = layer.N, layer.M, (layer.Kh, layer.Kw)
    rows = tile_classes(s.rows, t.TR, exact)  # ceil(TLE_R / T_R)
    cols = tile_classes(layer.C, t.TC, exact)  # ceil(C / T_C)
    chans = tile_classes(N, t.TN, exact)  # ceil(N / T_N)
    per_tlt = opts.alpha == "per_tlt"
    filters_per_tlt = -(-s.filters // m.tlt)
    if per_tlt:  # ceil((TLE_W / #TLT) / T_M) rounds; every TLT transfers its own W and OUT
        mrounds = tile_classes(filters_per_tlt, t.TM, exact)
        out_rows, out_m, w_mult, out_mult = rows, mrounds, m.tle * m.tlt, m.tle * m.tlt
    else:  # Eqs. 3-5 as printed: ceil(TLE_W / T_M) rounds, alpha_out over the global R and M, no #TLEs factor
        mrounds = tile_classes(s.filters, t.TM, exact)
        out_rows, out_m, w_mult, out_mult = tile_classes(layer.R, t.TR, exact), tile_classes(M, t.TM, exact), m.tle, 1
    n_rounds = 1 if q == "IS" else _total(mrounds)  # IS: the W tile holds all the TLT's filters (one round)
    in_full, w_full, out_full = [N, layer.H, layer.L], [M, N, *K], [M, layer.R, layer.C]
    # alpha_in = #TLEs ceil(TLE_R/T_R) ceil(C/T_C) ceil(N/T_N) [x rounds]
    for count, (tn, tr, tc) in combine(chans, rows, cols):
        p_in.add(m.tle * n_rounds * count, (tn, in_rows(layer, tr), in_cols(layer, tc)), in_full)
    if q == "WS":  # alpha_w = #TLEs ceil(TLE_W/T_M): each filter with all N channels, loaded once
        for count, (tm,) in combine(mrounds):
            p_w.add(w_mult * count, (tm, np.full_like(tm, N), *K), w_full)
    else:  # alpha_w = #TLEs ceil(TLE_R/T_R) ceil(C/T_C) ceil(N/T_N) [x rounds]
        m_classes = ((np.ones((), np.int64), t.TM),) if q == "IS" else mrounds
        for count, (tm, tn) in combine(m_classes, chans):
            p_w.add(w_mult * _total(rows) * _total(cols) * count, (tm, tn, *K), w_full)
    o_m = ((np.ones((), np.int64), t.TM),) if q == "IS" else out_m  # Eq. 3 has no M factor
    for count, (tm, tr, tc) in combine(o_m, out_rows, cols):
        p_out.add(out_mult * count, (tm, tr, tc), out_full)


def _channelwise(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice, t: Tiles,
                 p_in: _Pricer, p_w: _Pricer, p_out: _Pricer) -> None:
    """Depthwise, pooling, add, concat: channel tiles T_M of the TLT's own channels, no multicast."""
    exact = opts.edges == "exact"
    cores = m.tle * m.tlt
    rows = tile_classes(s.rows, t.TR, exact)
    cols = tile_classes(layer.C, t.TC, exact)
    chans = tile_classes(-(-s.filters // m.tlt), t.TM, exact)
    M, K = layer.M, (layer.Kh, layer.Kw)
    for count, (tm, tr, tc) in combine(chans, rows, cols):
        p_in.add(cores * layer.n_inputs * count, (tm, in_rows(layer, tr), in_cols(layer, tc)), [M, layer.H, layer.L])
        p_out.add(cores * count, (tm, tr, tc), [M, layer.R, layer.C])
    if layer.weights:
        for count, (tm,) in combine(chans):
            p_w.add(cores * count, (tm, np.ones_like(tm), *K), [M, 1, *K])
