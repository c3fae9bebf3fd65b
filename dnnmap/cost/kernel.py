"""Compiled batch kernel of the analytical model (docs/cost-model.md sections 3-5).

One call evaluates a whole :class:`~dnnmap.cost.batch.MappingBatch` (arrays of factors and
loop orders in, arrays of costs out); the per-mapping loop runs as machine code (numba),
which is what makes a million mappings per second possible. Equations (section 4):

- for a (child, parent) pair of a tensor, the temporal loops above the child, innermost
  first, are the events; loop ``m`` advances ``count_m = (trip_m - 1) * prod(outer trips)``
  times and moves the child's tile by ``+stride_m`` along its dimension while the loops
  inside it wrap back;
- per tensor axis ``x``: ``A_x`` one instance's index set, ``U_x`` the union over the child
  instances under one parent instance, ``O_x`` the overlap of a tile with its successor,
  ``N_x`` the union over instances of each instance's new part;
- words filled per instance per event ``prod(A) - prod(O)``, distinct words the parent
  sends ``prod(U) - prod(U - N)``.

Single-dimension axes have closed forms: a step along them never overlaps, so the first
loop on such a dimension, and every loop outside it, refills the whole tile
(``prod(A) * (prod(trips from there outward) - 1)`` words in all). A sliding-window axis
(``stride*p + dilation*r``) is a Minkowski sum of arithmetic progressions; its sets are
sized in closed form while they stay progressions or disjoint copies (:func:`_grow`), and
with exact bitmaps (the bitmap functions below) otherwise.

DRAM bursts (TSO Alg. 4 generalized): a transfer between DRAM and its child is a product
of per-axis index sets (a whole tile) or such a product minus a sub-product (a tile moved
along window axes, minus its overlap with the old tile); its contiguous runs in the tensor's
DRAM layout are rows of the innermost axis that does not span the whole tensor times the
inner (full) axes, one row per element of the outer axes, the last run of a row joining the
first of the next when both touch the axis' ends; each run costs
``ceil(run_bytes / burst_bytes)`` (:func:`holed_bursts`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


# indices of the count kinds in ``counts``
READS, FILLS, UPDATES, DRAINS, ACC_READS = 0, 1, 2, 3, 4
# columns of ``level_flags`` (L, T, 4): per level and tensor, the fan-out below the level
FANOUT, MULTICAST, REDUCTION, IDENTICAL = 0, 1, 2, 3
# columns of ``tensor_energy`` (L, T, 3): energy per word of each action
READ_E, FILL_E, UPDATE_E = 0, 1, 2
# columns of ``level_params`` (L, 6): bandwidths (words/cycle/instance, 0 = unlimited), hop energy,
# read-modify-write and halo-reuse switches (docs/cost-model.md section 2b)
P_BANDWIDTH, P_READ_BW, P_WRITE_BW, P_HOP_E, P_RMW, P_HALO = range(6)
# columns of ``tensor_params`` (T, 2): bytes per word, operand register per lane (0/1)
T_BYTES, T_REGISTER = 0, 1
# columns of ``scalars`` (docs/cost-model.md section 3)
(S_BURST_BYTES, S_SEC_PER_BYTE, S_SEC_PER_BURST, S_CLOCK_HZ, S_OPS, S_MAC_ENERGY, S_NUM_MACS,
 S_OVERLAP, S_BURST_MODEL) = range(9)
# columns of ``summary``
(O_VALID, O_CYCLES, O_STEPS, O_ENERGY, O_DRAM_BYTES, O_UTILIZATION, O_BURSTS) = range(7)

# rows of the kernel's scratch bitmaps
TMP, SHIFT = 0, 1


# ---- integer sets as packed bitmaps ------------------------------------------------------------
# One tensor axis takes, across a tile, its spatial instances and a tile step, index sets of the
# form {sum_k coef_k * i_k} dilated by the instance offsets: Minkowski sums of arithmetic
# progressions. When the closed forms do not apply, such a set is a row of a uint64 array, bit v
# standing for value v; size, overlap with a shifted copy, Minkowski sum with a progression and
# contiguous runs cost a few operations per 64-bit word. These functions are compiled without
# numba's runtime and take a 2-D array and a row index rather than a row view: views and array
# arguments of runtime-enabled functions cost atomic reference-count updates. They live in this
# module, not their own, because numba's on-disk cache of a function is keyed on its own source
# file only: a kernel cached against an edited helper module would keep the old helper's code.

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
def bm_popcount(a: np.ndarray, r: int) -> int:
    """Size of set ``a[r]``."""
    n = 0
    for i in range(a.shape[1]):
        if a[r, i]:
            n += _popcount64(a[r, i])
    return n


@njit(cache=True, _nrt=False)
def bm_and_count(a: np.ndarray, ra: int, b: np.ndarray, rb: int) -> int:
    """``|a[ra] & b[rb]|``."""
    n = 0
    for i in range(a.shape[1]):
        w = a[ra, i] & b[rb, i]
        if w:
            n += _popcount64(w)
    return n


@njit(cache=True, _nrt=False)
def bm_single(a: np.ndarray, r: int, value: int) -> None:
    """``a[r] := {value}``."""
    for i in range(a.shape[1]):
        a[r, i] = 0
    a[r, value >> 6] = _ONE << np.uint64(value & 63)


@njit(cache=True, _nrt=False)
def bm_copy(dst: np.ndarray, rd: int, src: np.ndarray, rs: int) -> None:
    """``dst[rd] := src[rs]``."""
    for i in range(dst.shape[1]):
        dst[rd, i] = src[rs, i]


@njit(cache=True, _nrt=False)
def bm_or_shifted(dst: np.ndarray, rd: int, src: np.ndarray, rs: int, shift: int) -> None:
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
def bm_shifted(dst: np.ndarray, rd: int, src: np.ndarray, rs: int, shift: int) -> None:
    """``dst[rd] := src[rs] + shift`` (distinct rows)."""
    for i in range(dst.shape[1]):
        dst[rd, i] = 0
    bm_or_shifted(dst, rd, src, rs, shift)


@njit(cache=True, _nrt=False)
def bm_and_not(dst: np.ndarray, rd: int, a: np.ndarray, ra: int, b: np.ndarray, rb: int) -> None:
    """``dst[rd] := a[ra] minus b[rb]``."""
    for i in range(dst.shape[1]):
        dst[rd, i] = a[ra, i] & ~b[rb, i]


@njit(cache=True, _nrt=False)
def bm_dilate(a: np.ndarray, r: int, step: int, count: int, tmp: np.ndarray, rt: int) -> None:
    """``a[r] := a[r] + {0, step, ..., (count - 1) * step}`` (Minkowski sum, by doubling)."""
    covered = 1
    while covered < count:
        k = min(covered, count - covered)
        bm_copy(tmp, rt, a, r)
        bm_or_shifted(a, r, tmp, rt, k * step)
        covered += k


@njit(cache=True, _nrt=False)
def bm_run_profile(a: np.ndarray, r: int, unit_bytes: float,
                   burst_bytes: float) -> tuple[float, int, int, int, int, int]:
    """The maximal runs of consecutive values of ``a[r]``: (sum over runs of
    ``ceil(run * unit_bytes / burst_bytes)``, number of runs, length of the first run, length
    of the last run, smallest value, largest value; both -1 for the empty set)."""
    total = 0.0
    runs = 0
    run = 0
    first = 0
    last = 0
    lo = -1
    hi = -1
    nbits = a.shape[1] * 64
    v = 0
    while v <= nbits:  # one value past the end closes the last run
        if run == 0 and v < nbits and (v & 63) == 0 and a[r, v >> 6] == 0:
            v += 64  # a whole empty word
            continue
        if v < nbits and (a[r, v >> 6] >> np.uint64(v & 63)) & _ONE:
            if lo < 0:
                lo = v
            hi = v
            run += 1
        elif run:
            total += np.ceil(run * unit_bytes / burst_bytes)
            runs += 1
            if runs == 1:
                first = run
            last = run
            run = 0
        v += 1
    return total, runs, first, last, lo, hi


@njit(cache=True, inline="always", error_model="numpy")
def _grow(prog: bool, step: int, count: int, size: int, extent: int, c: int,
          m: int) -> tuple[bool, bool, int, int, int, int]:
    """``S := S + {0, c, ..., (m - 1) c}`` in closed form, for terms taken in ascending ``c``.

    ``S`` is described by (is a progression, its step, its count, size, extent); returns
    (exact, and the new description). Exact while the set stays an arithmetic progression or
    the new copies are disjoint (``c >= extent``). Scalars only, so it inlines at no cost.
    """
    if m <= 1:
        return True, prog, step, count, size, extent
    if prog and count == 1:
        return True, True, c, m, m, (m - 1) * c + 1
    if prog and c <= count * step and (step == 1 or c % step == 0):
        grown = count + (m - 1) * (c if step == 1 else c // step)
        return True, True, step, grown, grown, (grown - 1) * step + 1
    if c >= extent:
        return True, False, step, count, size * m, extent + (m - 1) * c
    return False, prog, step, count, size, extent


@njit(cache=True, error_model="numpy", _nrt=False)
def _grid_dilate(a: np.ndarray, r: int, coefs: np.ndarray, counts: np.ndarray, row: int, n: int,
                 work: np.ndarray) -> None:
    """``a[r] := a[r] + offsets`` of the spatial instances (the grid progressions ``row``)."""
    for i in range(n):
        if counts[row, i] > 1:
            bm_dilate(a, r, coefs[row, i], counts[row, i], work, TMP)


@njit(cache=True, error_model="numpy", _nrt=False)
def _grid_offsets(grid_c: np.ndarray, grid_m: np.ndarray, n_grid: np.ndarray, grid_prod: np.ndarray,
                  ax_nterm: np.ndarray, t: int, nax: int, scratch: np.ndarray, work: np.ndarray, base: int) -> int:
    """Distinct offsets of the spatial instances under one parent instance, over the tensor's axes:
    the product of ``|{0} + grid_x|`` (closed form while it stays exact, else a bitmap in
    ``scratch``). For MAC lanes, the distinct words the lanes touch at one step; for child tiles,
    the number of distinct tiles (identical-only multicast, docs/cost-model.md section 2b)."""
    total = 1
    for x in range(nax):
        if ax_nterm[t, x] == 1:
            total *= grid_prod[x]
            continue
        ok, prog, step, count, size, extent = True, True, 1, 1, 1, 1  # {0} + the grid
        for i in range(n_grid[x]):
            ok, prog, step, count, size, extent = _grow(prog, step, count, size, extent, grid_c[x, i], grid_m[x, i])
            if not ok:
                break
        if ok:
            total *= size
        else:
            bm_single(scratch, x, base)
            _grid_dilate(scratch, x, grid_c, grid_m, x, n_grid[x], work)
            total *= bm_popcount(scratch, x)
    return total


@njit(cache=True, _nrt=False)
def _has(a: np.ndarray, r: int, value: int) -> bool:
    """``value in a[r]``."""
    return bool((a[r, value >> 6] >> np.uint64(value & 63)) & _ONE)


@njit(cache=True, _nrt=False)
def _joined(last: int, first: int, unit: float, burst_bytes: float) -> float:
    """Bursts saved when a run of ``last`` units and the next one of ``first`` units are adjacent
    in memory and form one run (TSO Alg. 4: each run costs ``ceil(run_bytes / burst_bytes)``)."""
    return (np.ceil(last * unit / burst_bytes) + np.ceil(first * unit / burst_bytes)
            - np.ceil((last + first) * unit / burst_bytes))


@njit(cache=True, _nrt=False)
def holed_bursts(full: np.ndarray, new: np.ndarray, holes: int, work: np.ndarray, sizes: np.ndarray, t: int,
                 nax: int, layout: np.ndarray, word_bytes: float, burst_bytes: float) -> float:
    """Bursts (TSO Alg. 4, generalized to any DRAM layout) to move ``F \\ H`` of tensor ``t`` (axis
    extents ``sizes[t]``, axes stored in ``layout[t]`` order, outermost first): ``F`` the product of
    the per-axis sets ``full[x]``, ``H`` the product of ``H_x = full[x] minus new[x]`` on the axes in
    the bit mask ``holes`` and ``H_x = full[x]`` on the others (``new[x]`` within ``full[x]``). With
    ``holes == 0`` the transfer is the plain product ``F`` and ``new``/``work`` are not read.

    An event's transfer has this form: ``F`` the new tile, ``H`` its overlap with the old one. Let
    ``k`` be the innermost axis in the layout whose set is not the whole axis: the axes inside it
    are whole (and not holed), so each element of ``k``'s set is a contiguous block. Every element
    ``o`` of the outer product (axes before ``k``) is a row: ``full[k]`` when ``o`` is not in the
    outer part of ``H``, else ``full[k]`` minus ``H_k`` (``new[k]``, or nothing when ``k`` is not
    holed). Each run of a row costs ``ceil(run_bytes / burst_bytes)``; the last run of row ``o``
    and the first of row ``o + 1`` join when they touch the axis' ends and ``o + 1`` follows ``o``
    in memory. Adjacent pairs of outer elements, by the row type of each, are counted axis by
    axis, outermost first: within an axis, values ``v, v + 1`` of its set (by their membership in
    ``H_x``); across it, a prefix pair extended by the axis' last and first values.
    """
    k = -1
    for li in range(nax - 1, -1, -1):
        x = layout[t, li]
        if bm_popcount(full, x) < sizes[t, x]:
            k = li
            break
    if k < 0:
        total = 1.0
        for x in range(nax):
            total *= sizes[t, x]
        return np.ceil(total * word_bytes / burst_bytes)
    inner = 1.0
    for li in range(k + 1, nax):
        inner *= sizes[t, layout[t, li]]
    # outer elements (n_f in all, n_h in H) and adjacent pairs by row type: f = full row, h = holed row
    n_f = 1.0
    n_h = 1.0 if holes else 0.0
    p_ff = 0.0
    p_fh = 0.0
    p_hf = 0.0
    p_hh = 0.0
    for li in range(k):
        x = layout[t, li]
        _, runs, _, _, lo, hi = bm_run_profile(full, x, 1.0, 1.0)
        count = bm_popcount(full, x)
        adj = float(count - runs)  # values v with v + 1 also in the set
        wraps = hi - lo + 1 == sizes[t, x]  # the set holds both ends of the axis
        if holes >> x & 1:
            bm_and_not(work, SHIFT, full, x, new, x)  # H_x
            count_h = bm_popcount(work, SHIFT)
            bm_shifted(work, TMP, work, SHIFT, -1)
            a_hh = float(bm_and_count(work, TMP, work, SHIFT))  # v in H_x, v + 1 in H_x
            a_xh = float(bm_and_count(work, TMP, full, x))  # v in F_x, v + 1 in H_x
            bm_shifted(work, TMP, full, x, -1)
            a_hx = float(bm_and_count(work, TMP, work, SHIFT))  # v in H_x, v + 1 in F_x
            lo_h = _has(work, SHIFT, lo)
            hi_h = _has(work, SHIFT, hi)
        else:
            count_h = count
            a_hh = a_xh = a_hx = adj
            lo_h = hi_h = True
        if wraps:  # prefix pairs (e, e + 1) extended by (last value, first value)
            c_ff = p_ff + (0.0 if lo_h else p_fh) + (0.0 if hi_h else p_hf) + (0.0 if lo_h or hi_h else p_hh)
            c_fh = p_fh if lo_h else 0.0
            c_fh += p_hh if lo_h and not hi_h else 0.0
            c_hf = p_hf if hi_h else 0.0
            c_hf += p_hh if hi_h and not lo_h else 0.0
            c_hh = p_hh if lo_h and hi_h else 0.0
        else:
            c_ff = c_fh = c_hf = c_hh = 0.0
        # pairs within the axis under one prefix element
        p_ff = c_ff + (n_f - n_h) * adj + n_h * (adj - a_hx - a_xh + a_hh)
        p_fh = c_fh + n_h * (a_xh - a_hh)
        p_hf = c_hf + n_h * (a_hx - a_hh)
        p_hh = c_hh + n_h * a_hh
        n_f *= count
        n_h *= count_h
    unit = inner * word_bytes
    xk = layout[t, k]
    total_f, _, first_f, last_f, lo, hi = bm_run_profile(full, xk, unit, burst_bytes)
    total = (n_f - n_h) * total_f
    ends = hi - lo + 1 == sizes[t, xk]  # else no row touches both ends and no runs join
    if ends:
        total -= p_ff * _joined(last_f, first_f, unit, burst_bytes)
    if holes >> xk & 1 and n_h > 0:  # holed rows: new[k]
        total_h, _, first_h, last_h, lo_n, hi_n = bm_run_profile(new, xk, unit, burst_bytes)
        total += n_h * total_h
        if ends:
            starts_h = lo_n == lo
            ends_h = hi_n == hi
            if starts_h:
                total -= p_fh * _joined(last_f, first_h, unit, burst_bytes)
            if ends_h:
                total -= p_hf * _joined(last_h, first_f, unit, burst_bytes)
            if starts_h and ends_h:
                total -= p_hh * _joined(last_h, first_h, unit, burst_bytes)
    return total


@njit(cache=True, _nrt=False)
def product_bursts(sets: np.ndarray, sizes: np.ndarray, t: int, nax: int, layout: np.ndarray, word_bytes: float,
                   burst_bytes: float) -> float:
    """Bursts (TSO Alg. 4, generalized) to move the product of the per-axis sets ``sets[x]`` of tensor
    ``t`` (axis extents ``sizes[t]``, stored with its axes in ``layout[t]`` order, outermost first):
    :func:`holed_bursts` without a hole. A set that spans its whole axis with gaps (a strided window)
    has a run at each end, which joins the neighbouring row's."""
    return holed_bursts(sets, sets, 0, sets, sizes, t, nax, layout, word_bytes, burst_bytes)


