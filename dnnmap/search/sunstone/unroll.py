"""Spatial unrolling candidates of one fan-out (RTML Sec. 3.2.8, Observation 5).

A candidate gives each dimension a spatial factor (a divisor of what is left of its bound) and
an axis of the fan-out; the factors on an axis multiply to at most its size and a dimension
uses one axis (the declared space's rule, :meth:`MapSpace.spatial_legal`). Kept are

* only **maximal** candidates (no factor can grow to its next divisor, or an unused dimension
  start, on any axis and still fit): a larger unrolling lowers the parent's accesses of every
  tensor the grown dimension does not index, by broadcast, and the compute steps;
* per Observation 5, only candidates that leave alone the dimensions across which the level
  below reuses its tiles temporally (the chosen inter-tile order's signature), **unless** the
  array would then sit idler (the escape clause, "unless the PE array cannot be utilised
  otherwise"), read one of three ways (``escape``, docs/search.md):

  - ``"always"`` (the walk's default since issue 28): the exclusion is always lifted, every maximal candidate is
    kept besides the permitted ones (the exclusion lost 4.2% EDP on BERT-base's query projection on Eyeriss, whose
    optimum unrolls ``M2``, across which the register file reuses the weights, although the permitted dimensions
    fill the array; docs/search.md gives the cost);
  - ``"lift"``: the exclusion is lifted where the permitted candidates leave the array idler, then every
    maximal candidate is kept;
  - ``"best"``: only the maximal candidates of the highest utilization are added to the
    permitted ones (our first reading; it lost up to 5x EDP on depthwise layers of a TPU-like
    array, where the permitted dimensions fill 28% of it and the best mapping unrolls the window
    at 56%, issue 9).
Both rules are lossy: docs/search.md.

Both-axis unrolling (``both``, the constraint ``both_axes``): the candidates are :func:`both_axes_unrollings` (a
dimension may take a factor on each axis of a 2-D fan-out), the table the optimal mapper's factor stage shares.

Imperfect factorization (``caps``): a dimension's spatial factors are then its ceil splits
(:func:`dnnmap.search.space.factor_candidates`: e.g. 10 of 28 on a 12-wide axis, 3 steps of 10
with 2 padded iterations), so an axis can be filled where no divisor fits it, and "next divisor"
in the maximality test reads "next ceil split".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dnnmap.mapping.mapping import BOTH_AXES
from dnnmap.search.space import unique_rows
from dnnmap.search.sunstone.tiles import values


@dataclass(frozen=True)
class Unrollings:
    factors: np.ndarray  # (n, D) spatial factor per dimension
    axes: np.ndarray  # (n, D) fan-out axis per dimension (0 where the factor is 1)
    legal: int  # legal candidates of the fan-out (the space these were chosen from)

    @property
    def utilization(self) -> np.ndarray:
        return self.factors.prod(axis=1)


@lru_cache(maxsize=8192)
def legal_unrollings(limits: tuple[int, ...], shape: tuple[int, ...],
                     caps: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every legal (factors, axes) assignment of dimensions with bounds ``limits`` to a fan-out ``shape``
    (factors: divisors, or with ``caps`` the ceil splits padding each dimension to at most its cap)."""
    A = len(shape)
    fac = np.ones((1, 0), dtype=np.int64)
    ax = np.zeros((1, 0), dtype=np.int64)
    used = np.ones((1, A), dtype=np.int64)
    for vals in values(limits, caps):
        options = [(1, 0)] + [(f, a) for a in range(A) for f in vals[1:] if f <= shape[a]]
        f_opt = np.array([o[0] for o in options], dtype=np.int64)
        a_opt = np.array([o[1] for o in options], dtype=np.int64)
        k = len(options)
        new_used = np.repeat(used, k, axis=0)
        rows = np.arange(len(new_used))
        new_used[rows, np.tile(a_opt, len(used))] *= np.tile(f_opt, len(used))
        ok = (new_used <= np.array(shape)).all(axis=1)
        fac = np.concatenate([np.repeat(fac, k, axis=0), np.tile(f_opt, len(used))[:, None]], axis=1)[ok]
        ax = np.concatenate([np.repeat(ax, k, axis=0), np.tile(a_opt, len(used))[:, None]], axis=1)[ok]
        used = new_used[ok]
    fac.setflags(write=False)  # cached: shared by every caller
    ax.setflags(write=False)
    return fac, ax


