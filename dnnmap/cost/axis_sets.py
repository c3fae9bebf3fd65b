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


def lookup_window_stats(keys: np.ndarray, coefs: tuple[int, ...], n_grid: int) -> np.ndarray:
    """Vectorized :func:`window_axis_stats` over rows of ``keys``.

    ``keys`` has shape (R, nd * (1 + 2 * n_grid) + 1): per dimension the tile then
    ``n_grid`` (stride, count) pairs, and the delta last. Returns (R, 4) int64.
    """
    if len(keys) == 0:
        return np.zeros((0, 4), dtype=np.int64)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    out = np.empty((len(uniq), 4), dtype=np.int64)
    step = 1 + 2 * n_grid
    for r, row in enumerate(uniq.tolist()):
        dims = []
        for i, coef in enumerate(coefs):
            chunk = row[i * step:(i + 1) * step]
            grid = tuple((chunk[1 + 2 * g], chunk[2 + 2 * g]) for g in range(n_grid) if chunk[2 + 2 * g] > 1)
            dims.append((coef, chunk[0], grid))
        out[r] = window_axis_stats(tuple(dims), row[-1])
    return out[inverse.reshape(-1)]
