"""TSO Algorithm 3 (TLTTiling): the candidate tiles T_R, T_C, T_N, GetFilters' T_M, and Eq. 2.

Alg. 3 loops T_R over 1..TLE_R, T_C over 1..C and T_N over 1..N. The grid is built at once as
flat arrays, keeping only the (T_R, T_C, T_N) whose IN tile (Eq. 1) fits MB0 and, except for WS,
whose single-filter W tile (T_M = 1) fits MB1; both are necessary for Eq. 2 with any T_M >= 1, so
the cut loses nothing. GetFilters then derives T_M and Eq. 2 is checked in full.
"""

from __future__ import annotations

import numpy as np

from dnnmap.search.tso.layer import TsoLayer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.slicing import TleSlice
from dnnmap.search.tso.timing import Tiles, in_cols, in_rows


def candidate_grid(layer: TsoLayer, m: TsoMachine, s: TleSlice, q: str,
                   prune_depth: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(T_R, T_C, T_N) of Alg. 3's three loops that can satisfy Eq. 2. For channelwise layers the third
    loop runs over the channel tile (returned as T_N; it becomes T_M, and T_N is 1).

    ``prune_depth`` keeps, of the depths with equal tile count ceil(N / T_N), only the smallest
    (ceil(N / count)): lossless with ``edges="ceil"`` (every term grows with the tile at equal
    counts); with exact edges IN, OUT, MAC time and bytes do not depend on the depth at equal
    counts and only the rounding of W-tile bursts does (docs/tso.md measures the effect)."""
    tr, tc = np.meshgrid(np.arange(1, s.rows + 1), np.arange(1, layer.C + 1), indexing="ij")
    tr, tc = tr.ravel(), tc.ravel()
    window = in_rows(layer, tr) * in_cols(layer, tc)
    depth = layer.n_inputs if layer.channelwise else 1
    limit = m.mb_in // (window * depth)  # Eq. 2, IN <= MB0: T_N <= MB0 / (T_H T_L)
    if layer.channelwise:
        limit = np.minimum(limit, m.mb_out // (tr * tc))
        if layer.weights:
            limit = np.minimum(limit, m.mb_w // (layer.Kh * layer.Kw))
        limit = np.minimum(limit, -(-s.filters // m.tlt))
    else:
        if q != "WS":
            limit = np.minimum(limit, m.mb_w // (layer.Kh * layer.Kw))
        limit = np.where(tr * tc <= m.mb_out, limit, 0)  # OUT <= MB2 needs T_R T_C <= MB2 with T_M = 1
        limit = np.minimum(limit, layer.N)
    limit = np.maximum(limit, 0)
    keep = limit > 0
    tr, tc, limit = tr[keep], tc[keep], limit[keep]
    reps = np.repeat(np.arange(len(limit)), limit)
    starts = np.cumsum(limit) - limit
    tn = np.arange(len(reps)) - starts[reps] + 1
    tr, tc = tr[reps], tc[reps]
    if prune_depth:
        extent = -(-s.filters // m.tlt) if layer.channelwise else layer.N
        keep = tn == -(-extent // -(-extent // tn))  # the smallest depth with its tile count
        tr, tc, tn = tr[keep], tc[keep], tn[keep]
    return tr, tc, tn


def get_filters(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice, q: str, tr: np.ndarray,
                tc: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """GetFilters (Alg. 3 line 7): T_M, the filters of one TLT's tile (docs/tso.md, ambiguity 3).

    The TLE's TLE_W filters are spread over #TLT TLTs, the leftovers on the lowest IDs, so the
    busiest TLT has ceil(TLE_W / #TLT). IS keeps all of them; OS takes as many as MB2 holds for a
    T_R x T_C OUT tile (``fit_w``: and MB1 for a T_N-channel W tile); WS as many as MB2 and MB1
    (every filter with all N channels) hold.
    """
    per_tlt = -(-s.filters // m.tlt)
    kk = layer.Kh * layer.Kw
    by_out = m.mb_out // (tr * tc)
    if q == "IS":
        return np.full_like(tr, per_tlt)
    if q == "OS":
        tm = np.minimum(per_tlt, by_out)
        return np.minimum(tm, m.mb_w // (tn * kk)) if opts.filters == "fit_w" else tm
    if q == "WS":
        return np.minimum(np.minimum(per_tlt, by_out), m.mb_w // (layer.N * kk))
    raise ValueError(f"unknown TLT dataflow {q!r}")


def fits(layer: TsoLayer, m: TsoMachine, q: str, t: Tiles) -> np.ndarray:
    """Eq. 2: IN <= MB0, W <= MB1 (WS: every filter with all N channels), OUT <= MB2, and T_M >= 1."""
    depth = t.TM if layer.channelwise else t.TN
    w_depth = 0 if (layer.channelwise and not layer.weights) else (layer.N if q == "WS" else t.TN)
    in_ok = depth * layer.n_inputs * in_rows(layer, t.TR) * in_cols(layer, t.TC) <= m.mb_in
    w_ok = t.TM * w_depth * layer.Kh * layer.Kw <= m.mb_w
    out_ok = t.TM * t.TR * t.TC <= m.mb_out
    return (t.TM >= 1) & in_ok & w_ok & out_ok


def tilings(layer: TsoLayer, m: TsoMachine, opts: TsoOptions, s: TleSlice, q: str) -> Tiles:
    """Every tiling Alg. 3 visits for (slice, q) that satisfies Eq. 2."""
    tr, tc, tn = candidate_grid(layer, m, s, q, opts.prune_depth)
    if layer.channelwise:  # the third loop is the channel tile
        t = Tiles(tr, tc, np.ones_like(tn), tn)
    else:
        t = Tiles(tr, tc, tn, get_filters(layer, m, opts, s, q, tr, tc, tn))
    ok = fits(layer, m, q, t)
    return Tiles(t.TR[ok], t.TC[ok], t.TN[ok], t.TM[ok])
