"""Children of branch-and-bound nodes: one level's factors, then its loop order (top level first).

Nodes are arrays like a :class:`MappingBatch` (temporal, spatial, axes, order: (n, L, D); with per-tensor
placement also ``above``: (n, L, T)). The
factor stage of level ``j`` splits what is left of each bound (``rest``, kept in level 0's
temporal slot until then) into level ``j``'s temporal factor, its fan-out's spatial factors and
the tile below, keeping only tiles of level ``j-1`` whose lower-bound footprint fits (a tile
that cannot fit is invalid in the cost model too). The order stage enumerates every order of
level ``j``'s non-trivial loops (the exhaustive mapper's lossless rule; level 0 keeps its
fixed order; with placement every order, each then paired with the placements worth searching,
:mod:`.placement`; no tile is then dropped for its footprint: a tensor placed below the level's loops
needs only part of it). On a level whose 2-D fan-out may split a dimension over both axes (the constraint
``both_axes``) the spatial factors are :func:`~dnnmap.search.sunstone.unroll.both_axes_unrollings`. Together the stages enumerate exactly
the declared space of :class:`~dnnmap.search.space.MapSpace`, with or without placement and both-axis unrolling;
in the widened space (either of them) the mapper keeps one spatial row per factor vector
(:func:`distinct_unrollings`, rule P4) and one order stage child per class :class:`.placement.OrderKeys` cannot
tell apart, none dominated (P3, P5): every dropped child has a kept sibling no worse in every completion.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.space import level_orders, unique_rows
from dnnmap.search.sunstone.tiles import Capacity, divisor_lattice
from dnnmap.search.sunstone.walk import Partials
from dnnmap.search.sunstone.unroll import legal_table


@dataclass
class Nodes(Partials):
    """Branch-and-bound nodes: :class:`Partials` and, with per-tensor placement, ``above`` (n, L, T), the loops
    of each level above each tensor's tile (0 on the levels whose choice is still open); None without it."""

    above: np.ndarray | None = None

    def take(self, idx: np.ndarray) -> "Nodes":
        return Nodes(self.temporal[idx], self.spatial[idx], self.axes[idx], self.order[idx],
                     None if self.above is None else self.above[idx])

    @staticmethod
    def concat(parts: list["Nodes"]) -> "Nodes":
        above = None if parts[0].above is None else np.concatenate([p.above for p in parts])
        return Nodes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("temporal", "spatial", "axes",
                                                                                  "order")), above)


@lru_cache(maxsize=8192)
def distinct_unrollings(limits: tuple[int, ...], shape: tuple[int, ...], both: bool) -> tuple[np.ndarray, np.ndarray]:
    """One legal (factors, axes) row per distinct factor vector (rule P4, docs/search.md): the cost model and the
    simulator count over all the instances under one parent whatever axis carries which factor (neither reads the
    axes), and the axes of one level constrain no other level, so rows with equal factors give every completion
    the same cost; the axes only have to be legal, which each kept row is (read-only, cached)."""
    fac, ax = legal_table(both)(limits, shape)
    _, first = np.unique(unique_rows(fac)[1], return_index=True)
    fac, ax = fac[first], ax[first]
    fac.setflags(write=False)
    ax.setflags(write=False)
    return fac, ax


def candidate_tiles(rest: np.ndarray, j: int, fit: Capacity | None) -> np.ndarray:
    """(m, D) tiles of level ``j - 1`` that split ``rest`` (divisors) and whose footprint fits (``fit``; None:
    every one, as with per-tensor placement, where a tile's tensors may each hold only part of it)."""
    below = divisor_lattice(tuple(int(n) for n in rest))
    return below if fit is None else below[fit.fits(j - 1, below)]


def expand_factors(nodes: Nodes, j: int, arch: ArchSpec, fit: Capacity | None,
                   tiles: np.ndarray | None = None, both: bool = False,
                   distinct: bool = False) -> tuple[Nodes, np.ndarray]:
    """Every split of each node's ``rest`` into level ``j``'s temporal and spatial factors and the tile below
    (``tiles``: only those tiles of level ``j - 1``, for a single node), and the index of each child's tile
    among its node's tiles; ``both``: a dimension may split over both axes of level ``j``'s 2-D fan-out;
    ``distinct``: one child per distinct spatial factor vector (:func:`distinct_unrollings`)."""
    if distinct:
        def unrollings(limits: tuple[int, ...], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
            return distinct_unrollings(limits, shape, both)
    else:
        unrollings = legal_table(both)
    out, which = [], []
    shape = tuple(arch.levels[j].fanout.shape) if arch.levels[j].fanout else None
    for k in range(len(nodes)):
        rest = nodes.temporal[k, 0]
        if j == 0:  # level 0 keeps what its fan-out leaves
            below = np.ones((1, len(rest)), dtype=np.int64)
        else:
            below = candidate_tiles(rest, j, fit) if tiles is None else tiles
        for i, tile in enumerate(below):
            q = rest // tile
            if shape is None:
                fac, ax = np.ones((1, len(q)), dtype=np.int64), np.zeros((1, len(q)), dtype=np.int64)
            else:
                fac, ax = unrollings(tuple(int(n) for n in q), shape)
            m = len(fac)
            t = np.repeat(nodes.temporal[k:k + 1], m, axis=0)
            s = np.repeat(nodes.spatial[k:k + 1], m, axis=0)
            a = np.repeat(nodes.axes[k:k + 1], m, axis=0)
            o = np.repeat(nodes.order[k:k + 1], m, axis=0)
            above = None if nodes.above is None else np.repeat(nodes.above[k:k + 1], m, axis=0)
            s[:, j], a[:, j] = fac, ax
            if j == 0:
                t[:, 0] = rest // fac
            else:
                t[:, j] = q // fac
                t[:, 0] = tile
            out.append(Nodes(t, s, a, o, above))
            which.append(np.full(m, i, dtype=np.int64))
    if not out:
        return nodes.take(np.array([], dtype=np.int64)), np.zeros(0, dtype=np.int64)
    return Nodes.concat(out), np.concatenate(which)


def expand_orders(nodes: Nodes, j: int) -> tuple[Nodes, np.ndarray]:
    """Every order of level ``j``'s non-trivial loops (trivial ones appended innermost), and the index of
    each child's node (a node's children consecutive)."""
    D = nodes.temporal.shape[2]
    nontrivial = nodes.temporal[:, j] > 1
    keys, inverse = np.unique(nontrivial, axis=0, return_inverse=True)
    out, parents = [], []
    for g, mask in enumerate(keys):
        rows = np.nonzero(inverse.reshape(-1) == g)[0]
        perms = np.array(level_orders(tuple(np.nonzero(mask)[0]), D), dtype=np.int64)
        parents.append(np.repeat(rows, len(perms)))
        sub = nodes.take(parents[-1])
        sub.order = sub.order.copy()
        sub.order[:, j] = np.tile(perms, (len(rows), 1))
        out.append(sub)
    return Nodes.concat(out), np.concatenate(parents)
