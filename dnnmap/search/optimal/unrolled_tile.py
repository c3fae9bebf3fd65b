"""B45: the register file's refills per unrolling at the tile bound (docs/search.md, "B45: the register file's refills
per unrolling at the tile bound"), and B46: the same for sliding-window layers ("B46: B45 for sliding-window layers").

At the tile bound of ``F(1)`` (:meth:`.search.BranchAndBound.tile_bound`) the levels above the array's level 1 are
fixed (factors, orders, placements), the register file's tile ``tau`` (level 0's) is known, and level 1's split of
``budget = rest / tau`` into the array's unrolling ``U`` and its temporal loops ``T1 = budget / U`` is open, as are
level 1's order and the placements of levels 0 and 1. The tile bound prices the register file's pairs for the most
favourable unrolling of each term apart; B45 prices them for one ``U`` together, the least over ``U``, beside the
pairs whose bounds do not depend on ``U``:

* every pair with its child at level 1 or above is priced from the node's completion (B1; with level 1's placement
  open, P1: every tensor is plain, so a tile below more loops moves no fewer words), the MAC lanes' pairs by B3 (one
  word of each input read, one partial sum written a step), the MACs exactly;
* each tensor's tile at the register file is refilled (the output's drained) whole at every event of the innermost
  loop above it that indexes it (a plain tensor's tiles along a dimension indexing it are disjoint): per array
  instance ``S x T1 / run`` times, ``S`` the trips of the levels above 1 and ``run`` the trips of the loops inside
  that one, so ``fills = iterations / |tau| x words(tau) / run`` over all instances. Level 1's innermost loop with
  more than one trip is on one dimension ``d0``: a tensor it indexes has ``run = 1``, any other at most the trips of
  level 1's loops on dimensions not indexing it, times, where no loop of level 1 indexes it, the loops above level 1
  (their order is fixed) inside the innermost one that does; with no loop at level 1, every tensor the latter. By P1
  a placement at level 0 (a tile below fewer loops) moves no fewer words. And as a register file holds at most
  ``capacity`` words of a tensor, each of the ``iterations / |tau|`` runs of ``tau`` brings in at least
  ``words(tau) - capacity`` of its words (the output: starts that many occupancies, each ending in a drain);
* a parent read feeds at most the instances under it that differ only in dimensions not indexing the tensor, so the
  parent reads at least ``fills / copies(U)`` (the output's parent is updated at least ``drains / copies(U)`` times,
  its reduction copies), and every filled or drained word crosses the array (B5);
* the output's lane updates accumulate into the register file except at the first touch of an occupancy, of which
  there are ``drains - reloads``, and each output word has ``copies(U)`` copies there, so its accumulate reads are
  ``updates - drains + reloads`` and ``reloads >= drains - outputs x copies(U)``: with a drain's energy and hop at
  least an accumulate read's, the pair's energy grows with the drains, and the least drains bound it;
* level 1's outermost loop with more than one trip is on one dimension ``d1`` (another than ``d0`` where level 1 has
  loops on two dimensions or more): in each of its ``S x T1[d1]`` iterations a tensor kept at level 1 that ``d1``
  does not index uses all its words of level 1's tile, of which at most level 1's capacity are there from before, so
  its pair with level 1 as child moves the others (an input: its parent reads them and level 1 is filled with them;
  the output: level 1 drains them, each ending an occupancy, and its parent is updated): that pair's energy is at
  least the larger of this and its value in the node's completion (P1);
* B48 (docs/search.md, "B48: the outermost loop at the register file and the buffer"): where ``d1`` does not index
  a tensor that another loop of level 1 indexes, the innermost loop indexing it is inside ``d1``'s, so its runs at the
  register file leave out ``d1``'s trips; and a tensor level 1 cannot hold whole lies below ``d1`` and a loop inside
  it that indexes it (its tile is smaller than level 1's box), so each of ``d1``'s iterations starts on another tile
  than the one held (a plain tensor's tiles are disjoint) and takes in all its words of level 1's tile, not only those
  past the capacity; each of the output's drains past its first touches (one per word) is then also a reload.

B46 (docs/search.md, "B46: B45 for sliding-window layers") extends this to a layer whose input has a sliding window,
where the register file and the buffer reuse every overlap (``halo_reuse: true``, so P1 holds for the window input:
a tile below fewer loops takes in, over a run of the larger tile, at least the larger tile's words not held before, and
the larger tile's held words lie in its tile before). Its fills per event of level 1's innermost loop on a dimension
``d`` indexing it are B13's: each step of ``d`` (``(T1[d] - 1) / T1[d]`` of the events) brings in at least
:func:`.bounds._step_words` (the shift ``tau[d] U[d]`` a proper divisor of the layer's extent, so B20's residue
count holds), every event (a wrap too) its words without the residue where
:meth:`.bounds.LowerBound._every_event`; where ``d0`` does not index it, the innermost loop of level 1 that does has
at least one event per run of level 1's loops not indexing it (B48: but ``d1``'s), and at least the least of those
steps' words; with none at level 1, only the capacity term. A parent read feeds at most the instances differing only
in dimensions not on a plain axis of the input (a window axis lets instances share words), so its ``copies(U)`` are
the product of ``U`` over those. Level 1's refetches per iteration of ``d1`` keep B45's capacity term for it (B48's
whole words need disjoint tiles).

Every term is a non-decreasing function of the counts it bounds, so each ``(U, d0, d1)``'s sum is at most the energy
of every completion with that unrolling, innermost and outermost loop, and the least over the legal unrollings (the
space's table of level 1's fan-out, one row per distinct factor vector: the axes change no count), ``d0`` and ``d1``
is at most every completion's. For EDP the product with the latency bound per ``U`` (its compute cycles with ``|U|`` lanes, and the
tile's latency bound). An ``F(1)`` node fixes ``U`` and ``T1``: its completions are some of its tile's, so the sum at its
own ``U`` bounds them (:meth:`.search.BranchAndBound._unrolled_node_bound`), where its own bound takes each tensor's
best level-1 order apart (B2). Applies on architectures whose only fan-out is level 1's and whose level 0 (no operand
registers) keeps every tensor, where levels 0 and 1 reuse every overlap of a sliding window (B46) or the layer has
none, in the exact (not padded) widened space.

B47 (docs/search.md, "B47: each child of a tile at its own unrolling"): the value per unrolling
(:meth:`UnrolledTile.per_unrolling`) bounds every completion of the tile with that unrolling, so each child of the tile
(one unrolling) inherits its own unrolling's value.
"""

