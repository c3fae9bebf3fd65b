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

import functools
from dataclasses import dataclass

import numpy as np

from dnnmap.search.tso.edges import Axis, summed_bursts, tile_classes
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
    """Algorithm 4 for one tensor: sums count x CalcDataTransfer over the classes of its tiles (per axis,
    :mod:`dnnmap.search.tso.edges`), keeping bytes, bursts and transfers."""

    def __init__(self, m: TsoMachine, burst_model: bool) -> None:
        self.m, self.burst_model = m, burst_model
        self.seconds = self.bytes = self.bursts = self.transfers = 0.0

    def add(self, mult: np.ndarray | int, axes: list[Axis], full: list[int]) -> None:
        """``mult`` x every tile of the box cut along ``axes`` (layout order, outermost first)."""
        m = self.m
        nbytes = mult * functools.reduce(np.multiply, (a.cover for a in axes)) * m.elem_bytes
        bursts = mult * summed_bursts(axes, full, m.elem_bytes, m.burst_bytes)
        self.seconds = self.seconds + calc_data_transfer(m, nbytes, bursts, self.burst_model)
        self.bytes = self.bytes + nbytes
        self.bursts = self.bursts + bursts
        self.transfers = self.transfers + mult * functools.reduce(np.multiply, (a.count for a in axes))


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
    when ``edges="exact"``); cores = #TLE x #TLT (the text) or #TLT (as printed). Eq. 7 is linear in T_N and
    T_M, so their classes enter through sum(count x size); the T_R x T_C part is tabulated on the distinct
    (T_R, T_C) and gathered."""
    exact = opts.edges == "exact"
    cores = m.tle * m.tlt if opts.mac_divisor == "all" else m.tlt
    depth = Axis.cut(layer.M, t.TM, exact).cover * Axis.cut(layer.N, t.TN, exact).cover
    rows = tile_classes(layer.R, np.arange(1, layer.R + 1)[:, None], exact)
    cols = tile_classes(layer.C, np.arange(1, layer.C + 1)[None, :], exact)
    plane = sum(cr * cc * tile_mac_seconds(layer, m, 1, 1, tr, tc) for cr, tr in rows for cc, tc in cols)
    tr, tc = np.minimum(t.TR, layer.R) - 1, np.minimum(t.TC, layer.C) - 1
    return depth * plane[tr, tc] * max(1, layer.n_inputs - 1) / cores


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
    rows = Axis.cut(s.rows, t.TR, exact)  # ceil(TLE_R / T_R)
    cols = Axis.cut(layer.C, t.TC, exact)  # ceil(C / T_C)
    chans = Axis.cut(N, t.TN, exact)  # ceil(N / T_N)
    per_tlt = opts.alpha == "per_tlt"
    filters_per_tlt = -(-s.filters // m.tlt)
    if per_tlt:  # ceil((TLE_W / #TLT) / T_M) rounds; every TLT transfers its own W and OUT
        mrounds = Axis.cut(filters_per_tlt, t.TM, exact)
        out_rows, out_m, w_mult, out_mult = rows, mrounds, m.tle * m.tlt, m.tle * m.tlt
    else:  # Eqs. 3-5 as printed: ceil(TLE_W / T_M) rounds, alpha_out over the global R and M, no #TLEs factor
        mrounds = Axis.cut(filters_per_tlt if opts.alpha == "tlt_rounds" else s.filters, t.TM, exact)
        out_rows, out_m, w_mult, out_mult = Axis.cut(layer.R, t.TR, exact), Axis.cut(M, t.TM, exact), m.tle, 1
    n_rounds = 1 if q == "IS" else mrounds.count  # IS: the W tile holds all the TLT's filters (one round)
    in_full, w_full, out_full = [N, layer.H, layer.L], [M, N, *K], [M, layer.R, layer.C]
    kernel = [Axis.whole(K[0]), Axis.whole(K[1])]
    # alpha_in = #TLEs ceil(TLE_R/T_R) ceil(C/T_C) ceil(N/T_N) [x rounds]
    p_in.add(m.tle * n_rounds, [chans, rows.sized(lambda tr: in_rows(layer, tr)),
                                cols.sized(lambda tc: in_cols(layer, tc))], in_full)
    if q == "WS":  # alpha_w = #TLEs ceil(TLE_W/T_M): each filter with all N channels, loaded once
        p_w.add(w_mult, [mrounds, Axis.whole(N), *kernel], w_full)
    else:  # alpha_w = #TLEs ceil(TLE_R/T_R) ceil(C/T_C) ceil(N/T_N) [x rounds]
        m_tiles = Axis.whole(t.TM) if q == "IS" else mrounds
        p_w.add(w_mult * rows.count * cols.count, [m_tiles, chans, *kernel], w_full)
    o_m = Axis.whole(t.TM) if q == "IS" else out_m  # Eq. 3 has no M factor
    p_out.add(out_mult, [o_m, out_rows, cols], out_full)


def _channelwise(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice, t: Tiles,
                 p_in: _Pricer, p_w: _Pricer, p_out: _Pricer) -> None:
    """Depthwise, pooling, add, concat: channel tiles T_M of the TLT's own channels, no multicast."""
    exact = opts.edges == "exact"
    cores = m.tle * m.tlt
    rows = Axis.cut(s.rows, t.TR, exact)
    cols = Axis.cut(layer.C, t.TC, exact)
    chans = Axis.cut(-(-s.filters // m.tlt), t.TM, exact)
    M, K = layer.M, (layer.Kh, layer.Kw)
    p_in.add(cores * layer.n_inputs, [chans, rows.sized(lambda tr: in_rows(layer, tr)),
                                      cols.sized(lambda tc: in_cols(layer, tc))], [M, layer.H, layer.L])
    p_out.add(cores, [chans, rows, cols], [M, layer.R, layer.C])
    if layer.weights:
        p_w.add(cores, [chans, Axis.whole(1), Axis.whole(K[0]), Axis.whole(K[1])], [M, 1, *K])
