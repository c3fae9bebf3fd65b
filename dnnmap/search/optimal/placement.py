"""Per-tensor placements worth searching at one level's order stage (pruning rule P2, docs/search.md).

For a node whose level ``j`` has its factors and loop order fixed, a tensor placed below ``n`` of the level's
``k`` non-trivial loops has the tile ``fan-out x tile below x the trips of the loops after the first n``; its
footprint only shrinks as ``n`` grows, so the placements that fit are closed upwards. A tensor for which P1
holds (a tile below fewer loops moves no more words: :attr:`.bounds.LowerBound.monotone`) is worth placing
lower only if one loop higher does not fit: the kept placement vectors are the fitting ones from which no
such tensor can be raised by one loop with the level still fitting.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from dnnmap.search.space import touched_lower, unique_rows
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
    choices = [most + 1 if p else 1 for p in placeable]
    grid = np.indices(choices).reshape(T, -1).T  # (G, T), the last tensor varying fastest
    legal = grid.max(axis=1)[None, :] <= k[:, None]  # (n, G)
    fits = np.ones((n, len(grid)), dtype=bool)
    if capacity is not None:
        part, sizes = capacity
        words = placed_footprints(op, trips, order, base, most)  # (n, T, most + 1)
        for r, size in enumerate(sizes):
            used = np.zeros((n, len(grid)))
            for t in np.nonzero(part[:, r])[0]:
                used += words[:, t, grid[:, t]] * part[t, r]
            fits &= used <= size
    keep = legal & fits
    stride = np.cumprod([1] + choices[:0:-1])[::-1]  # (T,) a tensor's step in the grid's flat index
    for t in np.nonzero(placeable & monotone)[0]:
        can = grid[:, t] > 0
        up = np.where(can, np.arange(len(grid)) - stride[t], 0)  # the same vector with tensor t one loop higher
        keep &= ~(can[None, :] & fits[:, up])
    rows, which = np.nonzero(keep)
    return rows, grid[which]


class OrderKeys:
    """What of one level's (loop order, placements) the cost model can see (rules P3 and P5, docs/search.md).

    The model prices a tensor's (child, parent) pair from the child's tile (the loops below its boundary, as a
    set) and the walk over the loops above it, innermost first (``kernel.event_walk``): a loop on a dimension
    that is the only moving term of one of the tensor's axes (a *stop*) and every loop outside it refill the whole
    tile, so the walk ends there and those loops count only through the product of their trips, which is the
    product of all the loops above the tile over the loops walked before it. So a pair depends on the level's
    order only through (a) the set of the level's loops below the tensor's boundary and (b) the level's loops
    above that boundary walked before the first stop, innermost first. For a tensor without a sliding window
    every one of those does not index it and the walk skips it (it neither moves the tile nor wraps anything),
    so they count only through the product of their trips (the tensor's *run*), and every count of the pair is a
    non-decreasing function of the number of whole-tile refills, which a longer run only lowers; for a window
    tensor they count as the exact sequence. A level's order and placements reach the pairs of its own tensors
    (boundary at their placement) and of every tensor with a child below the level (a lower level keeping it, or
    its operand register; boundary below all the level's loops), and nothing else: capacities are tile sizes,
    latency and DRAM bursts are non-decreasing functions of these counts (for a tensor without a window each
    refill moves a whole tile, a fixed number of bursts).

    :meth:`keys` gives each child the exact part (tile sets, window sequences) and the runs. Two children of one
    node with equal exact parts (equal tiles, so equal fits) whose runs are ``>=`` one by one give every completion
    of the levels below (which neither constrains) counts no larger, so every objective no larger: only the
    children no other child dominates need be searched (:func:`distinct_children`)."""

    def __init__(self, op: Operator, keeps: np.ndarray, registers: Collection[str]) -> None:
        dims = op.dim_names
        bound = np.array([op.bound(d) for d in dims])
        T, D = len(op.tensors), len(dims)
        single = np.zeros((T, D), dtype=bool)
        window = np.zeros((T, D), dtype=bool)
        for t, tensor in enumerate(op.tensors):
            for axis in tensor.axes:
                live = [dims.index(d) for d, _ in axis.terms if bound[dims.index(d)] > 1]
                (single if len(live) == 1 else window)[t, live] = True
        self.plain = ~window.any(axis=1)
        self.stops = single & ~window  # a dimension of both kinds never ends the key's walk: a finer key
        below = np.cumsum(keeps, axis=0) - keeps > 0  # (L, T) kept at some lower level
        self.below = below | np.array([t.role in registers for t in op.tensors])[None, :]
        self.keeps = keeps

    def _walk(self, t: int, trips: np.ndarray, order: np.ndarray, live: np.ndarray, rank: np.ndarray,
              boundary: np.ndarray) -> np.ndarray:
        """(n,) the level's loops above ``boundary`` (n,: non-trivial loops above tensor ``t``'s tile; ``rank``
        (n, D) of each loop among them) walked innermost first before the first stop: the product of their trips
        (the run) for a tensor without a sliding window, else a code of the sequence."""
        D = order.shape[1]
        code = np.ones(order.shape[0], dtype=np.int64) if self.plain[t] else np.zeros(order.shape[0], dtype=np.int64)
        stopped = np.zeros(order.shape[0], dtype=bool)
        for p in range(D - 1, -1, -1):
            d = order[:, p]
            above = live[:, p] & (rank[:, p] < boundary)
            stopped |= above & self.stops[t, d]
            walked = above & ~stopped
            code = np.where(walked, code * trips[np.arange(len(d)), d] if self.plain[t] else code * (D + 1) + d + 1,
                            code)
        return code

    def keys(self, j: int, trips: np.ndarray, order: np.ndarray, above: np.ndarray | None
             ) -> tuple[np.ndarray, np.ndarray]:
        """(exact (n, E), runs (n, R)) of children with level-``j`` ``trips`` (n, D), ``order`` (n, D; outermost
        first) and placements ``above`` (n, T; None: every tensor below all the level's loops)."""
        live = np.take_along_axis(trips, order, axis=1) > 1
        k = live.sum(axis=1)
        rank = np.cumsum(live, axis=1) - 1
        bits = (1 << order) * live  # (n, D)
        exact, runs = [np.zeros(len(order), dtype=np.int64)], [np.ones(len(order), dtype=np.int64)]
        for t in range(len(self.plain)):
            walks = [k] if self.below[j, t] else []
            if self.keeps[j, t] and above is not None:
                walks.append(above[:, t])
                exact.append((bits * (rank >= above[:, t][:, None])).sum(axis=1))  # the set below the boundary
            for boundary in walks:
                (runs if self.plain[t] else exact).append(self._walk(t, trips, order, live, rank, boundary))
        return np.stack(exact, axis=1), np.stack(runs, axis=1)


def distinct_children(exact: np.ndarray, runs: np.ndarray, parents: np.ndarray, pairs: int = 1 << 21) -> np.ndarray:
    """Indices (ascending) of the children (``parents`` (n,): each child's node) that no child of the same node with
    the same ``exact`` keys dominates: runs ``>=`` one by one, and larger in one or equal and listed earlier.
    Pairs are compared a block of about ``pairs`` at a time."""
    _, group = unique_rows(np.concatenate([parents[:, None], exact], axis=1))
    order = np.argsort(group, kind="stable")
    g, r = group[order], runs[order]
    starts = np.r_[0, np.nonzero(np.diff(g))[0] + 1]
    sizes = np.diff(np.r_[starts, len(g)])
    first = np.repeat(starts, sizes)  # each sorted child's group's first row
    size = np.repeat(sizes, sizes)
    dominated = np.zeros(len(g), dtype=bool)
    begin = 0
    while begin < len(g):  # children [begin, end) against every child of their group
        end = begin + max(1, int(np.searchsorted(np.cumsum(size[begin:]), pairs)))
        b = np.repeat(np.arange(begin, end), size[begin:end])
        a = np.repeat(first[begin:end], size[begin:end]) + np.arange(len(b)) - np.repeat(
            np.cumsum(size[begin:end]) - size[begin:end], size[begin:end])
        beats = (r[a] >= r[b]).all(axis=1) & ((r[a] > r[b]).any(axis=1) | (a < b))
        dominated[begin:end] = np.bincount(b - begin, weights=beats, minlength=end - begin) > 0
        begin = end
    return np.sort(order[~dominated])


def relaxed_placements(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, placeable: np.ndarray,
                       monotone: np.ndarray, capacity: tuple[np.ndarray, np.ndarray] | None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """B37's relaxed placement vectors (docs/search.md, "B37: each order bounded before its placements"), arguments
    as :func:`least_placements`: ``rows`` (m,) into the nodes and ``above`` (m, T). A ``placeable`` tensor's *least*
    is the fewest of a row's k loops above it at which it fits with every other placeable tensor at its smallest tile
    (all k loops above it); each tensor P1 holds for (``monotone``) takes its least, each other one every value from
    its least to k. A row where some tensor does not fit even at k (no placement fits) has none. Every fitting
    placement of a row is at least one of its vectors tensor by tensor and equal to it on the tensors P1 does not
    hold for; a vector need not fit."""
    n, T = trips.shape[0], len(op.tensors)
    k = (trips > 1).sum(axis=1)
    most = int(k.max()) if n else 0
    least = np.zeros((n, T), dtype=np.int64)
    fits = np.ones(n, dtype=bool)
    if capacity is not None:
        part, sizes = capacity
        words = placed_footprints(op, trips, order, base, most)  # (n, T, most + 1)
        smallest = np.where(placeable[None, :], np.take_along_axis(words, k[:, None, None], axis=2)[:, :, 0],
                            words[:, :, 0])  # (n, T) each tensor's least words (a tensor not placed: its only tile)
        legal = np.arange(most + 1)[None, :] <= k[:, None]  # (n, most + 1)
        for t in np.nonzero(placeable)[0]:
            room = np.ones((n, most + 1), dtype=bool)  # t below 0..most loops, the others at their smallest
            for r, size in enumerate(sizes):
                others = smallest @ part[:, r] - smallest[:, t] * part[t, r]
                room &= others[:, None] + words[:, t, :] * part[t, r] <= size
            room &= legal
            fits &= room.any(axis=1)
            least[:, t] = room.argmax(axis=1)
    windows = np.nonzero(placeable & ~monotone)[0]
    grid = (np.indices([most + 1] * len(windows)).reshape(len(windows), -1).T if len(windows)
            else np.zeros((1, 0), dtype=np.int64))  # (G, W) their values
    ok = ((grid[None, :, :] >= least[:, None, windows]) & (grid[None, :, :] <= k[:, None, None])).all(axis=2)
    rows, which = np.nonzero(ok & fits[:, None])
    above = np.where(placeable[None, :], least[rows], 0)
    above[:, windows] = grid[which]
    return rows, above
