"""Per-tensor placements worth searching at one level's order stage (pruning rule P2, docs/search.md).

For a node whose level ``j`` has its factors and loop order fixed, a tensor placed below ``n`` of the level's
``k`` non-trivial loops has the tile ``fan-out x tile below x the trips of the loops after the first n``; its
footprint only shrinks as ``n`` grows, so the placements that fit are closed upwards. A tensor for which P1
holds (a tile below fewer loops moves no more words: :attr:`.bounds.LowerBound.monotone`) is worth placing
lower only if one loop higher does not fit: the kept placement vectors are the fitting ones from which no
such tensor can be raised by one loop with the level still fitting.
"""

from __future__ import annotations

import itertools

import numpy as np

from dnnmap.search.space import touched_lower
from dnnmap.workload.ir import Operator


def placed_footprints(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, most: int) -> np.ndarray:
    """(n, T, most + 1) words of each tensor's tile when it lies below the first ``0 .. most`` non-trivial loops
    of a level with ``trips`` (n, D) in ``order`` (n, D; outermost first) over the tile below ``base`` (n, D)
    (past the level's last non-trivial loop: its smallest tile)."""
    nontrivial = np.take_along_axis(trips, order, axis=1) > 1  # (n, D) in loop order
    rank = np.cumsum(nontrivial, axis=1) - 1
    out = np.empty((trips.shape[0], len(op.tensors), most + 1))
    for n in range(most + 1):
        lifted = np.zeros_like(nontrivial)
        np.put_along_axis(lifted, order, nontrivial & (rank < n), axis=1)
        out[:, :, n] = touched_lower(op, base * np.where(lifted, 1, trips), contiguous=True)
    return out


def least_placements(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, placeable: np.ndarray,
                     monotone: np.ndarray, capacity: tuple[np.ndarray, np.ndarray] | None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The (row, placement) pairs worth keeping for nodes with level ``trips``, ``order`` and ``base``
    (:func:`placed_footprints`): ``rows`` (m,) into the nodes and ``above`` (m, T), each ``placeable`` tensor
    below 0..k of a row's k non-trivial loops; ``capacity``: the level's (partition weights (T, R), sizes (R,))
    as :class:`~dnnmap.search.sunstone.tiles.Capacity` holds them (None: unbounded); ``monotone`` (T,): the
    tensors P1 holds for."""
    n, T = trips.shape[0], len(op.tensors)
    k = (trips > 1).sum(axis=1)
    most = int(k.max()) if n else 0
    grid = np.array(list(itertools.product(*[range(most + 1) if p else (0,) for p in placeable])),
                    dtype=np.int64).reshape(-1, T)  # (G, T)
    legal = (grid[None, :, :] <= k[:, None, None]).all(axis=2)  # (n, G)
    if capacity is None:
        fits = np.ones((n, len(grid)), dtype=bool)
    else:
        part, sizes = capacity
        words = placed_footprints(op, trips, order, base, most)  # (n, T, most + 1)
        used = np.zeros((n, len(grid), len(sizes)))
        for t in range(T):
            used += words[:, t, grid[:, t]][:, :, None] * part[t][None, None, :]
        fits = (used <= sizes).all(axis=2)
    keep = legal & fits
    index = {tuple(g): i for i, g in enumerate(grid.tolist())}
    for t in np.nonzero(placeable & monotone)[0]:
        raised = grid.copy()
        raised[:, t] -= 1
        can = grid[:, t] > 0
        up = np.array([index[tuple(g)] if c else 0 for g, c in zip(raised.tolist(), can)], dtype=np.int64)
        keep &= ~(can[None, :] & fits[:, up])
    rows, which = np.nonzero(keep)
    return rows, grid[which]
