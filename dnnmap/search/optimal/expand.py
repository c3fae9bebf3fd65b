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

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.space import MapSpace, level_orders, unique_rows
from dnnmap.search.sunstone.tiles import Capacity, divisor_lattice
from dnnmap.search.sunstone.walk import Partials
from dnnmap.search.sunstone.unroll import dividing_rows, legal_table


@dataclass
class Nodes(Partials):
    """Branch-and-bound nodes: :class:`Partials` and, with per-tensor placement, ``above`` (n, L, T), the loops
    of each level above each tensor's tile (0 on the levels whose choice is still open); None without it."""

    above: np.ndarray | None = None

    def take(self, idx: np.ndarray | slice) -> "Nodes":
        """The nodes ``idx`` (a slice: views of these arrays; indices or a mask: copies, gathered by ``np.take``, which
        copies whole rows faster than indexing does)."""
        if isinstance(idx, slice):
            return Nodes(self.temporal[idx], self.spatial[idx], self.axes[idx], self.order[idx],
                         None if self.above is None else self.above[idx])
        idx = np.asarray(idx)
        if idx.dtype == bool:
            idx = np.nonzero(idx)[0]
        return Nodes(*(None if a is None else np.take(a, idx, axis=0)
                       for a in (self.temporal, self.spatial, self.axes, self.order, self.above)))

    @staticmethod
    def concat(parts: list["Nodes"]) -> "Nodes":
        """The nodes of ``parts`` in order (one part: itself)."""
        if len(parts) == 1:
            return parts[0]
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


@lru_cache(maxsize=8192)  # as the enumerated tables: bounded memory
def split_unrollings(limits: tuple[int, ...], within: tuple[int, ...], shape: tuple[int, ...], both: bool,
                     distinct: bool) -> tuple[np.ndarray, np.ndarray]:
    """The unrollings of ``limits`` (each dividing its entry of ``within``) on the fan-out ``shape``:
    :func:`distinct_unrollings` (``distinct``) or the legal table, read off the cached table of ``within``
    (:func:`.unroll.dividing_rows`: the same rows in the same order, a pass over one table instead of an enumeration
    per ``limits``; read-only, cached)."""
    table = distinct_unrollings(within, shape, both) if distinct else legal_table(both)(within, shape)
    return dividing_rows(*table, limits)


