"""B39 (docs/search.md, "B39: one order for a level's refetches and its children's refills").

At a factor stage ``F(j)`` with per-tensor placement, below the top, level ``j``'s one loop order decides both the
refills of the pairs whose child is level ``j - 1`` (each tensor wants the loops that do not index it innermost: B2
prices each pair at its own best order) and where each tensor kept at level ``j`` can be placed (a tensor placed below
some of the level's loops is fetched again by those outside its innermost loop on a plain axis of it; the shared
boundary the node's completion uses holds it whole). B39 takes one order for all of those pairs: the least over the
level's orders of what each pair adds beyond what the pairs' tier of the bound counts for it. B44 (docs/search.md,
"B44: B39 under the loops above the level"): also where the levels above ``j`` have non-trivial loops (fixed at that
stage), a placed tensor's term left out where one of them moves a sliding-window axis of it. A node's orders are
walked in a compiled loop over a table of its tiles per set of loops lifted out of them (at most ``2^k`` for ``k``
loops, shared by its ``k!`` orders).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit

from dnnmap.cost.model import CostBatch
from dnnmap.search.optimal.bounds import LowerBound, Pair
from dnnmap.search.optimal.placement import _least_fitting
from dnnmap.search.space import level_orders, touched_lower


@lru_cache(maxsize=256)
def _walks(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every order of ``k`` loops (outermost first; (k!, k) positions among them) and each one's sets lifted out of
    the tile below its first ``0 .. k`` loops ((k!, k + 1), bit ``i``: loop ``i``). Read-only, cached."""
    perms = np.array(level_orders(tuple(range(k)), k), dtype=np.int64).reshape(math.factorial(k), k)
    sets = np.zeros((len(perms), k + 1), dtype=np.int64)
    for m in range(k):
        sets[:, m + 1] = sets[:, m] | (1 << perms[:, m])
    for a in (perms, sets):
        a.setflags(write=False)
    return perms, sets


def _terms(bound: LowerBound, temporal: np.ndarray, spatial: np.ndarray, cost: CostBatch,
           by_order: list[CostBatch] | None, safe: np.ndarray | None, j: int) -> list[tuple[int, bool, np.ndarray, np.ndarray]]:
    """B39's pairs: (tensor, whether its child is level ``j`` (else ``j - 1``), ``a`` (n,), ``c`` (n,)): the pair
    costs at least ``a x rho`` under an order (:func:`shared_order`'s ``rho``) and the pairs' tier of
    :meth:`.bounds.LowerBound.compute` counts ``c`` for it (with its hops):

    * child ``j - 1``, a tensor without a sliding window priced at its best order (B2, where ``safe``; elsewhere no
      term): ``a = c + g``, ``g`` B21's growth of its reloads (:meth:`.bounds.LowerBound._reload_growth`; 0 but for
      the output), as B18 prices such a pair under another order of the top level (``rho`` its refills over the best
      order's);
    * child ``j - 1``, a sliding-window input: B21's whole tile at each event of the loops through the innermost on a
      plain axis of it (:meth:`.bounds.LowerBound._disjoint_refills`), ``a`` its energy per event times the events
      at the best order (``rho``'s denominator);
    * child ``j``, a tensor level ``j`` keeps for which P1 holds there, exact at the shared boundary: ``a = c + g``.

    At level 0 (B44: ``by_order`` and ``safe`` None) there are only the last ones."""
    out = []
    for pr in bound.pairs:
        t, ch = pr.tensor, pr.child
        if ch == j - 1 >= 0 and bound.plain[t] and safe[:, t].any():
            counts = by_order[t].counts
            e, _, h = bound._exact(counts, pr)
            if t == bound.out:  # B29, as the pairs' tier adds it to the B2 pair
                e = e + bound._copies_drained(spatial, ch, counts["drains"][:, ch, t])
            value = np.where(safe[:, t], _pair_energy(bound, pr, e, h) + bound._reload_growth(counts, pr), 0.0)
            out.append((t, False, value, value))
        elif ch == j - 1 >= 0 and not bound.plain[t] and t != bound.out:
            out.append((t, False, *_window_pair(bound, pr, temporal, spatial, by_order, safe, j)))
        elif ch == j and bound.monotone[j, t]:
            e, _, h = bound._exact(cost.counts, pr)
            if t == bound.out:  # B29
                e = e + bound._partial_widths(cost, pr)
            value = _pair_energy(bound, pr, e, h) + bound._reload_growth(cost.counts, pr)
            value = np.where(_overlapping_runs(bound, temporal, t, j), 0.0, value)  # B44: no term there
            out.append((t, True, value, value))
    return out


