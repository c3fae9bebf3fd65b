"""Small integer sets as packed bitmaps, for the compiled cost kernel (:mod:`dnnmap.cost.kernel`).

One tensor axis takes, across a tile, its spatial instances and a tile step, index sets of
the form ``{sum_k coef_k * i_k}`` (a sliding window ``stride*p + dilation*r``) dilated by the
instance offsets. Such sets are Minkowski sums of arithmetic progressions; here a set is a
row of a ``uint64`` array, bit ``v`` standing for value ``v``, and every operation the cost
model needs (size, overlap with a shifted copy, Minkowski sum with a progression, contiguous
runs) costs a few operations per 64-bit word.

All functions are numba-compiled without the runtime (``_nrt=False``) and take a 2-D array
and a row index rather than a row view: views and array arguments of runtime-enabled
functions cost atomic reference-count updates, a measurable share of the kernel's time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_ONE = np.uint64(1)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@njit(cache=True, _nrt=False)
def words_for(nbits: int) -> int:
    """Words of a bitmap able to hold values ``0 .. nbits - 1``."""
    return (nbits + 63) // 64


@njit(cache=True, _nrt=False)
def _popcount64(x: np.uint64) -> int:
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return int((x * _H01) >> np.uint64(56))


@njit(cache=True, _nrt=False)
def popcount(a: np.ndarray, r: int) -> int:
    """Size of set ``a[r]``."""
    n = 0
    for i in range(a.shape[1]):
        if a[r, i]:
            n += _popcount64(a[r, i])
    return n


@njit(cache=True, _nrt=False)
def and_count(a: np.ndarray, ra: int, b: np.ndarray, rb: int) -> int:
    """``|a[ra] & b[rb]|``."""
    n = 0
    for i in range(a.shape[1]):
        w = a[ra, i] & b[rb, i]
        if w:
            n += _popcount64(w)
    return n


@njit(cache=True, _nrt=False)
def single(a: np.ndarray, r: int, value: int) -> None:
    """``a[r] := {value}``."""
    for i in range(a.shape[1]):
        a[r, i] = 0
    a[r, value >> 6] = _ONE << np.uint64(value & 63)


@njit(cache=True, _nrt=False)
def copy(dst: np.ndarray, rd: int, src: np.ndarray, rs: int) -> None:
    """``dst[rd] := src[rs]``."""
    for i in range(dst.shape[1]):
        dst[rd, i] = src[rs, i]


@njit(cache=True, _nrt=False)
def or_shifted(dst: np.ndarray, rd: int, src: np.ndarray, rs: int, shift: int) -> None:
    """``dst[rd] := dst[rd] | (src[rs] + shift)``; ``shift`` may be negative; values shifted out
    of range are dropped. ``dst[rd]`` and ``src[rs]`` may be the same row."""
    w = src.shape[1]
    if shift >= 0:
        ws = shift >> 6
        bs = np.uint64(shift & 63)
        back = np.uint64(64 - (shift & 63))
        for i in range(w - 1, ws - 1, -1):
            j = i - ws
            v = src[rs, j] << bs
            if bs and j > 0:
                v |= src[rs, j - 1] >> back
            dst[rd, i] |= v
    else:
        s = -shift
        ws = s >> 6
        bs = np.uint64(s & 63)
        back = np.uint64(64 - (s & 63))
        for i in range(0, w - ws):
            j = i + ws
            v = src[rs, j] >> bs
            if bs and j + 1 < w:
                v |= src[rs, j + 1] << back
            dst[rd, i] |= v


@njit(cache=True, _nrt=False)
def shifted(dst: np.ndarray, rd: int, src: np.ndarray, rs: int, shift: int) -> None:
    """``dst[rd] := src[rs] + shift`` (distinct rows)."""
    for i in range(dst.shape[1]):
        dst[rd, i] = 0
    or_shifted(dst, rd, src, rs, shift)


@njit(cache=True, _nrt=False)
def and_not(dst: np.ndarray, rd: int, a: np.ndarray, ra: int, b: np.ndarray, rb: int) -> None:
    """``dst[rd] := a[ra] minus b[rb]``."""
    for i in range(dst.shape[1]):
        dst[rd, i] = a[ra, i] & ~b[rb, i]


@njit(cache=True, _nrt=False)
def dilate(a: np.ndarray, r: int, step: int, count: int, tmp: np.ndarray, rt: int) -> None:
    """``a[r] := a[r] + {0, step, ..., (count - 1) * step}`` (Minkowski sum, by doubling)."""
    covered = 1
    while covered < count:
        k = min(covered, count - covered)
        copy(tmp, rt, a, r)
        or_shifted(a, r, tmp, rt, k * step)
        covered += k


@njit(cache=True, _nrt=False)
def run_profile(a: np.ndarray, r: int, unit_bytes: float, burst_bytes: float) -> tuple[float, int, int, int, int]:
    """The maximal runs of consecutive values of ``a[r]``: (sum over runs of
    ``ceil(run * unit_bytes / burst_bytes)``, number of runs, length of the first run, length
    of the last run, span ``max - min + 1``)."""
    total = 0.0
    runs = 0
    run = 0
    first = 0
    lo = -1
    hi = -1
    for i in range(a.shape[1]):
        w = a[r, i]
        for b in range(64):
            if w and (w >> np.uint64(b)) & _ONE:
                if lo < 0:
                    lo = i * 64 + b
                hi = i * 64 + b
                run += 1
            elif run:
                total += np.ceil(run * unit_bytes / burst_bytes)
                runs += 1
                if runs == 1:
                    first = run
                last = run
                run = 0
    if run:
        total += np.ceil(run * unit_bytes / burst_bytes)
        runs += 1
        if runs == 1:
            first = run
    last = run if run else (last if runs else 0)
    return total, runs, first, last, (hi - lo + 1) if lo >= 0 else 0
