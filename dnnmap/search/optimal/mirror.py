"""B42: one of each pair of mirror-image nodes (docs/search.md, "B42: mirror-image nodes").

A layer whose dimensions swap in pairs without changing it (a square convolution: ``P`` with ``Q`` and ``R`` with
``S`` where their bounds are equal and each tensor's axes map onto its own axes) has a *mirror*: the relabeling ``s``
of its dimensions. The cost model reads only the layer's dimensions and tensors (not their names or the order of a
tensor's axes, where no data layout is priced: a backing store without the burst transfer model), so a mapping and its
mirror image (factors, axes and loop orders relabeled by ``s``) cost the same; and the declared space holds both
(its rules name levels, never dimensions). A node stands for every mapping with its choices (factors, axes and
placements, the orders it has chosen), so the completions of a node's mirror image are exactly the mirror images of
the node's, with the same least cost: of two nodes bounded together that are each other's image, the search keeps one.
"""

from __future__ import annotations

import itertools

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal.expand import Nodes
from dnnmap.workload.ir import Operator


def mirror_dims(op: Operator, arch: ArchSpec) -> np.ndarray | None:
    """(D,) ``s``: an involution of the layer's dimensions, not the identity on those with more than one iteration
    (those with one may move among themselves), that keeps every bound and maps every tensor's axes (as sets of ``(dimension, coefficient)`` terms)
    onto the same tensor's axes; None where there is none, or where the cost model could tell a mapping from its
    mirror image (a priced data layout: the backing store's burst transfer model; a sparse connection table)."""
    transfer = arch.dram.transfer
    if op.connectivity is not None or (transfer is not None and transfer.model == "burst"):
        return None
    names = op.dim_names
    groups: dict[int, list[int]] = {}
    for d, name in enumerate(names):
        groups.setdefault(op.bound(name), []).append(d)
    moving = np.array([op.bound(name) > 1 for name in names])
    axes = [{frozenset(a.terms) for a in t.axes} for t in op.tensors]
    for perms in itertools.product(*(itertools.permutations(g) for g in groups.values())):
        s = np.arange(len(names))
        for g, p in zip(groups.values(), perms):
            s[g] = p
        if (s == np.arange(len(names)))[moving].all() or (s[s] != np.arange(len(names))).any():
            continue
        relabel = {names[d]: names[s[d]] for d in range(len(names))}
        if all({frozenset((relabel[d], c) for d, c in a) for a in own} == own for own in axes):
            return s
    return None


def _rows(nodes: Nodes, s: np.ndarray | None, decided: np.ndarray) -> np.ndarray:
    """(n, K) each of ``nodes`` (``s``: its mirror image) as one row: the factors, axes and placements of every level
    and, on the ``decided`` levels (L,), the order of the non-trivial loops (the others' orders are the same
    placeholder in every node, and a trivial loop's position is no choice)."""
    t, sp, ax, order = nodes.temporal, nodes.spatial, nodes.axes, nodes.order[:, decided]
    live = np.take_along_axis(t[:, decided], order, axis=2) > 1  # (n, l, D) each position's loop is non-trivial
    first = np.argsort(~live, axis=2, kind="stable")  # the non-trivial loops first, in their order
    loops = np.where(np.take_along_axis(live, first, axis=2), np.take_along_axis(order, first, axis=2), -1)
    if s is not None:
        t, sp, ax = t[:, :, s], sp[:, :, s], ax[:, :, s]
        loops = np.where(loops >= 0, s[np.maximum(loops, 0)], -1)
    parts = [t, sp, ax, loops] + ([] if nodes.above is None else [nodes.above])
    return np.concatenate([p.reshape(len(t), -1).astype(np.int64) for p in parts], axis=1)


def _hashes(nodes: Nodes, s: np.ndarray, decided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) a hash of each node's row (:func:`_rows`) and (n,) of its mirror image's, without building the rows: a
    wrapping sum of random weights times the factors, axes and placements, and per decided level a random value per
    (rank among the non-trivial loops, dimension) of each non-trivial loop."""
    n, L, D = nodes.temporal.shape
    rng = np.random.default_rng(0)
    own, image = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for part in (nodes.temporal, nodes.spatial, nodes.axes):
        w = rng.integers(1, 2**62, (L, D))
        own += part.reshape(n, -1) @ w.reshape(-1)
        image += part.reshape(n, -1) @ w[:, s].reshape(-1)  # the value of ``d`` at ``s[d]``, weighed there
    if nodes.above is not None:
        above = nodes.above.reshape(n, -1) @ rng.integers(1, 2**62, nodes.above[0].size)
        own, image = own + above, image + above
    order = nodes.order[:, decided]
    live = np.take_along_axis(nodes.temporal[:, decided], order, axis=2) > 1  # (n, l, D)
    rank = np.cumsum(live, axis=2) - 1
    table = rng.integers(1, 2**62, (len(order[0]), D, D))
    level = np.arange(len(order[0]))[None, :, None]
    own += np.where(live, table[level, rank, order], 0).sum(axis=(1, 2))
    image += np.where(live, table[level, rank, s[order]], 0).sum(axis=(1, 2))
    return own, image


def mirror_keep(nodes: Nodes, s: np.ndarray, decided: np.ndarray) -> np.ndarray:
    """Indices of ``nodes`` (bounded together at one stage, their orders chosen on the ``decided`` levels) to search
    (B42): all but a node ``i`` whose mirror image is another of them, ``j``, with ``(h_j, j) < (h_i, i)`` (``h``: a
    hash of each node's row, :func:`_hashes`). The image is looked up by its hash and checked row against row
    (:func:`_rows`), so a collision only keeps a node; of two images of each other at most one is dropped."""
    h_own, h_image = _hashes(nodes, s, decided)
    by_hash = np.argsort(h_own, kind="stable")
    j = by_hash[np.minimum(np.searchsorted(h_own[by_hash], h_image), len(h_own) - 1)]  # first with the image's hash
    i = np.arange(len(h_own))
    drop = np.nonzero((h_own[j] == h_image) & (j != i) & ((h_own[j] < h_own) | ((h_own[j] == h_own) & (j < i))))[0]
    if len(drop):  # the rows themselves
        same = (_rows(nodes.take(j[drop]), None, decided) == _rows(nodes.take(drop), s, decided)).all(axis=1)
        drop = drop[same]
    return np.setdiff1d(i, drop, assume_unique=True)
