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
from numba import njit

from dnnmap.search.space import touched_lower, unique_rows
from dnnmap.workload.ir import Operator
from dnnmap.workload.ops import matmul


@njit(cache=True, inline="always")
def _number(number: np.ndarray, row: np.ndarray, sets: np.ndarray, u: int, r: int, lifted: int) -> int:
    """The number of set ``lifted`` in the current run (:func:`_lifted_sets`), given ``u`` (the next free one) if it
    has none, row ``r`` then recorded as its row."""
    if number[lifted] < 0:
        number[lifted], row[u], sets[u] = u, r, lifted
    return number[lifted]


@njit(cache=True)
def _lifted_sets(trips: np.ndarray, order: np.ndarray, base: np.ndarray, most: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sets of loops lifted out of each row's tile below its first ``0 .. most`` non-trivial loops (past its last
    one: all of them) of a level with ``trips`` (n, D) in ``order`` (n, D; outermost first) over ``base`` (n, D),
    numbered once per run of consecutive rows with equal ``trips`` and ``base`` (siblings, whose tiles differ only
    in that set): ``cell`` (n, most + 1) each set's number, and per number a row with it (u,) and the set (u,;
    bit ``d``: dimension ``d``)."""
    n, D = trips.shape
    cell = np.empty((n, most + 1), dtype=np.int64)
    row = np.empty(n * (most + 1), dtype=np.int64)
    sets = np.empty(n * (most + 1), dtype=np.int64)
    number = np.full(1 << D, -1, dtype=np.int64)  # the current run's number of each set
    u, start = 0, 0  # numbers so far, the current run's first
    for r in range(n):
        same = r > 0
        for d in range(D):
            same = same and trips[r, d] == trips[r - 1, d] and base[r, d] == base[r - 1, d]
        if not same:  # a new run
            for i in range(start, u):
                number[sets[i]] = -1
            start = u
        lifted, m = 0, 0
        cell[r, 0] = _number(number, row, sets, u, r, lifted)
        u += cell[r, 0] == u
        for p in range(D):
            if trips[r, order[r, p]] > 1:
                lifted |= 1 << order[r, p]
                m += 1
                if m <= most:
                    cell[r, m] = _number(number, row, sets, u, r, lifted)
                    u += cell[r, m] == u
        for rest in range(m + 1, most + 1):
            cell[r, rest] = cell[r, m]
    return cell, row[:u], sets[:u]


def placed_footprints(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, most: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Words of each tensor's tile when it lies below the first ``0 .. most`` non-trivial loops of a level with
    ``trips`` (n, D) in ``order`` (n, D; outermost first) over the tile below ``base`` (n, D) (past the level's last
    non-trivial loop: its smallest tile): ``words`` (u, T) and ``cell`` (n, most + 1), row ``i``'s tile below
    ``m`` loops being ``words[cell[i, m]]``. A tile depends on the order only through the set of loops lifted out of
    it, so siblings share them (:func:`_lifted_sets`): at most ``2^k`` tiles per node instead of ``(k + 1) k!``."""
    cell, row, sets = _lifted_sets(*(np.ascontiguousarray(a, dtype=np.int64) for a in (trips, order, base)), most)
    lifted = (sets[:, None] >> np.arange(trips.shape[1])) & 1 > 0
    return touched_lower(op, base[row] * np.where(lifted, 1, trips[row]), contiguous=True), cell


@njit(cache=True, inline="always")
def _advance(vector: np.ndarray, free: np.ndarray, side: int) -> None:
    """The next ``vector`` in lexicographic order whose ``free`` entries range over ``0 .. side - 1`` (the others 0)."""
    for t in range(vector.shape[0] - 1, -1, -1):
        if free[t]:
            vector[t] += 1
            if vector[t] < side:
                return
            vector[t] = 0