def _overlapping_runs(bound: LowerBound, temporal: np.ndarray, t: int, j: int) -> np.ndarray:
    """(n,) B44 (docs/search.md, "B44: B39 under the loops above the level"): whether a non-trivial loop above level
    ``j`` moves an axis of tensor ``t`` that is not plain (a sliding window's), so that runs of level ``j``'s loops
    may share words of its box; elsewhere each run whose box the shared boundary fills anew shares no word with the
    run before."""
    window = bound.indexes[t] & ~bound.disjoint[t]
    return ((temporal[:, j + 1:] > 1).any(axis=1) & window[None, :]).any(axis=1)


def _window_pair(bound: LowerBound, pr: Pair, temporal: np.ndarray, spatial: np.ndarray, by_order: list[CostBatch],
                 safe: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, c) of :func:`_terms` for a sliding-window tensor's pair of child ``j - 1``: ``c`` its compulsory bound (B3)
    or, where B2 holds for it, its exact counts at its best order, as the pairs' tier counts it."""
    t, rest = pr.tensor, temporal[:, 0]
    e, _, h = bound._compulsory(pr, spatial, rest, j, bound.touched_all, None)
    if bound.monotone[pr.child, t] or not bound.placement:
        ex, _, hx = bound._exact(by_order[t].counts, pr)
        e, h = np.where(safe[:, t], ex, e), np.where(safe[:, t], hx, h)
    once = np.ones(len(rest))
    per_event, _, words = bound._sweeps(pr, spatial, j, once, once, touched_lower(bound.op, rest, contiguous=True)[:, t],
                                        np.full(len(rest), np.inf))
    best = np.where(bound.disjoint[t][None, :], temporal[:, j], 1).prod(axis=1)
    return _pair_energy(bound, pr, per_event, words) * best, _pair_energy(bound, pr, e, h)


def _pair_energy(bound: LowerBound, pr: Pair, energy: np.ndarray, hops: np.ndarray) -> np.ndarray:
    """(n,) a pair's energy as the pairs' tier counts it: its own and its hops' through the fan-outs in between."""
    return energy + hops * bound.hop_per_word(pr)


@njit(cache=True)
def _added(trips: np.ndarray, plain: np.ndarray, words: np.ndarray, perms: np.ndarray, sets: np.ndarray,
           least: np.ndarray, fits: np.ndarray, tensor: np.ndarray, placed: np.ndarray, value: np.ndarray,
           offset: np.ndarray) -> np.ndarray:
    """(g, P) per node and order of ``perms`` (P, k) (inf where it does not fit: ``fits`` (g, P)) the summed
    ``max(0, value x rho - offset)`` of the terms (``tensor``, ``placed``, ``value`` and ``offset`` (terms, g)): ``trips`` (g, k) the
    node's loops, ``plain`` (g, T, k) whether a loop is on a plain axis of a tensor, ``words`` (g, 2^k, T) a tensor's
    tile with the loops of a set lifted out of it, ``sets`` (P, k + 1) the sets above each order's first loops and
    ``least`` (g, P, T) each tensor's relaxed loops above it (B37). ``rho``, with ``e(m)`` the events of the order's
    first ``m`` loops through the innermost on a plain axis of the tensor (1: none): ``words(m) e(m) / words(0)`` at
    ``m`` its least (``placed``), else ``e(k)`` over its least over the orders."""
    g, k = trips.shape
    n_perms, n_terms = perms.shape[0], tensor.shape[0]
    out = np.full((g, n_perms), np.inf)
    product = np.empty(k + 1)
    best = np.empty(n_terms)
    for i in range(g):
        for a in range(n_terms):  # the best order's refills: the loops on a plain axis of the tensor
            best[a] = 1.0
            for q in range(k):
                if plain[i, tensor[a], q]:
                    best[a] *= trips[i, q]
        for p in range(n_perms):
            if not fits[i, p]:
                continue
            product[0] = 1.0
            for m in range(k):
                product[m + 1] = product[m] * trips[i, perms[p, m]]
            total = 0.0
            for a in range(n_terms):
                t = tensor[a]
                through = least[i, p, t] if placed[a] else k
                events = 1.0
                for m in range(through - 1, -1, -1):
                    if plain[i, t, perms[p, m]]:
                        events = product[m + 1]
                        break
                if placed[a]:
                    tile = words[i, sets[p, through], t]
                    taken = tile * events
                    for q in range(through - 1):  # each event of loop q: its sweep's box, less the tile held
                        taken = max(taken, product[q + 1] * (words[i, sets[p, q + 1], t] - tile) + tile)
                    rho = taken / words[i, 0, t]
                else:
                    rho = events / best[a]
                total += max(0.0, value[a, i] * rho - offset[a, i])
            out[i, p] = total
    return out