class PaddedSplits:
    """The factor stages over the padded (imperfect) space of ``space`` (``Constraints(waste=)``): per dimension the
    exhaustive mapper's table of ceil-split chains (:meth:`MapSpace.factor_table`, the one candidate generator) read
    from the top level down. A node fixes, per dimension, the slot factors of the levels above ``j`` and (below the
    top) ``rest``, the product of the factors at and below ``j``; level ``j``'s children are the distinct (temporal
    factor, spatial slot factors, tile below) of the table rows agreeing with that (so every child has a completion
    in the space), each dimension on one axis of a fan-out. The padded extent of every dimension is fixed from the
    top level's stage on: the node's own factor product (:func:`extents`)."""

    def __init__(self, space: MapSpace) -> None:
        self.L = len(space.arch.levels)
        self.slots = space.spatial_slots
        self.shapes = [tuple(lv.fanout.shape) if lv.fanout else () for lv in space.arch.levels]
        tables = space.tables()
        self.index = [[self._level_index(table, j) for j in range(self.L)] for table in tables]
        self.members_of = {d: _RowSet(table) for d, table in enumerate(tables) if len(table) > 1}  # others: 1 row
        self._combined: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _columns(self, where) -> list[int]:  # noqa: ANN001 - a predicate on a level
        """Slot columns (temporal ones, then spatial ones in slot order) of the levels ``where`` accepts."""
        return [m for m in range(self.L) if where(m)] + [self.L + k for k, s in enumerate(self.slots) if where(s.level)]

    def _level_index(self, table: np.ndarray, j: int) -> dict[tuple[int, ...], np.ndarray]:
        """Key (the slots above ``j``, and ``rest`` below the top) -> the distinct (temporal factor, spatial slot
        factors, tile below) of level ``j`` among the rows with that key, a dimension on at most one axis."""
        up, low = self._columns(lambda m: m > j), self._columns(lambda m: m < j)
        own = [j] + [self.L + k for k, s in enumerate(self.slots) if s.level == j]
        table = table[(table[:, own[1:]] > 1).sum(axis=1) <= 1]  # one axis per dimension
        below = table[:, low].prod(axis=1)
        keys = table[:, up]
        if j < self.L - 1:
            keys = np.concatenate([keys, (below * table[:, own].prod(axis=1))[:, None]], axis=1)
        width = keys.shape[1]
        rows = unique_rows(np.concatenate([keys, table[:, own], below[:, None]], axis=1))[0]  # sorted: keys grouped
        starts = np.concatenate([[0], np.nonzero((rows[1:, :width] != rows[:-1, :width]).any(axis=1))[0] + 1,
                                 [len(rows)]])
        return {tuple(rows[a, :width].tolist()): rows[a:b, width:] for a, b in zip(starts[:-1], starts[1:])}

    def node_slots(self, temporal: np.ndarray, spatial: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(n, D, slots) the slot factors of nodes (a spatial factor on the slot of its axis)."""
        cols = [temporal[:, m] for m in range(self.L)]
        cols += [np.where((spatial[:, s.level] > 1) & (axes[:, s.level] == s.axis), spatial[:, s.level], 1)
                 for s in self.slots]
        return np.stack(cols, axis=2)

    def _options(self, nodes: Nodes, k: int, j: int) -> list[np.ndarray]:
        """Per dimension, level ``j``'s options for node ``k`` (rows of :meth:`_level_index`)."""
        slots = self.node_slots(nodes.temporal[k:k + 1], nodes.spatial[k:k + 1], nodes.axes[k:k + 1])[0]
        up = self._columns(lambda m: m > j)
        out = []
        for d, index in enumerate(self.index):
            key = tuple(slots[d, up].tolist()) + ((int(nodes.temporal[k, 0, d]),) if j < self.L - 1 else ())
            out.append(index[j].get(key, np.zeros((0, len(self.shapes[j]) + 2), dtype=np.int64)))
        return out

    def tiles(self, nodes: Nodes, k: int, j: int, fit: Capacity | None) -> np.ndarray:
        """(m, D) tiles of level ``j - 1`` (products of the factors below ``j``) some child of node ``k`` has, whose
        footprint fits (``fit``; None: every one); at the top, ordered by padded extent (as :meth:`top_tiles`)."""
        options = self._options(nodes, k, j)
        grid = _fitting_grid([np.unique(o[:, -1]) for o in options], fit, j)
        if j == self.L - 1:  # the top: tiles of one padded extent together (the nodes are bounded by extent)
            grid = grid[np.lexsort((grid * _top_factors(options, grid)).T[::-1])]
        return grid

    def top_tiles(self, nodes: Nodes, k: int, fit: Capacity | None,
                  skip: Callable[[np.ndarray], bool]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The top level's :meth:`tiles` of node ``k`` built one padded extent at a time, in the same order: per
        extent (ascending, first dimension first) the (D,) extent and its fitting tiles (m, D), each dimension's
        tiles those whose top factor times the tile is its extent. An extent ``skip`` accepts (e.g. one whose bound
        is above the incumbent) has no tiles built; an extent without a fitting tile is left out."""
        j = self.L - 1
        options = self._options(nodes, k, j)
        values = [np.unique(o[:, -1]) for o in options]
        own = [_top_factors([o], v[:, None])[:, 0] * v for o, v in zip(options, values)]  # each value's extent
        per_dim = [np.unique(e) for e in own]
        for index in np.ndindex(*(len(e) for e in per_dim)):
            extent = np.array([e[i] for e, i in zip(per_dim, index)], dtype=np.int64)
            if skip(extent):
                continue
            grid = _fitting_grid([v[e == x] for v, e, x in zip(values, own, extent)], fit, j)
            if len(grid):
                yield extent, grid

    def splits(self, nodes: Nodes, k: int, j: int, tiles: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(temporal factors, spatial factors, axes) (m, D) each of level ``j`` for node ``k``'s children with each
        row of ``tiles`` below, and the index of each child's tile: per tile the options' products within each
        fan-out axis, one per distinct factor vector (rule P4)."""
        options = self._options(nodes, k, j)
        if not self.shapes[j]:  # no fan-out: one temporal factor per dimension and tile
            own = _top_factors(options, tiles)
            ones = np.ones_like(own)
            return own, ones, ones - 1, np.arange(len(tiles))
        groups = [{int(v): o[o[:, -1] == v, :-1] for v in np.unique(o[:, -1])} for o in options]
        parts = [self._combine(j, tuple(g[int(v)] for g, v in zip(groups, tile))) for tile in tiles]
        which = np.repeat(np.arange(len(tiles)), [len(p[0]) for p in parts])
        return (*(np.concatenate([p[i] for p in parts]) for i in range(3)), which)

    def _combine(self, j: int, per_dim: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(temporal factors, spatial factors, axes) of every choice of one option per dimension (rows (temporal
        factor, slot factors)) whose slot factors multiply within each axis of level ``j``'s fan-out, one per
        distinct spatial factor vector (cached: many tiles leave the same options)."""
        key = (j, tuple(o.tobytes() + bytes([len(o)]) for o in per_dim))
        if key in self._combined:
            return self._combined[key]
        shape = np.array(self.shapes[j], dtype=np.int64)
        pick = np.zeros((1, 0), dtype=np.int64)
        used = np.ones((1, len(shape)), dtype=np.int64)
        for opts in per_dim:  # dimension by dimension, the axes' products within their sizes
            grown = used[:, None, :] * opts[None, :, 1:]
            r, m = np.nonzero((grown <= shape).all(axis=2))
            pick = np.concatenate([pick[r], m[:, None]], axis=1)
            used = grown[r, m]
        chosen = [per_dim[d][pick[:, d]] for d in range(len(per_dim))]  # (m, 1 + axes) each
        temporal = np.stack([c[:, 0] for c in chosen], axis=1)
        spatial = np.stack([c[:, 1:].prod(axis=1) for c in chosen], axis=1)
        axes = np.stack([c[:, 1:].argmax(axis=1) for c in chosen], axis=1)
        _, first = np.unique(unique_rows(spatial)[1], return_index=True)
        if len(self._combined) > 200_000:
            self._combined.clear()
        self._combined[key] = (temporal[first], spatial[first], axes[first])
        return self._combined[key]

    def members(self, temporal: np.ndarray, spatial: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(n,) whether each mapping (a node's completion) lies in the padded space: every dimension's slot factors
        are a row of its table."""
        slots = self.node_slots(temporal, spatial, axes)
        ok = np.ones(len(temporal), dtype=bool)
        for d, rows in self.members_of.items():
            ok &= rows.contains(slots[:, d])
        return ok


def _fitting_grid(values: list[np.ndarray], fit: Capacity | None, j: int) -> np.ndarray:
    """(m, D) every tile taking per dimension one of its ``values`` (ascending), the first dimension slowest, whose
    footprint fits level ``j - 1`` (``fit``; None or ``j`` 0: every one); built dimension by dimension, dropping the
    tiles that cannot fit already (a footprint only grows with the extents still to come)."""
    grid = np.ones((1, len(values)), dtype=np.int64)
    for d, vals in enumerate(values):
        if not len(grid):
            break
        grid = np.repeat(grid, len(vals), axis=0)
        grid[:, d] = np.tile(vals, len(grid) // max(len(vals), 1))
        if fit is not None and j > 0:
            grid = grid[fit.fits(j - 1, grid)]
    return grid


def _top_factors(options: list[np.ndarray], tiles: np.ndarray) -> np.ndarray:
    """(m, D) the temporal factor of each tile's child at a level without a fan-out (per dimension the first option
    row of its tile value; ``options``: :meth:`PaddedSplits._options` of that level)."""
    by_tile = [o[np.argsort(o[:, -1], kind="stable")] for o in options]
    return np.stack([o[np.searchsorted(o[:, -1], tiles[:, d]), 0] for d, o in enumerate(by_tile)], axis=1)


class _RowSet:
    """Membership of integer rows in a table: each column's value ranked among the table's values, the ranks one
    mixed-radix key (a Python set of rows when the keys would not fit 62 bits)."""

    def __init__(self, table: np.ndarray) -> None:
        self.values = [np.unique(table[:, c]) for c in range(table.shape[1])]
        radix = [len(v) for v in self.values]
        self.exact = math.prod(radix) < 2 ** 62
        if self.exact:
            self.weights = np.array([math.prod(radix[c + 1:]) for c in range(len(radix))], dtype=np.int64)
            self.keys = np.unique(self._ranks(table)[0] @ self.weights)
        else:
            self.rows = {tuple(r) for r in table.tolist()}

    def _ranks(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ranks = np.stack([np.searchsorted(v, rows[:, c]).clip(0, len(v) - 1) for c, v in enumerate(self.values)], 1)
        found = np.stack([v[ranks[:, c]] == rows[:, c] for c, v in enumerate(self.values)], 1).all(axis=1)
        return ranks, found

    def contains(self, rows: np.ndarray) -> np.ndarray:
        if not self.exact:
            return np.array([tuple(r) in self.rows for r in rows.tolist()], dtype=bool)
        ranks, found = self._ranks(rows)
        keys = ranks @ self.weights
        at = np.searchsorted(self.keys, keys).clip(0, len(self.keys) - 1)
        return found & (self.keys[at] == keys)


def extents(nodes: Nodes) -> np.ndarray:
    """(n, D) the iterations each node's completions run per dimension: the product of its factors (with ``rest``
    in level 0's temporal slot), the layer's bounds in the exact space, the padded extents in the padded one."""
    return nodes.temporal.prod(axis=1) * nodes.spatial.prod(axis=1)


def candidate_tiles(rest: np.ndarray, j: int, fit: Capacity | None) -> np.ndarray:
    """(m, D) tiles of level ``j - 1`` that split ``rest`` (divisors) and whose footprint fits (``fit``; None:
    every one, as with per-tensor placement, where a tile's tensors may each hold only part of it)."""
    below = divisor_lattice(tuple(int(n) for n in rest))
    return below if fit is None else below[fit.fits(j - 1, below)]


class FactorSplits:
    """Every split of ``rest`` of node ``owner[i]`` of ``nodes`` into level ``j``'s temporal and spatial factors with
    the tile ``tiles[i]`` of level ``j - 1`` below (at level 0 a row of ones: level 0 keeps what its fan-out
    leaves), for each row ``i`` (a node's rows consecutive), the children of chosen rows made on demand
    (:meth:`make`), so that a node with very many children never has them all in memory at once. ``both``: a
    dimension may split over both axes of level ``j``'s 2-D fan-out; ``distinct``: one child per distinct spatial
    factor vector (:func:`distinct_unrollings`); ``padded``: the splits of the padded space instead
    (:class:`PaddedSplits`). :meth:`total` and :meth:`reach` count the children of rows beforehand, their unrolling
    tables made only when asked for (each may take milliseconds the first time); not in the padded space
    (:attr:`counted`)."""

    def __init__(self, nodes: Nodes, owner: np.ndarray, tiles: np.ndarray, j: int, arch: ArchSpec,
                 both: bool = False, distinct: bool = False, padded: PaddedSplits | None = None) -> None:
        self.nodes, self.owner, self.tiles, self.j, self.padded = nodes, owner, tiles, j, padded
        self.shape = tuple(arch.levels[j].fanout.shape) if arch.levels[j].fanout else None
        self.quotients = nodes.temporal[owner, 0] // tiles
        self.both, self.distinct = both, distinct
        self.tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # unrolling tables of the rows asked for
        self.counted = padded is None
        # a table depends only on each quotient's divisors up to the fan-out's largest axis (with both axes, products
        # of two of them), which its gcd with this keeps (as :func:`.bounds.largest_unrolling` does): tiles whose
        # quotients differ only in larger divisors share one cached table
        self.modulus = math.lcm(*range(1, max(self.shape) + 1)) ** (2 if both else 1) if self.shape else 1
        self.within: tuple[int, ...] | None = None  # what every row's limits divide (:meth:`_table`), on first use

    def _table(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """The (factors, axes) unrollings of row ``row``'s quotient, read off the table of what the nodes' extents
        keep (:func:`split_unrollings`; a quotient divides its node's extents, the layer's bounds)."""
        table = self.tables.get(row)
        if table is None:
            if self.within is None:
                ext = extents(self.nodes)  # a large fan-out's modulus exceeds 64 bits: exact gcds of Python ints
                kept = (np.gcd(ext, self.modulus) if self.modulus < 2**62 else
                        np.gcd(ext.astype(object), self.modulus).astype(np.int64))
                self.within = tuple(int(x) for x in np.lcm.reduce(kept, axis=0))
            limits = tuple(math.gcd(q, self.modulus) for q in self.quotients[row].tolist())
            table = self.tables[row] = split_unrollings(limits, self.within, self.shape, self.both, self.distinct)
        return table

    def _count(self, row: int) -> int:
        return 1 if self.shape is None else len(self._table(row)[0])

    def total(self, rows: np.ndarray, most: int) -> int:
        """The children of ``rows`` together, counted only until they reach ``most`` (then ``most``)."""
        if self.shape is None:
            return min(len(rows), most)
        total = 0
        for r in rows.tolist():
            total += self._count(r)
            if total >= most:
                return most
        return total

    def reach(self, rows: np.ndarray, lo: int, hi: int, most: int) -> int:
        """The end ``>= hi`` of the positions of ``rows`` from ``lo`` whose children number about ``most`` (those up
        to ``hi``, then more while the total stays at most ``most``)."""
        total = sum(self._count(r) for r in rows[lo:hi].tolist())
        end = hi
        while end < len(rows) and total + self._count(int(rows[end])) <= most:
            total += self._count(int(rows[end]))
            end += 1
        return end

    def make(self, rows: np.ndarray) -> tuple[Nodes, np.ndarray]:
        """The children of ``rows`` (ascending row indices), each row's consecutive and in order, and the row of each
        child."""
        j = self.j
        if self.padded is not None:  # node by node
            parts = []
            for node in np.unique(self.owner[rows]).tolist():
                mine = rows[self.owner[rows] == node]
                own, fac, ax, which = self.padded.splits(self.nodes, node, j, self.tiles[mine])
                parts.append((own, fac, ax, mine[which]))
            own, fac, ax, row_of = (np.concatenate([part[i] for part in parts]) for i in range(4))
        elif self.shape is None:
            own, row_of = self.quotients[rows], rows
            fac, ax = np.ones_like(own), np.zeros_like(own)
        else:
            tables = [self._table(r) for r in rows.tolist()]
            fac = np.concatenate([f for f, _ in tables]) if tables else np.zeros((0, self.tiles.shape[1]), np.int64)
            ax = np.concatenate([a for _, a in tables]) if tables else np.zeros_like(fac)
            row_of = np.repeat(rows, [len(f) for f, _ in tables])
            own = self.quotients[row_of] // fac
        src = self.owner[row_of]
        n = self.nodes  # each child's node's rows, gathered by ``np.take`` (faster than indexing: :meth:`Nodes.take`)
        t, sp, a, o = (np.take(x, src, axis=0) for x in (n.temporal, n.spatial, n.axes, n.order))
        above = None if n.above is None else np.take(n.above, src, axis=0)
        sp[:, j], a[:, j] = fac, ax
        t[:, j] = own
        if j > 0:
            t[:, 0] = self.tiles[row_of]
        return Nodes(t, sp, a, o, above), row_of


def expand_orders(nodes: Nodes, j: int) -> tuple[Nodes, np.ndarray]:
    """Every order of level ``j``'s non-trivial loops (trivial ones appended innermost), and the index of
    each child's node (a node's children consecutive)."""
    D = nodes.temporal.shape[2]
    nontrivial = nodes.temporal[:, j] > 1
    keys, inverse = np.unique(nontrivial, axis=0, return_inverse=True)
    orders, parents = [], []
    for g, mask in enumerate(keys):
        rows = np.nonzero(inverse.reshape(-1) == g)[0]
        perms = np.array(level_orders(tuple(np.nonzero(mask)[0]), D), dtype=np.int64)
        parents.append(np.repeat(rows, len(perms)))
        orders.append(np.tile(perms, (len(rows), 1)))
    parent = np.concatenate(parents)
    out = nodes.take(parent)  # one copy of the nodes' rows (their own arrays), then each child's order
    out.order[:, j] = np.concatenate(orders)
    return out, parent
