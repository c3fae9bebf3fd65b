"""Level-by-level Sunstone walk over the declared map space with alpha-beta pruning (RTML Sec. 3.2.9-3.2.10).

Step ``i`` (innermost level first) extends every partial mapping by

1. the inter-tile order of level ``i+1`` from the loop-order trie over the loops still left
   (:mod:`.orders`; that order stays level ``i+1``'s when its own tile is chosen at the next
   step: "the inter-tile order of level i becomes the intra-tile order of level i+1");
2. the unrolling of the fan-out between levels ``i`` and ``i+1`` (:mod:`.unroll`, Observation 5,
   filtered by the order's reuse), and at step 0 the MAC-lane fan-out of level 0;
3. the maximal tiles of level ``i`` in what is left (:mod:`.tiles`, Observation 4).

Every extension is *completed* by giving level ``i+1`` all remaining factors and priced by
:class:`CostModel` in one batch, capacity judged on levels ``<= i``. That completion's cost is
the report's "L1-cost + L2-ideal": the levels below ``i+1`` are priced as they will be if the
order of level ``i+1`` is kept, and the levels above move every word once. Per (unrolling,
tile) only the best order is kept (the report's pairing of a tile with its best order).
Candidates are expanded in ascending bound; once a candidate's bound reaches the best finished
mapping, it and all after it are cut (Knuth-Moore alpha-beta as the report adapts it). At the
last inner level the completion *is* the finished mapping, priced exactly.

``tile_first`` adds, at each step with a fan-out, the report's own order of steps 4 and 5: every
maximal tile of the whole residual paired with the maximal unrollings of what it leaves (exact walk
only). Unrolling first and then maximizing the tile (the default) misses the pairs where a maximal
unrolling would force a smaller tile (an unrolling that leaves array rows idle is maximal only
after the tile took its share); docs/search.md gives the measured cost and gain.

Imperfect factorization (``waste``, docs/search.md): a dimension's padded extent may reach
``cap = floor((1 + waste) * bound)``. With ``done`` the coverage fixed below a step, the residual is
``ceil(bound / done)`` and the step's factors are ceil splits of it padding at most to
``cap // done`` (the unrolling first, then the tile in ``ceil(residual / unrolling)``); the
completion gives level ``i+1`` the ceil of the rest. ``ceil(ceil(b / x) / y) = ceil(b / (x y))``,
so every finished mapping covers each bound, with padding only at the edges. ``waste=None`` is the
exact-divisor walk (residuals divide, caps equal residuals).

Per-tensor placement (``placement``, ``--placement``; :mod:`.placement`): a level's tile also fits when it
does with some subset of the kept tensors below the leading run of the level's loops that index each (its free
placement, given the level's order), and the candidate then carries that placement; the order of level 0, which
matters once a tensor is placed there, is chosen at step 0 (every order of its loops when it has at most four, else
the trie's), and a fan-out of at most ``PLACED_EVERY_UNROLLING`` instances takes every legal unrolling (a smaller
unrolling can leave the register file room for a placed tile; on large arrays the maximal ones only, for time).
Maximal tiles are those maximal among the tiles that fit some way (re-grown ones: shared); with ``thorough``, those
maximal for some one way of fitting (shared, or one subset placed; re-grown ones too), and the trie's level-0 orders
also with one filter window loop hoisted outermost (step 0 drops candidates another level-0 order gave already: the
orders agree on the few loops a tile leaves live). The walk's best is refined by
:func:`.placement.refine_placements`.

Small cases (issue 28): a fan-out of at most ``EVERY_UNROLLING`` instances takes every legal unrolling and a tile
lattice with at most ``EVERY_TILE`` fitting tiles every fitting tile; maximal unrollings and tiles lost up to 1.7-2x
on such levels (docs/search.md), and real arrays and buffers are larger, so the default's cost barely changes.

Both-axis unrolling (``both_axes``: the levels whose constraint ``both_axes`` is on): the unrolling step of such a
level's 2-D fan-out takes its candidates from :func:`.unroll.both_axes_unrollings` (a dimension may take a factor on
each axis), maximal among those factor vectors; the rest of the walk is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import best_index, objective_value, rank
from dnnmap.search.sunstone.orders import order_candidates
from dnnmap.search.sunstone.stats import SunstoneStats
from dnnmap.search.space import divisors, level_orders, padded_cap
from dnnmap.search.sunstone.placement import placement_variants, row_keys
from dnnmap.search.sunstone.reuse import ReuseKind, reuse_table
from dnnmap.search.sunstone.tiles import Capacity, TileTree, divisor_lattice, lattice_index, maximal_union
from dnnmap.search.sunstone.unroll import ESCAPES, legal_table, maximal_among, unrolling_candidates
from dnnmap.workload.ir import Operator

RULES = ("unrollings", "tiles", "orders", "best_order", "cut")
"""The walk's lossy pruning rules ``relax`` can switch off (docs/search.md, "Which pruning is lossless"):
``unrollings``: maximal unrollings and Observation 5 (every legal unrolling instead); ``tiles``: maximal tiles,
Observation 4 (every fitting tile); ``orders``: the loop-order trie (every order of a level's live loops, and so
no Observation 5 exclusion, which reads the trie's reuse); ``best_order``: one order per (tile, unrolling);
``cut``: the alpha-beta cut (every candidate expanded)."""
EVERY_UNROLLING = 6  # fan-outs of at most this many instances take every legal unrolling
PLACED_EVERY_UNROLLING = 16  # ... in the placed walk
EVERY_TILE = 32  # tile lattices with at most this many fitting tiles take every one
EVERY_UNBOUNDED_TILE = 256  # ... on a level without a capacity limit
PRICE_ROWS = 1 << 15  # candidates of a step priced together (:meth:`SunstoneWalk._priced`)
FIT_TABLE_ROWS = 1 << 17  # bounds' divisor lattices up to this size get fit tables (:meth:`SunstoneWalk._fit_table`)


@dataclass
class Partials:
    """Partial mappings (P, L, D) arrays: levels below the current step fixed."""

    temporal: np.ndarray
    spatial: np.ndarray
    axes: np.ndarray
    order: np.ndarray
    above: np.ndarray  # (P, L, T) per-tensor placement (zeros without ``placement``)

    def __len__(self) -> int:
        return self.temporal.shape[0]

    def take(self, idx: np.ndarray) -> "Partials":
        return Partials(self.temporal[idx], self.spatial[idx], self.axes[idx], self.order[idx], self.above[idx])

    @staticmethod
    def concat(parts: list["Partials"]) -> "Partials":
        if len(parts) == 1:
            return parts[0]
        return Partials(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("temporal", "spatial", "axes",
                                                                                    "order", "above")))


class SunstoneWalk:
    """The search for one operator on one architecture; ``run`` returns the best finished batch row."""

    def __init__(self, op: Operator, arch: ArchSpec, objective: str, model: CostModel, chunk: int = 8,
                 waste: float | None = None, escape: str = "always", tile_first: bool = False,
                 placement: bool = False, thorough: bool = True, both_axes: frozenset[int] = frozenset(),
                 relax: frozenset[str] = frozenset()) -> None:
        self.op, self.arch, self.objective, self.model = op, arch, objective, model
        self.L, self.D = len(arch.levels), len(op.dim_names)
        self.bounds = np.array([op.bound(d) for d in op.dim_names], dtype=np.int64)
        self.waste = waste
        if escape not in ESCAPES:
            raise ValueError(f"escape must be one of {', '.join(ESCAPES)}, got {escape!r}")
        self.escape = escape  # Observation 5's escape clause (unroll.py)
        self.tile_first = tile_first  # also the report's order: maximal tile first, then unrolling
        self.placement = placement  # tiles may fit with per-tensor placements (module docstring)
        self.thorough = thorough  # placement: maximal tiles per way of fitting, window loops hoisted at level 0
        self.both_axes = both_axes  # levels whose 2-D fan-out may split a dimension over both axes
        if not relax <= set(RULES):
            raise ValueError(f"relax takes {', '.join(RULES)}, got {sorted(relax)}")
        self.relax = relax  # pruning rules switched off (RULES): a diagnostic of which rule loses a case
        self.grouped = "G" in op.dim_names and op.bound("G") > 1  # empty one-operand tiles (_fitting_tiles)
        self.caps = np.array([padded_cap(int(b), waste) for b in self.bounds], dtype=np.int64)
        self.keeps = MappingBatch.default_keeps(op, arch)
        self.capacity = Capacity(op, arch, self.keeps)
        self.kept = [{t.name: bool(k) for t, k in zip(op.tensors, row)} for row in self.keeps]  # per level
        self.chunk = chunk
        self.relaxed = False  # True: every legal unrolling (the fallback when the pruned walk finds nothing)
        self.stats = SunstoneStats()
        self.best_score = math.inf
        self.best_tie = math.inf
        self.best: MappingBatch | None = None
        self._trees: dict[tuple[int, bytes, bytes, bytes], TileTree] = {}
        self._fitted: dict[tuple[int, bytes, bytes, bytes], dict[bytes, np.ndarray]] = {}
        self._regrown_tiles: dict[tuple[int, bytes, bytes, bytes, bytes], np.ndarray] = {}
        self.held_below = self._held_below()
        self.bound_tuple = tuple(int(b) for b in self.bounds)
        self.lattice_rows = math.prod(len(divisors(b)) for b in self.bound_tuple)
        self._fit_tables: dict[int, np.ndarray] = {}

    def _held_below(self) -> list[list[np.ndarray]]:
        """Per level, for each tensor a level below keeps and this level bypasses, the dimensions that index it
        and no tensor this level keeps (a (D,) mask; only non-empty ones). Maximal tiles take such dimensions
        whole, since they cost this level no room, but a loop over them inside the level changes the tensor
        under every loop of the level above, so nothing above keeps it in the level below (an in-memory
        array's weights: stationary in their cells only when the output register's tile leaves C, FX, FY to
        the SRAM's loops). The walk also offers the maximal tiles with these dimensions left to the level above."""
        relevant = self.capacity.relevant
        out: list[list[np.ndarray]] = []
        for i in range(self.L):
            own = relevant[self.keeps[i].astype(bool)].any(axis=0)
            below = self.keeps[:i].any(axis=0) & ~self.keeps[i].astype(bool) if i else np.zeros(len(relevant), bool)
            masks = {(relevant[t] & ~own).tobytes(): relevant[t] & ~own for t in np.nonzero(below)[0]}
            out.append([m for m in masks.values() if m.any()])
        return out

    # ---- candidates -------------------------------------------------------------------
    def _fanout(self, level: int) -> tuple[int, ...] | None:
        lv = self.arch.levels[level] if level < self.L else None
        return tuple(lv.fanout.shape) if lv is not None and lv.fanout else None

    def _orders(self, residual: np.ndarray, below: int) -> list[tuple[np.ndarray, frozenset[int]]]:
        """(full order as dim indices outermost first, excluded dims for Observation 5) per kept leaf.

        Observation 5 excludes the dimensions across which an operand is temporally reused *in the
        buffers below the fan-out*: only signature entries of tensors that level ``below`` keeps count
        (an operand the level bypasses, such as the input of a TPU-like array's weight/accumulator
        registers, is not reused there, so unrolling its reuse dimensions costs nothing)."""
        dims = self.op.dim_names
        live = tuple(d for d, n in zip(dims, residual) if n > 1)
        if len(live) <= 1:
            return [(np.arange(self.D), frozenset())]
        if "orders" in self.relax:
            return [(np.array(o, dtype=np.int64), frozenset()) for o in level_orders(
                tuple(d for d in range(self.D) if residual[d] > 1), self.D)]
        trie = order_candidates(self.op, live)
        self.stats.orders_all += math.factorial(len(live))
        self.stats.orders_kept += len(trie.kept)
        out = []
        for node, full in zip(trie.kept, trie.full_orders(dims)):
            excluded = frozenset(dims.index(d) for t, d in node.signature if self.kept[below][t])
            out.append((np.array([dims.index(d) for d in full], dtype=np.int64), excluded))
        return out

    def _caps(self, caps: np.ndarray | None) -> tuple[int, ...] | None:
        """``caps`` as the tuple the candidate tables take; None in the exact walk."""
        return None if self.waste is None or caps is None else tuple(int(c) for c in caps)

    def _fits_from(self, level: int, cover: np.ndarray) -> np.ndarray:
        """Whether each coverage row (n, D) fits every level from ``level`` up (the outermost has no
        capacity): a coverage fixed at one step is the least any level above it will hold. Looked up in
        :meth:`_fit_table` where every row divides the bounds (the exact walk's coverages), else computed."""
        index = lattice_index(self.bound_tuple, cover) if self.lattice_rows <= FIT_TABLE_ROWS else None
        if index is not None:
            return self._fit_table(level)[index]
        fits = np.ones(cover.shape[0], dtype=bool)
        for j in range(level, self.L - 1):
            fits &= self.capacity.fits(j, cover)
        return fits

    def _fit_table(self, level: int) -> np.ndarray:
        """:meth:`_fits_from` of every tile of the bounds' divisor lattice, computed once per ``level``."""
        if level not in self._fit_tables:
            lattice = divisor_lattice(self.bound_tuple)
            fits = np.ones(len(lattice), dtype=bool)
            for j in range(level, self.L - 1):
                fits &= self.capacity.fits(j, lattice)
            self._fit_tables[level] = fits
        return self._fit_tables[level]

    def _unrollings(self, level: int, residual: np.ndarray, excluded: frozenset[int], inner: np.ndarray,
                    caps: np.ndarray | None = None):  # noqa: ANN202
        """Unrollings of level ``level``'s fan-out over the coverage ``inner`` fixed below it: the pruned
        candidates (Observation 5) whose smallest tiles fit every level from ``level`` up; where none
        does (a register too small for any maximal unrolling, e.g. a one-word output register over a
        fan-out no reduction dimension divides), the maximal ones among the legal unrollings that fit,
        so a step never loses every legal mapping."""
        shape = self._fanout(level)
        if shape is None:
            one = np.ones((1, self.D), dtype=np.int64)
            return one, np.zeros_like(one)
        limits, sub_caps = tuple(int(n) for n in residual), self._caps(caps)
        small = PLACED_EVERY_UNROLLING if self.placement else EVERY_UNROLLING
        every = self.relaxed or "unrollings" in self.relax or math.prod(shape) <= small
        both = level in self.both_axes
        u = unrolling_candidates(limits, shape, excluded, maximal_only=not every, caps=sub_caps, escape=self.escape,
                                 both=both)
        self.stats.unroll_legal += u.legal
        fits = self._fits_from(level, inner[None, :] * u.factors)
        if not fits.any():
            fac, ax = legal_table(both)(limits, shape, sub_caps)
            u = maximal_among(fac, ax, self._fits_from(level, inner[None, :] * fac), limits, sub_caps)
            fits = np.ones(len(u.factors), dtype=bool)
        self.stats.unroll_kept += int(fits.sum())
        return u.factors[fits], u.axes[fits]

    def _tree(self, level: int, inner: np.ndarray, residual: np.ndarray, order: np.ndarray | None) -> TileTree:
        """The (memoized) tile tree of ``level`` over ``inner`` and ``residual``; ``order`` only with ``placement``."""
        order = order if self.placement else None
        key = (level, inner.tobytes(), residual.tobytes(), b"" if order is None else order.tobytes())
        if key not in self._trees:
            self._trees[key] = TileTree(self.capacity, level, inner, tuple(residual.tolist()), order, self.thorough)
        return self._trees[key]

    def _tiles(self, level: int, inner: np.ndarray, residual: np.ndarray, unrolls: np.ndarray,
               caps: np.ndarray | None = None, order: np.ndarray | None = None) -> list[tuple[np.ndarray, bool]]:
        """Per row of ``unrolls`` (B, D), the maximal tiles of ``level`` in what it leaves of ``residual`` and False,
        or every fitting tile and True where there are at most ``EVERY_TILE`` (or ``relax`` has ``tiles``); ``caps``
        (B, D) or None; ``order`` (the level's loop order, with ``placement``): tiles may fit with per-tensor
        placements."""
        tree = self._tree(level, inner, residual, order)
        sub_caps = [None] * len(unrolls) if caps is None else [self._caps(c // u) for c, u in zip(caps, unrolls)]
        limits = [tuple(row) for row in (-(-residual // unrolls)).tolist()]
        unbounded = self.capacity.levels[level] is None  # every tile fits: Observation 4 has no room to weigh
        found = tree.maximal_many(limits, sub_caps)
        every = ["tiles" in self.relax or fitting <= (EVERY_UNBOUNDED_TILE if unbounded else EVERY_TILE)
                 for _, fitting in found]
        chosen = iter(tree.maximal_many([x for x, e in zip(limits, every) if e], [x for x, e in zip(sub_caps, every) if e],
                                        maximal_only=False))
        out = []
        for (tiles, fitting), each in zip(found, every):
            if each:
                tiles, fitting = next(chosen)
            self.stats.tiles_fitting += fitting
            self.stats.tiles_maximal += len(tiles)
            if level == 0:
                self.stats.l1_tiles_fitting += fitting
                self.stats.l1_tiles_maximal += len(tiles)
            out.append((tiles, each))
        return out

    def _fit_above(self, i: int, inner: np.ndarray, residual: np.ndarray, unrolls: np.ndarray,
                   found: list[tuple[np.ndarray, bool]], caps: np.ndarray | None = None,
                   order: np.ndarray | None = None) -> list[np.ndarray]:
        """Per row of ``unrolls`` and its :meth:`_tiles` entry ``(tiles, every)``, the tiles every level above can
        still hold (one per instance; judged for all rows in one call); ``every``: ``tiles`` are all the fitting
        ones, so these are all the tiles that fit every level. When some maximal tile cannot, :meth:`_regrown`."""
        cover = np.concatenate([tiles * unroll[None, :] for (tiles, _), unroll in zip(found, unrolls)])
        fits = self._fits_from(i + 1, inner[None, :] * cover)
        ends = np.cumsum([len(tiles) for tiles, _ in found]).tolist()
        above = [fits[start:end] for start, end in zip([0] + ends[:-1], ends)]
        return [tiles[fit] if fit.all() or every else self._regrown(i, inner, residual, unroll, caps_row, order)
                for (tiles, every), fit, unroll, caps_row in zip(found, above, unrolls,
                                                                  caps if caps is not None else [None] * len(unrolls))]

    def _regrown(self, i: int, inner: np.ndarray, residual: np.ndarray, unroll: np.ndarray,
                 caps: np.ndarray | None, order: np.ndarray | None) -> np.ndarray:
        """The tiles of level ``i`` maximal for the levels from ``i`` up together, where some maximal tile of level
        ``i`` alone does not fit above (the tree re-grown with all those capacities as the fit test; the report's
        gap: maximal tiles can starve a small level above; not only the next one: a level that bypasses a tensor
        lets its tile grow past a level higher up); level ``i``'s fit is the shared one, with ``placement`` and
        ``thorough`` its fit and maximality as :class:`.tiles.TileTree`'s, given its ``order``."""
        placed = self.placement and self.thorough
        key = (i, inner.tobytes(), residual.tobytes(), unroll.tobytes(), order.tobytes() if placed else b"")
        if key not in self._regrown_tiles:
            limits = tuple(int(n) for n in -(-residual // unroll))
            sub_caps = self._caps(None if caps is None else caps // unroll)
            if placed or sub_caps is None:  # the tree's fits of the sub-lattice (without placement: row 0, shared)
                lattice, fits, sub_caps = self._tree(i, inner, residual, order).lattice_fits(limits, sub_caps)
                fits = fits if placed else fits[:1]
            else:
                lattice = divisor_lattice(limits, sub_caps)
                fits = self.capacity.fits(i, lattice * inner[None, :])[None, :]
            fits = fits & self._fits_from(i + 1, lattice * (inner * unroll)[None, :])[None, :]
            self._regrown_tiles[key] = lattice[maximal_union(limits, fits, sub_caps)]
        return self._regrown_tiles[key]

    def _fitting_tiles(self, i: int, inner: np.ndarray, residual: np.ndarray, unrolls: np.ndarray,
                       caps: np.ndarray, order: np.ndarray) -> list[np.ndarray]:
        """Per row of ``unrolls`` (B, D), level ``i``'s maximal tiles that every level above can hold, and those with
        each of :meth:`_held_below`'s dimension sets left to the level above; on a level that keeps one operand of a
        grouped convolution, also the empty tile (docs/search.md, "The Sunstone mapper": its loops unrolled above
        instead)."""
        left = -(-residual // unrolls)
        boxes = [(residual, np.broadcast_to(caps, unrolls.shape), np.ones(len(unrolls), dtype=bool))]
        boxes += [(np.where(m, 1, residual), np.where(m[None, :], unrolls, caps[None, :]),  # caps // unroll: 1 there
                   (left[:, m] > 1).any(axis=1)) for m in self.held_below[i]]
        out: list[list[np.ndarray]] = [[] for _ in unrolls]
        for box, box_caps, rows in boxes:
            rows = np.nonzero(rows)[0]
            if not len(rows):
                continue
            found = self._tiles(i, inner, box, unrolls[rows], box_caps[rows], order)
            if i + 1 < self.L - 1:
                fits = self._fit_above(i, inner, box, unrolls[rows], found, box_caps[rows], order)
            else:
                fits = [tiles for tiles, _ in found]
            for r, tiles in zip(rows, fits):
                out[r].append(tiles)
        return [self._with_empty(i, inner, unroll, tiles) for unroll, tiles in zip(unrolls, out)]

    def _with_empty(self, i: int, inner: np.ndarray, unroll: np.ndarray, out: list[np.ndarray]) -> np.ndarray:
        """The tiles of the boxes ``out`` together, and the empty tile on a level that keeps one operand of a grouped
        convolution where no box has it and the levels above hold what it leaves (:meth:`_fitting_tiles`)."""
        if self.grouped and self.keeps[i].sum() == 1 and not any((o == 1).all(axis=1).any() for o in out) \
                and self._fits_from(i + 1, inner[None, :] * unroll)[0]:  # a one-operand register left empty
            out.append(np.ones((1, self.D), dtype=np.int64))
        return out[0] if len(out) == 1 else np.unique(np.concatenate(out), axis=0)

    def extend(self, parts: Partials, i: int) -> Iterator[Partials]:
        """Every extension of ``parts`` at step ``i``, completed with the rest of each bound at level i+1, a batch
        per start (parent, MAC lanes, level-0 order)."""
        for p in range(len(parts)):
            base = parts.take(np.array([p]))
            starts = [base]
            if i == 0 and self._fanout(0) is not None:  # MAC lanes under level 0
                fac, ax = self._unrollings(0, self.bounds, frozenset(), np.ones(self.D, dtype=np.int64), self.caps)
                starts = []
                for f, a in zip(fac, ax):
                    s = base.take(np.array([0]))
                    s = Partials(s.temporal.copy(), s.spatial.copy(), s.axes.copy(), s.order.copy(), s.above.copy())
                    s.spatial[0, 0], s.axes[0, 0] = f, a
                    starts.append(s)
            if i == 0 and self.placement:  # level 0's order matters once a tensor is placed there
                starts = [self._with_order(s, 0, o) for s in starts for o in self._level0_orders()]
            seen = [np.zeros(0, dtype=np.int64)] if i == 0 and self.placement else None
            for s in starts:
                yield from self._extend_one(s, i, seen)

    def _level0_orders(self) -> list[np.ndarray]:
        """Level 0's candidate orders with ``placement``: every order of its live loops when there are at most
        four (trivial loops innermost), else the loop-order trie's leaves, with ``thorough`` each also with one of
        its live filter window loops hoisted outermost. The trie orders the innermost loops for reuse; a placed tile's boundary is
        the leading run of the outermost ones (a register file's input placed below a filter-row loop ``S`` with
        ``K`` and ``C`` inside holds one row's ``C`` words where the shared tile needs ``C x S``). Only filter
        window loops (a sliding-window term of some tensor, not indexing the output) are hoisted: hoisting every
        live loop found nothing more on the measured layers at 2-3x the walk's time (docs/search.md)."""
        live = tuple(d for d in range(self.D) if self.bounds[d] > 1)
        if len(live) <= 4:
            return [np.array(o, dtype=np.int64) for o in level_orders(live, self.D)]
        trie = [o for o, _ in self._orders(self.bounds, 0)]
        if not self.thorough:
            return trie
        kinds = reuse_table(self.op)
        names = self.op.dim_names
        window = {d for d in live if kinds[self.op.output.name][names[d]] is ReuseKind.FULL
                  and any(k[names[d]] is ReuseKind.PARTIAL for k in kinds.values())}
        hoisted = [np.concatenate([o[k:k + 1], o[:k], o[k + 1:]]) for o in trie for k in range(1, self.D)
                   if o[k] in window]
        return list({o.tobytes(): o for o in trie + hoisted}.values())

    def _fresh(self, seen: list[np.ndarray], s: Partials, tile: np.ndarray, f: np.ndarray, axis: np.ndarray,
               order: np.ndarray) -> np.ndarray:
        """Mask of the step-0 candidates of the one-row start ``s`` (tiles, unrollings, their axes, level 1's orders)
        that no other start of the same step gave already (``seen[0]``: their hashes, sorted, updated): the placed walk's
        level-0 orders often agree on the few loops a tile leaves live, and the order of trivial loops changes
        nothing (that of the live ones does, even with nothing placed: MAC operand registers; a tile's placements
        depend only on that order, so a fresh candidate's placements are all fresh)."""
        n = len(tile)
        level0 = s.order[0, 0]
        live = (tile > 1)[:, level0]  # in level 0's loop order
        rank = np.full((n, self.D), -1, dtype=np.int64)
        rank[:, level0] = np.where(live, np.cumsum(live, axis=1), -1)  # each live loop's place among the live ones
        lanes = np.repeat(np.concatenate([s.spatial[:, 0], s.axes[:, 0]], axis=1), n, axis=0)
        key = sum(row_keys(x, seed) for seed, x in enumerate((tile, f, axis, order, rank, lanes)))
        unique, first = np.unique(key, return_index=True)
        known = np.isin(unique, seen[0], assume_unique=True)
        fresh = np.zeros(n, dtype=bool)
        fresh[first[~known]] = True
        new = unique[~known]  # sorted, none in seen[0]: merged in place of sorting the union anew
        seen[0] = np.insert(seen[0], np.searchsorted(seen[0], new), new)
        return fresh

    @staticmethod
    def _with_order(s: Partials, level: int, order: np.ndarray) -> Partials:
        """A copy of the one-row ``s`` with ``level``'s loop order replaced."""
        orders = s.order.copy()
        orders[0, level] = order
        return Partials(s.temporal, s.spatial, s.axes, orders, s.above)

    def _extend_one(self, s: Partials, i: int, seen: list[np.ndarray] | None = None) -> list[Partials]:
        """Step ``i``'s candidates from the one-row ``s``; ``seen`` (step 0 of the placed walk): :meth:`_fresh`'s."""
        done = np.prod(s.temporal[0, :i], axis=0) * np.prod(s.spatial[0, :i + 1], axis=0)
        residual = -(-self.bounds // done)  # ceil: equal to bounds // done in the exact walk
        caps = self.caps // done
        inner = np.prod(s.temporal[0, :i] * s.spatial[0, :i], axis=0) * s.spatial[0, i]
        # the tiles depend on the unrolling and the coverage below, not on the order (with placement: level i's)
        where = (i, inner.tobytes(), residual.tobytes(), s.order[0, i].tobytes() if self.placement else b"")
        fitted = self._fitted.setdefault(where, {})
        tiles, facs, axes, counts, orders, order_rows = [], [], [], [], [], []  # counts: rows per unrolling
        for order, excluded in self._orders(residual, i):
            fac, ax = (self._unrollings(i + 1, residual, excluded, inner, caps) if i + 1 < self.L
                       else (np.ones((1, self.D), dtype=np.int64), np.zeros((1, self.D), dtype=np.int64)))
            keys = [f.tobytes() for f in fac]
            new = {key: row for row, key in enumerate(keys) if key not in fitted}
            if new:
                fitted.update(zip(new, self._fitting_tiles(i, inner, residual, fac[list(new.values())], caps,
                                                           s.order[0, i])))
            tiles += [fitted[key] for key in keys]
            counts += [len(fitted[key]) for key in keys]
            facs.append(fac)
            axes.append(ax)
            orders.append(order)
            order_rows.append(sum(counts[len(counts) - len(keys):]))
            if self.tile_first and i + 1 < self.L and self._fanout(i + 1) is not None and self.waste is None:
                for t in self._tiles(i, inner, residual, np.ones((1, self.D), dtype=np.int64))[0][0]:
                    fac, ax = self._unrollings(i + 1, residual // t, excluded, inner * t)  # levels above hold it
                    tiles += [t[None, :]] * len(fac)
                    counts += [1] * len(fac)
                    facs.append(fac)
                    axes.append(ax)
                    order_rows[-1] += len(fac)
        if not sum(counts):
            return []
        tile = np.concatenate(tiles)
        f, axis = (np.repeat(np.concatenate(x), counts, axis=0) for x in (facs, axes))
        order = np.repeat(np.stack(orders), order_rows, axis=0)
        if seen is not None:
            fresh = self._fresh(seen, s, tile, f, axis, order)
            tile, f, axis, order = tile[fresh], f[fresh], axis[fresh], order[fresh]
        if self.placement:  # a tile that fits only placed is taken with each placement that fits
            rows, placed = placement_variants(self.capacity, i, *self._tree(i, inner, residual, s.order[0, i])
                                              .placements(tile))
            tile, f, axis, order = tile[rows], f[rows], axis[rows], order[rows]
        n = len(tile)
        t = np.repeat(s.temporal, n, axis=0)
        sp = np.repeat(s.spatial, n, axis=0)
        axs = np.repeat(s.axes, n, axis=0)
        od = np.repeat(s.order, n, axis=0)
        ab = np.repeat(s.above, n, axis=0)
        if self.placement:
            ab[:, i] = placed
        t[:, i] = tile
        t[:, i + 1] = -(-residual // (f * tile))
        t[:, i + 2:] = 1
        sp[:, i + 1] = f
        axs[:, i + 1] = axis
        od[:, i + 1] = order
        return [Partials(t, sp, axs, od, ab)]

    # ---- pricing and alpha-beta ---------------------------------------------------------
    def price(self, parts: Partials, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Bound (step < last) or exact objective of every completed candidate, and an energy tie-break."""
        batch = MappingBatch(parts.temporal, parts.spatial, parts.order, self.keeps, (), parts.axes, self._above(parts))
        cost = self.model.evaluate(batch, reuse_buffers=True)
        self.stats.evaluated += len(parts)
        if i == self.L - 2:
            score = cost.objective(self.objective)
        else:
            ok = (cost.capacity_excess[:, :i + 1] <= 0).all(axis=1)
            raw = objective_value(self.objective, cost.energy, cost.cycles, cost.dram_bytes)
            score = np.where(ok, raw.astype(float), np.inf)
        return score.copy(), cost.tie_break()

    def _above(self, parts: Partials) -> np.ndarray | None:
        """The placements the cost model sees: None without ``placement`` (the shared-boundary kernel path)."""
        return parts.above if self.placement else None

    def _best_order_only(self, parts: Partials, score: np.ndarray, tie: np.ndarray, i: int) -> np.ndarray:
        """Indices keeping, per (parent, unrolling, tile), the order with the best score."""
        fields = np.concatenate([parts.temporal[:, :i + 1].reshape(len(parts), -1),
                                 parts.spatial[:, :i + 2].reshape(len(parts), -1)], axis=1)
        key = row_keys(fields)
        idx = rank(score, tie)
        _, first = np.unique(key[idx], return_index=True)
        return idx[first]

    def _priced(self, parts: Partials, i: int) -> tuple[Partials, np.ndarray, np.ndarray] | None:
        """Step ``i``'s candidates that can survive its selection, with their bounds and tie-breaks (None: no
        candidate), priced some ``PRICE_ROWS`` at a time (the placed walk's first step has a million candidates):
        of each batch the best (last step) or the best order per (tile, unrolling), in enumeration order, so the
        selection over the kept ones is the selection over all."""
        kept: list[Partials] = []
        scores: list[np.ndarray] = []
        ties: list[np.ndarray] = []
        for batch in self._gathered(self.extend(parts, i)):
            score, tie = self.price(batch, i)
            self.stats.level_candidates[i] += len(batch)
            if i == self.L - 2:
                idx = np.array([best_index(score, tie)])
            elif "best_order" in self.relax:
                idx = np.arange(len(batch))
            else:
                idx = np.sort(self._best_order_only(batch, score, tie, i))
            kept.append(batch.take(idx))
            scores.append(score[idx])
            ties.append(tie[idx])
        if not kept:
            return None
        return Partials.concat(kept), np.concatenate(scores), np.concatenate(ties)

    @staticmethod
    def _gathered(batches: Iterator[Partials]) -> Iterator[Partials]:
        """Consecutive non-empty ``batches`` joined until each holds at least ``PRICE_ROWS`` candidates (the last
        one fewer): one cost-model call per joined batch."""
        pending: list[Partials] = []
        rows = 0
        for batch in batches:
            if len(batch):
                pending.append(batch)
                rows += len(batch)
            if rows >= PRICE_ROWS:
                yield Partials.concat(pending)
                pending, rows = [], 0
        if pending:
            yield Partials.concat(pending)

    def search(self, parts: Partials, i: int) -> None:
        self.stats.step(i)
        priced = self._priced(parts, i)
        if priced is None:
            return
        cands, score, tie = priced
        if i == self.L - 2:
            j = best_index(score, tie)
            if (score[j], tie[j]) < (self.best_score, self.best_tie):
                self.best_score, self.best_tie = float(score[j]), float(tie[j])
                best = cands.take(np.array([j]))
                self.best = MappingBatch(best.temporal, best.spatial, best.order, self.keeps, (), best.axes,
                                         self._above(best))
            return
        keep = self._best_order_only(cands, score, tie, i) if "best_order" not in self.relax else np.arange(len(cands))
        keep = keep[np.isfinite(score[keep])]
        keep = keep[np.lexsort((tie[keep], score[keep]))]
        for start in range(0, len(keep), self.chunk):
            if score[keep[start]] >= self.best_score and "cut" not in self.relax:  # every later one is as bad
                self.stats.level_cut[i] += len(keep) - start
                break
            group = keep[start:start + self.chunk]
            self.stats.level_expanded[i] += len(group)
            self.search(cands.take(group), i + 1)

    def run(self) -> MappingBatch | None:
        L, D = self.L, self.D
        ones = np.ones((1, L, D), dtype=np.int64)
        root = Partials(ones.copy(), ones.copy(), np.zeros((1, L, D), dtype=np.int64),
                        np.tile(np.arange(D), (1, L, 1)), np.zeros((1, L, len(self.op.tensors)), dtype=np.int64))
        if L == 1:
            return None
        self.search(root, 0)
        if self.best is None:  # Observations 4/5 left nothing that fits: retry with every unrolling
            self.relaxed = True
            self.search(root, 0)
        return self.best
