"""B42: one of each pair of mirror-image root children (docs/search.md, "B42: mirror-image root children").

A layer whose dimensions swap in pairs without changing it (a square convolution: ``P`` with ``Q`` and ``R`` with
``S`` where their bounds are equal and each tensor's axes map onto its own axes) has a *mirror*: the relabeling ``s``
of its dimensions. The cost model reads only the layer's dimensions and tensors (not their names or the order of a
tensor's axes, where no data layout is priced: a backing store without the burst transfer model), so a mapping and its
mirror image (factors, axes and loop orders relabeled by ``s``) cost the same; and the declared space holds both
(its rules name levels, never dimensions). The root's children differ only in the top level's factors: the subtree
of a child's mirror image holds exactly the mirror images of the child's completions, so its least cost is the
child's, and the search keeps one of the two.
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


def mirrored(nodes: Nodes, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The temporal and spatial factors and the spatial axes of the mirror images of ``nodes`` (each (n, L, D)): the
    value of dimension ``d`` moves to ``s[d]`` (``s`` is an involution)."""
    return nodes.temporal[:, :, s], nodes.spatial[:, :, s], nodes.axes[:, :, s]


def mirror_keep(children: Nodes, s: np.ndarray) -> np.ndarray:
    """Indices of the root's ``children`` to search (B42): all but those whose mirror image is another of
    ``children`` and comes first in the lexicographic order of their factors and axes (the root's orders and
    placements, still open, are the same in every child and in its image)."""
    own = np.concatenate([a.reshape(len(children.temporal), -1)
                          for a in (children.temporal, children.spatial, children.axes)], axis=1)
    image = np.concatenate([a.reshape(len(own), -1) for a in mirrored(children, s)], axis=1)
    index = {row.tobytes(): i for i, row in enumerate(own)}
    keep = []
    for i in range(len(own)):
        j = index.get(image[i].tobytes())
        if j is None or j == i or tuple(own[i]) < tuple(image[i]):
            keep.append(i)
    return np.array(keep, dtype=np.int64)