@njit(cache=True)
def _kept_vectors(words: np.ndarray, cell: np.ndarray, k: np.ndarray, placeable: np.ndarray, monotone: np.ndarray,
                  part: np.ndarray, sizes: np.ndarray, group: np.ndarray, owner: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The (row, placement) pairs :func:`least_placements` keeps, rows ascending, each row's placements in
    lexicographic order; tensor ``t`` of row ``r`` below ``m`` loops has ``words[cell[r, m], t]`` words.
    ``group`` (T,): each tensor's set of tensors joined by shared partitions (numbered from 0); ``owner`` (R,): each
    partition's group. A vector fits when each group's part does, and raising a tensor one loop changes only its
    group's part, so the kept vectors are the products of each group's kept parts, each found over its own box
    ``0..k`` of the group's placeable tensors."""
    n, T = cell.shape[0], group.shape[0]
    G = group.max() + 1
    box = cell.shape[1] ** T
    fits = np.empty(box, dtype=np.bool_)
    kept = np.empty((G, box, T), dtype=np.int64)  # each group's kept parts (zero outside the group)
    count = np.empty(G, dtype=np.int64)
    stride = np.empty(T, dtype=np.int64)  # a tensor's step in its group's box
    free = np.empty(T, dtype=np.bool_)
    vector = np.zeros(T, dtype=np.int64)
    pick = np.empty(G, dtype=np.int64)
    flat = np.empty(box, dtype=np.int64)
    combos = np.empty((box, T), dtype=np.int64)
    rows = np.empty(max(n, 16), dtype=np.int64)
    above = np.empty((max(n, 16), T), dtype=np.int64)
    R = sizes.shape[0]
    users = np.empty((R, T), dtype=np.int64)  # each partition's tensors, ascending
    held = np.zeros(R, dtype=np.int64)
    for p in range(R):
        for t in range(T):
            if part[t, p] != 0:
                users[p, held[p]] = t
                held[p] += 1
    load = np.empty((R, T, cell.shape[1]))  # a row's weighted footprints per partition, tensor and loops above
    m = 0
    for r in range(n):
        side = k[r] + 1
        for p in range(R):
            for i in range(held[p]):
                t = users[p, i]
                for a in range(side):
                    load[p, t, a] = words[cell[r, a], t] * part[t, p]
        combined = 1
        for g in range(G):
            cells = 1
            for t in range(T - 1, -1, -1):
                free[t] = group[t] == g and placeable[t]
                stride[t] = cells
                cells *= side if free[t] else 1
            count[g] = 0
            for c in range(cells):  # the group's part of the vector (``vector``), the last tensor varying fastest
                fits[c] = True
                for p in range(R):
                    if owner[p] == g:
                        used = 0.0
                        for i in range(held[p]):
                            used += load[p, users[p, i], vector[users[p, i]]]
                        if not used <= sizes[p]:
                            fits[c] = False
                            break
                keep = fits[c]
                for t in range(T):  # tensor t one loop higher: an earlier cell
                    if keep and free[t] and monotone[t] and vector[t] > 0:
                        keep = not fits[c - stride[t]]
                if keep:
                    kept[g, count[g]] = vector
                    count[g] += 1
                _advance(vector, free, side)
            combined *= count[g]
        for i in range(combined):  # every product of the groups' kept parts
            rest = i
            for g in range(G - 1, -1, -1):
                pick[g] = rest % count[g]
                rest //= count[g]
            flat[i] = 0
            for t in range(T):
                combos[i, t] = kept[group[t], pick[group[t]], t]
                flat[i] = flat[i] * side + combos[i, t]
        if m + combined > rows.shape[0]:
            grown = max(2 * rows.shape[0], m + combined)
            rows = np.concatenate((rows, np.empty(grown - rows.shape[0], dtype=np.int64)))
            above = np.concatenate((above, np.empty((grown - above.shape[0], T), dtype=np.int64)))
        for i in range(combined):  # in lexicographic order (few: a selection sort)
            least = i
            for other in range(i + 1, combined):
                if flat[other] < flat[least]:
                    least = other
            rows[m] = r
            above[m] = combos[least]
            flat[least], combos[least] = flat[i], combos[i]
            m += 1
    return rows[:m].copy(), above[:m].copy()


def _groups(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each tensor's group (T,), tensors sharing a partition of ``part`` (T, R) in one, numbered from 0 in order of
    their first tensor (a tensor in no partition alone), and each partition's group (R,; -1: no tensor's)."""
    users = [np.nonzero(part[:, p])[0].tolist() for p in range(part.shape[1])]
    label = list(range(part.shape[0]))
    for joined in users:
        merged = {label[t] for t in joined}
        label = [min(merged) if x in merged else x for x in label]
    number = {x: i for i, x in enumerate(dict.fromkeys(label))}
    group = [number[x] for x in label]
    return (np.array(group, dtype=np.int64),
            np.array([group[joined[0]] if joined else -1 for joined in users], dtype=np.int64))


def least_placements(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, placeable: np.ndarray,
                     monotone: np.ndarray, capacity: tuple[np.ndarray, np.ndarray] | None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The (row, placement) pairs worth keeping for nodes with level ``trips``, ``order`` and ``base``
    (:func:`placed_footprints`): ``rows`` (m,) into the nodes, ascending, and ``above`` (m, T), each row's in
    lexicographic order, each ``placeable`` tensor below 0..k of a row's k non-trivial loops; ``capacity``: the
    level's (partition weights (T, R), sizes (R,)) as :class:`~dnnmap.search.sunstone.tiles.Capacity` holds them
    (None: unbounded), a placement fitting when every partition's weighted footprints sum to at most its size;
    ``monotone`` (T,): the tensors P1 holds for."""
    n, T = trips.shape[0], len(op.tensors)
    trips, order, base = (np.ascontiguousarray(a, dtype=np.int64) for a in (trips, order, base))  # one compiled form
    k = (trips > 1).sum(axis=1)
    most = int(k.max()) if n else 0
    if capacity is None:
        part, sizes = np.zeros((T, 0)), np.zeros(0)
        words, cell = np.zeros((1, T)), np.zeros((n, most + 1), dtype=np.int64)
    else:
        part, sizes = (np.ascontiguousarray(a, dtype=np.float64) for a in capacity)
        if not (sizes[~part.any(axis=0)] >= 0).all():  # a partition no tensor uses that does not fit
            return np.zeros(0, dtype=np.int64), np.zeros((0, T), dtype=np.int64)
        words, cell = placed_footprints(op, trips, order, base, most)
    return _kept_vectors(words, cell, k, placeable.astype(np.bool_), monotone.astype(np.bool_), part, sizes,
                         *_groups(part))


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

    def _columns(self, j: int, placed: bool) -> np.ndarray:
        """(C, 4) the key columns of level ``j`` (``placed``: with the level's placements) as (what, tensor, boundary,
        column) for :func:`_key_columns`: per tensor, in order, the set below its placement's boundary, then its
        walk from below all the level's loops (kept below it), then from its placement (kept at it)."""
        columns, exact, runs = [], 1, 1
        for t in range(len(self.plain)):
            walks = [-1] if self.below[j, t] else []
            if self.keeps[j, t] and placed:
                walks.append(t)
                columns.append((0, t, t, exact))
                exact += 1
            for boundary in walks:
                columns.append((2 if self.plain[t] else 1, t, boundary, runs if self.plain[t] else exact))
                runs, exact = (runs + 1, exact) if self.plain[t] else (runs, exact + 1)
        return np.array(columns, dtype=np.int64).reshape(-1, 4)

    def keys(self, j: int, trips: np.ndarray, order: np.ndarray, above: np.ndarray | None
             ) -> tuple[np.ndarray, np.ndarray]:
        """(exact (n, E), runs (n, R)) of children with level-``j`` ``trips`` (n, D), ``order`` (n, D; outermost
        first) and placements ``above`` (n, T; None: every tensor below all the level's loops)."""
        columns = self._columns(j, above is not None)
        exact = 1 + int((columns[:, 0] < 2).sum())
        trips, order, above = (np.ascontiguousarray(a, dtype=np.int64)  # one compiled form
                               for a in (trips, order, np.zeros((0, 0)) if above is None else above))
        return _key_columns(trips, order, above, columns, self.plain, self.stops, exact, len(columns) + 2 - exact)


@njit(cache=True)
def _key_columns(trips: np.ndarray, order: np.ndarray, above: np.ndarray, columns: np.ndarray, plain: np.ndarray,
                 stops: np.ndarray, E: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`OrderKeys.keys`' (exact (n, E), runs (n, R)) of each row (trips, order, placements ``above``), column 0
    of each a constant. ``columns`` (:meth:`OrderKeys._columns`): (what, tensor ``t``, boundary: ``above``'s column
    or -1 for below every loop, column); what 0: the set of non-trivial loops below the boundary (bit ``d``:
    dimension ``d``); 1 (into exact), 2 (into runs): the non-trivial loops above it walked innermost first before
    the first of ``t``'s stops: the product of their trips (the run) for a ``plain`` tensor, else a code of the
    sequence."""
    n, D = order.shape
    exact = np.zeros((n, E), dtype=np.int64)
    runs = np.ones((n, R), dtype=np.int64)
    live = np.empty(D, dtype=np.bool_)
    rank = np.empty(D, dtype=np.int64)  # each non-trivial loop's among them, outermost first
    for i in range(n):
        k = 0
        for p in range(D):
            live[p] = trips[i, order[i, p]] > 1
            rank[p] = k
            k += live[p]
        for c in range(columns.shape[0]):
            what, t, source, column = columns[c]
            boundary = k if source < 0 else above[i, source]
            if what == 0:
                below = 0
                for p in range(D):
                    if live[p] and rank[p] >= boundary:
                        below += 1 << order[i, p]
                exact[i, column] = below
                continue
            code = 1 if plain[t] else 0
            for p in range(D - 1, -1, -1):
                d = order[i, p]
                if live[p] and rank[p] < boundary:
                    if stops[t, d]:
                        break
                    code = code * trips[i, d] if plain[t] else code * (D + 1) + d + 1
            if what == 1:
                exact[i, column] = code
            else:
                runs[i, column] = code
    return exact, runs


def distinct_children(exact: np.ndarray, runs: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Indices (ascending) of the children (``parents`` (n,): each child's node) that no child of the same node with
    the same ``exact`` keys dominates: runs ``>=`` one by one, and larger in one or equal and listed earlier."""
    _, group = unique_rows(np.concatenate([parents[:, None], exact], axis=1))
    order = np.argsort(group, kind="stable")
    return np.sort(order[~_dominated(group[order], runs[order])])


@njit(cache=True)
def _dominated(group: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """(n,) whether another row of the same ``group`` (sorted, each group's rows consecutive) dominates each row
    (:func:`distinct_children`)."""
    n, R = runs.shape
    out = np.zeros(n, dtype=np.bool_)
    start, end = 0, 0  # the current group's rows
    for b in range(n):
        if b == end:
            start = end
            while end < n and group[end] == group[b]:
                end += 1
        for a in range(start, end):
            if a == b:
                continue
            geq, greater = True, False
            for r in range(R):
                if runs[a, r] < runs[b, r]:
                    geq = False
                    break
                greater = greater or runs[a, r] > runs[b, r]
            if geq and (greater or a < b):
                out[b] = True
                break
    return out


@njit(cache=True)
def _least_fitting(words: np.ndarray, cell: np.ndarray, k: np.ndarray, placeable: np.ndarray, part: np.ndarray,
                   sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`relaxed_placements`' ``least`` (n, T) and ``fits`` (n,), tensor ``t`` of row ``i`` below ``m`` loops
    having ``words[cell[i, m], t]`` words: a ``placeable`` tensor's least is the fewest loops ``m <= k[i]`` above it
    at which each partition ``r`` (``part[:, r]``: each tensor's share of it) holds it with the others at their
    smallest tiles (a placeable one below all ``k[i]`` loops, another below none: its only tile) within
    ``sizes[r]``; a row where some placeable tensor has none does not fit (its least then 0)."""
    n, T = cell.shape[0], words.shape[1]
    R = sizes.shape[0]
    least = np.zeros((n, T), dtype=np.int64)
    fits = np.ones(n, dtype=np.bool_)
    smallest = np.empty(T)
    total = np.empty(R)
    for i in range(n):
        for t in range(T):
            smallest[t] = words[cell[i, k[i] if placeable[t] else 0], t]
        for r in range(R):
            total[r] = 0.0
            for t in range(T):
                total[r] += smallest[t] * part[t, r]
        for t in range(T):
            if not placeable[t]:
                continue
            found = -1
            for m in range(k[i] + 1):
                w = words[cell[i, m], t]
                ok = True
                for r in range(R):
                    if total[r] - smallest[t] * part[t, r] + w * part[t, r] > sizes[r]:
                        ok = False
                        break
                if ok:
                    found = m
                    break
            if found < 0:
                fits[i] = False
            else:
                least[i, t] = found
    return least, fits


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
        tiles, cell = placed_footprints(op, trips, order, base, most)
        least, fits = _least_fitting(np.ascontiguousarray(tiles, dtype=np.float64), cell, k, placeable,
                                     np.ascontiguousarray(part, dtype=np.float64),
                                     np.ascontiguousarray(sizes, dtype=np.float64))
    windows = np.nonzero(placeable & ~monotone)[0]
    grid = (np.indices([most + 1] * len(windows)).reshape(len(windows), -1).T if len(windows)
            else np.zeros((1, 0), dtype=np.int64))  # (G, W) their values
    ok = ((grid[None, :, :] >= least[:, None, windows]) & (grid[None, :, :] <= k[:, None, None])).all(axis=2)
    rows, which = np.nonzero(ok & fits[:, None])
    above = np.where(placeable[None, :], least[rows], 0)
    above[:, windows] = grid[which]
    return rows, above


def compile_kernels() -> None:
    """Compile (first run) or load from numba's on-disk cache this module's kernels for the argument types the
    optimal mapper's order stages pass (each public function makes its arrays contiguous), on a tiny layer: called
    by :func:`dnnmap.cost.warmup.compile_kernels`, so that no search pays their compilation (about 7 s of CPU)."""
    op = matmul("warm-up", 2, 2, 2)
    D, T = len(op.dim_names), len(op.tensors)
    trips, order = np.full((2, D), 2), np.tile(np.arange(D), (2, 1))
    every = np.ones(T, dtype=bool)
    rows, above = least_placements(op, trips, order, np.ones_like(trips), every, every, (np.eye(T), np.full(T, 4.0)))
    exact, runs = OrderKeys(op, np.ones((2, T), dtype=bool), ()).keys(0, trips[rows], order[rows], above)
    distinct_children(exact, runs, rows)
    relaxed_placements(op, trips, order, np.ones_like(trips), every, every, (np.eye(T), np.full(T, 4.0)))