def _group_added(bound: LowerBound, trips: np.ndarray, base: np.ndarray, loops: np.ndarray, j: int,
                 terms: list[tuple[int, bool, np.ndarray, np.ndarray]]) -> np.ndarray:
    """(g, P) :func:`_added` of nodes whose level ``j`` has ``k`` non-trivial loops, ``loops`` (g, k) their
    dimensions and ``trips`` (g, k) their trips, over the tiles ``base`` (g, D) below the level; ``terms`` of those
    nodes."""
    g, k = trips.shape
    D = base.shape[1]
    perms, sets = _walks(k)
    lifted = (np.arange(1 << k)[:, None] >> np.arange(k)) & 1 > 0  # (2^k, k)
    cover = np.repeat(base[:, None, :], 1 << k, axis=1)  # (g, 2^k, D)
    cover[np.arange(g)[:, None, None], np.arange(1 << k)[None, :, None], loops[:, None, :]] *= np.where(
        lifted[None], 1, trips[:, None, :])
    words = np.ascontiguousarray(touched_lower(bound.op, cover.reshape(-1, D), contiguous=True), dtype=np.float64)
    cells = ((np.arange(g)[:, None, None] << k) + sets[None]).reshape(-1, k + 1)  # (g P, k + 1) rows of ``words``
    least, fits = np.zeros((len(cells), bound.T), dtype=np.int64), np.ones(len(cells), dtype=bool)
    if bound.fit.levels[j] is not None:
        part, sizes = bound.fit.levels[j]
        least, fits = _least_fitting(words, cells, np.full(len(cells), k), np.ascontiguousarray(bound.keeps[j]),
                                     np.ascontiguousarray(part, dtype=np.float64),
                                     np.ascontiguousarray(sizes, dtype=np.float64))
    plain = np.ascontiguousarray(bound.disjoint[:, loops].transpose(1, 0, 2))  # (g, T, k)
    return _added(trips.astype(np.float64), plain, words.reshape(g, 1 << k, -1), perms, sets,
                        least.reshape(g, len(perms), -1), fits.reshape(g, -1),
                        np.array([term[0] for term in terms], dtype=np.int64), np.array([term[1] for term in terms]),
                        np.array([term[2] for term in terms], dtype=np.float64),
                        np.array([term[3] for term in terms], dtype=np.float64))


