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

Structure (docs/cost-model.md section 5): :class:`~dnnmap.cost.model.CostModel` builds the static tables
(per operator: the axes' terms, each dimension's axes; per batch: the (child, parent) pairs and their
network rules); :func:`evaluate_range` loops over the mappings (on :func:`scratch_arrays`), calling per
mapping :func:`nest_structure`, per pair :func:`pair_grid`, :func:`output_copies`, :func:`final_outputs` (outputs),
:func:`lane_counts` (MAC lanes) or :func:`tile_sets`, :func:`event_walk` (:func:`axis_move` per event
and window axis) and :func:`pair_counts`, the bursts (:func:`lane_bursts`, :func:`pair_bursts`), then
:func:`capacity_excess`, :func:`energy`, :func:`bandwidth_cycles`, :func:`dram_bytes` and :func:`latency`.
When a fan-out has a network bandwidth, :func:`network_range` then adds the network term in a pass of its
own (per pair :func:`network_words`, then :func:`network_cycles`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


# ---- table layouts (named columns; docs/cost-model.md section 5) --------------------------------
# Tables CostModel builds once per operator and architecture:
# indices of the count kinds in ``counts`` (B, 5, L, T)
READS, FILLS, UPDATES, DRAINS, ACC_READS = 0, 1, 2, 3, 4
# ``ax_terms`` (T, X, K, 2): term k of tensor t's axis x (ascending coefficient), its dimension and coefficient;
# ``ax_nterm`` (T, X) the number of terms (1: a single-dimension axis, more: a sliding window)
TERM_DIM, TERM_COEF = 0, 1
# ``tensor_axes`` (T, 2 + X): a tensor's number of axes, of sliding-window axes, then the window axes
TX_NAX, TX_NWIN, TX_WIN = 0, 1, 2
# ``dim_rel`` (T, D, 2): how tensor t's axes use dimension d: a bit mask (REL_SINGLE: some single-dimension
# axis, REL_WINDOW: some window axis, REL_DIM: d is one of the tensor's dimensions, even of bound 1, whose
# axes the kernel drops) and the number of terms on d, listed in ``dim_terms`` (T, D, X, 2) as (axis, coefficient)
REL_KIND, REL_NTERMS = 0, 1
REL_SINGLE, REL_WINDOW, REL_DIM = 1, 2, 4
DT_AXIS, DT_COEF = 0, 1
# columns of ``level_tensor`` (L, T, 5): energy per word of each action, capacity units per tile word, and words
# moved or held per dense word (docs/sparse.md: the sparse operand's compressed words at a compressed level, else 1)
READ_E, FILL_E, UPDATE_E, CAP_WEIGHT, WORD_SCALE = 0, 1, 2, 3, 4
# columns of ``level_params`` (L, 9): bandwidths (words/cycle/instance, 0 = unlimited), hop energy,
# read-modify-write and halo-reuse switches (docs/cost-model.md section 2b), a fan-out below the level (0/1),
# the ingress and egress bandwidths of that fan-out (words/cycle per instance of the level, 0 = unlimited)
P_BANDWIDTH, P_READ_BW, P_WRITE_BW, P_HOP_E, P_RMW, P_HALO, P_FANOUT, P_IN_BW, P_OUT_BW = range(9)
# columns of ``tensor_params`` (T, 5): bytes per word, operand register per lane (0/1), the output (0/1), the share of
# lane-steps that touch the tensor (docs/sparse.md: the density of the sparse operand when the MACs skip its zeros),
# the bits of a final output word over the word's bits (final_output_bits; 1 for every other tensor)
T_BYTES, T_REGISTER, T_OUTPUT, T_LANE_SCALE, T_FINAL_SCALE = 0, 1, 2, 3, 4
# columns of ``scalars`` (docs/cost-model.md section 3)
# (S_MAC_ENERGY and S_NUM_MACS: energy per operation and lanes of the unit running the layer, dnnmap.arch.units;
# S_LEAST_COMPUTE: the cycles that unit needs at least, the compute cycles' floor)
(S_BURST_BYTES, S_SEC_PER_BYTE, S_SEC_PER_BURST, S_CLOCK_HZ, S_OPS, S_MAC_ENERGY, S_NUM_MACS,
 S_OVERLAP, S_BURST_MODEL, S_SPARSE, S_STEP_SCALE, S_LEAST_COMPUTE) = range(12)
SCALAR_COLUMNS = 12
# Table CostModel builds per batch (it depends on the bypass choices): ``pairs`` (P, 11), one row per
# (child, parent) pair of a tensor, innermost first (docs/cost-model.md section 4): tensor, child level
# (-1: the MAC lanes or their operand registers), parent level, whether every fan-out between them
# multicasts / reduces / (multicasting) uses the identical rule (section 2b), the tensor is the output,
# the child is the MAC lanes without operand registers, the pair's transfers need exact sets (DRAM bursts
# of the burst model), the parent reads before accumulating (read-modify-write), the child's halo-reuse
# mode (0 never, 1 always, 2 only across a step of the innermost loop above the child)
(PR_TENSOR, PR_CHILD, PR_PARENT, PR_MCAST, PR_REDUCE, PR_IDENTICAL, PR_OUTPUT, PR_LANES, PR_SETS, PR_RMW,
 PR_HALO) = range(11)
PAIR_COLUMNS = 11
# columns of ``summary`` (B, 9); the last two: the lowest level whose output drains, and the lowest whose output
# updates, carry final values, and every level above it too (L: none; docs/cost-model.md section 2b, final_outputs)
(O_VALID, O_CYCLES, O_STEPS, O_ENERGY, O_DRAM_BYTES, O_UTILIZATION, O_BURSTS, O_FINAL_DRAINS,
 O_FINAL_UPDATES) = range(9)

# Scratch of one mapping (section 1), filled by :func:`nest_structure`:
# ``level_nest`` (L + 1, 3): instances of the level, product of its spatial factors, its first loop in ``loops``
LN_INST, LN_SPATIAL, LN_FIRST_LOOP = 0, 1, 2
# ``spatial`` (L * D, 2): the spatial factors > 1, as (level, dimension)
SP_LEVEL, SP_DIM = 0, 1
# ``loops`` (L * D + 1, 4): the temporal loops with trip > 1, innermost first: dimension, trip, stride, and the
# product of the trips of this loop and every loop outside it (row ``n_loops``: 1)
LP_DIM, LP_TRIP, LP_STRIDE, LP_OUTER = 0, 1, 2, 3
# Scratch of one pair: ``grid`` (X, G, 2) per axis the progressions of the spatial instances' offsets
# (coefficient, count), ascending coefficient; ``grid_n`` (X, 2) their number and the product of the counts
G_COEF, G_COUNT = 0, 1
GN_TERMS, GN_PROD = 0, 1
# ``axis_sets`` (X, 10) per axis: |A_x| one instance's set, |U_x| the union over the instances, the tile's
# span, closed form (0/1: A_x an arithmetic progression of the given step and count, U_x sized in closed
# form), then of the current event: |O_x| overlap, |N_x| new part, moved (0/1), displacement
(AS_TILE, AS_UNION, AS_SPAN, AS_CLOSED, AS_STEP, AS_COUNT, AS_OVERLAP, AS_NEW, AS_MOVED,
 AS_DELTA) = range(10)
# rows of ``sets`` (5, X, W), bitmaps of the per-axis sets: A_x, U_x, the event's new part of one instance
# and of the union, the moved tile (a transfer's full set)
BM_TILE, BM_UNION, BM_NEW, BM_NEW_UNION, BM_PIECE = range(5)
# rows of the ``work`` bitmaps (2, W)
TMP, SHIFT = np.int64(0), np.int64(1)
# Integers passed to the bitmap and burst functions are np.int64 where they are constants: numba types a Python int
# constant as a literal and compiles the (not inlined) function it is passed to once more for each literal value
PREV = np.int64(-1)  # shift by one value down (v + 1 to v)
NO_HOLES = np.int64(0)
# columns of ``net_words`` (L, 2): words through the fan-out below each level, all its instances together
NW_INGRESS, NW_EGRESS = 0, 1


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


def words_for(nbits: int) -> int:
    """Words of a bitmap able to hold values ``0 .. nbits - 1`` (sizes the arrays, in Python)."""
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
def _grid_dilate(a: np.ndarray, r: int, grid: np.ndarray, grid_n: np.ndarray, x: int, work: np.ndarray) -> None:
    """``a[r] := a[r] + offsets`` of the spatial instances along axis ``x`` (the progressions ``grid[x]``)."""
    for i in range(grid_n[x, GN_TERMS]):
        if grid[x, i, G_COUNT] > 1:
            bm_dilate(a, r, grid[x, i, G_COEF], grid[x, i, G_COUNT], work, TMP)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def _grow_by_grid(grid: np.ndarray, grid_n: np.ndarray, x: int, prog: bool, step: int, count: int, size: int,
                  extent: int) -> tuple[bool, bool, int, int, int, int]:
    """:func:`_grow` by every grid progression of axis ``x`` in turn (the spatial instances' offsets),
    stopping at the first that leaves the closed form; returns (exact, the new description)."""
    ok = True
    for i in range(grid_n[x, GN_TERMS]):
        ok, prog, step, count, size, extent = _grow(prog, step, count, size, extent, grid[x, i, G_COEF],
                                                    grid[x, i, G_COUNT])
        if not ok:
            break
    return ok, prog, step, count, size, extent


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def grid_offsets(grid: np.ndarray, grid_n: np.ndarray, ax_nterm: np.ndarray, t: int, nax: int, scratch: np.ndarray,
                 work: np.ndarray, base: int) -> int:
    """Distinct offsets of the spatial instances under one parent instance, over the tensor's axes:
    the product of ``|{0} + grid_x|`` (closed form while it stays exact, else a bitmap in
    ``scratch``). For MAC lanes, the distinct words the lanes touch at one step; for child tiles, the
    number of distinct tiles (of one fan-out: :func:`identical_groups`; docs/cost-model.md sections 2b, 4)."""
    total = 1
    for x in range(nax):
        if ax_nterm[t, x] == 1:
            total *= grid_n[x, GN_PROD]
            continue
        ok, prog, step, count, size, extent = _grow_by_grid(grid, grid_n, x, True, 1, 1, 1, 1)  # {0} + the grid
        if ok:
            total *= size
        else:
            bm_single(scratch, x, base)
            _grid_dilate(scratch, x, grid, grid_n, x, work)
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
            bm_shifted(work, TMP, work, SHIFT, PREV)
            a_hh = float(bm_and_count(work, TMP, work, SHIFT))  # v in H_x, v + 1 in H_x
            a_xh = float(bm_and_count(work, TMP, full, x))  # v in F_x, v + 1 in H_x
            bm_shifted(work, TMP, full, x, PREV)
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
    return holed_bursts(sets, sets, NO_HOLES, sets, sizes, t, nax, layout, word_bytes, burst_bytes)


@njit(cache=True, _nrt=False)
def _event_bursts(axis_sets: np.ndarray, new: np.ndarray, whole: np.ndarray, piece: np.ndarray, work: np.ndarray,
                  t: int, nax: int, sizes: np.ndarray, layout: np.ndarray, word_bytes: float,
                  burst_bytes: float) -> float:
    """Bursts of one event's transfer when only window axes moved (TSO Alg. 4 via :func:`holed_bursts`):
    the new tile, ``whole`` shifted by its displacement on the moved axes (``axis_sets``, built in
    ``piece``), minus its overlap with the old tile, the product of ``piece[x]`` minus the new part
    ``new[x]`` on the moved axes. When a moved axis has no overlap the whole new tile moves."""
    holes = NO_HOLES
    for x in range(nax):
        if axis_sets[x, AS_MOVED]:
            bm_shifted(piece, x, whole, x, axis_sets[x, AS_DELTA])
            holes |= 1 << x
        else:
            bm_copy(piece, x, whole, x)
    for x in range(nax):
        if axis_sets[x, AS_MOVED] and axis_sets[x, AS_OVERLAP] == 0:
            holes = NO_HOLES
    return holed_bursts(piece, new, holes, work, sizes, t, nax, layout, word_bytes, burst_bytes)


# ---- the parts of one mapping's evaluation (docs/cost-model.md sections 1-4) --------------------------------
# Each has one job, takes preallocated arrays and indices (it allocates nothing) and is compiled without
# numba's runtime: array arguments and views in runtime-enabled functions cost atomic reference-count
# updates. The per-mapping parts are inlined (``inline="always"``, numba's IR-level inlining) into
# :func:`evaluate_range`, itself runtime-free: as real calls, their 10-20 array arguments (each passed
# as 7-13 machine words) halved the kernel's throughput (measured, docs/cost-model.md section 5). Called
# from Python they are ordinary compiled functions (tests/cost/test_kernel_parts.py). They share this file
# with evaluate_range because numba's on-disk cache of a function is keyed on its own file only: a
# kernel cached against an edited part in another file would keep the old part's code.


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def nest_structure(tf: np.ndarray, sf: np.ndarray, order: np.ndarray, b: int, cover: np.ndarray,
                   level_nest: np.ndarray, spatial: np.ndarray, loops: np.ndarray) -> tuple[int, int, int, int]:
    """The loop nest of mapping ``b`` (docs/cost-model.md section 1).

    Writes ``cover[j + 1, d]``, the coverage of dimension ``d`` at level ``j`` (the product of every
    temporal and spatial factor of ``d`` at levels ``<= j``; row 0: one MAC lane, all ones), so
    ``cover[j, d]`` is the coverage below level ``j``; ``level_nest`` (instances, spatial product, first
    loop of each level; row ``L``'s first loop is the end); ``spatial`` the spatial factors > 1; ``loops``
    the temporal loops with trip > 1, innermost first, with their strides (the coverage of the dimension
    below the loop, including its level's spatial factor) and outer products. Returns (temporal steps,
    number of spatial factors > 1, number of loops, MAC lanes)."""
    L = tf.shape[1]
    D = tf.shape[2]
    # np.int64, not a literal: numba would type the non-inlined parts these reach once more, for the literal
    steps = np.int64(1)
    n_spatial = np.int64(0)
    for d in range(D):
        cover[0, d] = 1
    for j in range(L):
        spatial_j = 1
        for d in range(D):
            f = sf[b, j, d]
            cover[j + 1, d] = cover[j, d] * tf[b, j, d] * f
            steps *= tf[b, j, d]
            spatial_j *= f
            # written whatever the factor and kept (counted) only when it is > 1: no branch to mispredict
            # on random factors (in-process A/B: 1.04x the kernel with the branch)
            spatial[n_spatial, SP_LEVEL] = j
            spatial[n_spatial, SP_DIM] = d
            n_spatial += f > 1
        level_nest[j, LN_SPATIAL] = spatial_j
    level_nest[L - 1, LN_INST] = 1  # instances of a level: the spatial factors of the levels above it
    for j in range(L - 1, 0, -1):
        level_nest[j - 1, LN_INST] = level_nest[j, LN_INST] * level_nest[j, LN_SPATIAL]
    lanes = level_nest[0, LN_INST] * level_nest[0, LN_SPATIAL]
    n_loops = np.int64(0)  # as steps: a literal 0 compiled network_words once more
    for j in range(L):
        level_nest[j, LN_FIRST_LOOP] = n_loops
        for k in range(D - 1, -1, -1):
            d = order[b, j, k]
            n = tf[b, j, d]
            loops[n_loops, LP_DIM] = d  # as above: kept only when the trip is > 1
            loops[n_loops, LP_TRIP] = n
            loops[n_loops, LP_STRIDE] = cover[j, d] * sf[b, j, d]
            n_loops += n > 1
    level_nest[L, LN_FIRST_LOOP] = n_loops
    loops[n_loops, LP_DIM] = 0  # the end row (the branch-free writes above left the last level's loop there)
    loops[n_loops, LP_TRIP] = 0
    loops[n_loops, LP_STRIDE] = 0
    loops[n_loops, LP_OUTER] = 1
    for m in range(n_loops - 1, -1, -1):
        loops[m, LP_OUTER] = loops[m + 1, LP_OUTER] * loops[m, LP_TRIP]
    return steps, n_spatial, n_loops, lanes


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def axis_extent(ax_nterm: np.ndarray, ax_terms: np.ndarray, t: int, x: int, cover: np.ndarray, row: int) -> int:
    """Extent of tensor ``t``'s axis ``x`` over the coverage ``cover[row]``: ``1 + sum coef * (cover - 1)``."""
    ext = 1
    for k in range(ax_nterm[t, x]):
        ext += ax_terms[t, x, k, TERM_COEF] * (cover[row, ax_terms[t, x, k, TERM_DIM]] - 1)
    return ext


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def padded_extent(bounds: np.ndarray, tensor_axes: np.ndarray, ax_nterm: np.ndarray, ax_terms: np.ndarray,
                  cover: np.ndarray) -> int:
    """The largest axis extent of the whole nest's (padded) iteration space, or 0 when no dimension's
    coverage exceeds its bound (a perfect factorization: the operator's own extents)."""
    L = cover.shape[0] - 1
    padded = False
    for d in range(bounds.shape[0]):
        if cover[L, d] > bounds[d]:
            padded = True
    if not padded:
        return 0
    need = 0
    for t in range(tensor_axes.shape[0]):
        for x in range(tensor_axes[t, TX_NAX]):
            need = max(need, axis_extent(ax_nterm, ax_terms, t, x, cover, L))
    return need


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def level_grid(t: int, lo: int, hi: int, sf: np.ndarray, b: int, spatial: np.ndarray, n_spatial: int,
               cover: np.ndarray, dim_rel: np.ndarray, dim_terms: np.ndarray, nax: int, grid: np.ndarray,
               grid_n: np.ndarray) -> None:
    """Per axis of tensor ``t``, the offsets of the level-``lo`` instances under one level-``hi`` instance,
    as progressions ``{0, coef, ..., (count - 1) coef}`` (one per spatial factor of a level ``lo + 1 .. hi``
    on a dimension the axis uses, ``coef`` = the axis coefficient times the dimension's coverage below that
    level) in ascending coefficient, the order the closed forms take them in (docs/cost-model.md section 4)."""
    for x in range(nax):
        grid_n[x, GN_TERMS] = 0
        grid_n[x, GN_PROD] = 1
    for e in range(n_spatial):
        g = spatial[e, SP_LEVEL]
        if g <= lo or g > hi:
            continue
        d = spatial[e, SP_DIM]
        for j in range(dim_rel[t, d, REL_NTERMS]):
            x = dim_terms[t, d, j, DT_AXIS]
            coef = dim_terms[t, d, j, DT_COEF] * cover[g, d]
            i = grid_n[x, GN_TERMS]  # insert in ascending coefficient
            while i > 0 and grid[x, i - 1, G_COEF] > coef:
                grid[x, i, G_COEF] = grid[x, i - 1, G_COEF]
                grid[x, i, G_COUNT] = grid[x, i - 1, G_COUNT]
                i -= 1
            grid[x, i, G_COEF] = coef
            grid[x, i, G_COUNT] = sf[b, g, d]
            grid_n[x, GN_TERMS] += 1
            grid_n[x, GN_PROD] *= sf[b, g, d]


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def pair_grid(pairs: np.ndarray, pi: int, sf: np.ndarray, b: int, spatial: np.ndarray, n_spatial: int,
              cover: np.ndarray, dim_rel: np.ndarray, dim_terms: np.ndarray, nax: int, grid: np.ndarray,
              grid_n: np.ndarray) -> None:
    """The spatial grid of pair ``pi``: :func:`level_grid` of the child instances under one parent instance
    (the union ``U_x``, docs/cost-model.md section 4)."""
    level_grid(pairs[pi, PR_TENSOR], pairs[pi, PR_CHILD], pairs[pi, PR_PARENT], sf, b, spatial, n_spatial, cover,
               dim_rel, dim_terms, nax, grid, grid_n)


@njit(cache=True, error_model="numpy", _nrt=False)
def identical_groups(t: int, c: int, p: int, level_nest: np.ndarray, sf: np.ndarray, b: int, spatial: np.ndarray,
                     n_spatial: int, cover: np.ndarray, dim_rel: np.ndarray, dim_terms: np.ndarray, nax: int,
                     ax_nterm: np.ndarray, grid: np.ndarray, grid_n: np.ndarray, scratch: np.ndarray,
                     work: np.ndarray, base: int) -> int:
    """The reads one parent instance makes per child event under Timeloop's identical-data multicast, in
    child fills (docs/cost-model.md sections 2b, 4): fan-out by fan-out from the parent down, the positions
    whose subtrees need identical data share one multicast. A subtree's data is a translate of any other's
    by the positions' offset, equal only for a zero offset, so the fan-out of level ``g`` makes one read per
    distinct offset of its own spatial factors (:func:`grid_offsets` of its :func:`level_grid`), and the
    pair the product over the fan-outs of levels ``c + 1 .. p``. Uses its own ``grid`` scratch."""
    groups = 1
    for g in range(c + 1, p + 1):
        if level_nest[g, LN_SPATIAL] > 1:
            level_grid(t, g - 1, g, sf, b, spatial, n_spatial, cover, dim_rel, dim_terms, nax, grid, grid_n)
            groups *= grid_offsets(grid, grid_n, ax_nterm, t, nax, scratch, work, base)
    return groups


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def output_copies(pairs: np.ndarray, pi: int, sf: np.ndarray, b: int, spatial: np.ndarray, n_spatial: int,
                  dim_rel: np.ndarray) -> tuple[float, float]:
    """Copies of one output word over the spatially split reduction dimensions (those the output does not
    depend on) above pair ``pi``'s child and above its parent: (``rep_c``, ``rep_p``), the first touches
    per word at each (docs/cost-model.md sections 2b, 4)."""
    t = pairs[pi, PR_TENSOR]
    c = pairs[pi, PR_CHILD]
    p = pairs[pi, PR_PARENT]
    rep_c = 1.0
    rep_p = 1.0
    for e in range(n_spatial):
        g = spatial[e, SP_LEVEL]
        d = spatial[e, SP_DIM]
        if not dim_rel[t, d, REL_KIND] & REL_DIM and g > c:
            rep_c *= sf[b, g, d]
            if g > p:
                rep_p *= sf[b, g, d]
    return rep_c, rep_p


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def lane_counts(pairs: np.ndarray, pi: int, b: int, steps: int, lanes: int, inst_p: int, lane_words: int,
                o_size: float, rep_p: float, counts: np.ndarray) -> float:
    """Counts at the parent of a MAC-lane pair (no operand registers; docs/cost-model.md sections 2, 2b):
    every temporal step every lane reads one word of an input, ``lane_words`` reads under one parent
    instance when the fan-outs multicast (the distinct words, or the :func:`identical_groups` of the lanes
    under the identical rule), and writes one partial sum of the output (merged when they reduce); every
    lane result accumulates, except the first touch of each copy at the parent (read-modify-write).
    Returns the words through each fan-out in between (one per lane and step)."""
    t = pairs[pi, PR_TENSOR]
    p = pairs[pi, PR_PARENT]
    per_lane = float(steps) * lanes
    union = float(steps) * lane_words * inst_p
    if pairs[pi, PR_OUTPUT]:
        updates = union if pairs[pi, PR_REDUCE] else per_lane
        counts[b, UPDATES, p, t] = updates
        counts[b, ACC_READS, p, t] = updates - o_size * rep_p if pairs[pi, PR_RMW] else 0.0
    else:
        counts[b, READS, p, t] = union if pairs[pi, PR_MCAST] else per_lane
    return per_lane


@njit(cache=True, error_model="numpy", _nrt=False)
def lane_bursts(pairs: np.ndarray, pi: int, steps: int, lanes: int, inst_p: int, lane_words: int, grid: np.ndarray,
                grid_n: np.ndarray, nax: int, sets: np.ndarray, work: np.ndarray, base: int, sizes: np.ndarray,
                layout: np.ndarray, word_bytes: float, burst_bytes: float) -> float:
    """DRAM bursts of a MAC-lane pair whose parent is DRAM (docs/cost-model.md section 4): one transfer of
    the lanes' words per step when the fan-outs merge them (the grid's product of sets), else one
    single-word transfer per read (identical rule: ``lane_words`` per step) or per lane."""
    t = pairs[pi, PR_TENSOR]
    is_out = pairs[pi, PR_OUTPUT]
    word_bursts = np.ceil(word_bytes / burst_bytes)
    if is_out and pairs[pi, PR_REDUCE] or not is_out and pairs[pi, PR_MCAST] and not pairs[pi, PR_IDENTICAL]:
        union = sets[BM_UNION]
        for x in range(nax):
            bm_single(union, x, base)
            _grid_dilate(union, x, grid, grid_n, x, work)
        return float(steps) * product_bursts(union, sizes, t, nax, layout, word_bytes, burst_bytes)
    if not is_out and pairs[pi, PR_IDENTICAL]:
        return float(steps) * lane_words * word_bursts
    return float(steps) * lanes * word_bursts


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def placed_tile(above: np.ndarray, b: int, t: int, c: int, level_nest: np.ndarray, loops: np.ndarray,
                cover: np.ndarray, tile_cover: np.ndarray) -> int:
    """Per-tensor placement (docs/cost-model.md section 1b): the tile of tensor ``t`` at child level ``c``
    lies below the level's ``above[b, c, t]`` outermost loops of trip > 1 (at most all of them), which
    then step it like the loops of the levels above. Returns how many loops that is; when any, writes
    the tile's coverage into ``tile_cover[0]``: the level's coverage without those loops' factors. The
    tile's events start that many loops before the next level's first loop in ``loops`` (innermost
    first)."""
    end = level_nest[c + 1, LN_FIRST_LOOP]
    n = min(above[b, c, t], end - level_nest[c, LN_FIRST_LOOP])
    if n > 0:
        for d in range(cover.shape[1]):
            tile_cover[0, d] = cover[c + 1, d]
        for m in range(end - n, end):
            tile_cover[0, loops[m, LP_DIM]] //= loops[m, LP_TRIP]
    return n


@njit(cache=True, error_model="numpy", _nrt=False)
def tile_walk_start(above: np.ndarray, b: int, t: int, c: int, level_nest: np.ndarray, loops: np.ndarray,
                    cover: np.ndarray, tile_cover: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Where the events of tensor ``t`` at child level ``c`` start: (coverage, first row, first loop) - the
    level's coverage from the next row, or, for a tensor placed inside its level's loops (``placed_tile``),
    its tile's coverage from row 0 with that many loops more."""
    first = level_nest[c + 1, LN_FIRST_LOOP]
    if above.shape[0] > 0 and c >= 0:  # empty: no mapping of the batch places a tensor
        placed = placed_tile(above, b, t, c, level_nest, loops, cover, tile_cover)
        if placed > 0:
            return tile_cover, 0, first - placed
    return cover, c + 1, first


@njit(cache=True, error_model="numpy", _nrt=False)
def tile_bitmap(t: int, row: int, x: int, cover: np.ndarray, ax_nterm: np.ndarray, ax_terms: np.ndarray,
                tile: np.ndarray, work: np.ndarray, base: int) -> None:
    """``tile[x] := base + A_x``: the index set along axis ``x`` of tensor ``t`` of one instance of a child
    tile whose coverage is ``cover[row]`` (``row = c + 1`` for child level ``c``, :func:`placed_tile`), the
    Minkowski sum of its terms' progressions ``{0, coef, ..., (coverage - 1) coef}``."""
    bm_single(tile, x, base)
    for k in range(ax_nterm[t, x]):
        bm_dilate(tile, x, ax_terms[t, x, k, TERM_COEF], cover[row, ax_terms[t, x, k, TERM_DIM]], work, TMP)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def tile_sets(t: int, row: int, nax: int, cover: np.ndarray, ax_nterm: np.ndarray, ax_terms: np.ndarray,
              grid: np.ndarray, grid_n: np.ndarray, axis_sets: np.ndarray, sets: np.ndarray, work: np.ndarray,
              base: int, need_sets: bool) -> tuple[int, int, int, int]:
    """Per axis of tensor ``t``, the index set ``A_x`` of one instance of a child tile of coverage ``cover[row]``
    (``row = c + 1`` for child level ``c``; :func:`placed_tile` for a placed tensor) and the
    union ``U_x`` over the instances under one parent instance (docs/cost-model.md section 4): sizes in
    ``axis_sets`` (closed forms for single-dimension axes and for window axes while they stay progressions
    or disjoint copies, :func:`_grow`), exact bitmaps in ``sets`` otherwise or when ``need_sets`` (DRAM
    bursts). Returns (``prod(A)``, ``prod(U)``, and both over the single-dimension axes only)."""
    tile = sets[BM_TILE]
    union = sets[BM_UNION]
    a_prod = 1
    u_prod = 1
    a_single = 1
    u_single = 1
    for x in range(nax):
        nt = ax_nterm[t, x]
        if nt == 1:
            a = cover[row, ax_terms[t, x, 0, TERM_DIM]]
            u = a * grid_n[x, GN_PROD]
            axis_sets[x, AS_TILE] = a
            axis_sets[x, AS_UNION] = u
            axis_sets[x, AS_CLOSED] = 1
            a_single *= a
            u_single *= u
            closed = True
        else:
            span = 1
            ok, prog, step, count, size, extent = True, True, 1, 1, 1, 1  # {0} + the tile's terms
            for k in range(nt):  # in ascending coefficient (CostModel sorts them)
                coef = ax_terms[t, x, k, TERM_COEF]
                extent_k = cover[row, ax_terms[t, x, k, TERM_DIM]]
                span += coef * (extent_k - 1)
                if ok:
                    ok, prog, step, count, size, extent = _grow(prog, step, count, size, extent, coef, extent_k)
            axis_sets[x, AS_SPAN] = span
            closed = ok and prog and not need_sets
            if closed:
                axis_sets[x, AS_STEP] = step
                axis_sets[x, AS_COUNT] = count
                axis_sets[x, AS_TILE] = size
                ok, prog, step, count, size, extent = _grow_by_grid(grid, grid_n, x, prog, step, count, size,
                                                                    extent)  # the union: + the grid
                closed = ok
                axis_sets[x, AS_UNION] = size
            axis_sets[x, AS_CLOSED] = closed
        if need_sets or not closed:
            tile_bitmap(t, row, x, cover, ax_nterm, ax_terms, tile, work, base)
            bm_copy(union, x, tile, x)
            _grid_dilate(union, x, grid, grid_n, x, work)
            if nt > 1:
                axis_sets[x, AS_TILE] = bm_popcount(tile, x)
                axis_sets[x, AS_UNION] = bm_popcount(union, x)
        a_prod *= axis_sets[x, AS_TILE]
        u_prod *= axis_sets[x, AS_UNION]
    return a_prod, u_prod, a_single, u_single


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def axis_move(t: int, row: int, x: int, no_halo: bool, cover: np.ndarray, ax_nterm: np.ndarray, ax_terms: np.ndarray,
              grid: np.ndarray, grid_n: np.ndarray, axis_sets: np.ndarray, sets: np.ndarray, work: np.ndarray,
              base: int, need_sets: bool) -> None:
    """One event's effect on window axis ``x`` moved by ``axis_sets[x, AS_DELTA]`` (non-zero): writes the
    overlap ``|O_x|`` of one instance's old and new set and the new part ``|N_x|`` of the union over the
    instances (docs/cost-model.md section 4). A shift ``delta`` of a progression of step ``g`` and ``n``
    terms overlaps it in ``max(0, n - |delta| / g)`` when ``g`` divides ``delta``, else not at all; a move
    beyond the span, or any move without halo reuse, makes the whole tile new. With ``need_sets`` (or when
    the closed form does not cover the step) the new parts are also left as bitmaps in ``sets``."""
    tile = sets[BM_TILE]
    union = sets[BM_UNION]
    new = sets[BM_NEW]
    new_union = sets[BM_NEW_UNION]
    delta = axis_sets[x, AS_DELTA]
    mag = delta if delta > 0 else -delta
    step = axis_sets[x, AS_STEP]
    if mag >= axis_sets[x, AS_SPAN] or no_halo:
        axis_sets[x, AS_OVERLAP] = 0
        axis_sets[x, AS_NEW] = axis_sets[x, AS_UNION]
        if need_sets:
            bm_copy(new, x, tile, x)
            bm_copy(new_union, x, union, x)
        return
    if axis_sets[x, AS_CLOSED] and step > 1 and mag % step != 0:
        axis_sets[x, AS_OVERLAP] = 0
        axis_sets[x, AS_NEW] = axis_sets[x, AS_UNION]
        return
    if axis_sets[x, AS_CLOSED]:
        k_steps = mag if step == 1 else mag // step
        axis_sets[x, AS_OVERLAP] = max(0, axis_sets[x, AS_COUNT] - k_steps)
        # the new part: the last k_steps elements of the progression, + the grid
        ok, prog, step, count, size, extent = _grow_by_grid(grid, grid_n, x, True, step, k_steps, k_steps,
                                                            (k_steps - 1) * step + 1)
        if ok:
            axis_sets[x, AS_NEW] = size
            return
        # the closed form does not cover this step: exact bitmaps of the tile
        tile_bitmap(t, row, x, cover, ax_nterm, ax_terms, tile, work, base)
    bm_shifted(work, SHIFT, tile, x, delta)
    axis_sets[x, AS_OVERLAP] = bm_and_count(work, SHIFT, tile, x)
    bm_and_not(new, x, work, SHIFT, tile, x)
    bm_copy(new_union, x, new, x)
    _grid_dilate(new_union, x, grid, grid_n, x, work)
    axis_sets[x, AS_NEW] = bm_popcount(new_union, x)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def event_walk(pairs: np.ndarray, pi: int, row: int, loops: np.ndarray, first: int, n_loops: int,
               tensor_axes: np.ndarray,
               dim_rel: np.ndarray, ax_nterm: np.ndarray, ax_terms: np.ndarray, cover: np.ndarray, grid: np.ndarray,
               grid_n: np.ndarray, axis_sets: np.ndarray, sets: np.ndarray, work: np.ndarray, wrap: np.ndarray,
               base: int, totals: tuple[int, int, int, int], full_u: float, full_a: float, sizes: np.ndarray,
               layout: np.ndarray, word_bytes: float, burst_bytes: float) -> tuple[float, float, float, float]:
    """The events of pair ``pi``'s child: the temporal loops above its tile (``loops[first:n_loops]``), innermost
    first, the tile's coverage in ``cover[row]`` (docs/cost-model.md section 4; :func:`placed_tile`). Loop ``m`` advances ``(trip - 1) * outer`` times, moving the tile
    by its stride along its dimension while the loops inside it wrap; per event one instance fills
    ``prod(A) - prod(O)`` words and the parent sends ``prod(U) - prod(U - N)`` (``totals``: ``prod(A)``,
    ``prod(U)`` and both over the single-dimension axes, :func:`tile_sets`). The first loop on a
    dimension of a single-dimension axis, and every loop outside it, refill the whole tile (closed form;
    the walk stops there). Returns (words filled into one child instance, words the parent sends per
    parent instance for the union, and DRAM bursts of those transfers for the union and for one instance,
    ``full_u``/``full_a`` being the bursts of a whole tile), all including the first event."""
    t = pairs[pi, PR_TENSOR]
    need_sets = pairs[pi, PR_SETS] != 0
    halo_mode = pairs[pi, PR_HALO]
    a_prod, u_prod, a_single, u_single = totals
    nax = tensor_axes[t, TX_NAX]
    child_total = float(a_prod)
    union_total = float(u_prod)
    bursts_u = full_u
    bursts_a = full_a
    for x in range(nax):
        axis_sets[x, AS_MOVED] = 0
    for d in range(wrap.shape[0]):
        wrap[d] = 0
    any_wrap = False
    for m in range(first, n_loops):
        d = loops[m, LP_DIM]
        n = loops[m, LP_TRIP]
        rel = dim_rel[t, d, REL_KIND]
        if rel & REL_SINGLE:
            # this loop and every loop outside it refill the whole tile
            full_events = float(loops[m, LP_OUTER]) - 1.0
            child_total += full_events * a_prod
            union_total += full_events * u_prod
            bursts_u += full_events * full_u
            bursts_a += full_events * full_a
            break
        if not (rel & REL_WINDOW or any_wrap):
            continue  # the tile does not move
        s = loops[m, LP_STRIDE]
        cnt = float(n - 1) * loops[m + 1, LP_OUTER]
        no_halo = halo_mode == 0 or halo_mode == 2 and m != first
        prod_o = a_single
        prod_un = u_single
        n_moved = 0
        for wi in range(tensor_axes[t, TX_NWIN]):
            x = tensor_axes[t, TX_WIN + wi]
            delta = 0
            for k in range(ax_nterm[t, x]):
                dk = ax_terms[t, x, k, TERM_DIM]
                delta += ax_terms[t, x, k, TERM_COEF] * ((s if dk == d else 0) - wrap[dk])
            axis_sets[x, AS_DELTA] = delta
            if delta == 0:
                axis_sets[x, AS_MOVED] = 0
                axis_sets[x, AS_OVERLAP] = axis_sets[x, AS_TILE]
                axis_sets[x, AS_NEW] = 0
            else:
                axis_sets[x, AS_MOVED] = 1
                n_moved += 1
                axis_move(t, row, x, no_halo, cover, ax_nterm, ax_terms, grid, grid_n, axis_sets, sets, work, base,
                          need_sets)
            prod_o *= axis_sets[x, AS_OVERLAP]
            prod_un *= axis_sets[x, AS_UNION] - axis_sets[x, AS_NEW]
        child_total += cnt * (a_prod - prod_o)
        union_total += cnt * (u_prod - prod_un)
        if layout is not None and need_sets and n_moved:
            bursts_u += cnt * _event_bursts(axis_sets, sets[BM_NEW_UNION], sets[BM_UNION], sets[BM_PIECE], work, t,
                                            nax, sizes, layout, word_bytes, burst_bytes)
            bursts_a += cnt * _event_bursts(axis_sets, sets[BM_NEW], sets[BM_TILE], sets[BM_PIECE], work, t, nax,
                                            sizes, layout, word_bytes, burst_bytes)
        wrap[d] += (n - 1) * s
        any_wrap = True
    return child_total, union_total, bursts_u, bursts_a


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def final_outputs(pairs: np.ndarray, pi: int, first: int, n_loops: int, loops: np.ndarray, dim_rel: np.ndarray,
                  rep_c: float, rep_p: float) -> tuple[bool, bool]:
    """Whether output pair ``pi``'s transfers carry final values (docs/cost-model.md section 2b): (the child's
    drains, the parent's updates). Every word then crosses the pair once, complete: no reduction loop (a loop of
    trip > 1 over a dimension the output does not depend on) above the child's tile lies outside a loop that
    moves the tile (those the output depends on; for MAC lanes without registers, which write every step, any
    reduction loop at all), the parent holds one copy per word (``rep_p`` 1), and the child's copies over
    spatially split reduction dimensions (``rep_c``) are merged by a reducing network before the parent (the
    updates: final) or there is one (the drains too). ``loops[first:n_loops]``: the loops above the tile."""
    t = pairs[pi, PR_TENSOR]
    moved = pairs[pi, PR_LANES] != 0  # a loop below moves the tile (lanes: every step is a new write)
    for m in range(first, n_loops):  # innermost first
        if dim_rel[t, loops[m, LP_DIM], REL_KIND] & REL_DIM:
            moved = True
        elif moved:  # a reduction loop outside one that moves the tile: its words come back
            return False, False
    return rep_c == 1.0, rep_p == 1.0 and (rep_c == 1.0 or pairs[pi, PR_REDUCE] != 0)


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def pair_counts(pairs: np.ndarray, pi: int, b: int, child_total: float, union_total: float, inst_c: int, inst_p: int,
                tiles: float, o_size: float, rep_c: float, rep_p: float, counts: np.ndarray) -> float:
    """The counts of a (child, parent) pair under its network's rules (docs/cost-model.md sections 2, 2b, 4),
    from the words filled into one child instance (``child_total``) and sent per parent instance for the
    union (``union_total``) over all events. The parent reads the union over its children (multicast), one
    child's fills per group of the identical rule (``tiles`` groups in all, :func:`identical_groups`), or
    every child's own. Outputs: the child drains every word it held and reloads all but the first touches (``o_size``
    words x ``rep_c`` copies); the parent receives the union (reduction) or every drain as updates, and reads
    before accumulating the drains of copies that entered the child at zero, unless merged by reduction
    (read-modify-write). Returns the words through each fan-out in between (fills and drains)."""
    t = pairs[pi, PR_TENSOR]
    c = pairs[pi, PR_CHILD]
    p = pairs[pi, PR_PARENT]
    reduce = pairs[pi, PR_REDUCE] != 0
    sent_u = pairs[pi, PR_MCAST] and not pairs[pi, PR_IDENTICAL]
    w_child = float(inst_c) * child_total
    u_parent = float(inst_p) * union_total
    share = tiles / inst_c if pairs[pi, PR_IDENTICAL] else 1.0  # parent reads per child fill
    if pairs[pi, PR_OUTPUT]:
        if c >= 0:
            counts[b, DRAINS, c, t] = w_child
            counts[b, FILLS, c, t] = w_child - o_size * rep_c
        counts[b, UPDATES, p, t] = u_parent if reduce else w_child
        # accumulations are the drains of copies that entered the child at zero; merged by a reducing
        # network they are exactly the parent's first touches (section 2b)
        counts[b, ACC_READS, p, t] = (0.0 if reduce else o_size * (rep_c - rep_p)) if pairs[pi, PR_RMW] else 0.0
        counts[b, READS, p, t] = (u_parent - o_size * rep_p) if sent_u else (w_child - o_size * rep_c) * share
        return 2.0 * w_child - o_size * rep_c
    if c >= 0:
        counts[b, FILLS, c, t] = w_child
    counts[b, READS, p, t] = u_parent if sent_u else w_child * share
    return w_child


@njit(cache=True, error_model="numpy", _nrt=False)
def pair_bursts(pairs: np.ndarray, pi: int, b: int, counts: np.ndarray, child_total: float, union_total: float,
                inst_c: int, inst_p: int, tiles: float, bursts_u: float, bursts_a: float, bursts: float) -> float:
    """``bursts`` plus the DRAM bursts of a pair whose parent is DRAM (docs/cost-model.md section 4; added
    term by term, in a fixed order, so the float sum does not depend on the split), from the bursts of the
    union's transfers (``bursts_u``) and of one instance's (``bursts_a``) over all events: reads follow the
    multicast rule (one transfer for all children, one per identical-rule group, or one per child); output
    write-backs are one transfer per event, per instance unless the fan-outs reduce; output reloads are the
    fills' transfers scaled by the share of their words that hold partial sums (the parent's reads, of
    :func:`pair_counts`)."""
    t = pairs[pi, PR_TENSOR]
    p = pairs[pi, PR_PARENT]
    sent_u = pairs[pi, PR_MCAST] and not pairs[pi, PR_IDENTICAL]
    if pairs[pi, PR_IDENTICAL]:
        sent_bursts = tiles * bursts_a
        sent_words = float(inst_c) * child_total * (tiles / inst_c)
    elif sent_u:
        sent_bursts = bursts_u
        sent_words = float(inst_p) * union_total
    else:
        sent_bursts = inst_c * bursts_a
        sent_words = float(inst_c) * child_total
    if not pairs[pi, PR_OUTPUT]:
        return bursts + sent_bursts
    bursts += bursts_u if pairs[pi, PR_REDUCE] else inst_c * bursts_a
    if sent_words > 0:
        bursts += sent_bursts * counts[b, READS, p, t] / sent_words
    return bursts


@njit(cache=True, error_model="numpy", _nrt=False)
def sparse_scale(pairs: np.ndarray, pi: int, b: int, counts: np.ndarray, tile_words: np.ndarray,
                 level_tensor: np.ndarray, tensor_params: np.ndarray, o_size: float, rep_p: float) -> float:
    """Scales the counts pair ``pi`` wrote from dense words to the words really moved (docs/sparse.md): the
    sparse operand's at a compressed level are its non-zeros plus metadata (``WORD_SCALE``: the expected
    compressed words per dense word); when the MACs skip its zeros, the lanes touch every tensor only on the
    effectual lane-steps (``T_LANE_SCALE``: the density). The parent's reads, updates and accumulate reads
    (for MAC lanes: the updates less the first touches, which stay), the child's fills, drains and tile.
    Returns the scale of the words between them (fan-out hops, network words, bursts): the parent's."""
    t = pairs[pi, PR_TENSOR]
    c = pairs[pi, PR_CHILD]
    p = pairs[pi, PR_PARENT]
    sp = pair_scale(pairs, pi, level_tensor, tensor_params)
    counts[b, READS, p, t] *= sp
    counts[b, UPDATES, p, t] *= sp
    if pairs[pi, PR_LANES] and pairs[pi, PR_OUTPUT] and pairs[pi, PR_RMW]:
        counts[b, ACC_READS, p, t] = counts[b, UPDATES, p, t] - o_size * rep_p
    else:
        counts[b, ACC_READS, p, t] *= sp
    if c >= 0:
        sc = level_tensor[c, t, WORD_SCALE]
        counts[b, FILLS, c, t] *= sc
        counts[b, DRAINS, c, t] *= sc
        tile_words[b, c, t] *= sc
    return sp


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def pair_scale(pairs: np.ndarray, pi: int, level_tensor: np.ndarray, tensor_params: np.ndarray) -> float:
    """The words pair ``pi`` moves between child and parent per dense word (docs/sparse.md): the parent's
    ``WORD_SCALE``, times the density (``T_LANE_SCALE``) for the MAC lanes' pair."""
    t = pairs[pi, PR_TENSOR]
    sp = level_tensor[pairs[pi, PR_PARENT], t, WORD_SCALE]
    if pairs[pi, PR_CHILD] < 0:
        sp *= tensor_params[t, T_LANE_SCALE]
    return sp


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def add_hops(hop: np.ndarray, b: int, c: int, p: int, level_params: np.ndarray, words: float) -> None:
    """``words`` cross every fan-out between child ``c`` and parent ``p`` (those of levels ``c + 1 .. p``)."""
    for j in range(c + 1, p + 1):
        if level_params[j, P_FANOUT]:
            hop[b, j] += words


@njit(cache=True, error_model="numpy", _nrt=False)
def network_words(pairs: np.ndarray, pi: int, b: int, above: np.ndarray, counts: np.ndarray,
                  level_params: np.ndarray, level_nest: np.ndarray, sf: np.ndarray, spatial: np.ndarray, n_spatial: int, cover: np.ndarray,
                  loops: np.ndarray, n_loops: int, tensor_axes: np.ndarray, dim_rel: np.ndarray,
                  dim_terms: np.ndarray, ax_nterm: np.ndarray, ax_terms: np.ndarray, grid: np.ndarray,
                  grid_n: np.ndarray, fan_grid: np.ndarray, fan_grid_n: np.ndarray, axis_sets: np.ndarray,
                  sets: np.ndarray, work: np.ndarray, wrap: np.ndarray, base: int, sizes: np.ndarray,
                  layout: np.ndarray, steps: int, lanes: int, o_size: float, net_pair: np.ndarray,
                  net_counts: np.ndarray, net_words: np.ndarray, scale: float, tile_cover: np.ndarray) -> None:
    """Adds pair ``pi``'s words to the ingress and egress of every fan-out with a network bandwidth that it
    crosses (those of levels ``j = c + 1 .. p``; docs/cost-model.md section 2b): the parent-side words (its
    reads, its updates, under the pair's network rule) grouped by the level-``j`` instance they pass through.
    For ``j = p``, or no spatial factor above ``j`` up to ``p`` (one level-``j`` instance per parent
    instance), those are the parent's counts of the pair; otherwise the pair is evaluated again with level
    ``j`` as its parent (the grid of the children under one level-``j`` instance), into ``net_counts``.
    Needs the pair's counts (written by :func:`evaluate_range`) and overwrites the pair scratch; runs in
    :func:`network_range`, only when a fan-out has a network bandwidth. ``scale``: the pair's words per dense word
    (:func:`pair_scale`); ``above``: per-tensor placement, empty when none (:func:`placed_tile`, into ``tile_cover``)."""
    t = pairs[pi, PR_TENSOR]
    c = pairs[pi, PR_CHILD]
    p = pairs[pi, PR_PARENT]
    nax = tensor_axes[t, TX_NAX]
    for j in range(c + 1, p + 1):
        if level_params[j, P_IN_BW] <= 0 and level_params[j, P_OUT_BW] <= 0:
            continue
        inst_j = level_nest[j, LN_INST]
        if j == p or inst_j == level_nest[p, LN_INST]:  # the parent's counts, already scaled
            net_words[j, NW_INGRESS] += counts[b, READS, p, t]
            net_words[j, NW_EGRESS] += counts[b, UPDATES, p, t]
            continue
        for k in range(PAIR_COLUMNS):
            net_pair[0, k] = pairs[pi, k]
        net_pair[0, PR_PARENT] = j
        net_pair[0, PR_SETS] = 0
        net_counts[0, READS, j, t] = 0.0
        net_counts[0, UPDATES, j, t] = 0.0
        pair_grid(net_pair, 0, sf, b, spatial, n_spatial, cover, dim_rel, dim_terms, nax, grid, grid_n)
        rep_c, rep_j = output_copies(net_pair, 0, sf, b, spatial, n_spatial, dim_rel) if pairs[pi, PR_OUTPUT] \
            else (1.0, 1.0)
        if pairs[pi, PR_LANES]:
            lane_words = identical_groups(t, c, j, level_nest, sf, b, spatial, n_spatial, cover, dim_rel, dim_terms,
                                          nax, ax_nterm, fan_grid, fan_grid_n, sets[BM_UNION], work, base) \
                if pairs[pi, PR_IDENTICAL] and not pairs[pi, PR_OUTPUT] \
                else grid_offsets(grid, grid_n, ax_nterm, t, nax, sets[BM_UNION], work, base)
            lane_counts(net_pair, 0, 0, steps, lanes, inst_j, lane_words, o_size, rep_j, net_counts)
        else:
            tcover, row, first = tile_walk_start(above, b, t, c, level_nest, loops, cover, tile_cover)
            totals = tile_sets(t, row, nax, tcover, ax_nterm, ax_terms, grid, grid_n, axis_sets, sets, work, base,
                               False)
            child_total, union_total, _, _ = event_walk(
                net_pair, 0, row, loops, first, n_loops, tensor_axes, dim_rel, ax_nterm,
                ax_terms, tcover, grid, grid_n, axis_sets, sets, work, wrap, base, totals, 0.0, 0.0, sizes, layout,
                1.0, 1.0)
            inst_c = level_nest[c, LN_INST] if c >= 0 else lanes
            tiles = 0.0
            if pairs[pi, PR_IDENTICAL]:
                tiles = float(inst_j) * identical_groups(t, c, j, level_nest, sf, b, spatial, n_spatial, cover,
                                                         dim_rel, dim_terms, nax, ax_nterm, fan_grid, fan_grid_n,
                                                         sets[BM_PIECE], work, base)
            pair_counts(net_pair, 0, 0, child_total, union_total, inst_c, inst_j, tiles, o_size, rep_c, rep_j,
                        net_counts)
        net_words[j, NW_INGRESS] += net_counts[0, READS, j, t] * scale
        net_words[j, NW_EGRESS] += net_counts[0, UPDATES, j, t] * scale


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def network_cycles(b: int, net_words: np.ndarray, level_params: np.ndarray, level_nest: np.ndarray,
                   net_cycles: np.ndarray) -> None:
    """Per fan-out, the network cycles of the busiest instance of the level owning it (docs/cost-model.md
    sections 2b, 3): the larger of its ingress words / ingress bandwidth and egress words / egress bandwidth
    (the words over the level's instances: for perfect factorizations every instance moves the same).
    Into ``net_cycles[b]``; 0 where the fan-out has neither bandwidth."""
    for j in range(net_words.shape[0]):
        cyc = 0.0
        if level_params[j, P_IN_BW] > 0:
            cyc = net_words[j, NW_INGRESS] / level_nest[j, LN_INST] / level_params[j, P_IN_BW]
        if level_params[j, P_OUT_BW] > 0:
            cyc = max(cyc, net_words[j, NW_EGRESS] / level_nest[j, LN_INST] / level_params[j, P_OUT_BW])
        net_cycles[b, j] = cyc


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def capacity_excess(b: int, tile_words: np.ndarray, level_tensor: np.ndarray, cap_part: np.ndarray, cap: np.ndarray,
                    part_used: np.ndarray, excess: np.ndarray) -> bool:
    """Per on-chip level, the capacity units by which the tiles exceed the worst partition (tile words x
    ``CAP_WEIGHT``, summed per partition ``cap_part``, against ``cap``; <= 0 fits), into ``excess[b]``
    (docs/cost-model.md sections 2b, 4). Returns whether every level fits."""
    L = tile_words.shape[1]
    T = tile_words.shape[2]
    valid = True
    for i in range(L - 1):
        for q in range(T):
            part_used[q] = 0.0
        for t in range(T):
            part_used[cap_part[i, t]] += tile_words[b, i, t] * level_tensor[i, t, CAP_WEIGHT]
        worst = -np.inf
        for q in range(T):
            if cap[i, q] >= 0:
                worst = max(worst, part_used[q] - cap[i, q])
        excess[b, i] = worst if worst > -np.inf else 0.0
        if excess[b, i] > 0:
            valid = False
    return valid


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def energy(b: int, counts: np.ndarray, hop: np.ndarray, level_tensor: np.ndarray, level_params: np.ndarray,
           scalars: np.ndarray, breakdown: np.ndarray, o_t: int, final_drains: int, final_updates: int,
           final_scale: float) -> float:
    """Energy of mapping ``b`` (docs/cost-model.md sections 2b, 3): per level, (reads + drains + accumulate
    reads) x read energy + fills x fill energy + updates x update energy of each tensor, the output's drains
    at levels from ``final_drains`` and its updates at levels from ``final_updates`` (final values) at
    ``final_scale`` x the energy per word; the words through the fan-outs x hop energy; MACs x MAC energy.
    Writes ``breakdown[b]`` (levels, hops, MACs); returns the sum."""
    L = counts.shape[2]
    T = counts.shape[3]
    hop_energy = 0.0
    total = 0.0
    for i in range(L):
        level_energy = 0.0
        for t in range(T):
            drains = counts[b, DRAINS, i, t]
            updates = counts[b, UPDATES, i, t]
            if t == o_t:
                drains *= final_scale if i >= final_drains else 1.0
                updates *= final_scale if i >= final_updates else 1.0
            reads = counts[b, READS, i, t] + drains + counts[b, ACC_READS, i, t]
            level_energy += (reads * level_tensor[i, t, READ_E] + counts[b, FILLS, i, t] * level_tensor[i, t, FILL_E]
                             + updates * level_tensor[i, t, UPDATE_E])
        breakdown[b, i] = level_energy
        total += level_energy
        hop_energy += hop[b, i] * level_params[i, P_HOP_E]
    breakdown[b, L] = hop_energy
    breakdown[b, L + 1] = scalars[S_OPS] * scalars[S_MAC_ENERGY]
    return total + hop_energy + breakdown[b, L + 1]


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def bandwidth_cycles(b: int, counts: np.ndarray, level_params: np.ndarray, level_nest: np.ndarray,
                     level_cycles: np.ndarray) -> None:
    """Per level, the bandwidth-limited cycles of one instance (docs/cost-model.md sections 2b, 3): it reads
    reads + drains + accumulate reads words and writes fills + updates; its cycles are the largest of reads
    / read bandwidth, writes / write bandwidth, all / bandwidth (the level's words over its instances: for
    perfect factorizations all instances move the same words). Into ``level_cycles[b]``."""
    L = counts.shape[2]
    T = counts.shape[3]
    for i in range(L):
        rd = 0.0
        wr = 0.0
        for t in range(T):
            rd += counts[b, READS, i, t] + counts[b, DRAINS, i, t] + counts[b, ACC_READS, i, t]
            wr += counts[b, FILLS, i, t] + counts[b, UPDATES, i, t]
        cyc = 0.0
        if level_params[i, P_BANDWIDTH] > 0:
            cyc = (rd + wr) / level_params[i, P_BANDWIDTH]
        if level_params[i, P_READ_BW] > 0:
            cyc = max(cyc, rd / level_params[i, P_READ_BW])
        if level_params[i, P_WRITE_BW] > 0:
            cyc = max(cyc, wr / level_params[i, P_WRITE_BW])
        level_cycles[b, i] = cyc / level_nest[i, LN_INST]


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def dram_bytes(b: int, counts: np.ndarray, tensor_params: np.ndarray, o_t: int, final_updates: int) -> float:
    """Bytes between the backing store and its children: its reads and updates x bytes per word (section 3), the
    output's updates at the final width when they carry final values (``final_updates`` <= the backing store)."""
    L = counts.shape[2]
    total = 0.0
    for t in range(counts.shape[3]):
        updates = counts[b, UPDATES, L - 1, t]
        if t == o_t and final_updates <= L - 1:
            updates *= tensor_params[t, T_FINAL_SCALE]
        total += (counts[b, READS, L - 1, t] + updates) * tensor_params[t, T_BYTES]
    return total


@njit(cache=True, inline="always", error_model="numpy", _nrt=False)
def latency(b: int, steps: float, nbytes: float, bursts: float, scalars: np.ndarray, level_cycles: np.ndarray) -> float:
    """Latency in cycles (docs/cost-model.md section 3): the backing store's cycles become the larger of its
    bandwidth cycles and its transfer model's ((bytes x seconds per byte + bursts x seconds per burst) x
    clock); then the maximum of the compute cycles (temporal steps) and every level's cycles when
    transfers overlap compute, else their sum."""
    L = level_cycles.shape[1]
    level_cycles[b, L - 1] = max(level_cycles[b, L - 1], (nbytes * scalars[S_SEC_PER_BYTE]
                                                          + bursts * scalars[S_SEC_PER_BURST]) * scalars[S_CLOCK_HZ])
    longest = 0.0
    serial = 0.0
    for i in range(L):
        longest = max(longest, level_cycles[b, i])
        serial += level_cycles[b, i]
    return max(float(steps), longest) if scalars[S_OVERLAP] > 0 else float(steps) + serial


def scratch_arrays(L: int, D: int, T: int, X: int, K: int, base: int) -> tuple:
    """Scratch arrays of one mapping and of one pair (see the column constants) for an operator of ``D``
    dimensions, ``T`` tensors of up to ``X`` axes of up to ``K`` terms on ``L`` levels; bitmaps for axis
    extents up to ``base``. Allocated in Python, once per :class:`~dnnmap.cost.model.CostModel` and
    ``base``: a compiled allocating wrapper around :func:`evaluate_range` would need numba's runtime and
    LLVM would optimise and generate the whole kernel a second time inside it (docs/cost-model.md
    section 5)."""
    cover = np.empty((L + 1, D), np.int64)
    tile_cover = np.empty((1, D), np.int64)  # a placed tensor's tile (placed_tile)
    level_nest = np.zeros((L + 1, 3), np.int64)
    spatial = np.empty((L * D, 2), np.int64)
    loops = np.empty((L * D + 1, 4), np.int64)
    grid = np.empty((X, K * L * D, 2), np.int64)
    grid_n = np.empty((X, 2), np.int64)
    fan_grid = np.empty((X, K * D, 2), np.int64)  # one fan-out's grid (identical rule)
    fan_grid_n = np.empty((X, 2), np.int64)
    axis_sets = np.zeros((X, 10), np.int64)
    wrap = np.empty(D, np.int64)
    part_used = np.zeros(T, np.float64)
    # bitmaps hold values base - extent .. base + 3 * extent, extent <= base the largest axis extent of
    # the iteration space (a tile shifted by less than its span, dilated by the grid)
    nwords = words_for(4 * base + 64)
    sets = np.zeros((5, X, nwords), np.uint64)
    work = np.zeros((2, nwords), np.uint64)
    net_pair = np.zeros((1, PAIR_COLUMNS), np.int64)
    net_counts = np.zeros((1, 5, L, T), np.float64)
    net_words = np.zeros((L, 2), np.float64)
    return (cover, level_nest, spatial, loops, grid, grid_n, fan_grid, fan_grid_n, axis_sets, wrap, part_used,
            sets, work, net_pair, net_counts, net_words, tile_cover)


@njit(cache=True, error_model="numpy", _nrt=False)
def evaluate_range(tf: np.ndarray, sf: np.ndarray, order: np.ndarray, pairs: np.ndarray, layout: np.ndarray,
                   above: np.ndarray, operator: tuple, arch: tuple, outputs: tuple, scratch: tuple, start: int,
                   base: int) -> tuple[int, int]:
    """Evaluate mappings ``start ..`` of the batch into ``outputs`` (zero, or left by an earlier call on a
    batch with the same ``pairs``: see the loop's first comment). Compiled without numba's runtime (no
    reference counting of the many arrays it passes to the parts), on the caller's :func:`scratch_arrays`.

    Sliding-window sets are held in bitmaps sized for axis extents up to ``base``. Returns
    ``(B, base)`` when done, or ``(b, needed)`` when mapping ``b`` (an imperfect factorization
    padding the iteration space) needs larger bitmaps: call again from ``b`` with ``needed``.

    Inputs: ``tf``/``sf``/``order`` (B, L, D) temporal factors, spatial factors, loop order (outermost
    first); ``pairs`` the (child, parent) pairs and their network rules (``PR_*`` columns), ``layout[t]``
    the DRAM axis order of tensor ``t`` (outermost first), or None when no pair needs DRAM bursts: the
    burst code is then pruned before typing (numba's dead-branch pruning of ``layout is not None``) and
    never compiled, a specialization of its own in numba's cache; ``above`` (B, L, T) per-tensor placement
    (:func:`placed_tile`), or an empty (0, L, T) array when no mapping of the batch places a tensor (an array
    either way, not None: the placement code is small, a second specialization of the kernel is not);
    ``operator = (bounds, ax_nterm, ax_terms, tensor_axes, dim_rel, dim_terms, sizes)``: the dimensions'
    bounds, tensor ``t``'s axis ``x`` as the sum over its ``ax_nterm[t, x]`` terms ``ax_terms[t, x, k]``
    of coefficient x dimension, each tensor's (window) axes, each dimension's terms, the axis extents;
    ``arch = (level_params, level_tensor, tensor_params, cap_part, cap, scalars)``: per level (``P_*``),
    per level and tensor (energies, capacity weight), per tensor (``T_*``), the capacity partition of
    ``cap[l]`` that tensor ``t`` uses at level ``l``, and the scalars (``S_*``).
    ``outputs = (counts (B, 5, L, T), tile_words (B, L, T), hop (B, L), excess (B, L),
    breakdown (B, L + 2), level_cycles (B, L), summary (B, 9), net_cycles (B, L))``; ``net_cycles`` is
    written by :func:`network_range` (it stays as given here), which the caller runs next when some
    fan-out has an ingress or egress bandwidth.
    """
    bounds, ax_nterm, ax_terms, tensor_axes, dim_rel, dim_terms, sizes = operator
    level_params, level_tensor, tensor_params, cap_part, cap, scalars = arch
    counts, tile_words, hop, excess, breakdown, level_cycles, summary, net_cycles = outputs
    cover, level_nest, spatial, loops, grid, grid_n, fan_grid, fan_grid_n, axis_sets, wrap, part_used, sets, work, \
        net_pair, net_counts, net_words, tile_cover = scratch
    B, L, D = tf.shape
    T = tensor_axes.shape[0]
    burst_bytes = scalars[S_BURST_BYTES]
    tile_bm = sets[BM_TILE]
    union_bm = sets[BM_UNION]
    piece_bm = sets[BM_PIECE]
    o_t = 0
    for t in range(T):
        if tensor_params[t, T_OUTPUT] > 0:
            o_t = t
    sparse = scalars[S_SPARSE] > 0  # a compressed sparse operand (docs/sparse.md): counts are scaled per pair
    scale = 1.0

    for b in range(start, B):
        # Every (kind, level, tensor) count and tile size is written once per mapping, by the one
        # pair that has that level as child or parent; cells of levels that do not keep a tensor
        # are never written and stay as the caller initialised them (zero). Words through a
        # fan-out add up over the pairs crossing it.
        for j in range(L):
            hop[b, j] = 0.0
        steps, n_spatial, n_loops, lanes = nest_structure(tf, sf, order, b, cover, level_nest, spatial, loops)
        need = padded_extent(bounds, tensor_axes, ax_nterm, ax_terms, cover)
        if need > base:  # an imperfect factorization pads the space beyond the bitmaps
            return b, need
        o_size = 1.0  # output words in the (padded) iteration space
        for x in range(tensor_axes[o_t, TX_NAX]):
            o_size *= axis_extent(ax_nterm, ax_terms, o_t, x, cover, L)
        bursts = 0.0
        final_drains = L  # the lowest levels whose output drains / updates carry final values (L: none)
        final_updates = L
        for pi in range(pairs.shape[0]):
            t = pairs[pi, PR_TENSOR]
            c = pairs[pi, PR_CHILD]
            p = pairs[pi, PR_PARENT]
            nax = tensor_axes[t, TX_NAX]
            need_sets = pairs[pi, PR_SETS] != 0
            inst_p = level_nest[p, LN_INST]
            pair_grid(pairs, pi, sf, b, spatial, n_spatial, cover, dim_rel, dim_terms, nax, grid, grid_n)
            rep_c, rep_p = output_copies(pairs, pi, sf, b, spatial, n_spatial, dim_rel) if pairs[pi, PR_OUTPUT] \
                else (1.0, 1.0)
            word_bytes = tensor_params[t, T_BYTES]
            if pairs[pi, PR_LANES]:  # MAC lanes: every temporal step every lane touches one word of the tensor
                if pairs[pi, PR_OUTPUT] and final_outputs(pairs, pi, 0, n_loops, loops, dim_rel, rep_c, rep_p)[1]:
                    final_updates = min(final_updates, p)
                    word_bytes *= tensor_params[t, T_FINAL_SCALE]
                lane_words = identical_groups(t, c, p, level_nest, sf, b, spatial, n_spatial, cover, dim_rel,
                                              dim_terms, nax, ax_nterm, fan_grid, fan_grid_n, union_bm, work, base) \
                    if pairs[pi, PR_IDENTICAL] and not pairs[pi, PR_OUTPUT] \
                    else grid_offsets(grid, grid_n, ax_nterm, t, nax, union_bm, work, base)
                words = lane_counts(pairs, pi, b, steps, lanes, inst_p, lane_words, o_size, rep_p, counts)
                if sparse:
                    scale = sparse_scale(pairs, pi, b, counts, tile_words, level_tensor, tensor_params, o_size, rep_p)
                add_hops(hop, b, -1, p, level_params, words * scale)
                if layout is not None and need_sets:
                    bursts += scale * lane_bursts(pairs, pi, steps, lanes, inst_p, lane_words, grid, grid_n, nax, sets,
                                                  work, base, sizes, layout, word_bytes, burst_bytes)
                continue
            tcover, row, first = tile_walk_start(above, b, t, c, level_nest, loops, cover, tile_cover)
            if pairs[pi, PR_OUTPUT]:
                drains_final, updates_final = final_outputs(pairs, pi, first, n_loops, loops, dim_rel, rep_c, rep_p)
                if drains_final and c >= 0:
                    final_drains = min(final_drains, c)
                if updates_final:  # then no output word is reloaded: every transfer is a final write-back
                    final_updates = min(final_updates, p)
                    word_bytes *= tensor_params[t, T_FINAL_SCALE]
            totals = tile_sets(t, row, nax, tcover, ax_nterm, ax_terms, grid, grid_n, axis_sets, sets, work, base,
                               need_sets)
            if c >= 0:
                tile_words[b, c, t] = totals[0]
            # DRAM bursts of a whole tile's transfer: of the union over the child instances (one transfer
            # serves them all when the fan-outs merge) and of one instance
            full_u = 0.0
            full_a = 0.0
            if layout is not None and need_sets:
                full_u = product_bursts(union_bm, sizes, t, nax, layout, word_bytes, burst_bytes)
                full_a = product_bursts(tile_bm, sizes, t, nax, layout, word_bytes, burst_bytes)
            child_total, union_total, bursts_u, bursts_a = event_walk(
                pairs, pi, row, loops, first, n_loops, tensor_axes, dim_rel, ax_nterm, ax_terms,
                tcover, grid, grid_n, axis_sets, sets, work, wrap, base, totals, full_u, full_a, sizes, layout,
                word_bytes, burst_bytes)
            inst_c = level_nest[c, LN_INST] if c >= 0 else lanes  # child -1 here: the lanes' operand registers
            tiles = 0.0
            if pairs[pi, PR_IDENTICAL]:
                tiles = float(inst_p) * identical_groups(t, c, p, level_nest, sf, b, spatial, n_spatial, cover,
                                                         dim_rel, dim_terms, nax, ax_nterm, fan_grid, fan_grid_n,
                                                         piece_bm, work, base)
            words = pair_counts(pairs, pi, b, child_total, union_total, inst_c, inst_p, tiles, o_size, rep_c, rep_p,
                                counts)
            if sparse:
                scale = sparse_scale(pairs, pi, b, counts, tile_words, level_tensor, tensor_params, o_size, rep_p)
            add_hops(hop, b, c, p, level_params, words * scale)
            if layout is not None and need_sets:
                before = bursts
                bursts = pair_bursts(pairs, pi, b, counts, child_total, union_total, inst_c, inst_p, tiles, bursts_u,
                                     bursts_a, bursts)
                if sparse:
                    bursts = before + (bursts - before) * scale

        # ---- capacity, energy, latency (section 3) ------------------------------------
        valid = capacity_excess(b, tile_words, level_tensor, cap_part, cap, part_used, excess)
        total_energy = energy(b, counts, hop, level_tensor, level_params, scalars, breakdown, o_t, final_drains,
                              final_updates, tensor_params[o_t, T_FINAL_SCALE])
        bandwidth_cycles(b, counts, level_params, level_nest, level_cycles)
        nbytes = dram_bytes(b, counts, tensor_params, o_t, final_updates)
        # effectual steps when the MACs skip zeros (docs/sparse.md); at least what the unit running the layer needs
        compute = max(steps * scalars[S_STEP_SCALE], scalars[S_LEAST_COMPUTE])
        cycles = latency(b, compute, nbytes, bursts, scalars, level_cycles)
        summary[b, O_VALID] = 1.0 if valid else 0.0
        summary[b, O_CYCLES] = cycles
        summary[b, O_STEPS] = compute
        summary[b, O_ENERGY] = total_energy
        summary[b, O_DRAM_BYTES] = nbytes
        summary[b, O_UTILIZATION] = scalars[S_OPS] / (cycles * scalars[S_NUM_MACS])
        summary[b, O_BURSTS] = bursts
        summary[b, O_FINAL_DRAINS] = final_drains
        summary[b, O_FINAL_UPDATES] = final_updates
    return B, base


@njit(cache=True, error_model="numpy", _nrt=False)
def network_range(tf: np.ndarray, sf: np.ndarray, order: np.ndarray, pairs: np.ndarray, layout: np.ndarray,
                  above: np.ndarray, operator: tuple, arch: tuple, outputs: tuple, scratch: tuple, start: int,
                  base: int) -> tuple[int, int]:
    """The network term of mappings ``start ..`` (docs/cost-model.md sections 2b, 3), after
    :func:`evaluate_range` wrote their counts and latency into ``outputs``: the nest again, every pair's
    :func:`network_words`, the fan-outs' :func:`network_cycles` into ``net_cycles``, joined to the latency
    (max with overlap, else added) and utilization in ``summary``. Same arguments and return value as
    :func:`evaluate_range`. A pass of its own, run only when a fan-out has an ingress or egress bandwidth,
    so that the many architectures without one never compile it (its parts, inlined a second time, were
    about a third of the kernel's first-run compile time)."""
    bounds, ax_nterm, ax_terms, tensor_axes, dim_rel, dim_terms, sizes = operator
    level_params, level_tensor, tensor_params, cap_part, cap, scalars = arch
    counts, tile_words, hop, excess, breakdown, level_cycles, summary, net_cycles = outputs
    cover, level_nest, spatial, loops, grid, grid_n, fan_grid, fan_grid_n, axis_sets, wrap, part_used, sets, work, \
        net_pair, net_counts, net_words, tile_cover = scratch
    B, L, D = tf.shape
    T = tensor_axes.shape[0]
    o_t = 0
    for t in range(T):
        if tensor_params[t, T_OUTPUT] > 0:
            o_t = t
    sparse = scalars[S_SPARSE] > 0
    for b in range(start, B):
        for j in range(L):
            net_words[j, NW_INGRESS] = 0.0
            net_words[j, NW_EGRESS] = 0.0
        steps, n_spatial, n_loops, lanes = nest_structure(tf, sf, order, b, cover, level_nest, spatial, loops)
        need = padded_extent(bounds, tensor_axes, ax_nterm, ax_terms, cover)
        if need > base:
            return b, need
        o_size = 1.0
        for x in range(tensor_axes[o_t, TX_NAX]):
            o_size *= axis_extent(ax_nterm, ax_terms, o_t, x, cover, L)
        for pi in range(pairs.shape[0]):
            scale = pair_scale(pairs, pi, level_tensor, tensor_params) if sparse else 1.0
            network_words(pairs, pi, b, above, counts, level_params, level_nest, sf, spatial, n_spatial, cover, loops,
                          n_loops, tensor_axes, dim_rel, dim_terms, ax_nterm, ax_terms, grid, grid_n, fan_grid,
                          fan_grid_n, axis_sets, sets, work, wrap, base, sizes, layout, steps, lanes, o_size,
                          net_pair, net_counts, net_words, scale, tile_cover)
        network_cycles(b, net_words, level_params, level_nest, net_cycles)
        cycles = summary[b, O_CYCLES]
        for j in range(L):
            cycles = max(cycles, net_cycles[b, j]) if scalars[S_OVERLAP] > 0 else cycles + net_cycles[b, j]
        summary[b, O_CYCLES] = cycles
        summary[b, O_UTILIZATION] = scalars[S_OPS] / (cycles * scalars[S_NUM_MACS])
    return B, base
