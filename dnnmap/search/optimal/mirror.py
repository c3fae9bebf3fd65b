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
from numba import njit

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


@njit(cache=True)
def _images_equal(temporal: np.ndarray, spatial: np.ndarray, axes: np.ndarray, order: np.ndarray, above: np.ndarray,
                  s: np.ndarray, decided: np.ndarray, own: np.ndarray, mirrored: np.ndarray) -> np.ndarray:
    """(k,) whether node ``own[k]``'s row equals node ``mirrored[k]``'s mirror image's (``s``): the factors, axes and
    placements (``above``: (n, L, T), zeros without placement) of every level and, on the ``decided`` levels (L,), the
    sequence of the non-trivial loops in their order (the others' orders are the same placeholder in every node, and a
    trivial loop's position is no choice)."""
    L, D = temporal.shape[1], temporal.shape[2]
    out = np.ones(own.shape[0], dtype=np.bool_)
    for k in range(own.shape[0]):
        i, j = own[k], mirrored[k]
        same = True
        for lv in range(L):
            for d in range(D):
                e = s[d]
                same = same and temporal[i, lv, d] == temporal[j, lv, e] and spatial[i, lv, d] == spatial[j, lv, e]
                same = same and axes[i, lv, d] == axes[j, lv, e]
            for t in range(above.shape[2]):
                same = same and above[i, lv, t] == above[j, lv, t]
            if same and decided[lv]:  # the non-trivial loops one by one, the image's relabeled
                p, q = 0, 0
                while same:
                    while p < D and temporal[i, lv, order[i, lv, p]] <= 1:
                        p += 1
                    while q < D and temporal[j, lv, order[j, lv, q]] <= 1:
                        q += 1
                    if p == D or q == D:
                        same = p == D and q == D
                        break
                    same = order[i, lv, p] == s[order[j, lv, q]]
                    p, q = p + 1, q + 1
            if not same:
                break
        out[k] = same
    return out


def _hashes(arrays: tuple[np.ndarray, ...], s: np.ndarray, decided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) a hash of each node's row (:func:`_images_equal`'s; ``arrays``: the nodes' as it takes them) and (n,) of its
    mirror image's, without building the rows: a wrapping sum of random weights times the factors, axes and
    placements, and per decided level a random value per (rank among the non-trivial loops, dimension) of each
    non-trivial loop (:func:`_hash_rows`)."""
    _, L, D = arrays[0].shape
    rng = np.random.default_rng(0)
    weights = np.array([rng.integers(1, 2**62, (L, D)) for _ in range(3)])  # the factors', spatial factors', axes'
    placed = rng.integers(1, 2**62, arrays[4][0].size)  # none drawn without placement
    table = rng.integers(1, 2**62, (int(decided.sum()), D, D))
    return _hash_rows(*arrays, s, decided, weights, placed, table)


@njit(cache=True)
def _hash_rows(temporal: np.ndarray, spatial: np.ndarray, axes: np.ndarray, order: np.ndarray, above: np.ndarray,
               s: np.ndarray, decided: np.ndarray, weights: np.ndarray, placed: np.ndarray, table: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_hashes` of the nodes (``above``: (n, L, T), zeros without placement): per node the wrapping sums (int64,
    modulo 2^64: the same in any order) of ``weights`` (3, L, D) times its factors, spatial factors and axes (the
    image's: the value of ``d`` weighed at ``s[d]``), ``placed`` (L T,) times its placements, and per decided level
    ``table`` (levels, rank, dimension) at each non-trivial loop (the image's: at ``s`` of its dimension)."""
    n, L, D = temporal.shape
    T = above.shape[2]
    own, image = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for i in range(n):
        a, b = np.int64(0), np.int64(0)
        for lv in range(L):
            for d in range(D):
                e = s[d]
                a += temporal[i, lv, d] * weights[0, lv, d] + spatial[i, lv, d] * weights[1, lv, d]
                a += axes[i, lv, d] * weights[2, lv, d]
                b += temporal[i, lv, d] * weights[0, lv, e] + spatial[i, lv, d] * weights[1, lv, e]
                b += axes[i, lv, d] * weights[2, lv, e]
            for t in range(T):
                a += above[i, lv, t] * placed[lv * T + t]
                b += above[i, lv, t] * placed[lv * T + t]
        k = 0
        for lv in range(L):
            if decided[lv]:
                rank = 0
                for p in range(D):
                    d = order[i, lv, p]
                    if temporal[i, lv, d] > 1:
                        a += table[k, rank, d]
                        b += table[k, rank, s[d]]
                        rank += 1
                k += 1
        own[i], image[i] = a, b
    return own, image


def mirror_keep(nodes: Nodes, s: np.ndarray, decided: np.ndarray) -> np.ndarray:
    """Indices of ``nodes`` (bounded together at one stage, their orders chosen on the ``decided`` levels) to search
    (B42): all but a node ``i`` whose mirror image is another of them, ``j``, with ``(h_j, j) < (h_i, i)`` (``h``: a
    hash of each node's row, :func:`_hashes`). The image is looked up by its hash and checked row against row
    (:func:`_images_equal`), so a collision only keeps a node; of two images of each other at most one is dropped."""
    n, L = nodes.temporal.shape[:2]
    above = nodes.above if nodes.above is not None else np.zeros((n, L, 0), dtype=np.int64)
    arrays = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (nodes.temporal, nodes.spatial, nodes.axes,
                                                                     nodes.order, above))
    s, decided = np.ascontiguousarray(s, dtype=np.int64), np.ascontiguousarray(decided, dtype=np.bool_)
    h_own, h_image = _hashes(arrays, s, decided)
    by_hash = np.argsort(h_own, kind="stable")
    j = by_hash[np.minimum(np.searchsorted(h_own[by_hash], h_image), len(h_own) - 1)]  # first with the image's hash
    i = np.arange(len(h_own))
    drop = np.nonzero((h_own[j] == h_image) & (j != i) & ((h_own[j] < h_own) | ((h_own[j] == h_own) & (j < i))))[0]
    if len(drop):  # the rows themselves
        drop = drop[_images_equal(*arrays, s, decided, j[drop], drop)]
    return np.setdiff1d(i, drop, assume_unique=True)


def compile_kernels() -> None:
    """Compile (first run) or load from numba's on-disk cache :func:`_hash_rows` and :func:`_images_equal` for the
    argument types :func:`mirror_keep` passes: called by :func:`dnnmap.cost.warmup.compile_kernels`, so that no search
    pays their compilation."""
    ones = np.ones((2, 1, 2), dtype=np.int64)
    nodes = Nodes(ones, ones, ones - 1, np.tile(np.arange(2), (2, 1, 1)), None)
    mirror_keep(nodes, np.array([1, 0]), np.ones(1, dtype=bool))