@njit(cache=True, _nrt=False)
def _event_bursts(moved: np.ndarray, delta: np.ndarray, overlap: np.ndarray, new: np.ndarray, whole: np.ndarray,
                  piece: np.ndarray, work: np.ndarray, t: int, nax: int, sizes: np.ndarray, layout: np.ndarray,
                  word_bytes: float, burst_bytes: float) -> float:
    """Bursts of one event's transfer when only window axes moved (TSO Alg. 4 via :func:`holed_bursts`):
    the new tile, ``whole`` shifted by ``delta`` on the moved axes (built in ``piece``), minus its
    overlap with the old tile, the product of ``piece[x]`` minus the new part ``new[x]`` on the moved
    axes. When a moved axis has no overlap (``overlap[x] == 0``) the whole new tile moves."""
    holes = 0
    for x in range(nax):
        if moved[x]:
            bm_shifted(piece, x, whole, x, delta[x])
            holes |= 1 << x
        else:
            bm_copy(piece, x, whole, x)
    for x in range(nax):
        if moved[x] and overlap[x] == 0:
            holes = 0
    return holed_bursts(piece, new, holes, work, sizes, t, nax, layout, word_bytes, burst_bytes)


@njit(cache=True, error_model="numpy")
def evaluate_batch(tf: np.ndarray, sf: np.ndarray, order: np.ndarray, keeps: np.ndarray, bounds: np.ndarray,
                   ax_n: np.ndarray, ax_nterm: np.ndarray, ax_dim: np.ndarray, ax_coef: np.ndarray, out_t: int,
                   out_irrelevant: np.ndarray, level_flags: np.ndarray, tensor_energy: np.ndarray,
                   level_params: np.ndarray, tensor_params: np.ndarray, cap_part: np.ndarray, cap: np.ndarray,
                   cap_weight: np.ndarray, scalars: np.ndarray,
                   layout: np.ndarray, sizes: np.ndarray, counts: np.ndarray,
                   tile_words: np.ndarray, hop: np.ndarray, excess: np.ndarray, breakdown: np.ndarray,
                   level_cycles: np.ndarray, summary: np.ndarray, start: int, base: int) -> tuple[int, int]:
    """Evaluate mappings ``start ..`` of the batch into the output arrays (zero, or left by an earlier
    call on a batch with the same ``keeps``: see the loop's first comment).

    Sliding-window sets are held in bitmaps sized for axis extents up to ``base``. Returns
    ``(B, base)`` when done, or ``(b, needed)`` when mapping ``b`` (an imperfect factorization
    padding the iteration space) needs larger bitmaps: call again from ``b`` with ``needed``.

    Inputs: ``tf``/``sf``/``order`` (B, L, D) temporal factors, spatial factors, loop order
    (outermost first); ``keeps`` (L, T); ``bounds`` (D,) the dimensions' bounds; tensor ``t``'s
    axis ``x`` is the sum over its ``ax_nterm[t, x]`` terms of ``ax_coef[t, x, k] * dim
    ax_dim[t, x, k]``; per level and tensor ``level_flags`` (fan-out, multicast, reduction,
    identical-only multicast) and ``tensor_energy`` (read, fill, update); per level ``level_params``
    (bandwidths, hop energy, switches); per tensor ``tensor_params`` (bytes per word, operand
    register); ``cap_part[l, t]`` the capacity partition of ``cap[l]`` tensor ``t`` uses, a word
    counting ``cap_weight[l, t]``; ``layout[t]`` the DRAM axis order, ``sizes[t]`` the axis extents.
    Outputs: ``counts`` (B, 5, L, T), ``tile_words`` (B, L, T), ``hop`` (B, L), ``excess`` (B, L),
    ``breakdown`` (B, L + 2), ``level_cycles`` (B, L), ``summary`` (B, 7).
    """
    B, L, D = tf.shape
    T = keeps.shape[1]
    X = ax_dim.shape[1]
    K = ax_dim.shape[2]
    cov = np.empty((L, D), np.int64)
    covx = np.ones((L + 1, D), np.int64)  # row c + 1: the coverage of child c (row 0: a lane's register)
    covb = np.empty((L, D), np.int64)
    inst = np.empty(L, np.int64)
    seq_d = np.empty(L * D, np.int64)
    seq_n = np.empty(L * D, np.int64)
    seq_s = np.empty(L * D, np.int64)
    outer = np.empty(L * D + 1, np.int64)
    lvl_start = np.empty(L + 1, np.int64)
    wrap = np.empty(D, np.int64)
    single_rel = np.zeros((T, D), np.bool_)
    window_rel = np.zeros((T, D), np.bool_)
    dim_nterms = np.zeros((T, D), np.int64)  # the axes (and coefficients) each dimension indexes
    dim_axis = np.empty((T, D, X), np.int64)
    dim_coef = np.empty((T, D, X), np.int64)
    win_n = np.zeros(T, np.int64)  # the sliding-window axes of each tensor
    win_x = np.empty((T, X), np.int64)
    pair_t = np.empty(T * L, np.int64)
    pair_c = np.empty(T * L, np.int64)
    pair_p = np.empty(T * L, np.int64)
    pair_mcast = np.empty(T * L, np.bool_)
    pair_reduce = np.empty(T * L, np.bool_)
    pair_identical = np.empty(T * L, np.bool_)
    sp_lvl = np.empty(L * D, np.int64)  # the spatial factors > 1 of a mapping
    sp_dim = np.empty(L * D, np.int64)
    a_cnt = np.empty(X, np.int64)
    u_cnt = np.empty(X, np.int64)
    span = np.empty(X, np.int64)
    o_cnt = np.empty(X, np.int64)
    n_cnt = np.empty(X, np.int64)
    moved = np.empty(X, np.bool_)
    delta_x = np.zeros(X, np.int64)
    closed = np.zeros(X, np.bool_)
    a_step = np.empty(X, np.int64)  # per window axis: the tile's set as a progression (step, count)
    a_count = np.empty(X, np.int64)
    grid_c = np.empty((X, K * L * D), np.int64)  # per axis the grid terms
    grid_m = np.empty((X, K * L * D), np.int64)
    n_grid = np.empty(X, np.int64)
    grid_prod = np.empty(X, np.int64)
    part_used = np.zeros(T, np.float64)
    # bitmaps hold values base - extent .. base + 3 * extent, extent <= base the largest axis extent of
    # the iteration space (a tile shifted by less than its span, dilated by the grid)
    nwords = words_for(4 * base + 64)
    abm = np.zeros((X, nwords), np.uint64)  # one instance's set per axis
    ubm = np.zeros((X, nwords), np.uint64)  # union over the child instances
    nbm = np.zeros((X, nwords), np.uint64)  # new part of one event, one instance
    nbu = np.zeros((X, nwords), np.uint64)  # new part of one event, union over the instances
    piece = np.zeros((X, nwords), np.uint64)
    work = np.zeros((2, nwords), np.uint64)
    sp_level = np.ones(L, np.int64)
    burst_bytes = scalars[S_BURST_BYTES]
    burst_model = scalars[S_BURST_MODEL] > 0
    for t in range(T):
        for x in range(ax_n[t]):
            if ax_nterm[t, x] > 1:
                win_x[t, win_n[t]] = x
                win_n[t] += 1
            for k in range(ax_nterm[t, x]):
                d = ax_dim[t, x, k]
                if ax_nterm[t, x] == 1:
                    single_rel[t, d] = True
                else:
                    window_rel[t, d] = True
                dim_axis[t, d, dim_nterms[t, d]] = x
                dim_coef[t, d, dim_nterms[t, d]] = ax_coef[t, x, k]
                dim_nterms[t, d] += 1
    # the (child, parent) pairs of every tensor, innermost first (child -1: the MAC lanes), and
    # whether every fan-out between them multicasts / reduces
    n_pairs = 0
    for t in range(T):
        c = -1
        for p in range(L):
            if not keeps[p, t]:
                continue
            mcast = True
            reduce = True
            identical = False
            for j in range(c + 1, p + 1):
                if level_flags[j, t, FANOUT]:
                    mcast = mcast and level_flags[j, t, MULTICAST]
                    reduce = reduce and level_flags[j, t, REDUCTION]
                    identical = identical or level_flags[j, t, IDENTICAL]
            pair_t[n_pairs] = t
            pair_c[n_pairs] = c
            pair_p[n_pairs] = p
            pair_mcast[n_pairs] = mcast
            pair_reduce[n_pairs] = reduce
            pair_identical[n_pairs] = mcast and identical
            n_pairs += 1
            c = p

    for b in range(start, B):
        # Every (kind, level, tensor) count and tile size is written once per mapping, by the one
        # pair that has that level as child or parent; cells of levels that do not keep a tensor
        # are never written and stay as the caller initialised them (zero). Words through a
        # fan-out add up over the pairs crossing it.
        for j in range(L):
            hop[b, j] = 0.0
        # ---- coverage, instances, loop sequence (section 1) -------------------------
        steps = 1
        E = 0
        for j in range(L):
            sp_level[j] = 1
            for d in range(D):
                covb[j, d] = cov[j - 1, d] if j else 1
                cov[j, d] = covb[j, d] * tf[b, j, d] * sf[b, j, d]
                covx[j + 1, d] = cov[j, d]
                steps *= tf[b, j, d]
                if sf[b, j, d] > 1:  # the spatial factors > 1
                    sp_level[j] *= sf[b, j, d]
                    sp_lvl[E] = j
                    sp_dim[E] = d
                    E += 1
        inst[L - 1] = 1  # instances of a level: the spatial factors of the levels above it
        for j in range(L - 1, 0, -1):
            inst[j - 1] = inst[j] * sp_level[j]
        lanes = inst[0] * sp_level[0]
        for d in range(D):
            if cov[L - 1, d] > bounds[d]:  # padded (imperfect) space: are the bitmaps large enough?
                need = base
                for t in range(T):
                    for x in range(ax_n[t]):
                        ext = 1
                        for k in range(ax_nterm[t, x]):
                            ext += ax_coef[t, x, k] * (cov[L - 1, ax_dim[t, x, k]] - 1)
                        need = max(need, ext)
                if need > base:  # an imperfect factorization pads the space beyond the bitmaps
                    return b, need
                break
        M = 0
        for j in range(L):
            lvl_start[j] = M
            for k in range(D - 1, -1, -1):
                d = order[b, j, k]
                n = tf[b, j, d]
                if n > 1:
                    seq_d[M] = d
                    seq_n[M] = n
                    seq_s[M] = covb[j, d] * sf[b, j, d]
                    M += 1
        lvl_start[L] = M
        outer[M] = 1
        for m in range(M - 1, -1, -1):
            outer[m] = outer[m + 1] * seq_n[m]
        bursts = 0.0
        o_size = 1.0  # output words in the (padded) iteration space
        for x in range(ax_n[out_t]):
            ext = 1
            for k in range(ax_nterm[out_t, x]):
                ext += ax_coef[out_t, x, k] * (cov[L - 1, ax_dim[out_t, x, k]] - 1)
            o_size *= ext

        for pi in range(n_pairs):
            t = pair_t[pi]
            c = pair_c[pi]
            p = pair_p[pi]
            mcast = pair_mcast[pi]
            reduce = pair_reduce[pi]
            is_out = t == out_t
            nax = ax_n[t]
            need_sets = burst_model and p == L - 1
            lo = c + 1 if c >= 0 else 0
            # grid progressions of every axis: the spatial instances under one parent instance
            for x in range(nax):
                n_grid[x] = 0
                grid_prod[x] = 1
            for e in range(E):
                g = sp_lvl[e]
                if g < lo or g > p:
                    continue
                d = sp_dim[e]
                for j in range(dim_nterms[t, d]):
                    x = dim_axis[t, d, j]
                    coef = dim_coef[t, d, j] * covb[g, d]
                    i = n_grid[x]  # insert in ascending coefficient, the order the closed forms take
                    while i > 0 and grid_c[x, i - 1] > coef:
                        grid_c[x, i] = grid_c[x, i - 1]
                        grid_m[x, i] = grid_m[x, i - 1]
                        i -= 1
                    grid_c[x, i] = coef
                    grid_m[x, i] = sf[b, g, d]
                    n_grid[x] += 1
                    grid_prod[x] *= sf[b, g, d]

            # copies of an output word over spatially split reduction dimensions above the child / parent
            rep_c = 1.0
            rep_p = 1.0
            if is_out:
                for e in range(E):
                    if out_irrelevant[sp_dim[e]] and sp_lvl[e] > c:
                        rep_c *= sf[b, sp_lvl[e], sp_dim[e]]
                        if sp_lvl[e] > p:
                            rep_p *= sf[b, sp_lvl[e], sp_dim[e]]
            rmw = level_params[p, P_RMW] > 0
            if c < 0 and tensor_params[t, T_REGISTER] == 0:
                # MAC lanes: every temporal step every lane touches one word of the tensor
                u_lane = _grid_offsets(grid_c, grid_m, n_grid, grid_prod, ax_nterm, t, nax, ubm, work, base)
                per_lane = float(steps) * lanes
                union = float(steps) * u_lane * inst[p]
                if is_out:
                    updates = union if reduce else per_lane
                    counts[b, UPDATES, p, t] = updates
                    # every lane result accumulates; the first touch of each copy at the parent does not read
                    counts[b, ACC_READS, p, t] = updates - o_size * rep_p if rmw else 0.0
                else:
                    counts[b, READS, p, t] = union if mcast else per_lane
                for j in range(0, p + 1):
                    if level_flags[j, 0, FANOUT]:
                        hop[b, j] += per_lane
                if need_sets:
                    word_bursts = np.ceil(tensor_params[t, T_BYTES] / burst_bytes)
                    if is_out and reduce or not is_out and mcast and not pair_identical[pi]:
                        for x in range(nax):
                            bm_single(ubm, x, base)
                            _grid_dilate(ubm, x, grid_c, grid_m, x, n_grid[x], work)
                        bursts += float(steps) * product_bursts(ubm, sizes, t, nax, layout,
                                                                 tensor_params[t, T_BYTES], burst_bytes)
                    elif not is_out and pair_identical[pi]:  # one single-word transfer per distinct word
                        bursts += union / inst[p] * word_bursts
                    else:  # one single-word transfer per lane and step
                        bursts += per_lane * word_bursts
                continue

            # ---- per-axis sets of the child tile and of the union over instances --
            a_prod = 1
            u_prod = 1
            a_single = 1
            u_single = 1
            for x in range(nax):
                nt = ax_nterm[t, x]
                if nt == 1:
                    d = ax_dim[t, x, 0]
                    a_cnt[x] = covx[c + 1, d]
                    u = covx[c + 1, d] * grid_prod[x]
                    u_cnt[x] = u
                    a_single *= a_cnt[x]
                    u_single *= u
                    closed[x] = True
                else:
                    sp = 1
                    ok, prog, step, count, size, extent = True, True, 1, 1, 1, 1  # {0} + the tile's terms
                    for k in range(nt):  # in ascending coefficient (CostModel sorts them)
                        coef = ax_coef[t, x, k]
                        extent_k = covx[c + 1, ax_dim[t, x, k]]
                        sp += coef * (extent_k - 1)
                        if ok:
                            ok, prog, step, count, size, extent = _grow(prog, step, count, size, extent, coef,
                                                                        extent_k)
                    span[x] = sp
                    closed[x] = ok and prog and not need_sets
                    if closed[x]:
                        a_step[x] = step
                        a_count[x] = count
                        a_cnt[x] = size
                        for i in range(n_grid[x]):  # the union: + the grid
                            ok, prog, step, count, size, extent = _grow(prog, step, count, size, extent,
                                                                        grid_c[x, i], grid_m[x, i])
                            if not ok:
                                break
                        closed[x] = ok
                        u_cnt[x] = size
                if need_sets or not closed[x]:
                    bm_single(abm, x, base)
                    for k in range(nt):
                        bm_dilate(abm, x, ax_coef[t, x, k], covx[c + 1, ax_dim[t, x, k]], work, TMP)
                    bm_copy(ubm, x, abm, x)
                    _grid_dilate(ubm, x, grid_c, grid_m, x, n_grid[x], work)
                    if nt > 1:
                        a_cnt[x] = bm_popcount(abm, x)
                        u_cnt[x] = bm_popcount(ubm, x)
                a_prod *= a_cnt[x]
                u_prod *= u_cnt[x]
            if c >= 0:
                tile_words[b, c, t] = a_prod
            # DRAM bursts of the pair's transfers: of the union over the child instances (one
            # transfer serves them all when the fan-outs merge) and of one instance
            full_u = 0.0
            full_a = 0.0
            if need_sets:
                full_u = product_bursts(ubm, sizes, t, nax, layout, tensor_params[t, T_BYTES], burst_bytes)
                full_a = product_bursts(abm, sizes, t, nax, layout, tensor_params[t, T_BYTES], burst_bytes)
            bursts_u = full_u
            bursts_a = full_a

            # ---- events: loops above the child, innermost first ---------------------
            # halo reuse: 1 always, 0 never (a moved tile is refilled whole), 2 only across a step of the
            # innermost loop above the child
            halo_mode = level_params[c, P_HALO] if c >= 0 else 1.0
            child_total = float(a_prod)
            union_total = float(u_prod)
            if need_sets:
                for x in range(nax):
                    moved[x] = False
            for d in range(D):
                wrap[d] = 0
            any_wrap = False
            for m in range(lvl_start[c + 1], M):
                d = seq_d[m]
                n = seq_n[m]
                if single_rel[t, d]:
                    # this loop and every loop outside it refill the whole tile
                    full_events = float(outer[m]) - 1.0
                    child_total += full_events * a_prod
                    union_total += full_events * u_prod
                    bursts_u += full_events * full_u
                    bursts_a += full_events * full_a
                    break
                if not (window_rel[t, d] or any_wrap):
                    continue  # the tile does not move
                s = seq_s[m]
                cnt = float(n - 1) * outer[m + 1]
                no_halo = halo_mode == 0 or halo_mode == 2 and m != lvl_start[c + 1]
                prod_o = a_single
                prod_un = u_single
                n_moved = 0
                for wi in range(win_n[t]):
                    x = win_x[t, wi]
                    moved[x] = False
                    nt = ax_nterm[t, x]
                    delta = 0
                    for k in range(nt):
                        dk = ax_dim[t, x, k]
                        delta += ax_coef[t, x, k] * ((s if dk == d else 0) - wrap[dk])
                    delta_x[x] = delta
                    if delta == 0:
                        o_cnt[x] = a_cnt[x]
                        n_cnt[x] = 0
                    else:
                        moved[x] = True
                        n_moved += 1
                        mag = delta if delta > 0 else -delta
                        if mag >= span[x] or no_halo:
                            o_cnt[x] = 0
                            n_cnt[x] = u_cnt[x]
                            if need_sets:
                                bm_copy(nbm, x, abm, x)
                                bm_copy(nbu, x, ubm, x)
                        elif closed[x] and a_step[x] > 1 and mag % a_step[x] != 0:
                            o_cnt[x] = 0
                            n_cnt[x] = u_cnt[x]
                        else:
                            done = False
                            if closed[x]:
                                step = a_step[x]
                                k_steps = mag if step == 1 else mag // step
                                o_cnt[x] = max(0, a_count[x] - k_steps)
                                # the new part: the last k_steps elements of the progression, + the grid
                                ok, prog, count, size, extent = True, True, k_steps, k_steps, (k_steps - 1) * step + 1
                                for i in range(n_grid[x]):
                                    ok, prog, step, count, size, extent = _grow(prog, step, count, size, extent,
                                                                                grid_c[x, i], grid_m[x, i])
                                    if not ok:
                                        break
                                if ok:
                                    n_cnt[x] = size
                                    done = True
                                else:  # the closed form does not cover this step: exact bitmaps
                                    bm_single(abm, x, base)
                                    for k in range(nt):
                                        bm_dilate(abm, x, ax_coef[t, x, k], covx[c + 1, ax_dim[t, x, k]], work, TMP)
                            if not done:
                                bm_shifted(work, SHIFT, abm, x, delta)
                                o_cnt[x] = bm_and_count(work, SHIFT, abm, x)
                                bm_and_not(nbm, x, work, SHIFT, abm, x)
                                bm_copy(nbu, x, nbm, x)
                                _grid_dilate(nbu, x, grid_c, grid_m, x, n_grid[x], work)
                                n_cnt[x] = bm_popcount(nbu, x)
                    prod_o *= o_cnt[x]
                    prod_un *= u_cnt[x] - n_cnt[x]
                child_total += cnt * (a_prod - prod_o)
                union_total += cnt * (u_prod - prod_un)
                if need_sets and n_moved:
                    bursts_u += cnt * _event_bursts(moved, delta_x, o_cnt, nbu, ubm, piece, work, t, nax, sizes,
                                                    layout, tensor_params[t, T_BYTES], burst_bytes)
                    bursts_a += cnt * _event_bursts(moved, delta_x, o_cnt, nbm, abm, piece, work, t, nax, sizes,
                                                    layout, tensor_params[t, T_BYTES], burst_bytes)
                wrap[d] += (n - 1) * s
                any_wrap = True

            # ---- counts of the pair (section 4) ------------------------------------
            inst_c = inst[c] if c >= 0 else lanes  # child -1 here: the lanes' operand registers
            w_child = float(inst_c) * child_total
            u_parent = float(inst[p]) * union_total
            # what the parent reads for its children's fills: the union (multicast), one read per
            # distinct child tile (identical-only multicast), or every child's own (section 2b)
            sent_u = mcast and not pair_identical[pi]
            if pair_identical[pi]:
                tiles = float(inst[p]) * _grid_offsets(grid_c, grid_m, n_grid, grid_prod, ax_nterm, t, nax, piece,
                                                       work, base)
                share = tiles / inst_c  # parent reads per child fill
                sent_bursts = tiles * bursts_a
            else:
                share = 1.0
                sent_bursts = bursts_u if sent_u else inst_c * bursts_a
            if is_out:
                if c >= 0:
                    counts[b, DRAINS, c, t] = w_child
                    counts[b, FILLS, c, t] = w_child - o_size * rep_c
                counts[b, UPDATES, p, t] = u_parent if reduce else w_child
                # accumulations are the drains of copies that entered the child at zero; merged by a
                # reducing network they are exactly the parent's first touches (section 2b)
                counts[b, ACC_READS, p, t] = (0.0 if reduce else o_size * (rep_c - rep_p)) if rmw else 0.0
                reloads = (u_parent - o_size * rep_p) if sent_u else (w_child - o_size * rep_c) * share
                counts[b, READS, p, t] = reloads
                moved_words = 2.0 * w_child - o_size * rep_c
                if need_sets:
                    # write-backs: one transfer per event (per instance unless the fan-outs reduce);
                    # reloads: the same transfers as the fills' (merged when the fan-outs multicast),
                    # scaled by the share of their words that hold partial sums - exact when every
                    # transfer moves the whole tile, as for outputs without window axes
                    bursts += bursts_u if reduce else inst_c * bursts_a
                    shaped = u_parent if sent_u else w_child * share
                    if shaped > 0:
                        bursts += sent_bursts * reloads / shaped
            else:
                if c >= 0:
                    counts[b, FILLS, c, t] = w_child
                counts[b, READS, p, t] = u_parent if sent_u else w_child * share
                moved_words = w_child
                if need_sets:
                    bursts += sent_bursts
            for j in range(c + 1, p + 1):
                if level_flags[j, 0, FANOUT]:
                    hop[b, j] += moved_words

        # ---- capacity, energy, latency (section 3) ------------------------------------
        valid = True
        for i in range(L - 1):
            for q in range(T):
                part_used[q] = 0.0
            for t in range(T):
                part_used[cap_part[i, t]] += tile_words[b, i, t] * cap_weight[i, t]
            worst = -np.inf
            for q in range(T):
                if cap[i, q] >= 0:
                    worst = max(worst, part_used[q] - cap[i, q])
            excess[b, i] = worst if worst > -np.inf else 0.0
            if excess[b, i] > 0:
                valid = False
        energy = 0.0
        latency = 0.0
        serial = 0.0
        hop_energy = 0.0
        for i in range(L):
            rd = 0.0
            wr = 0.0
            level_energy = 0.0
            for t in range(T):
                reads = counts[b, READS, i, t] + counts[b, DRAINS, i, t] + counts[b, ACC_READS, i, t]
                rd += reads
                wr += counts[b, FILLS, i, t] + counts[b, UPDATES, i, t]
                level_energy += (reads * tensor_energy[i, t, READ_E]
                                 + counts[b, FILLS, i, t] * tensor_energy[i, t, FILL_E]
                                 + counts[b, UPDATES, i, t] * tensor_energy[i, t, UPDATE_E])
            breakdown[b, i] = level_energy
            hop_energy += hop[b, i] * level_params[i, P_HOP_E]
            # bandwidth-limited cycles of one instance (the busiest: all move the same words)
            cyc = 0.0
            if level_params[i, P_BANDWIDTH] > 0:
                cyc = (rd + wr) / level_params[i, P_BANDWIDTH]
            if level_params[i, P_READ_BW] > 0:
                cyc = max(cyc, rd / level_params[i, P_READ_BW])
            if level_params[i, P_WRITE_BW] > 0:
                cyc = max(cyc, wr / level_params[i, P_WRITE_BW])
            level_cycles[b, i] = cyc / inst[i]
        breakdown[b, L] = hop_energy
        breakdown[b, L + 1] = scalars[S_OPS] * scalars[S_MAC_ENERGY]
        for i in range(L + 2):
            energy += breakdown[b, i]
        dram_bytes = 0.0
        for t in range(T):
            dram_bytes += (counts[b, READS, L - 1, t] + counts[b, UPDATES, L - 1, t]) * tensor_params[t, T_BYTES]
        level_cycles[b, L - 1] = max(level_cycles[b, L - 1], (dram_bytes * scalars[S_SEC_PER_BYTE]
                                                              + bursts * scalars[S_SEC_PER_BURST]) * scalars[S_CLOCK_HZ])
        for i in range(L):
            latency = max(latency, level_cycles[b, i])
            serial += level_cycles[b, i]
        cycles = max(float(steps), latency) if scalars[S_OVERLAP] > 0 else float(steps) + serial
        summary[b, O_VALID] = 1.0 if valid else 0.0
        summary[b, O_CYCLES] = cycles
        summary[b, O_STEPS] = steps
        summary[b, O_ENERGY] = energy
        summary[b, O_DRAM_BYTES] = dram_bytes
        summary[b, O_UTILIZATION] = scalars[S_OPS] / (cycles * scalars[S_NUM_MACS])
        summary[b, O_BURSTS] = bursts
    return B, base