@lru_cache(maxsize=8192)
def both_axes_unrollings(limits: tuple[int, ...], shape: tuple[int, ...],
                         caps: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every legal (factors, axes) of dimensions with bounds ``limits`` on a 2-D fan-out ``shape`` when a dimension
    may also split over both axes (``both_axes``; the space's slot rule, :meth:`MapSpace.spatial_legal`): each
    dimension takes ``x`` on axis 0 and ``y`` on axis 1 with ``x * y`` dividing its bound (with ``caps``: one of its
    ceil splits), the factors on an axis multiply to at most its size; its factor is ``x * y`` and its axis 0, 1
    or :data:`BOTH_AXES` (both > 1). One row per distinct (factors, axes): the mapping records no more (read-only,
    cached). The optimal mapper's factor stage and Sunstone's unrolling step both use it."""
    per_axis = np.ones((1, 0, 2), dtype=np.int64)  # (rows, dims so far, axis)
    used = np.ones((1, 2), dtype=np.int64)
    for vals in values(limits, caps):
        allowed = set(vals)
        options = np.array([(x, y) for x in range(1, min(vals[-1], shape[0]) + 1)
                            for y in range(1, min(vals[-1], shape[1]) + 1) if x * y in allowed], dtype=np.int64)
        grown = (used[:, None, :] * options[None, :, :]).reshape(-1, 2)
        ok = (grown <= np.array(shape)).all(axis=1)
        per_axis = np.concatenate([np.repeat(per_axis, len(options), axis=0),
                                   np.tile(options, (len(used), 1))[:, None, :]], axis=1)[ok]
        used = grown[ok]
    fac = per_axis.prod(axis=2)
    ax = np.where(per_axis[:, :, 1] > 1, np.where(per_axis[:, :, 0] > 1, BOTH_AXES, 1), 0)
    rows, _ = unique_rows(np.concatenate([fac, ax], axis=1))
    fac, ax = rows[:, :len(limits)].copy(), rows[:, len(limits):].copy()
    fac.setflags(write=False)
    ax.setflags(write=False)
    return fac, ax


def legal_table(both: bool):  # noqa: ANN201 - one of the two cached tables above
    """The legal unrollings of a fan-out: :func:`both_axes_unrollings` where a dimension may split over both axes
    of it (``both``), else :func:`legal_unrollings` (one axis per dimension, the declared space)."""
    return both_axes_unrollings if both else legal_unrollings


def dividing_rows(fac: np.ndarray, ax: np.ndarray, limits: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a legal table ``fac``/``ax`` (:func:`legal_table`, or one row per factor vector of it) whose
    factors divide ``limits`` (read-only). Where each of ``limits`` divides the table's own limits, these are the
    table of ``limits`` itself, row for row in its order: whether a row fits the fan-out does not depend on the
    limits, the options of a dimension of ``limits`` come in the same order as they do in the larger table, and the
    rows are in the lexicographic order of their options (or of their (factors, axes), both axes), which dropping
    rows keeps. One pass over the larger table instead of an enumeration."""
    keep = (np.array(limits, dtype=np.int64)[None, :] % fac == 0).all(axis=1)
    fac, ax = fac[keep], ax[keep]
    fac.setflags(write=False)
    ax.setflags(write=False)
    return fac, ax


def axes_used(fac: np.ndarray, ax: np.ndarray, n_axes: int) -> np.ndarray:
    """(n, A) product of the spatial factors on each axis of one fan-out (rows (n, D) of factors and axes; a
    dimension split over both axes counts on neither)."""
    return np.stack([np.where(ax == a, fac, 1).prod(axis=1) for a in range(n_axes)], axis=1)


_AXIS_RANK = np.array([2, 0, 1])  # per axis value (0, 1, BOTH_AXES): axis 1 first, then both axes, then axis 0


@lru_cache(maxsize=65536)
def assign_axes(factors: tuple[int, ...], shape: tuple[int, ...], both: bool = False) -> tuple[int, ...] | None:
    """Axes (one per dimension, 0 where its factor is 1) on which the spatial ``factors`` fit the fan-out ``shape``:
    the axes of a row of the legal table of ``factors`` (:func:`legal_table`, ``both``: a dimension may also split
    over both axes) whose factors are ``factors`` themselves, or None where there is none. Of several, dimension by
    dimension (first dimension first), the one on axis 1, then split over both, then on axis 0. The cost model
    prices an unrolling by its factors, so the choice only names the axes (the factor descent re-packs a grown
    unrolling with it)."""
    if math.prod(factors) > math.prod(shape):
        return None
    fac, ax = legal_table(both)(factors, shape)
    rows = np.nonzero((fac == np.array(factors)).all(axis=1))[0]
    if not len(rows):
        return None
    rank = _AXIS_RANK[ax[rows]]
    return tuple(int(a) for a in ax[rows[np.lexsort(rank.T[::-1])[0]]])


def _maximal(fac: np.ndarray, ax: np.ndarray, limits: tuple[int, ...], shape: tuple[int, ...],
             caps: tuple[int, ...] | None = None) -> np.ndarray:
    """Rows none of whose factors can grow to the next value (divisor or ceil split) of its limit (or,
    at 1, start on any axis) and still fit the fan-out."""
    sizes = np.array(shape, dtype=np.int64)
    rows = np.arange(len(fac))
    used = axes_used(fac, ax, len(shape))
    grow = np.zeros(len(fac), dtype=bool)
    for d, (n, vals) in enumerate(zip(limits, values(limits, caps))):
        if n == 1:
            continue
        divs = np.array(vals + (0,), dtype=np.int64)  # 0: no larger value
        f = fac[:, d]
        pos = np.searchsorted(divs[:-1], f, side="right")
        nxt = divs[np.minimum(pos, len(divs) - 1)]
        on = (f > 1) & (nxt > 0)
        grow |= on & (used[rows, ax[:, d]] // np.maximum(f, 1) * nxt <= sizes[ax[:, d]])
        grow |= (f == 1) & (used * divs[1] <= sizes[None, :]).any(axis=1)
    return ~grow


ESCAPES = ("always", "lift", "best")  # readings of Observation 5's escape clause (module docstring)


def _rows(fac: np.ndarray, ax: np.ndarray, rows: np.ndarray) -> Unrollings:
    """The candidates ``rows`` of the legal unrollings, read-only (cached results shared by every caller)."""
    kept_fac, kept_ax = fac[rows], ax[rows]
    kept_fac.setflags(write=False)
    kept_ax.setflags(write=False)
    return Unrollings(kept_fac, kept_ax, len(fac))


@lru_cache(maxsize=65536)
def unrolling_candidates(limits: tuple[int, ...], shape: tuple[int, ...],
                         excluded: frozenset[int] = frozenset(), maximal_only: bool = True,
                         caps: tuple[int, ...] | None = None, escape: str = "lift", both: bool = False) -> Unrollings:
    """Maximal unrollings avoiding the ``excluded`` dimensions (Observation 5) plus the escape clause
    (``escape``: ``"always"``, ``"lift"`` or ``"best"``, module docstring; ``maximal_only=False``: every legal
    unrolling, one per factor vector); ``caps``: imperfect factors; ``both``: a dimension may split over both
    axes of the 2-D fan-out (:func:`both_axes_unrollings`; maximal then means that no one-dimension growth is a
    legal factor vector on any axes, :func:`maximal_among`'s test)."""
    fac, ax = legal_table(both)(limits, shape, caps)
    if not maximal_only:
        _, first = np.unique(fac, axis=0, return_index=True)
        return _rows(fac, ax, np.sort(first))
    allowed = np.ones(len(fac), dtype=bool)
    for d in excluded:
        allowed &= fac[:, d] == 1
    if both:
        maximal = ~_grown(fac, np.ones(len(fac), dtype=bool), limits, caps)
        permitted = allowed & ~_grown(fac, allowed, limits, caps)
    else:
        maximal = _maximal(fac, ax, limits, shape, caps)
        restricted_limits = tuple(1 if d in excluded else n for d, n in enumerate(limits))
        restricted_caps = None if caps is None else tuple(1 if d in excluded else c for d, c in enumerate(caps))
        permitted = allowed & _maximal(fac, ax, restricted_limits, shape, restricted_caps)
    util = fac.prod(axis=1)
    best = util[maximal].max() if maximal.any() else 1
    best_permitted = util[permitted].max() if permitted.any() else 0
    idle = best_permitted < best
    keep = permitted | (maximal & (idle | (escape == "always")) & ((util == best) | (escape != "best")))
    # the cost model prices an unrolling by its factors; which axis carries a dimension only
    # matters for identical-only multicast, so one axis assignment per factor vector is kept
    _, first = np.unique(fac[keep], axis=0, return_index=True)
    return _rows(fac, ax, np.nonzero(keep)[0][np.sort(first)])


def _grown(fac: np.ndarray, ok: np.ndarray, limits: tuple[int, ...], caps: tuple[int, ...] | None) -> np.ndarray:
    """Rows of ``fac`` (a legal table of ``limits``) one of whose one-dimension growths to the next value
    (divisor or ceil split) is the factor vector of an ``ok`` row."""
    vals = values(limits, caps)
    pos = np.stack([np.searchsorted(np.array(v), fac[:, d]) for d, v in enumerate(vals)], axis=1)
    radix = np.cumprod([1] + [len(v) for v in vals[:-1]])
    code = pos @ radix
    ok_codes = code[ok]
    grown = np.zeros(len(fac), dtype=bool)
    for d, v in enumerate(vals):
        can = pos[:, d] + 1 < len(v)
        grown |= can & np.isin(code + radix[d], ok_codes)
    return grown


def maximal_among(fac: np.ndarray, ax: np.ndarray, ok: np.ndarray, limits: tuple[int, ...],
                  caps: tuple[int, ...] | None = None) -> Unrollings:
    """Of the legal unrollings ``fac``/``ax`` (:func:`legal_unrollings` or :func:`both_axes_unrollings` of
    ``limits``), the rows ``ok`` (those whose smallest tiles fit the levels above) none of whose one-dimension
    growths to the next value is an ``ok`` factor vector, one per factor vector: maximal among the unrollings
    that fit. Legality is closed under shrinking a factor and fitting under shrinking a tile, so one-step
    growths suffice, and the all-ones unrolling, when ``ok``, leaves at least one row."""
    keep = ok & ~_grown(fac, ok, limits, caps)
    _, first = np.unique(fac[keep], axis=0, return_index=True)
    return _rows(fac, ax, np.nonzero(keep)[0][np.sort(first)])
