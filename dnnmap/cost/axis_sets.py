"""Exact sizes of the index sets one tensor axis takes across tiles, instances and tile steps.

A tensor axis is ``sum(coef_d * v_d)`` over its dimensions. For a tile (extent ``t_d`` per
dimension) replicated over spatial instances (offsets ``sum_j stride_j * k_j``, ``k_j <
count_j`` per dimension) and displaced by ``delta`` between consecutive tiles, the cost
model needs, per axis (docs/cost-model.md section 4):

- ``A``: size of one instance's set,
- ``U``: size of the union over instances,
- ``O``: overlap ``|A cap (A + delta)|`` of one instance's old and new set,
- ``N``: size of the union over instances of each instance's new part ``(A + delta) minus A``.

Single-dimension axes with coefficient 1 have closed forms (``A = t``, ``U = t * prod(count)``,
``O = max(0, t - |delta|)``, ``N = U`` when ``delta != 0``). Sliding-window axes
(``stride*P + dilation*R``) are computed exactly by enumerating the 1-D integer sets, once per
distinct key, and cached.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

# A key for one axis: per dimension (coef, tile, ((stride, count), ...)); plus delta.
DimKey = tuple[int, int, tuple[tuple[int, int], ...]]


def _offsets(grid: tuple[tuple[int, int], ...]) -> np.ndarray:
    off = np.zeros(1, dtype=np.int64)
    for stride, count in grid:
        off = (off[:, None] + stride * np.arange(count, dtype=np.int64)[None, :]).ravel()
    return off


@lru_cache(maxsize=200_000)
def window_axis_stats(dims: tuple[DimKey, ...], delta: int) -> tuple[int, int, int, int]:
    """(A, U, O, N) of a multi-term axis, by enumeration (exact for any strides/dilations)."""
    base = np.zeros(1, dtype=np.int64)
    inst = np.zeros(1, dtype=np.int64)
    for coef, tile, grid in dims:
        base = (base[:, None] + coef * np.arange(tile, dtype=np.int64)[None, :]).ravel()
        inst = (inst[:, None] + coef * _offsets(grid)[None, :]).ravel()
    a_set = np.unique(base)
    inst = np.unique(inst)
    a = len(a_set)
    u = len(np.unique((a_set[:, None] + inst[None, :]).ravel()))
    if delta == 0:
        return a, u, a, 0
    moved = a_set + delta
    new = np.setdiff1d(moved, a_set, assume_unique=True)
    o = a - len(new)
    n = len(np.unique((new[:, None] + inst[None, :]).ravel())) if len(new) else 0
    return a, u, o, n


_HASH = np.random.default_rng(20261122).integers(1, 2**62, size=64, dtype=np.int64) | 1
_CACHE: dict[tuple[tuple[int, ...], int], tuple[int, int, int, int]] = {}


def lookup_window_stats(keys: np.ndarray, coefs: tuple[int, ...], n_grid: int) -> np.ndarray:
    """Vectorized :func:`window_axis_stats` over rows of ``keys``.

    ``keys`` has shape (R, nd * (1 + 2 * n_grid) + 1): per dimension the tile then
    ``n_grid`` (stride, count) pairs, and the delta last. Returns (R, 4) int64.
    Rows are deduplicated through a 64-bit multiplicative hash (collision probability
    below 1e-7 for a million distinct rows), so the enumeration runs once per distinct key.
    """
    if len(keys) == 0:
        return np.zeros((0, 4), dtype=np.int64)
    with np.errstate(over="ignore"):
        h = keys @ _HASH[: keys.shape[1]]
    uniq, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    out = np.empty((len(uniq), 4), dtype=np.int64)
    step = 1 + 2 * n_grid
    for r, (hv, row) in enumerate(zip(uniq.tolist(), keys[first].tolist())):
        cached = _CACHE.get((coefs, hv))
        if cached is None:
            dims = []
            for i, coef in enumerate(coefs):
                chunk = row[i * step:(i + 1) * step]
                grid = tuple((chunk[1 + 2 * g], chunk[2 + 2 * g]) for g in range(n_grid) if chunk[2 + 2 * g] > 1)
                dims.append((coef, chunk[0], grid))
            cached = _CACHE[(coefs, hv)] = window_axis_stats(tuple(dims), row[-1])
        out[r] = cached
    return out[inverse.reshape(-1)]