def shared_orders(bound: LowerBound, temporal: np.ndarray, spatial: np.ndarray, cost: CostBatch,
                  by_order: list[CostBatch] | None, safe: np.ndarray | None, j: int
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
    """B39's increment over the pairs' tier per order of level ``j`` of nodes of factor stage ``j`` (their completions
    ``cost``, B2's ``by_order`` and ``safe`` as :meth:`.bounds.LowerBound.compute` takes them; None at level 0), in groups of nodes
    with as many non-trivial loops ``k``: (the nodes (g,), (g, k!) the increment of each order, numbered as
    :func:`order_ranks` numbers them), nodes with loops above level ``j`` too (B44). An order's
    increment is inf where some placeable tensor fits at no placement (it has no relaxed vector, B37:
    :func:`.placement.relaxed_placements`), else the sum over B39's pairs (:func:`_terms`) of ``max(0, a rho - c)``.
    A pair of child ``j - 1`` has ``rho`` its tile's refills under the order (the trips of the loops from the
    outermost through the innermost one on a plain axis of its tensor, :attr:`.bounds.LowerBound.disjoint`) over
    those at its best order. A pair of child ``j`` has ``rho`` the words its tile below its relaxed loops ``m`` must
    take in over the words of its tile at the boundary (filled once): the larger of the tile's words times the
    events of those loops through the innermost one on a plain axis of it (each moves that axis by the tile's whole
    extent or wraps it back, so the new tile shares no word with the one before) and, for each of the first ``q < m``
    loops, its events times the words of the box one of its iterations sweeps (the tile below the first ``q + 1``
    loops) less the tile held when it starts, plus the first tile.

    B44, with loops above level ``j`` (fixed, the same under every order): a child ``j - 1``'s tile is refilled at
    each event of all the loops through the innermost on a plain axis of it, ``A x`` the events of level ``j``'s
    loops where one of those is on such an axis (``A`` the loops above: every iteration of theirs runs level ``j``'s),
    ``A`` times its best order's too, so ``rho`` is the same ratio; else the same events under every order (``rho =
    1``). A child ``j`` tensor none of whose sliding-window axes the loops above move: the shared boundary fills its
    box anew at each change of it, each time a box with no word of the one before (a plain axis moved by the box's
    extent, or wrapped back), so the tile the placed level holds when such a run of level ``j``'s loops starts (part of
    the box before) has none of its words, and B39's count holds run by run: at least ``rho`` times the words the
    shared boundary takes in (runs with the box unchanged take in at least none)."""
    terms = _terms(bound, temporal, spatial, cost, by_order, safe, j)
    if not terms:
        return []
    rows = np.arange(len(temporal))  # B44: the nodes with loops above level ``j`` too
    live = temporal[rows, j] > 1
    k = live.sum(axis=1)
    out = []
    for size in np.unique(k):
        group = rows[k == size]
        loops = np.nonzero(live[k == size])[1].reshape(len(group), size)  # each node's loops, by dimension
        out.append((group, _group_added(bound, np.take_along_axis(temporal[group, j], loops, axis=1),
                                        spatial[group, j] * (temporal[group, 0] if j > 0 else 1), loops, j,
                                        [(t, p, a[group], c[group]) for t, p, a, c in terms])))
    return out


def order_ranks(trips: np.ndarray, order: np.ndarray) -> np.ndarray:
    """(n,) each row's order of its non-trivial loops (``order`` (n, D), outermost first, trivial loops after them;
    ``trips`` (n, D)) numbered as :func:`.space.level_orders` lists the orders of those loops (lexicographically by
    the loops' dimensions): the column of :func:`shared_orders`' increments."""
    n, D = order.shape
    k = (trips > 1).sum(axis=1)
    rank = np.zeros(n, dtype=np.int64)
    factorial = np.array([math.factorial(x) for x in range(D)], dtype=np.int64)
    for i in range(D):  # position i's loop: how many later ones come before it by dimension, times (k - 1 - i)!
        later = (order[:, i + 1:] < order[:, i:i + 1]) & (np.arange(i + 1, D) < k[:, None])
        weight = factorial[np.maximum(k - 1 - i, 0)] * (i < k)
        rank += later.sum(axis=1) * weight
    return rank


def compile_kernels() -> None:
    """Compile (first run) or load from numba's on-disk cache :func:`_added` for the argument types
    :func:`_group_added` passes: called by :func:`dnnmap.cost.warmup.compile_kernels`, so that no search pays its
    compilation."""
    perms, sets = _walks(2)
    _added(np.ones((1, 2)), np.ones((1, 1, 2), dtype=bool), np.ones((1, 4, 1)), perms, sets,
           np.zeros((1, 2, 1), dtype=np.int64), np.ones((1, 2), dtype=bool), np.zeros(1, dtype=np.int64),
           np.ones(1, dtype=bool), np.ones((1, 1)), np.ones((1, 1)))