from __future__ import annotations

import numpy as np

from dnnmap.cost.model import CostBatch
from dnnmap.search.optimal.bounds import TIER_PAIRS, LowerBound, _dividing, _step_words, touched_lower
from dnnmap.search.optimal.expand import distinct_unrollings
from dnnmap.search.space import unique_rows

ROWS = 256  # tile rows priced together (their legal (row, unrolling) pairs as flat arrays: memory held per batch)


class UnrolledTile:
    """B45 for the tile bound of ``F(1)`` of one layer (module docstring)."""

    def __init__(self, bound: LowerBound) -> None:
        self.b = bound
        arch = bound.arch
        self.table = distinct_unrollings(tuple(int(x) for x in bound.bounds), tuple(arch.levels[1].fanout.shape),
                                         1 in bound.both_axes)[0]  # (V, D) level 1's legal factor vectors
        self._divides: dict[tuple[int, int], np.ndarray] = {}
        # :meth:`rows_of`: each row's factor vector as one number (mixed radix), sorted
        self._radix = self.table.max(axis=0).astype(np.int64) + 1
        self._place = np.cumprod(np.append(1, self._radix[:0:-1]))[::-1]
        keys = (self.table * self._place).sum(axis=1)
        self._sorted = np.argsort(keys)
        self._keys = keys[self._sorted]
        self.parent = {pr.tensor: pr.parent for pr in bound.pairs if pr.child == 0}
        self.hop = {pr.tensor: bound.hop_per_word(pr) for pr in bound.pairs if pr.child == 0}
        # level 1's pairs with its parent, and the energy of a word level 1 refetches (an input: read by the parent,
        # filled; the output: drained, updating the parent)
        self.buffered = [pr for pr in bound.pairs if pr.child == 1]
        self.refetch = {pr.tensor: bound.hop_per_word(pr) + (
            bound.energy[1, pr.tensor, 0] + bound.energy[pr.parent, pr.tensor, 2] if pr.tensor == bound.out
            else bound.energy[pr.parent, pr.tensor, 0] + bound.energy[1, pr.tensor, 1]) for pr in self.buffered}
        self.accumulate = UnrolledTile._accumulate_read(bound)
        # B48: the energy of a reload of the output at level 1 (its parent's read at full width and the fill)
        self.reload = {pr.tensor: bound.hop_per_word(pr) + bound.read_full[pr.parent, pr.tensor]
                       + bound.energy[1, pr.tensor, 1] for pr in self.buffered if pr.tensor == bound.out}

    @staticmethod
    def applies(bound: LowerBound) -> bool:
        """Whether B45 holds for the layer and architecture of ``bound`` (module docstring): placement, the only fan-out
        at level 1 over level 0, level 0 keeping every tensor, no operand registers, every tensor plain or levels 0 and
        1 reusing every overlap (B46: :attr:`.bounds.LowerBound.monotone`), and a drain and hop of the output at level 0
        at least an accumulate read (so its pair's energy grows with its drains)."""
        arch = bound.arch
        if not (bound.placement and bound.L >= 3 and bound.keeps[0].all() and bound.monotone[:2].all()
                and not arch.mac.operand_registers):
            return False
        if [m for m in range(bound.L) if arch.levels[m].fanout is not None] != [1]:
            return False
        return bound.energy[0, bound.out, 0] + bound.hop_energy[1] >= UnrolledTile._accumulate_read(bound)

    @staticmethod
    def _accumulate_read(bound: LowerBound) -> float:
        """The energy of the accumulate read of one lane update of the output at level 0: the lanes accumulate into
        level 0 where it reads before it writes (docs/cost-model.md 2b), else none."""
        return float(bound.read_full[0, bound.out]) if bound.arch.levels[0].read_modify_write else 0.0

    def compute(self, cost: CostBatch, temporal: np.ndarray, spatial: np.ndarray, order: np.ndarray,
                tiles: np.ndarray, objective: str, units: np.ndarray | None = None) -> np.ndarray:
        """(n,) B45 of ``objective`` (energy or EDP; else -inf) for tile-bound rows of ``F(1)``: each row's node (its
        levels ``>= 2`` fixed, ``temporal[:, 0]`` the iterations left below them), priced in ``cost`` (a completion
        of it or of a node below it), and ``tiles`` (n, D) its register file's tile; ``units`` (n, D): each row's own
        unrolling of level 1 (an ``F(1)`` node's, whose completions are some of the tile's), None: the least over
        every legal one."""
        return self.per_unrolling(cost, temporal, spatial, order, tiles, objective, units).min(axis=1)

    def per_unrolling(self, cost: CostBatch, temporal: np.ndarray, spatial: np.ndarray, order: np.ndarray,
                      tiles: np.ndarray, objective: str, units: np.ndarray | None = None) -> np.ndarray:
        """(n, V) :meth:`compute` per row of :attr:`table` (``units`` given: (n, 1), each row's own): a lower bound of
        every completion of the row's tile with that unrolling of level 1 (inf where it is not legal; -inf for an
        objective B45 does not price). B47 reads it for the children of a tile (docs/search.md, "B47")."""
        n = len(tiles)
        width = len(self.table) if units is None else 1
        if objective not in ("energy", "edp"):
            return np.full((n, width), -np.inf)
        fixed, held = self._fixed(cost, spatial, temporal[:, 0], tiles)
        latency = None
        if objective == "edp":
            latency = self.b.compute(cost, temporal, spatial, order, 2, 1, "latency", tile=tiles, tier=TIER_PAIRS)
        out = np.empty((n, width))
        for lo in range(0, n, ROWS):
            rows = slice(lo, min(n, lo + ROWS))
            table = self.table[None] if units is None else units[rows, None, :]  # (1 or r, V or 1, D)
            energy = fixed[rows, None] + self._per_unrolling(temporal[rows], order[rows], tiles[rows], held[rows],
                                                             table, units is not None)  # (r, V or 1)
            if latency is None:
                out[rows] = energy
            else:
                steps = np.maximum(self.b.iterations / table.prod(axis=2) * self.b.step_cycles, self.b.least_compute)
                out[rows] = energy * np.maximum(latency[rows, None], steps)
        return out

    def rows_of(self, units: np.ndarray) -> np.ndarray:
        """(n,) each of ``units``' (n, D) unrollings of level 1 as its row of :attr:`table` (-1 where it is none:
        every legal factor vector is one)."""
        inside = (units < self._radix).all(axis=1)
        found = np.where(inside, (np.minimum(units, self._radix - 1) * self._place).sum(axis=1), -1)
        at = np.minimum(np.searchsorted(self._keys, found), len(self._keys) - 1)
        return np.where(self._keys[at] == found, self._sorted[at], -1)

    def _fixed(self, cost: CostBatch, spatial: np.ndarray, rest: np.ndarray, tiles: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """(n,) the energy of what does not depend on ``U``: the MACs, the pairs with their child at level 1 or above
        (B1, P1), the inputs' lanes (B3), the output's lane updates and, where level 0 accumulates, an accumulate read
        per lane update (the drains' term takes one off per first touch); and (n, T) the energy of each tensor's pair
        with level 1 as child in it (0 where level 1 does not keep the tensor)."""
        b = self.b
        energy = cost.energy_breakdown[:, b.L + 1].copy()
        held = np.zeros((len(energy), b.T))
        for pr in b.pairs:
            if pr.child >= 1:
                e, _, h = b._exact(cost.counts, pr)
                pair = e + h * b.hop_per_word(pr)
                energy += pair
                if pr.child == 1:
                    held[:, pr.tensor] = pair
            elif pr.child < 0 and pr.tensor != b.out:
                e, _, h = b._compulsory(pr, spatial, rest, 2, b.touched_all, tiles)
                energy += e + h * b.hop_per_word(pr)
            elif pr.child < 0:
                energy += b._lane_energy(pr.tensor, 0, np.full(len(energy), b.iterations), None)
                energy += b.iterations * self.accumulate
        return energy, held

    def _per_unrolling(self, temporal: np.ndarray, order: np.ndarray, tiles: np.ndarray, held: np.ndarray,
                       table: np.ndarray, own: bool) -> np.ndarray:
        """(r, V) per row and unrolling ``U`` of level 1 (``table`` (1, V, D): the legal ones; or, ``own``, (r, 1, D)
        each row's own: (r, 1)) :meth:`_least`, priced only for the pairs of a row and an unrolling dividing its budget;
        inf where ``U`` does not divide it."""
        budget = temporal[:, 0] // tiles
        if own:
            at, col, units = np.arange(len(tiles)), np.zeros(len(tiles), dtype=int), table[:, 0]
        else:
            at, col = np.nonzero(_dividing(self.table, self._divides, budget, self.b.bounds))  # (r, V)'s legal pairs
            units = self.table[col]
        out = np.full((len(tiles), table.shape[1]), np.inf)
        out[at, col] = self._least(temporal, order, tiles, held, at, units)
        return out

    def _least(self, temporal: np.ndarray, order: np.ndarray, tiles: np.ndarray, held: np.ndarray, at: np.ndarray,
               units: np.ndarray) -> np.ndarray:
        """(n,) per pair of a row ``at`` (n,) and an unrolling ``units`` (n, D) of level 1 dividing its budget, the least
        over level 1's innermost loop ``d0`` and outermost loop ``d1`` (different where level 1 has loops on two
        dimensions or more) of the level-0 pairs' energy at ``d0`` (B48: with the runs outside ``d1``) plus what ``d1``
        adds to level 1's pairs (:meth:`_refetched`; ``held`` (r, T) their energy in the completion). Per ``d0``, the
        least over ``d1`` of the terms that depend on it is read off :meth:`_ranked` (one per set of tensors ``d0`` does
        not index)."""
        b = self.b
        budget = (temporal[:, 0] // tiles)[at]
        moving = budget > units  # (n, D): level 1 has a loop on the dimension
        trips = budget / units  # (n, D): T1
        words = touched_lower(b.op, tiles, contiguous=True)[at]  # (n, T)
        per_tile = (b.iterations / tiles.prod(axis=1))[at]  # the tile's runs over all instances
        outer = self._outer_runs(temporal, order)[at]  # (n, T)
        live = np.nonzero(moving.any(axis=0))[0]  # the dimensions level 1 has a loop on
        once, largest, lifted = [], [], []  # per tensor its energy with d0 innermost where d0 indexes it (per d0 for a
        # window), with its largest run, and (D, n) with its largest run outside each d1 (B48)
        for t in range(b.T):
            copies = units[:, ~b.disjoint[t]].prod(axis=1).astype(float)  # B46: a window's dimensions too
            indexed = moving[:, b.indexes[t]].any(axis=1)  # (n,): a loop of level 1 indexes the tensor
            inner, rest = self._event_words(t, tiles, at, words[:, t], moving, trips, outer[:, t], indexed)
            once.append({d: self._energy(t, e, words[:, t], per_tile, copies) for d, e in inner.items()}
                        if isinstance(inner, dict) else self._energy(t, inner, words[:, t], per_tile, copies))
            largest.append(self._energy(t, rest, words[:, t], per_tile, copies))
            lifted.append(np.repeat(largest[t][None], b.op_dims, axis=0))
            for d1 in live[~b.indexes[t][live]]:
                lifted[t][d1] = self._energy(t, rest * self._outside(t, d1, trips, indexed), words[:, t], per_tile,
                                             copies)
        least = np.where(moving.any(axis=1), np.inf, sum(largest))  # no loop at level 1: every run its largest
        refetched = self._refetched(temporal, held, at, trips)  # (D, n)
        single = moving.sum(axis=1) == 1
        ranked = {}
        for d0 in live:
            apart = tuple(t for t in range(b.T) if not b.indexes[t, d0])
            if apart not in ranked:
                ranked[apart] = self._ranked(refetched + sum(lifted[t] for t in apart), moving, live)
            first, smallest, second = ranked[apart]
            inner = sum(once[t].get(d0, 0.0) if isinstance(once[t], dict) else once[t]
                        for t in range(b.T) if b.indexes[t, d0])
            alone = refetched[d0] + sum(largest[t] for t in apart)  # d0 level 1's only loop
            added = np.where(single, alone, np.where(first == d0, second, smallest))
            least = np.minimum(least, np.where(moving[:, d0], inner + added, np.inf))
        return least

    @staticmethod
    def _ranked(values: np.ndarray, moving: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n,) thrice: per pair the outermost loop ``d1`` among those with a loop whose ``values`` (D, n) are least,
        that least value, and the second least (for an innermost loop ``d0`` that is that ``d1``)."""
        ranked = np.where(moving[:, live].T, values[live], np.inf)  # (live, n)
        at = ranked.argmin(axis=0)
        pairs = np.arange(ranked.shape[1])
        smallest = ranked[at, pairs]
        ranked[at, pairs] = np.inf
        return live[at], smallest, ranked.min(axis=0)

    def _event_words(self, t: int, tiles: np.ndarray, at: np.ndarray, words: np.ndarray, moving: np.ndarray,
                     trips: np.ndarray, outer: np.ndarray, indexed: np.ndarray
                     ) -> tuple[np.ndarray | dict[int, np.ndarray], np.ndarray]:
        """The least words of tensor ``t`` the register file's tile takes in per event of level 1's innermost loop
        ``d0`` where ``d0`` indexes it ((n,), or per ``d0`` with a loop), and per iteration of level 1 where ``d0`` does
        not index it ((n,)); per pair ``at`` of a row of ``tiles`` (r, D) and an unrolling: ``words`` (n,) of the tile,
        ``moving`` and ``trips`` (n, D): level 1's loops, ``outer`` (n,): the loops above level 1 inside the innermost
        one indexing ``t``, ``indexed`` (n,): whether a loop of level 1 indexes ``t``. A plain tensor (B45): the whole
        tile, or the whole tile once per run of the loops not indexing it. A sliding-window input (B46): each step of a
        loop on ``d`` brings in at least :func:`.bounds._step_words` with the shift a multiple of the tile's extent
        dividing the layer's (``(T1[d] - 1) / T1[d]`` of its events), every event (a wrap too) its words without that
        where :meth:`.bounds.LowerBound._every_event`; the larger; where ``d0`` does not index it, the innermost loop of
        level 1 that does is one of those with a loop, its events one per run of level 1's loops not indexing it; none
        known (no such loop at level 1): none counted."""
        idx = self.b.indexes[t]
        runs = trips[:, ~idx].prod(axis=1)  # (n,) level 1's trips on the dimensions not indexing t
        if self.b.plain[t]:
            return words, words / (runs * np.where(indexed, 1.0, outer))
        steps, every = self._window_steps(t, tiles)
        per_event = {int(d): np.where(moving[:, d], np.maximum(steps[at, d] * (trips[:, d] - 1) / trips[:, d],
                                                               every[at, d]), np.inf)
                     for d in np.nonzero(idx & moving.any(axis=0))[0]}
        least = np.minimum.reduce(list(per_event.values())) if per_event else np.full(len(at), np.inf)
        return ({d: np.where(moving[:, d], e, 0.0) for d, e in per_event.items()},
                np.where(indexed, least, 0.0) / runs)

    def _window_steps(self, t: int, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(r, D) twice: the words of the sliding-window tensor ``t`` a step of a loop on each dimension brings into
        the register file's tile (:func:`.bounds._step_words` with the layer's bounds), and those every event brings in
        (without them, where :meth:`.bounds.LowerBound._every_event`, else 0); once per distinct tile."""
        keys, inverse = unique_rows(tiles)
        steps = _step_words(self.b.op, keys, t, True, self.b.bounds)
        every = np.where(self.b._every_event(keys, t), _step_words(self.b.op, keys, t, True), 0.0)
        return steps[inverse], every[inverse]

    def _outside(self, t: int, d1: int, trips: np.ndarray, indexed: np.ndarray) -> np.ndarray:
        """(n,) B48 (docs/search.md, "B48: the outermost loop at the register file and the buffer"): the trips of
        level 1's outermost loop ``d1`` that a run of tensor ``t``'s tile at the register file cannot span, where level
        1 has another loop: all of them where ``d1`` does not index ``t`` and a loop of level 1 does (the innermost
        such loop, which bounds the run, is inside ``d1``'s), else 1 (``trips`` (n, D): level 1's ``T1``;
        ``indexed`` (n,): whether a loop of level 1 indexes ``t``)."""
        if self.b.indexes[t, d1]:
            return np.ones(len(trips))
        return np.where(indexed, trips[:, d1], 1.0)

    def _refetched(self, temporal: np.ndarray, held: np.ndarray, at: np.ndarray, trips: np.ndarray) -> np.ndarray:
        """(D, n) per outermost loop ``d1`` of level 1 and pair of a row ``at`` and an unrolling (``trips`` (n, D): its
        ``T1``) what level 1's pairs add to their energy ``held`` (r, T) in the completion: in each of ``d1``'s
        iterations (``S x T1[d1]`` in all) a tensor ``d1`` does not index uses all its words of level 1's tile, and takes
        in at least :meth:`_per_iteration` of them (B48; B45: those past ``capacity``), priced by
        :meth:`_taken_energy`."""
        b = self.b
        sweeps = temporal[:, 2:].prod(axis=(1, 2)).astype(float)
        words = touched_lower(b.op, temporal[:, 0], contiguous=True)  # (r, T) level 1's tile
        out = np.zeros((b.op_dims, len(at)))
        for pr in self.buffered:
            t = pr.tensor
            per = (sweeps * self._per_iteration(t, words[:, t]))[at]
            for d in np.nonzero(~b.indexes[t] & (trips > 1).any(axis=0))[0]:
                out[d] += np.maximum(0.0, self._taken_energy(t, per * trips[:, d]) - held[at, t])
        return out

    def _per_iteration(self, t: int, words: np.ndarray) -> np.ndarray:
        """(r,) B48 (docs/search.md, "B48: the outermost loop at the register file and the buffer"): the words of
        tensor ``t`` level 1 takes in at least in each iteration of its outermost loop where that loop does not index
        ``t`` (``words`` (r,): its words of level 1's tile): all of them where level 1 cannot hold them whole (its tile
        then lies below that loop and some loop inside it that indexes ``t``, so each iteration starts on another tile
        than the one held and visits every word), else none. B46: a sliding-window tensor's tiles overlap, so B45's
        words past the capacity."""
        if not self.b.plain[t]:
            return np.maximum(0.0, words - self.b.capacity[1, t])
        return np.where(words > self.b.capacity[1, t], words, 0.0)

    def _taken_energy(self, t: int, taken: np.ndarray) -> np.ndarray:
        """The least energy of tensor ``t``'s pair with level 1 as child that takes in ``taken`` words (n,): an
        input's parent reads and fills, the output's drains (each ending an occupancy) and, B48, a reload for each
        past the output's first touches (one per output word: level 1 has one instance)."""
        energy = taken * self.refetch[t]
        if t in self.reload:
            energy = energy + np.maximum(0.0, taken - self.b.out_words) * self.reload[t]
        return energy

    def _energy(self, t: int, events: np.ndarray, words: np.ndarray, per_tile: np.ndarray, copies: np.ndarray
                ) -> np.ndarray:
        """(n,) the energy of tensor ``t``'s pair with level 0 as child per pair of a tile and an unrolling: ``events``
        the least words it takes in per run of the tile (:meth:`_event_words`), ``words`` of the tile, ``per_tile`` the
        tile's runs over all instances (``iterations / |tau|``), ``copies`` of a word of it a parent read may feed over
        the unrolling (each (n,))."""
        b = self.b
        cap = b.capacity[0, t]
        moved = per_tile * np.maximum(events, np.maximum(0.0, words - cap))
        p, hop = self.parent[t], self.hop[t]
        if t != b.out:
            return moved * (b.energy[0, t, 1] + hop + b.energy[p, t, 0] / copies)
        reloads = np.maximum(0.0, moved - b.out_words * copies)
        return (moved * (b.energy[0, t, 0] + hop - self.accumulate + b.energy[p, t, 2] / copies)
                + reloads * (b.energy[0, t, 1] + hop + b.read_full[p, t] / copies))

    def _outer_runs(self, temporal: np.ndarray, order: np.ndarray) -> np.ndarray:
        """(r, T) per tensor the trips of the loops above level 1 (their orders fixed), innermost first, before the
        first one with more than one trip that indexes it."""
        b = self.b
        r = len(temporal)
        dims = order[:, 2:, ::-1].reshape(r, -1)  # innermost first
        trips = np.take_along_axis(temporal[:, 2:], order[:, 2:, ::-1], axis=2).reshape(r, -1).astype(float)
        out = np.empty((r, b.T))
        for t in range(b.T):
            stop = np.logical_or.accumulate(b.indexes[t][dims] & (trips > 1), axis=1)
            out[:, t] = np.where(stop, 1.0, trips).prod(axis=1)
        return out
