"""Admissible lower bounds of a partial mapping fixed from the top level down (``--mapper optimal``).

A node fixes, for the levels ``>= j``, the temporal and spatial factors and (after its order
stage) the loop orders. The cost model's counts of a (child, parent) pair of a tensor depend
only on the child's tile and the loops above the child (docs/cost-model.md section 4), and the
energy is a sum over pairs, so a node's bound is a sum of per-pair bounds (docs/search.md,
"Bounds", B1-B9 and the tile bound):

* B1 **exact pairs**: every pair whose child level is ``>= known`` (its tile and all loops above
  it are fixed) is priced exactly, from :class:`CostModel` counts of any completion of the node;
* B2 **best order per tensor** (factor stages): the pairs of child ``j - 1`` have a fixed tile and
  fixed loops above except level ``j``'s order. For a tensor none of whose non-trivial level-``j``
  loops moves a sliding-window axis, the order putting the loops that do not index it innermost
  minimises every count of its pair (each count is a sum over tile changes, and an irrelevant loop
  outside others only repeats their tile sequence), so that order's exact counts bound the pair;
* B3 **compulsory traffic** for the other pairs: every touched word of a tensor is filled into
  (or drained from) the child at least once per child instance that touches it, read from
  (written to) each parent instance at least once, and a MAC lane reads one word of each input and
  writes one partial sum per step: the parent moves, per step, at least the distinct words of the lanes'
  box under it (:meth:`LowerBound._lane_words`: the sumset bound ``|A + B| >= |A| + |B| - 1`` per axis where
  the fan-outs are fixed, exact for a two-term axis where the lanes' stride is known, else the lanes over a plain
  tensor's largest multicast copies or a sliding-window tensor's least words per lane over the legal unrollings;
  at the root's open fan-out the lanes' pairs take one unrolling together, :meth:`LowerBound._joint_lanes`); the
  output's reads and accumulate reads are at the partial sums' width (the model narrows only drains and final
  updates), and lane updates more than one per output word cannot all be final, so they are too;
* B4 **read-modify-write**: every lane result accumulates into the parent except the first touch
  of each output copy there: ``accumulate_reads >= lane updates - outputs x copies``, copies at
  most the product of the spatial factors of reduction dimensions above the parent (an unfixed
  fan-out: its largest legal unrolling of the reduction dimensions left, a dimension over both axes
  where the level allows it);
* B5 **hops**: every word a child fills or drains crosses each fan-out between it and its parent,
  every lane read and partial-sum write crosses those between the lanes and the parent
  (``iterations`` of them);
* B7 **capacity per sweep**: a pair whose child lies below the fixed tile of level ``j - 1``
  must refill, in every iteration of the fixed loops, the tile's words that its children could
  not keep (:meth:`LowerBound._sweeps`);
* B8 **disjoint footprints**: when the fixed loops move none of a tensor's sliding-window axes,
  every sweep in which its footprint changes (the product of trips from the innermost loop
  indexing it outward) moves the whole footprint, whatever the children hold
  (:meth:`LowerBound.runs`);
* B9 **innermost-loop refills**: for a child level whose tile or the order above it is open and a
  tensor with no sliding-window axis, each event of the innermost non-trivial loop above the child
  that indexes the tensor refills (drains) its whole tile: ``iterations x touched(tile) /
  iterations(tile)`` words, least over the tiles that may fit (:meth:`LowerBound._refill_ratio`,
  :meth:`LowerBound._innermost_refills`);
* B13 **window-step refills** (the sliding-window inputs' B9, :meth:`LowerBound._window_refills`): when that
  innermost loop is on a dimension of a plain axis of the input, every event refills its whole tile; on a window
  axis, each of its steps (``(T - 1) / T`` of the events) brings in at least the tile's words minus the most the
  shifted window can share (:func:`_step_words`); B9 takes the least over the loops of both terms together. B3's
  words per instance are exact per axis where no spatial factor above splits its dimensions
  (:meth:`LowerBound._instance_words`), and B2 also holds for a window tensor that only one level-``j`` loop indexes;
* B14 **output drains in the joint unrolling** (:meth:`LowerBound._drain_pair`): at the root's open fan-out, the
  output pair across it drains ``outputs x copies(U)`` words (each copy of B4 at least once) and its parent gets every
  output word: one unrolling ``U`` for these and the lanes' pairs; the joint sum replaces what the bound counts for
  those parts when larger (:meth:`LowerBound._joint_drain`), with per-tensor placement too (at the tile bound since
  B23);
* B15 **two child levels under one innermost loop** (:meth:`LowerBound._coupled_refills`): the innermost loop above level
  ``c - 1`` is level ``c``'s own (on a dimension of its tile) or, when level ``c`` has none, the one above ``c``: B9/B13 of
  the two levels together, the least over both cases, instead of each level's least on its own;
* B16 **the output's drained pair with its parent** (:meth:`LowerBound._drained_pair`): an output tile drained at every
  event updates its parent at least ``drains / R`` times (``R`` the reduction copies between child and parent) and the
  parent reads the reloads or accumulates all but the first touches: B9's increment for the output takes the pair's
  whole energy;
* B17 **the lanes' stride under an open fan-out** (:func:`_open_stride_words`): the strides of the one open fan-out's
  box divide what is left over the box, so a two-term window axis takes at least the least exact count over them;
* B18 **the root's order jointly** (:meth:`LowerBound._root_order`; the widened space's factor stage of the top
  level): the plain tensors' pairs priced through each one's best root order (B2, B7/B8) take one order together, the
  least over the order's effects on their refills, in place of their bounds and the refills at their child levels;
* B21 **the root's order with the output's reloads** (:meth:`LowerBound._reload_growth`; with B18): B18's B2 pairs
  priced at each order's refills ``rho`` times their best order's as ``rho x`` their energy plus what does not scale:
  the output's reloads (drains less the order-independent first touches) grow by ``(rho - 1) x`` the first touches
  more than in proportion, and the accumulate reads a child feeds do not grow at all; and a sliding-window tensor's
  pair under the top level joins them (:meth:`LowerBound._disjoint_refills`): each event of the top level's loops from
  the innermost on a plain axis of it outward fills its whole tile;
* B19 **known strides at a factor stage** (:meth:`LowerBound._wrap_refills`): at ``F(j)`` every loop above the child
  ``j - 1`` has known trips and stride, so B13's words per event of a sliding-window input count each step's exact
  shift and each wrap's interval of shifts, with the tile's values in one residue class (a stride-2 window's columns
  shifted by an odd amount are all new); the innermost loop is one of the lowest level with a loop;
* B20 **each tensor's own tiles under placement** (:meth:`LowerBound._placed_refills`; with placement): a tensor's tile
  raised over the loops right above it that do not index it keeps its footprint, and the raised tiles of a level nest,
  so each tensor's refills take the least words per iteration over the boxes that fit with the outer tensors' words of
  them (a sliding-window input: a step's new words, :func:`_residue_kept`), the least over the nesting orders of the
  sum; the tensors other than the output hold beside B14 (:meth:`LowerBound._beside_drains`);
* B22 **the register file's refills per unrolling of the open array** (:meth:`LowerBound._unrolled_refills`; with
  placement, where B14 applies): B14's joint sum at each unrolling ``U`` plus the refills at its child under ``U``
  (each instance runs ``bounds / U``, each output word has ``copies(U)`` copies), the raised tiles of B20 chained
  (nested boxes, :meth:`LowerBound._nested_chains`) and priced linearly, the least over ``U``;
* B23 **the output's parent side under placement** (docs/search.md, "B23: the output's parent side under placement"):
  B16 with placement, from B9's words of the level's box; B20's output words priced with their parent's side
  (:meth:`LowerBound._drained_pair`); B14 at the tile bound with placement; and, beside B14, per nesting order of B20
  the output pair's whole energy with the lanes' pairs over one unrolling of the open fan-out, its reduction copies
  ``c`` the output's copies and ``R`` (:meth:`LowerBound._joint_drained`, :meth:`LowerBound._copies_front`);
* B24 **the register files below B14's child in B22's chain** (docs/search.md, "B24: the two register files with the
  array's copies"; :meth:`LowerBound._stacked_refills`; with placement, where B22 applies and a level below B14's child
  keeps a tensor): the raised tiles of every level below the open fan-out nest (:meth:`LowerBound._stacked_chains`,
  each fitting its own level), and the output's drains are priced with the parent's updates and reads at ``U``'s
  copies (B16 with ``R = copies(U)``), linearly, the least over ``U``;
* B25 **the parents' reads per unrolling, lazily** (docs/search.md, "B25: the parents' reads per unrolling, lazily";
  :meth:`LowerBound._parent_reads`; where B22 applies, a node's bound only): B22 with each tensor's parent reading at
  least its child's refills over the children one read may feed under ``U`` (:meth:`LowerBound._read_groups`), one
  chain table per vector of those, computed only for the unrollings some node's least needs
  (:meth:`LowerBound._read_tables`);
* B26 **the backing store's refetches the on-chip capacity forces** (:meth:`LowerBound._spilled_refetch`; where
  B22 applies and a tensor kept at B14's child has the backing store as its parent, as Eyeriss's weights): per
  unrolling ``U``, where that tensor's words of ``bounds / U`` overflow the register file, either it is read twice
  from the backing store or the nest's outermost loop indexes it and the tensors that loop does not index are fetched
  again beyond what the chip holds; the least of the two added to B22's sum at ``U``, the least over ``U``;
* B27 **the register file's refills between the overflowing tensor's loops** (docs/search.md, section of that
  name; :meth:`LowerBound._rf_drains`; where B26 applies, a node's bound only): B26's cases with B14's child's own refills
  at every boundary between the iterations of the loops that index the overflowing tensor, nested while it overflows,
  and B22's chains inside one iteration of such a loop;
* B28 **the window's wraps** (:meth:`LowerBound._run_words`, in B20's per-box table): a sliding-window input's raised
  tile whose loop right above wraps brings in, at each entry that is a step of the next loop, at least the words of
  the two loops' joint shift (none only where they cancel on one window axis), so at least half of those entries
  count beside the steps, where B20 took half a step a run;
* B29 **the output's partial sums at full width** (docs/search.md, "B29: the output's partial sums at full width";
  :meth:`LowerBound._partial_sums`; where B24 applies): B24's chain per unrolling ``U`` with the output's widths: the
  least of two cases, some word drained twice from B14's child (then every drain and every update of its parent moves
  a partial sum at full width, which B14 and B24 price at the final width) or each copy drained once (then the
  output's raised tile runs all of ``U``'s reduction, :meth:`LowerBound._capped_chains`);
* B30 **the raised tile within its level's loops** (docs/search.md, section of that name; :meth:`LowerBound._over_rest`,
  :meth:`LowerBound._level_loops`; in B20): a raised tile spans loops of its level and below, within the node's open
  extents ``rest``, unless it is all of them (which fits only where ``rest`` does), so B20's boxes divide ``rest``
  where ``rest`` does not fit and no fan-out above the level is open; and the loops next to a raised tile (B28's) are
  on dimensions that have a loop at the node;
* B31 **the chains within the loops left below the fixed levels** (docs/search.md, section of that name;
  :meth:`LowerBound._rooted_chains`; B22, B25, B26): under a node whose levels ``>= j`` are fixed, each raised tile
  of B22's chain at ``U`` divides ``rest / U`` or holds all of it over fixed loops, so where the outermost tile of a
  nesting order cannot hold ``rest / U`` alone the order's chains are read inside ``rest / U``, not ``bounds / U``;
  and where a fixed loop indexes B26's tensor, B26's ``Y`` and prefix are fixed loops, ``Y`` with known trips ``y``
  and ``y - 1`` boundaries per prefix iteration (:meth:`LowerBound._spilled_refetch`);
* B33 **the raised tile inside or over the open levels' loops** (docs/search.md, section of that name;
  :meth:`LowerBound._loop_room`, :meth:`LowerBound._over_rest`): the loop right above a raised tile is never on a
  dimension the tile holds whole (every table of B20's boxes); with B30's ``rest`` (the extents an instance runs over
  the open levels), a raised tile reaching over a fixed level's loop is ``rest`` (and dimensions not indexing it), the
  loop above it within the cover, and any other divides ``rest`` with that loop on a dimension it does not hold whole;
  at ``F(1)`` the register file's raised tiles are sets of its loops, one a dimension (:meth:`LowerBound._loop_boxes`);
* B34 **the refetches one shared buffer forces across the backing store's iterations** (docs/search.md, section of that
  name; :meth:`LowerBound._shared_refetch`; where the backing store's loops are fixed and one level is the child of the
  output's and an input's pairs with it, one capacity partition holding both): at the boundary before each DRAM
  iteration the input on chip that it uses and the output it revisits share that capacity, so either the input is read
  again or the output is drained and reloaded; per boundary the least split, in the DRAM order where it is fixed;
* B36 **the tile's own raised tiles at the tile bound** (docs/search.md, section of that name;
  :meth:`LowerBound._tile_loops`; in B20 at the tile bound): every child of a tile runs that tile per instance of its
  level whatever the split above, so B30/B33 price that level's raised tiles within the tile (at level 0: sets of its
  loops), not over the whole cover as where an open fan-out lies above the level;
* B38 **the parent's reads of the window's steps** (docs/search.md, section of that name; :meth:`LowerBound._step_reads`,
  :meth:`LowerBound._union_reads`): at ``F(j)`` B19 also holds under placement where P1 does, and a sliding-window
  input's pair with level ``j`` as parent is priced whole, its parent reading at least B19's words of the union of the
  children's tiles under it (their box, whose shifts are theirs);
* B40 **the window's tile runs against the child's capacity** (docs/search.md, section of that name;
  :meth:`LowerBound._run_fills`; with placement): a sliding-window input's pair whose child's box is known fills, in
  each of the box's ``iterations / |box|`` runs, at least the box's words less the child's capacity, and its parent
  reads at least the union's words under one parent instance less the children's capacities per run of the union;
* B43 **the window's loops inside the next raised tile** (docs/search.md, section of that name;
  :meth:`LowerBound._wrapped_chain`, :meth:`LowerBound._trip_values`; in B22's chains): a sliding-window input's raised
  tile strictly inside the next member's (or the cover) has its loop right above inside that one, with trips dividing
  their ratio on its dimension, and the next loop inside it too unless nothing else lies between; so B28's words per
  run take those trips, and an entry whose next loop is on a plain axis of the input brings the whole box;
* **tile bound** (:meth:`.search.BranchAndBound.tile_bound`): the node's bound with the tile of
  level ``j - 1`` known before level ``j`` is split (``tile`` of :meth:`LowerBound.compute`); B14 (with placement
  since B23) and the lanes' joint term also hold there when the open fan-out lies right above the tile
  (:meth:`LowerBound._joint_at_tile`);
* B6 latency: compute cycles ``>= max(iterations / lanes x cycles per step, the unit's least cycles)`` (the
  vector unit's for pooling and element-wise layers), lanes at most the fixed spatial factors times,
  per unfixed fan-out, the largest product of legal spatial factors dividing what is left (with
  ``both_axes``, a dimension's factors on both axes of a 2-D fan-out), and
  the bandwidth cycles of levels whose counts are all exact, the backing store's at least its bandwidth
  cycles of the DRAM words bound (B12, :meth:`LowerBound._store_cycles`); EDP the product of both bounds; DRAM
  bytes from the exact and compulsory DRAM counts.
Touched words of a tile (contiguous index ranges) are exact; per instance over the layer, per tensor axis, the
layer's count where no spatial factor above splits the axis, else the sumset bound (a sliding window ``s*p + r``
touches at least ``|p| + |r| - 1`` elements).

With per-tensor placement (``placement``) a node's completion leaves the tensors of the levels whose
placements are still open at the shared boundary; by P1 (docs/search.md) its counts of the pairs with
such a child bound those of every placement from below where the tensor has no sliding window or the
child reuses every overlap (``halo_reuse: true``: :attr:`LowerBound.monotone`), so there B1 and B2 still
hold for the energy (the pair of child ``known``, whose placement is open, no longer counts as exact for
the latency); the other such pairs get B3-B5. B9 holds for a
level's whole box (all its loops and those below) whatever the placements: when the innermost loop above
the box advances on a dimension indexing a plain tensor, the box's next run touches none of the words of
the previous run, so each of its words of the tensor is filled (drained) at least once in it. Only the
box no longer needs to fit, so a box not yet known is bounded by the largest one (what is left).
B10 couples a level's tensors through their nested tiles, B20 (:meth:`LowerBound._placed_refills`, which subsumes
B10) over the boxes each tensor's own placed tile allows, sliding-window inputs included. B11 (whole-box
refills, :meth:`LowerBound._held_refills`): where a level's box is known, a plain tensor whose tile holds less than
its box footprint lies below a loop of the level indexing it and is refilled whole at every event of the level
whatever the order (times the trips of the level's outermost loop when that loop does not index it); the tensors
held whole must fit together, so the bound is the least over the sets that fit and the outermost loops, the held
ones keeping B9, and the parent moves at least the union of its children's words (at the tile bound the
unfixed fan-out's unrolling taken jointly over the tensors). It raises the energy (so EDP) and, where one tensor
alone cannot be held, the DRAM bytes (so the ``dram`` objective and the latency's DRAM time, as B3's bytes).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple, TypeVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.cost.transfer import dram_transfer_seconds
from dnnmap.search.space import axis_plan, divisors, prime_factors, touched_lower, two_term_values, unique_rows, window_extent
from dnnmap.search.sunstone.unroll import legal_table
from dnnmap.search.sunstone.tiles import Capacity, divisor_lattice
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class Pair:
    tensor: int
    child: int  # -1: the MAC lanes
    parent: int


def tensor_pairs(op: Operator, keeps: np.ndarray) -> list[Pair]:
    """(child, parent) pairs of every tensor along the levels keeping it, MAC lanes first."""
    out = []
    for t in range(len(op.tensors)):
        chain = [-1] + [i for i in range(keeps.shape[0]) if keeps[i, t]]
        out.extend(Pair(t, c, p) for c, p in zip(chain, chain[1:]))
    return out


def best_orders(op: Operator) -> tuple[np.ndarray, np.ndarray]:
    """Per tensor, a loop order (outermost first) with the dimensions that do not index it innermost
    (B2), and the (T, D) mask of the dimensions that move one of its sliding-window axes. An axis
    is a sliding window only if two of its terms range over more than one value (a 1x1 convolution's
    ``s*p + r`` with ``R = 1`` takes the values ``s*p``: any move along ``p`` is disjoint)."""
    dims = op.dim_names
    orders, window = [], np.zeros((len(op.tensors), len(dims)), dtype=bool)
    for j, t in enumerate(op.tensors):
        orders.append([i for i, d in enumerate(dims) if d in t.dims] + [i for i, d in enumerate(dims)
                                                                         if d not in t.dims])
        for a in t.axes:
            live = [d for d, _ in a.terms if op.bound(d) > 1]
            if len(live) > 1:
                window[j, [dims.index(d) for d in live]] = True
    return np.array(orders, dtype=np.int64), window


def largest_unrolling(rest: tuple[int, ...], shape: tuple[int, ...], both: bool = False) -> int:
    """Largest product of spatial factors (divisors of ``rest``, each dimension on one axis, the
    factors on an axis multiplying to at most its size) a fan-out of ``shape`` can hold: a search
    over the reachable per-axis products, dimension by dimension. ``both``: a dimension may also take a
    factor on each axis of a 2-D fan-out, their product dividing its bound (``both_axes``). Only the divisors
    up to the largest axis matter (with ``both``, products of two of them), and not the dimensions' order: each
    bound is replaced by its gcd with the lcm of ``1 .. max(shape)`` (its square with ``both``), and they are
    sorted (so equal problems share one cache entry)."""
    lcm = math.lcm(*range(1, max(shape) + 1)) ** (2 if both else 1)
    return _largest_unrolling(tuple(sorted(g for g in (math.gcd(int(n), lcm) for n in rest) if g > 1)), shape, both)


@lru_cache(maxsize=65536)
def _largest_unrolling(rest: tuple[int, ...], shape: tuple[int, ...], both: bool = False) -> int:
    """:func:`largest_unrolling` of sorted reduced bounds: the reachable per-axis products as a boolean grid
    (``reach[u]``: products ``u`` on the axes), each dimension's splits applied to the grid of the dimensions before
    it at once (a factor ``f`` on an axis maps index ``u`` to ``u f``: a strided slice)."""
    reach = np.zeros(tuple(size + 1 for size in shape), dtype=bool)
    reach[(1,) * len(shape)] = True
    for n in rest:
        if both:  # a factor per axis, their product dividing n
            splits = [(x, y) for x in range(1, min(n, shape[0]) + 1) for y in range(1, min(n, shape[1]) + 1)
                      if n % (x * y) == 0 and x * y > 1]
        else:
            divisors = [f for f in range(2, min(n, max(shape)) + 1) if n % f == 0]
            splits = [tuple(f if b == a else 1 for b in range(len(shape))) for a in range(len(shape)) for f in divisors]
        grown = reach.copy()
        for split in splits:
            grown[tuple(slice(0, size // f * f + 1, f) for f, size in zip(split, shape))] |= \
                reach[tuple(slice(0, size // f + 1) for f, size in zip(split, shape))]
        reach = grown
    products = np.ones(reach.shape, dtype=np.int64)
    for a, size in enumerate(shape):
        products = products * np.arange(size + 1).reshape([-1 if b == a else 1 for b in range(len(shape))])
    return int(products[reach].max())


def _words_held(arch: ArchSpec, level: int, role: str) -> float:
    """Most words of a tensor of ``role`` one instance of ``level`` holds (its partition, or the whole level)."""
    lv = arch.levels[level]
    return lv.capacity_for(role) / arch.capacity_units_of(lv, role)


def _pareto_tiles(op: Operator, fit: Capacity, level: int, bounds: np.ndarray,
                  t: int) -> tuple[np.ndarray, np.ndarray]:
    """Tiles of ``level`` within the layer that may fit, by ascending ``touched_t / iterations`` (B9), dropping
    each tile a kept one of no larger ratio divides (whenever it divides a node's tile, so does the kept one)."""
    tiles = _fitting_tiles(fit, level, bounds)
    return _pareto(tiles, touched_lower(op, tiles, contiguous=True)[:, t] / tiles.prod(axis=1))


def _fitting_tiles(fit: Capacity, level: int, bounds: np.ndarray) -> np.ndarray:
    """(m, D) the tiles of ``level`` within the layer whose exact footprint may fit it."""
    tiles = divisor_lattice(tuple(int(x) for x in bounds))
    return tiles[fit.fits(level, tiles)]


def _pareto(tiles: np.ndarray, ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``tiles`` by ascending ``ratio``, dropping each tile a kept one of no larger ratio divides (whenever it divides
    a node's tile, so does the kept one): the least ratio over the tiles dividing any box is a kept one's."""
    # a tile is dropped where any tile ranked before it divides it: the first such one is kept (one before it dividing
    # it would divide the tile too), so these are the tiles a walk keeping one at a time keeps. In blocks of ranks: a
    # block's tiles no kept tile before the block divides, then among those the ones no earlier one of them divides
    order = np.argsort(ratio, kind="stable")
    ranked = tiles[order]
    keep = np.zeros(len(ranked), dtype=bool)
    kept = ranked[:0]
    for lo in range(0, len(ranked), 256):
        block = ranked[lo:lo + 256]
        alive = np.nonzero(~(block[:, None, :] % kept[None, :, :] == 0).all(axis=2).any(axis=1))[0]
        rest = block[alive]
        below = (rest[:, None, :] % rest[None, :, :] == 0).all(axis=2)  # (a, a): the k-th divides the row's tile
        mine = alive[~(below & (np.arange(len(rest))[None, :] < np.arange(len(rest))[:, None])).any(axis=1)]
        keep[lo + mine] = True
        kept = np.concatenate([kept, block[mine]])
    kept = order[keep]
    return tiles[kept], ratio[kept]


def _least_dividing(keys: np.ndarray, tiles: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """(u,) per row of ``keys`` the least ``ratio`` of the ``tiles`` dividing it (``tiles`` by ascending ratio,
    :func:`_pareto`), 0 where none does."""
    if len(tiles) == 0:
        return np.zeros(len(keys))
    divides = (keys[:, None, :] % tiles[None, :, :] == 0).all(axis=2)  # (u, m), tiles by ratio
    return np.where(divides.any(axis=1), ratio[divides.argmax(axis=1)], 0.0)


def _sumset_words(op: Operator, box: np.ndarray) -> np.ndarray:
    """(n, T) lower bound of the words of each tensor a box of ``box`` indices per dimension touches, whatever the
    indices (contiguous or not): per axis, ``sum of its terms' counts - (terms - 1)`` (for finite integer sets ``A``,
    ``B``: ``|A + B| >= |A| + |B| - 1``, and a term's non-zero coefficient keeps its values distinct), times over the
    axes (as :func:`touched_lower`)."""
    plan = axis_plan(op)
    out = plan.single_product(box)  # a one-term axis: its dimension's count
    for j, index, _ in plan.multi:
        out[:, j] *= box[:, list(index)].sum(axis=1) - (len(index) - 1)
    return out


_window_extent = lru_cache(maxsize=65536)(window_extent)  # B13: per (coefficients, extents) of a tile's axis


def _step_words(op: Operator, tiles: np.ndarray, t: int, halo: bool, bounds: np.ndarray | None = None) -> np.ndarray:
    """(n, D) B13: a lower bound of the words of tensor ``t`` a child whose tile (contiguous index ranges of ``tiles``
    extents) brings in at one event of a loop on each dimension ``d`` (0 where ``d`` does not index ``t``). On an axis
    where ``d`` is the only term moving (a plain axis) any move of ``d`` gives a disjoint footprint: the whole tile.
    On a sliding-window axis ``h = sum c_i x_i`` a step (not a wrap) of a loop on ``d`` shifts ``h``'s values by at
    least ``|c_d| e_d`` (the loop's stride is at least the tile's extent), and the tile's values ``H`` lie in an
    interval of ``span = 1 + sum |c_i| (e_i - 1)``, so the shifted values meet ``H`` in at most ``span - |c_d| e_d``
    of them: at least ``|H| - max(0, span - |c_d| e_d)`` new values, times the other axes' counts. Without halo
    reuse (``halo`` false) a changed tile is refilled whole. The maximum over the axes ``d`` moves. With the layer's
    ``bounds`` (B20, :func:`_residue_kept`) the shift is also a multiple of ``|c_d| e_d`` and the values one residue
    class, so fewer of them stay."""
    dims = op.dim_names
    tensor = op.tensors[t]
    counts = []
    for axis in tensor.axes:
        keys, inverse = unique_rows(tiles[:, [dims.index(d) for d, _ in axis.terms]])
        coefs = tuple(c for _, c in axis.terms)
        counts.append(np.array([_window_extent(coefs, tuple(int(x) for x in k)) for k in keys],
                               dtype=float)[inverse.reshape(-1)])
    whole = np.prod(counts, axis=0) if counts else np.ones(len(tiles))
    out = np.zeros((len(tiles), len(dims)))
    for count, axis in zip(counts, tensor.axes):
        live = [d for d, _ in axis.terms if op.bound(d) > 1]
        span = 1 + sum(abs(c) * (tiles[:, dims.index(d)] - 1) for d, c in axis.terms)
        for d, c in axis.terms:
            i = dims.index(d)
            if len(live) <= 1 or not halo:
                new = whole
            else:
                kept = (np.maximum(0, span - abs(c) * tiles[:, i]) if bounds is None
                        else _residue_kept(axis.terms, dims, tiles, span, i, abs(c), int(bounds[i])))
                new = np.maximum(0.0, count - kept) * (whole / count)
            out[:, i] = np.maximum(out[:, i], new)
    return out


def _residue_kept(terms: tuple, dims: tuple[str, ...], tiles: np.ndarray, span: np.ndarray, i: int, c: int,
                  bound: int) -> np.ndarray:
    """(n,) B20: the most values of a window axis (``terms``; ``span`` per tile) a step of a loop on dimension ``i``
    (coefficient ``c``, the layer's ``bound``) can leave in place. The loop's stride is the tile's extent ``e`` times
    the factors of ``i`` between them, ``k e`` with ``k e`` a proper divisor of ``bound`` (the loop has two trips or
    more), so the shift is ``k c e``; the tile's values lie in one residue class modulo ``g`` (the gcd of the
    coefficients of its terms of extent > 1), so a shift ``g`` does not divide keeps none of them and one it divides
    at most ``ceil((span - k c e) / g)``: the most at the least such ``k`` (0 where there is none: no loop on ``i``
    can step, or none keeps any)."""
    e = tiles[:, i]
    g = np.gcd.reduce([np.where(tiles[:, dims.index(d)] > 1, abs(x), 0) for d, x in terms], axis=0)
    g = np.where(g > 0, g, 1)
    kept = np.zeros(len(tiles))
    found = np.zeros(len(tiles), dtype=bool)
    for k in range(1, -(-bound // max(1, int(e.min(initial=bound))))):  # the k with k e < bound for some tile
        step = k * e
        ok = ~found & (step < bound) & (bound % step == 0) & ((c * step) % g == 0)
        kept = np.where(ok, np.ceil(np.maximum(0, span - c * step) / g), kept)
        found |= ok
        if found.all():
            break
    return kept


def _by_count(values: np.ndarray) -> np.ndarray:
    """The distinct ``values``, the most frequent first (B25: the unrollings most nodes need)."""
    distinct, counts = np.unique(values, return_counts=True)
    return distinct[np.argsort(-counts, kind="stable")]


def _prime_count(n: int) -> int:
    """The prime factors of ``n`` counted with multiplicity (B27: a lattice box's level, one prime step per level)."""
    count = 0
    for p in prime_factors(n):
        while n % p == 0:
            n //= p
            count += 1
    return count


def _divisor_min(grid: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """B22: per box of the divisor lattice (``grid`` indexed by each dimension's sorted divisors ``values``), the least
    of ``grid`` over the boxes dividing it: one pass per dimension, each divisor ``v`` in ascending order taking the
    least of its own and of ``v / p``'s for the primes ``p`` dividing it (every proper divisor of ``v`` divides one of
    those), in place on a copy. The divisors are a product of one chain per prime, so the pass is one running minimum
    per prime along its exponent (:func:`_prime_chain`), taken by the compiled :func:`_min_along`."""
    grid = np.array(grid, order="C")  # a copy, the passes in place on it
    for d, vals in enumerate(values):
        if len(vals) == 1:
            continue
        into, source = _prime_chain(tuple(vals.tolist()))
        _min_along(grid.reshape(math.prod(grid.shape[:d]), len(vals), -1), into, source)  # a view of ``grid``
    return grid


@njit(cache=True)
def _min_along(grid: np.ndarray, into: np.ndarray, source: np.ndarray) -> None:
    """:func:`_divisor_min`'s pass along the middle axis of ``grid`` (outer, divisors, inner), in place: for each ``k``
    in turn, position ``into[k]`` takes the least of its own value and position ``source[k]``'s (NaN as
    ``np.minimum``)."""
    for o in range(grid.shape[0]):
        for k in range(into.shape[0]):
            a, b = into[k], source[k]
            for i in range(grid.shape[2]):
                y = grid[o, b, i]
                if y < grid[o, a, i] or y != y:
                    grid[o, a, i] = y


def _shifted(grid: np.ndarray, values: list[np.ndarray], d: int, factor: int) -> np.ndarray:
    """B43: per box ``X`` of the divisor lattice's ``grid``, the value at ``X`` with ``X_d / factor`` in place of
    ``X_d`` (inf where ``factor`` does not divide ``X_d``)."""
    into, source = _shift_places(tuple(values[d].tolist()), factor)
    out = np.full(grid.shape, np.inf)
    np.moveaxis(out, d, 0)[into] = np.moveaxis(grid, d, 0)[source]
    return out


@lru_cache(maxsize=4096)
def _shift_places(vals: tuple[int, ...], factor: int) -> tuple[list[int], list[int]]:
    """:func:`_shifted`'s places among the sorted divisors ``vals``: those divisible by ``factor`` and their
    quotients'."""
    index = {v: k for k, v in enumerate(vals)}
    into = [k for k, v in enumerate(vals) if v % factor == 0]
    return into, [index[vals[k] // factor] for k in into]


def _ratio_min(grid: np.ndarray, values: list[np.ndarray], d: int, low: int) -> np.ndarray:
    """B43: per box ``X`` of the divisor lattice's ``grid``, the least of the values at ``X`` with ``X_d`` replaced by
    a divisor ``v`` of it with ``X_d / v >= low``."""
    vals = values[d].tolist()
    out = np.full(grid.shape, np.inf)
    into, source = np.moveaxis(out, d, 0), np.moveaxis(grid, d, 0)
    for k, v in enumerate(vals):
        for i, u in enumerate(vals):
            if v % u == 0 and v // u >= low:
                into[k] = np.minimum(into[k], source[i])
    return out


def _proper_min(grid: np.ndarray, values: list[np.ndarray], d: int) -> np.ndarray:
    """B43: per box ``X`` of the divisor lattice, the least of ``grid`` (already least over each box's divisors) at
    the boxes ``X`` with ``X_d`` replaced by a proper divisor: the least over the primes ``p`` dividing ``X_d`` at
    ``X_d / p`` (every proper divisor divides one of those)."""
    out = np.full(grid.shape, np.inf)
    for p in sorted({p for v in values[d].tolist() for p in prime_factors(int(v))}):
        out = np.minimum(out, _shifted(grid, values, d, p))
    return out


@lru_cache(maxsize=4096)
def _prime_chain(vals: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_divisor_min`'s steps over the sorted divisors ``vals`` for :func:`_min_along`, ``into`` (k,) and
    ``source`` (k,): per prime ``p`` and exponent ``e >= 1`` of it, the positions of the divisors with exactly ``e``
    factors ``p`` and those of their quotients by ``p`` (exponent ``e - 1``, done before them). A step's positions are
    not its sources, so it may be taken position by position."""
    index = {v: i for i, v in enumerate(vals)}
    into, source = [], []
    for p in sorted({p for v in vals for p in prime_factors(v)}):
        exponent = [_multiplicity(v, p) for v in vals]
        for e in range(1, max(exponent) + 1):
            step = [i for i, v in enumerate(vals) if exponent[i] == e]
            into += step
            source += [index[vals[i] // p] for i in step]
    return np.array(into, dtype=np.int64), np.array(source, dtype=np.int64)


def _lattice_places(budgets: np.ndarray, factors: np.ndarray, values: np.ndarray) -> np.ndarray:
    """B31 (:meth:`LowerBound._rooted_index`): per budget and factor of one dimension, the place of ``budget / factor``
    among the lattice's sorted ``values``, -1 where the factor does not divide the budget or the quotient is off the
    lattice."""
    box, left = np.divmod(budgets[:, None], factors[None, :])
    position = np.full(int(max(values.max(), box.max())) + 1, -1, dtype=np.int64)
    position[values] = np.arange(len(values))  # each value's place on the lattice, -1 off it
    return np.where(left == 0, position[box], -1)


def _multiplicity(n: int, p: int) -> int:
    """How many times the prime ``p`` divides ``n``."""
    count = 0
    while n % p == 0:
        n //= p
        count += 1
    return count


def _lane_box_words(op: Operator, box: np.ndarray, step: np.ndarray | None) -> np.ndarray:
    """(n, T) lower bound of the words of each tensor a lanes' box of ``box`` indices per dimension touches in one
    step. ``step`` (n, D): where known, the box's indices of each dimension are the progression ``base + k x step``
    (one fan-out: a spatial loop's stride is the product of the factors of its dimension below it,
    docs/cost-model.md section 1); an axis of two terms ``c1 d1 + c2 d2`` then takes exactly
    ``a b - max(0, a - v') max(0, b - u')`` values (``a``, ``b`` the counts, ``u' = c1 step1 / g``,
    ``v' = c2 step2 / g``, ``g`` their gcd: the pairs ``(x, y)`` and ``(x + v', y - u')`` give one value, so the
    values are the chains of such pairs, one per pair ``(x, y)`` with ``(x - v', y + u')`` outside the grid). Other
    axes, and every axis without ``step``: :func:`_sumset_words`."""
    out = _sumset_words(op, box)
    if step is None:
        return out
    for j, i1, c1, i2, c2 in _two_term_axes(op):
        a, b = box[:, i1], box[:, i2]
        out[:, j] *= two_term_values(c1 * step[:, i1], c2 * step[:, i2], a, b) / (a + b - 1)
    return out


def _two_term_axes(op: Operator) -> Iterator[tuple[int, int, int, int, int]]:
    """(tensor, dimension 1, coefficient 1, dimension 2, coefficient 2) of every axis ``c1 d1 + c2 d2`` of two
    distinct dimensions with positive coefficients (a sliding window's), the axes whose lanes' words
    :func:`_lane_box_words` and :func:`_open_stride_words` count exactly."""
    for j, index, coefs in axis_plan(op).multi:
        if len(index) == 2 and index[0] != index[1] and min(coefs) > 0:
            yield j, index[0], coefs[0], index[1], coefs[1]


def _open_stride_words(op: Operator, box: np.ndarray, limits: np.ndarray) -> np.ndarray:
    """(n, T) B17: :func:`_lane_box_words` of a lanes' box whose one fan-out's strides are not known yet: the indices of
    each dimension ``d`` are still ``base + k x L_d`` (``L_d`` the product of ``d``'s factors below the fan-out), and
    the box's factor times ``L_d`` divides what is left to the fan-out and below (``limits``, n x D), so a two-term
    axis takes at least the least exact count (:func:`_lane_box_words`) over the ``L`` that divide ``limits / box``.
    A stride-2 window ``2 q + s`` over ``Q a S 3`` with ``S`` all in the box (``L_S = 1``) takes ``2 a + 1`` values, not
    the sumset's ``a + 2``. Other axes: :func:`_sumset_words`."""
    out = _sumset_words(op, box)
    for j, i1, c1, i2, c2 in _two_term_axes(op):
        a, b = box[:, i1], box[:, i2]
        keys, inverse = unique_rows(np.stack([a, b, limits[:, i1] // a, limits[:, i2] // b], axis=1))
        least = np.array([_least_count(c1, c2, *(int(x) for x in k)) for k in keys])[inverse.reshape(-1)]
        out[:, j] *= least / (a + b - 1)
    return out


@lru_cache(maxsize=65536)
def _least_count(c1: int, c2: int, a: int, b: int, q1: int, q2: int) -> int:
    """B17: the least exact count of ``c1 x L1 + c2 y L2`` (``x < a``, ``y < b``) over ``L1 | q1``, ``L2 | q2``
    (:func:`_lane_box_words`'s formula)."""
    least = a * b
    for l1 in divisors(q1):
        for l2 in divisors(q2):
            u, v = c1 * l1, c2 * l2
            g = math.gcd(u, v)
            least = min(least, a * b - max(0, a - v // g) * max(0, b - u // g))
    return least


def _dividing(table: np.ndarray, divides: dict[tuple[int, int], np.ndarray], budgets: np.ndarray,
              bounds: np.ndarray) -> np.ndarray:
    """(u, V) per row of ``budgets`` the rows of a legal unrolling ``table`` of the layer's ``bounds`` whose factors
    divide it (``divides``: the rows dividing each (dimension, value), filled as needed)."""
    legal = np.ones((len(budgets), len(table)), dtype=bool)
    for d in range(budgets.shape[1]):
        column = budgets[:, d]
        for n in np.unique(column[column != bounds[d]]).tolist():
            if (d, n) not in divides:
                divides[(d, n)] = n % table[:, d] == 0
            legal[column == n] &= divides[(d, n)]
    return legal


# tiers of :meth:`LowerBound.compute` (docs/search.md "Costly bounds only where they can prune"): each adds terms that
# only raise a bound, so every tier is a lower bound; the search asks for a higher one only where a lower one does not
# already reach the incumbent
_Kept = TypeVar("_Kept")  # what :meth:`LowerBound._of_spatial` keeps

TIER_PAIRS = 0  # B1-B6, B12, B17: exact pairs, best orders, compulsory traffic at the pairs and the lanes, hops, latency
TIER_REFILLS = 1  # and B7-B9, B13, B15, B16 (B23: with placement), B20: capacity per sweep, disjoint footprints, refills
TIER_FULL = 2  # and B11, B14, B18 (with B21), B19, B22, B24-B27, B29, the lanes' joint term, B23's joint term: per-budget tables
# and Pareto fronts, B19's strides

LANE_BOXES = 2_000_000  # B3: most candidate lanes' boxes :meth:`LowerBound._least_ratio` enumerates for one key
REFILL_BOXES = 250_000  # most boxes :meth:`LowerBound._padded_refills` enumerates for one tensor
FEW_TRIPS = 5  # B43: a window loop's trips below this priced one by one, the others together (:meth:`LowerBound._trip_values`)
READ_TABLES = 2  # B25: most chain tables :meth:`LowerBound._read_gains` computes in one call (one per vector of copies)


def _least_last(x: np.ndarray) -> np.ndarray:
    """``x.min(axis=-1)``, the same values (a minimum is exact in any order), as elementwise minima over the columns of a
    short last axis: numpy reduces such an axis row by row, several times slower."""
    out = x[..., 0].copy()
    for i in range(1, x.shape[-1]):
        np.minimum(out, x[..., i], out=out)
    return out


def _reduce_last(ufunc: np.ufunc, x: np.ndarray) -> np.ndarray:
    """``ufunc.reduce(x, axis=-1)`` as elementwise ``ufunc`` over the columns of a short last axis, in their order
    (numpy reduces such an axis row by row, several times slower, as :func:`_least_last`): the same values for the
    exact reductions it is used for (logical and/or, integer products and sums, maxima), the same dtype for inputs of the
    result's dtype (booleans for and/or, int64 for products)."""
    if x.shape[-1] == 0:
        return ufunc.reduce(x, axis=-1)
    out = x[..., 0].copy()
    for i in range(1, x.shape[-1]):
        ufunc(out, x[..., i], out=out)
    return out


def _reduce_levels(ufunc: np.ufunc, x: np.ndarray) -> np.ndarray:
    """``ufunc.reduce(x, axis=1)`` of ``x`` (n, levels, D) as elementwise ``ufunc`` over the levels in their order, as
    :func:`_reduce_last` (the same values for the exact reductions it is used for)."""
    return _reduce_last(ufunc, np.moveaxis(x, 1, -1))


def _lane_live(op: Operator) -> np.ndarray:
    """(T, D) per tensor, the dimensions its lane boxes' words per lane depend on: all but those that are the only
    live term of one of its axes and appear in no other (such a factor ``f`` multiplies both the words of the box and
    its size by ``f``: :func:`_sumset_words`). Setting the others' factors to 1 keeps an unrolling legal and its
    ratio unchanged, so the least ratio over the legal unrollings is the least over those with them at 1."""
    live = np.ones((len(op.tensors), len(op.dim_names)), dtype=bool)
    for j, tensor in enumerate(op.tensors):
        for d in tensor.dims:
            axes = [a for a in tensor.axes if d in a.dims]
            alone = all(op.bound(e) == 1 for e, _ in axes[0].terms if e != d)
            if len(axes) == 1 and alone and sum(e == d for e, _ in axes[0].terms) == 1:
                live[j, op.dim_names.index(d)] = False
    return live


class _RestRows(NamedTuple):
    """B33's facts of one group's ``rest`` rows (:meth:`LowerBound._over_rest`), computed once per call of
    :meth:`LowerBound.compute` and shared by every tensor and nesting order of B20 (:meth:`LowerBound._placed_words`)."""

    short: np.ndarray  # (n, D) where ``rest`` is below the node's cover
    valid: np.ndarray  # (n,) ``rest`` is a box of the layer's lattice
    at: np.ndarray  # (n,) its row there, 0 where none
    spare: np.ndarray  # (T, n) per tensor: ``short`` on a dimension (bound > 1) that does not index it


class LowerBound:
    """Bounds of batches of nodes of one operator on one architecture."""

    def __init__(self, op: Operator, arch: ArchSpec, model: CostModel, keeps: np.ndarray,
                 placement: bool = False, both_axes: frozenset[int] = frozenset(),
                 extents: tuple[int, ...] | None = None) -> None:
        """``extents``: the iterations per dimension of the nodes' completions where they differ from the layer's
        bounds (imperfect factorization: the cost model prices the padded nest as a perfect nest of these extents,
        docs/search.md "The optimal mapper over the padded space"); None: the layer's bounds."""
        self.op, self.arch, self.model, self.keeps = op, arch, model, keeps
        self.placement = placement
        self.both_axes = both_axes  # levels whose 2-D fan-out may split a dimension over both axes
        self.L, self.T = len(arch.levels), len(op.tensors)
        self.pairs = tensor_pairs(op, keeps)
        self.fit = Capacity(op, arch, keeps)  # tiles whose exact footprint fits each level
        self.bounds = np.array(extents or [op.bound(d) for d in op.dim_names], dtype=np.int64)
        self.iterations = float(np.prod(self.bounds.astype(float)))
        self.fan = np.array([lv.fanout_size for lv in arch.levels], dtype=float)
        self.hop_energy = np.array([lv.fanout.hop_energy if lv.fanout else 0.0 for lv in arch.levels])
        # B22-B26, B23's joint term: the lowest level with a fan-out (the array their unrollings ``U`` open), if any
        self.array = next((m for m in range(len(arch.levels)) if arch.levels[m].fanout is not None), None)
        self.out = next(j for j, t in enumerate(op.tensors) if t.role == "output")
        # (L, T, 3) read, fill, update; the output's reads and updates, and its DRAM bytes below, at the final
        # output width (at most the partial sums'): final values may move at it (docs/cost-model.md 2b)
        self.energy = model.action_energy.copy()
        self.energy[:, self.out, [0, 2]] *= model.final_scale[self.out]
        # (L, T) read energy of the parent's reads and accumulate reads, and (L, T) update energy of a pair that cannot
        # carry final values: always at the partial sums' width (the model scales only drains and final updates)
        self.read_full = model.action_energy[:, :, 0]
        self.update_full = model.action_energy[:, :, 2]
        self.out_words = float(op.tensors[self.out].size(dict(zip(op.dim_names, self.bounds.tolist()))))
        self.reduction = np.array([d not in op.tensors[self.out].dims for d in op.dim_names])
        self.registers = {j for j, t in enumerate(op.tensors) if t.role in arch.mac.operand_registers}
        self.word_bytes = np.array([arch.bytes_of(t.role) for t in op.tensors]) * model.final_scale
        self.orders, self.window = best_orders(op)
        self.op_dims = len(op.dim_names)
        self.capacity = np.array([[_words_held(arch, i, t.role) for t in op.tensors] for i in range(self.L)])
        self.touched_all = touched_lower(op, self.bounds[None, :], contiguous=True)[0]
        self.indexes = np.array([[d in t.dims for d in op.dim_names] for t in op.tensors])  # (T, D)
        self.plain = ~self.window.any(axis=1)  # tensors without a sliding-window axis (B9)
        # (T, D) B13: the dimensions on an axis of the tensor where they are the only term moving (any move of them is
        # disjoint), and the Pareto tiles of each level by the words a step of each dimension brings in
        self.disjoint = self.indexes & ~self.window
        self._step_tiles: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}
        self._spatial_memo: tuple[np.ndarray | None, dict] = (None, {})  # :meth:`_of_spatial`
        # per tensor, per axis: its dimensions' columns and its count over the whole layer (B3, :meth:`_instance_words`)
        self._axes = [[(np.array([op.dim_names.index(d) for d, _ in a.terms]),
                        window_extent(tuple(c for _, c in a.terms), tuple(op.bound(d) for d, _ in a.terms)))
                       for a in tensor.axes] for tensor in op.tensors]
        # (L, T) P1 holds for the tensor's tile at the level: a tile below more loops moves no fewer words
        self.monotone = np.array([[bool(self.plain[t]) or lv.halo_reuse is True for t in range(self.T)]
                                  for lv in arch.levels])
        self._tiles: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        # B20 (:meth:`_placed_ratio`): the layer's lattice of boxes, the least ratio per box by (level, tensor, outer
        # tensors), the boxes dividing each cover, and the least per (those, cover)
        self._lattice: np.ndarray | None = None
        self._placed_tiles: dict[tuple, np.ndarray] = {}
        self._held_fits: dict[tuple[int, frozenset[int]], np.ndarray] = {}  # :meth:`_fits_held`
        self._lattice_touched: tuple[np.ndarray, np.ndarray] | None = None  # :meth:`_lattice_words`
        self._divisors: dict[tuple[int, ...], np.ndarray] = {}
        self._placed_least: dict[tuple, float] = {}
        self._lattice_values: list[np.ndarray] = []  # B30 (:meth:`_over_rest`): the lattice's values per dimension
        self._lattice_index: tuple[np.ndarray, np.ndarray] | None = None  # B30 (:meth:`_lattice_positions`)
        self._sets: tuple[np.ndarray, np.ndarray] | None = None  # B33 (:meth:`_loop_sets`)
        self._divisor_least: dict[tuple, object] = {}  # B33 (:meth:`_short_least`): per B20 key, its divisors' least
        # and its values per row of the lattice (:meth:`_by_rest`)
        self._rest_dims: dict[tuple, tuple] = {}  # B33 (:meth:`_dims_ratio`): per B20 key, its table's parts
        self._copies_cache: dict[tuple[tuple[int, ...], int], np.ndarray] = {}  # B11 (:meth:`_pareto_copies`)
        self.lane_live = _lane_live(op)  # (T, D) B3: the dimensions a lane box's words per lane depend on
        self._ratio_cache: dict[tuple[int, tuple[int, ...], tuple[int, ...]], float] = {}  # B3 (:meth:`_least_ratio`)
        self._front_cache: dict[tuple, object] = {}  # B3/B4: tables, fronts, least points (:meth:`_joint_fronts`)
        self._chains: dict[tuple, list] = {}  # B18: the root order's effects per live loops (:meth:`_root_chains`)
        skip = model.ops_count / op.operations if op.operations else 1.0  # effectual share (sparse operands)
        self.step_cycles = skip * model.unit.cycles  # B6: compute cycles per temporal step
        self.least_compute = model.unit.least_cycles(model.ops_count)
        transfer = arch.dram.transfer
        self.cycles_per_byte = (float(dram_transfer_seconds(transfer, 1.0, 0.0)) * arch.clock_mhz * 1e6
                                if transfer is not None else 0.0)

    def _of_spatial(self, spatial: np.ndarray, key: tuple, make: Callable[[], _Kept]) -> _Kept:
        """``make()``, kept (an array read-only) for ``spatial`` while it is the spatial array of the latest call
        (:meth:`compute` starts anew): the pairs of one call share their levels' products."""
        if self._spatial_memo[0] is not spatial:
            self._spatial_memo = (spatial, {})
        got = self._spatial_memo[1].get(key)
        if got is None:
            got = make()
            if isinstance(got, np.ndarray):
                got.setflags(write=False)
            self._spatial_memo[1][key] = got
        return got

    def _instances(self, spatial: np.ndarray, level: int) -> np.ndarray:
        """(n,) instances of ``level`` (product of the spatial factors above it)."""
        return self._of_spatial(spatial, ("instances", level),
                                lambda: _reduce_last(np.multiply, self._fanned(spatial, level)).astype(float))

    def _fanned(self, spatial: np.ndarray, level: int) -> np.ndarray:
        """(n, D) per dimension the product of the spatial factors above ``level``."""
        if level >= self.L - 1:
            return self._of_spatial(spatial, ("fanned", level), lambda: np.ones(spatial[:, 0].shape, dtype=np.int64))
        return self._of_spatial(spatial, ("fanned", level),
                                lambda: self._fanned(spatial, level + 1) * spatial[:, level + 1])

    def _cover(self, spatial: np.ndarray, level: int) -> np.ndarray:
        return self._of_spatial(spatial, ("cover", level), lambda: self.bounds[None, :] // self._fanned(spatial, level))

    def order_safe(self, temporal: np.ndarray, j: int) -> np.ndarray:
        """(n, T): B2 applies to the tensor: no non-trivial loop of level ``j`` moves its window axes, or (B2 for a
        sliding-window tensor) only one of them indexes it at all and the child level ``j - 1`` does not keep halos
        only across its innermost loop (``halo_reuse: innermost``, where the loop innermost decides the reuse)."""
        moving = temporal[:, j] > 1  # (n, D)
        safe = ~(moving[:, None, :] & self.window[None, :, :]).any(axis=2)
        if self.arch.levels[j - 1].halo_reuse != "innermost":
            safe |= (moving[:, None, :] & self.indexes[None, :, :]).sum(axis=2) <= 1
        return safe

    def crossed(self, child: int, parent: int) -> list[int]:
        """The levels with a fan-out that a word moving between ``child`` and ``parent`` crosses."""
        return [m for m in range(child + 1, parent + 1) if self.arch.levels[m].fanout is not None]

    def hop_per_word(self, pr: Pair) -> float:
        """The hop energy of one word of ``pr`` through the fan-outs it crosses."""
        return self.hop_energy[self.crossed(pr.child, pr.parent)].sum()

    def compute(self, cost: CostBatch, temporal: np.ndarray, spatial: np.ndarray, order: np.ndarray,
                fixed_from: int, known: int,
                objective: str,
                by_order: list[CostBatch] | None = None, safe: np.ndarray | None = None,
                tile: np.ndarray | None = None, tier: int = TIER_FULL) -> np.ndarray:
        """Lower bound (B1-B9) of ``objective`` for nodes whose spatial factors are fixed on levels ``>= fixed_from``
        (``temporal[:, 0]``: the iterations left to the levels below) and whose pairs with child ``>= known`` are exact in ``cost`` (a completion of each node).
        ``by_order[t]``: completions with tensor ``t``'s best level-``known`` order (B2), used for the
        pairs of child ``known - 1`` where ``safe[:, t]``. ``tile`` (n, D): the tile of level ``fixed_from - 2``
        when it is known though that level's parent's factors are not (:meth:`tile_bound`). ``tier``: the terms up to
        that tier (:data:`TIER_FULL`: all), a lower bound at every tier."""
        self._spatial_memo = (spatial, {})
        n = spatial.shape[0]
        rest = temporal[:, 0]
        sweeps = temporal[:, fixed_from:].prod(axis=(1, 2)).astype(float)
        refills = tier >= TIER_REFILLS
        full = tier >= TIER_FULL
        # the tiles' words and B8's runs: for the refills' tier and above only
        tile_words = touched_lower(self.op, rest, contiguous=True) if refills else None
        runs = self.runs(temporal, order, fixed_from, known) if refills else None
        energy = cost.energy_breakdown[:, self.L + 1].copy()  # MACs
        dram = np.zeros(n)
        dram_words = np.zeros((n, self.T))  # B6: per tensor, a lower bound of the backing store's reads and updates
        hop = np.zeros((n, self.L))  # lower bound of the words through each fan-out
        level_known = np.ones(self.L, dtype=bool)
        touched_all = self.touched_all
        own_words = touched_lower(self.op, tile, contiguous=True) if tile is not None and refills else None
        options = None  # B11 at the tile bound: what level fixed_from - 1's fan-out may unroll, jointly
        if self.placement and tile is not None and self.arch.levels[fixed_from - 1].fanout is not None and full:
            options = self._unrolled(rest // tile, fixed_from - 1)
        forced: dict[int, np.ndarray] = {}  # B9: per child level, (n, T) energy a full refill per event adds
        # B10/B20 (placement): per child level, tensor -> (h, per word, copies) of the plain tensors and window inputs
        placed: dict[int, dict[int, tuple]] = {}
        wholes: dict[int, dict[int, tuple]] = {}  # B11 (placement): per child level, tensor -> (box words, increment)
        windowed: dict[int, np.ndarray] = {}  # B13: per child level, (n, D) energy a step of each dimension adds
        # B14: (child level, energy per word) of the output's drains
        drain = self._joint_drain(fixed_from, tile) if full else None
        counted = np.zeros(n)  # B14: what the bound counts for that pair (and the refills at its child level)
        paired: dict[int, np.ndarray] = {}  # B25: per tensor other than the output, its pair's bound at B14's child
        beside: list[np.ndarray] | None = None  # B20 at B14's child: per nesting order, the others' and output's refills
        # B18 (widened space, the root's factor stage): the plain tensors' pairs whose bound takes their own best root order
        joint: list[tuple] | None = ([] if (self.placement or self.both_axes) and by_order is not None and full
                                     and known == fixed_from == self.L - 1 else None)
        refilled: dict[int, np.ndarray] = {}  # per child level, the refills (B9-B11, B13) the bound adds there
        top: dict[int, tuple] = {}  # B26: per tensor, its pair with the backing store, (pair, energy, words, hop energy)
        for pr in self.pairs:
            t, ch, p = pr.tensor, pr.child, pr.parent
            if ch >= known and not (self.placement and ch == known and not self.monotone[ch, t]):
                e, d, h = self._exact(cost.counts, pr)
                if self.placement and ch == known:  # P1: the child's placement is open, a lower bound only
                    level_known[[ch, p]] = False
                if t == self.out:  # B29: the pair's partial sums at full width, as every completion moves them
                    e = e + self._partial_widths(cost, pr)
                if self.placement and 0 <= ch == known and refills and not self.plain[t] and t != self.out:  # B40
                    e, d, h = self._run_fills(pr, temporal, spatial, fixed_from, tile, e, d, h)
            else:
                level_known[p] = False
                if ch >= 0:
                    level_known[ch] = False
                e, d, h = self._compulsory(pr, spatial, rest, fixed_from, touched_all, tile)
                if 0 <= ch < fixed_from - 1 <= p and refills:
                    held = np.full(n, self.capacity[ch, t])
                    if tile is not None and ch == fixed_from - 2:  # a child holds at most its tile
                        held = np.minimum(held, own_words[:, t])
                    if joint is not None and self.plain[t] and p == self.L - 1:
                        joint.append((pr, held, None, e, h, None))
                    e, d, h = (np.maximum(x, y) for x, y in
                               zip((e, d, h), self._sweeps(pr, spatial, fixed_from, sweeps, runs[:, t],
                                                           tile_words[:, t], held)))
                if by_order is not None and ch == known - 1 and (self.monotone[ch, t] or not self.placement):
                    ex = self._exact(by_order[t].counts, pr)
                    if t == self.out:  # B29: its copies' drains (every fan-out above ``ch`` fixed at this stage)
                        ex = (ex[0] + self._copies_drained(spatial, ch, by_order[t].counts["drains"][:, ch, t]),
                              *ex[1:])
                    e, d, h = (np.where(safe[:, t], x, y) for x, y in zip(ex, (e, d, h)))
                    if joint is not None and self.plain[t]:  # B21: with the growth of its reloads per refill
                        joint.append((pr, None, safe[:, t], e, h, self._reload_growth(by_order[t].counts, pr)))
                if self.placement and ch >= 0 and refills and not self.plain[t] and t != self.out:  # B40
                    e, d, h = self._run_fills(pr, temporal, spatial, fixed_from, tile, e, d, h)
                if joint is not None and not self.plain[t] and ch == known - 1 and p == self.L - 1:
                    joint.append((pr, None, None, e, h, None))  # B21: a sliding-window tensor's, by its disjoint loops
            crossed = self.crossed(ch, p)
            hop_per_word = self.hop_energy[crossed].sum()
            if drain is not None and t == self.out and ch == drain[0]:
                counted = counted + e + h * hop_per_word
            elif drain is not None and ch == drain[0] and tile is None:  # B25: its energy and hops as counted
                paired[t] = e + h * hop_per_word
            if p == self.L - 1 and ch >= 0:
                top[t] = (pr, e, h, hop_per_word)
            whole = None  # B11: (box words, energy the pair adds when refilled whole at every event)
            if self.placement and 0 <= ch <= known and self.plain[t] and full:
                box = self._box(temporal, spatial, ch, fixed_from, tile)
                if box is not None:
                    box_words = self._box_words(spatial, ch, box)[0][:, t]
                    unrolled = options if ch == fixed_from - 2 else None  # (n, V, T) or None: V = 1
                    fe, fd, fh = self._refilled_whole(pr, spatial, fixed_from, rest, tile, box, unrolled=unrolled)
                    d = np.where(self._hold(ch, {t: box_words}), d, np.maximum(d, fd.min(axis=1)))  # t alone
                    base = np.maximum(0.0, fe + fh * hop_per_word - (e + h * hop_per_word)[:, None])  # (n, V)
                    per_loop = base[:, :, None]  # by unrolling and the level's outermost loop (B11)
                    trips = self._level_trips(temporal, ch, fixed_from, box)
                    if trips is not None:
                        live = trips > 1
                        per_loop = np.where(live[:, None, :], base[:, :, None], np.inf)
                        for k in np.nonzero(live.any(axis=0) & ~self.indexes[t])[0]:
                            scale = np.where(live[:, k], trips[:, k], 1).astype(float)
                            ge, _, gh = self._refilled_whole(pr, spatial, fixed_from, rest, tile, box, scale, unrolled)
                            per_loop[:, :, k] = np.where(live[:, k, None], np.maximum(
                                0.0, ge + gh * hop_per_word - (e + h * hop_per_word)[:, None]), np.inf)
                        per_loop[~live.any(axis=1)] = base[~live.any(axis=1), :, None]
                    whole = (box_words, base.min(axis=1), per_loop.reshape(n, -1))
            energy += e
            dram += d
            dram_words[:, t] += d / self.word_bytes[t]
            hop[:, crossed] += h[:, None]
            if 0 <= ch < known and self.plain[t] and refills:  # B9 (a child whose tile is known: that tile's ratio)
                per_word = self.energy[ch, t, 0 if t == self.out else 1] + hop_per_word
                if ch == fixed_from - 1:
                    ratio = tile_words[:, t] / rest.prod(axis=1)
                elif tile is not None and ch == fixed_from - 2:
                    ratio = own_words[:, t] / tile.prod(axis=1)
                elif self.placement:  # B9 of the level's whole box, which may not fit: the largest box's ratio
                    ratio = (tile_words[:, t] / rest.prod(axis=1) if tile is None
                             else own_words[:, t] / tile.prod(axis=1))
                else:
                    ratio = self._refill_ratio(rest if tile is None else tile, ch)[:, t]
                words = self.iterations * ratio
                copies = None
                drained = None  # B16: the output pair's energy with its parent's side, the tile drained every event
                if t == self.out:  # each drained word but the first touches (outputs x copies) is reloaded
                    copies = self._copies(spatial, rest, fixed_from, ch, tile)
                    # B16; with placement B23: ``words`` is the whole box's (B9 under placement), which every
                    # placement of the output's tile drains at least (docs/search.md, "B23")
                    drained = self._drained_pair(words, pr, copies, spatial, rest, fixed_from, tile, hop_per_word)
                    words = self._reloaded(words, copies)
                    per_word = self.energy[ch, t, :2].min() + hop_per_word
                extra = np.maximum(0.0, words - h) * per_word
                if drained is not None:
                    extra = np.maximum(extra, drained - (e + h * hop_per_word))
                if whole is not None:  # the same box refilled whole: the larger of the two increments
                    extra = np.maximum(extra, whole[1])
                    whole = (whole[0], extra, np.maximum(whole[2], extra[:, None]))
                forced.setdefault(ch, np.zeros((n, self.T)))[:, t] = extra
                if self.placement and t == self.out:  # B23: B20's output words take the parent's side too
                    side = (functools.partial(self._drained_pair, pr=pr, at_child=copies, spatial=spatial, rest=rest,
                                              fixed_from=fixed_from, tile=tile, hop_per_word=hop_per_word),
                            e + h * hop_per_word)
                    placed.setdefault(ch, {})[t] = (h, per_word, copies, side)
                elif self.placement:
                    placed.setdefault(ch, {})[t] = (h, per_word, copies)
            elif 0 <= ch < known and self.placement and t != self.out and refills:  # B20: a window input's own tiles
                placed.setdefault(ch, {})[t] = (h, self.energy[ch, t, 1] + hop_per_word, None)
                if ch == fixed_from - 1 and full and self.monotone[ch, t]:  # B38: B19 of the whole tile (P1)
                    windowed[ch] = windowed.get(ch, 0.0) + self._step_reads(pr, e, h, temporal, spatial, rest, fixed_from,
                                                                            hop_per_word)
            elif 0 <= ch < known and t != self.out and refills:  # B13: a sliding-window input
                per_word = self.energy[ch, t, 1] + hop_per_word
                steps = self._window_refills(t, ch, temporal, rest, tile, fixed_from, h, per_word)
                if ch == fixed_from - 1 and full:  # B19: every loop's trips and stride known, so the wraps' words too
                    steps = np.maximum(steps, self._step_reads(pr, e, h, temporal, spatial, rest, fixed_from, hop_per_word))
                windowed[ch] = windowed.get(ch, 0.0) + steps
            if whole is not None:
                wholes.setdefault(ch, {})[t] = whole
        energy += hop @ self.hop_energy
        innermost: dict[int, tuple] = {}  # B15: per child level refilled by B9/B13 alone, (extra, left, by_dim, refills)
        for ch in sorted(set(forced) | set(wholes) | set(windowed) | set(placed)):  # loops left above the child
            left = (rest // rest if ch == fixed_from - 1 else rest // tile if tile is not None and ch == fixed_from - 2
                    else rest)  # (rest / tile), or rest
            extra = forced.get(ch, np.zeros((n, self.T)))
            if ch in wholes:
                refills = self._held_refills(wholes[ch], extra, temporal, left, fixed_from, ch)
                if ch in windowed:  # B38 beside B11: each a bound of the refills at the child
                    refills = np.maximum(refills, self._innermost_refills(extra, temporal, left, fixed_from,
                                                                          windowed[ch]))
            else:
                refills = self._innermost_refills(extra, temporal, left, fixed_from, windowed.get(ch))
            if ch in placed:  # B20 (B10 folded into it)
                loops = (self._tile_loops(temporal, fixed_from, ch, tile) if tile is not None and ch == fixed_from - 2
                         else self._level_loops(temporal, fixed_from, ch))
                own, *parts = self._placed_refills(placed[ch], spatial, ch, *loops)
                refills = np.maximum(refills, own)
                if drain is not None and ch == drain[0]:
                    beside = parts
            if ch not in placed and ch not in wholes:
                innermost[ch] = (extra, left, windowed.get(ch), refills)
            energy += refills
            refilled[ch] = refills
            if drain is not None and ch == drain[0]:
                counted = counted + refills
        coupled = self._coupled_refills(innermost, temporal, rest, tile, fixed_from)  # B15
        energy += coupled
        if drain is not None:  # B14 stays a bound with more in ``counted`` (a term moved from the rest to it)
            counted = counted + coupled
        # B3/B4 at the lanes, one unrolling for all; its Pareto points with the lanes for EDP
        fronts = [self._joint_lanes(spatial, rest, fixed_from, tile, front=objective == "edp") if full
                  else (np.zeros((n, 1)), None)]
        if drain is not None:  # B14: a joint sum that also holds the output pair's drains (its least: one copy) and the
            # parent's update of every output word, in place of ``counted`` (that pair and its child's refills) when larger
            extra, lanes = self._joint_lanes(spatial, rest, fixed_from, tile, objective == "edp", drains=True)
            first = self.out_words * (drain[1] + drain[2])
            replaced = counted - first
            if beside is not None:  # B20's other tensors beside B14 (at its largest point: sound for every point)
                pair = counted - refilled[drain[0]] - coupled  # the output pair's own bound
                most = extra.max(axis=1) + first - pair
                others, outs = beside
                # B23: per nesting order, the output pair's whole energy jointly with the lanes, when larger
                by_order = self._joint_drained(placed[drain[0]], spatial, rest, fixed_from, tile, drain[0])
                by_order = most[None, :] if by_order is None else np.maximum(most[None, :], by_order - pair[None, :])
                replaced = replaced - self._beside_drains(others + by_order - most[None, :], outs, by_order)
            fronts.append((np.maximum(0.0, extra - replaced[:, None]), lanes))
        # B34: the refetches one shared buffer forces across DRAM's iterations, on pairs (those of its level with the
        # backing store) apart from the lanes' (and B14's, B22's, B24's where B14's child is below that level): added
        shared, beside_drain = np.zeros(n), np.zeros(n)
        if full and fixed_from <= self.L - 1 and self.out in top:
            spent = {ch: v + (coupled if ch in innermost else 0.0) for ch, v in refilled.items()}
            value = self._shared_refetch(top, temporal, spatial, spent,
                                         order[:, self.L - 1] if known < self.L - 1 else None)
            if value is not None:
                shared = np.maximum(0.0, value)
                beside_drain = shared if drain is None or drain[0] != top[self.out][0].child else beside_drain
        lanes_only = np.max([extra[:, 0] for extra, _ in fronts], axis=0)
        added = np.max([extra[:, 0] + (shared if k == 0 else beside_drain) for k, (extra, _) in enumerate(fronts)],
                       axis=0)
        if joint:  # B18 in place of those pairs' own bounds and the refills at their children (docs: what it replaces)
            least, now = self._root_order(joint, temporal, spatial, fixed_from, sweeps, tile_words, runs)
            children = {pr.child for pr, *_ in joint}
            keep = lanes_only  # the lanes' joint terms that still hold beside it (not B34: B18 replaces its pairs)
            if drain is not None and drain[0] in children:  # B14 counted the refills at its child: without them
                keep = fronts[0][0][:, 0]
                if not any(pr.tensor == self.out and pr.child == drain[0] for pr, *_ in joint):
                    alone = counted - refilled.get(drain[0], 0.0) - self.out_words * (drain[1] + drain[2])
                    keep = np.maximum(keep, np.maximum(0.0, extra[:, 0] - alone))
            # B15's coupled refills come out too: B18 was derived (and is tested) with B9-B11/B13 as the refills at
            # its children; what it replaces may only be over-counted (a weaker bound), never under-counted
            spent = now + sum(refilled.get(c, 0.0) for c in children) + coupled
            added = np.maximum(added, least - spent + keep)
            # EDP's Pareto points of the lanes' own joint term (other pairs than B18's) hold beside it too
            fronts[0] = (fronts[0][0] + np.maximum(0.0, least - spent)[:, None], fronts[0][1])
        if drain is not None and drain[0] in placed and tile is None:  # B22: the refills at B14's child jointly with
            # its unrolling (a node's bound only: at the tile bound, where B23 lets B14 hold, each instance runs the
            # tile over ``U``, not ``bounds / U``, which B22's chains do not price)
            first = self.out_words * (drain[1] + drain[2])
            unrolled = self._unrolled_refills(placed[drain[0]], rest, drain)
            if len(placed[drain[0]]) > 1:  # B25: with the parents' reads, lazily (a tensor besides the output)
                unrolled = np.maximum(unrolled, self._parent_reads(placed[drain[0]], paired, rest, drain))
            added = np.maximum(added, unrolled - (counted - first) + beside_drain)
            spilled = self._spilled_refetch(placed[drain[0]], rest, drain, top, refilled,  # B26: with the refetches
                                            temporal[:, fixed_from:], beside_drain)
            if spilled is not None:  # from the backing store that the on-chip capacity forces, least per unrolling
                added = np.maximum(added, spilled - (counted - first))
            drained = self._rf_drains(placed[drain[0]], rest, drain, top, refilled)  # B27: with the child's own
            if drained is not None:  # refills between the iterations of the loop below B26's prefix
                added = np.maximum(added, drained - (counted - first))
            below = [lv for lv in placed if lv < drain[0]]
            if below:  # B24: with the register files below B14's child in the chain, and the output's parent side
                lower = sum((refilled.get(lv, 0.0) for lv in below), np.zeros(n))
                added = np.maximum(added, self._stacked_refills(placed, rest, drain) - (counted - first) - lower
                                   + beside_drain)
                # B29: B24 with the output's partial sums at full width
                added = np.maximum(added, self._partial_sums(placed, rest, drain) - (counted - first) - lower
                                   + beside_drain)
        if objective == "energy":
            return energy + added
        if objective == "dram":
            return dram
        fixed = spatial[:, fixed_from:].prod(axis=(1, 2)).astype(float)
        lanes = fronts[0][1]  # every front ends at the largest legal unrolling
        most = None if lanes is None else fixed * lanes.max(axis=1)  # the largest legal unrolling: ``_parallel``'s
        latency = self._latency(cost, spatial, rest, fixed_from, level_known, dram, dram_words, tile, most)
        if objective == "latency":
            return latency
        edp = (energy + added) * latency
        for extra, lanes in fronts:  # EDP with the energy and the compute steps of each Pareto unrolling together
            if lanes is None:
                continue
            joint = np.full(len(edp), np.inf)
            for i in range(extra.shape[1]):
                joint = np.minimum(joint, (energy + extra[:, i]) * self._latency(
                    cost, spatial, rest, fixed_from, level_known, dram, dram_words, tile, fixed * lanes[:, i]))
            edp = np.maximum(edp, joint)
        return edp

    def padded_root(self, cost: CostBatch, objective: str, largest: np.ndarray) -> float:
        """The padded root bound: a lower bound of ``objective`` over every mapping of the layer whatever its padded
        extents (the padded space's root, docs/search.md "The optimal mapper over the padded space"), from this bound
        built for the layer's bounds ``B`` (``extents`` None). ``cost``: one mapping of the layer (its MAC energy);
        ``largest``: the largest extent per dimension the padding allows.

        The cost model prices a mapping of extents ``P >= B`` as a perfect nest of ``P`` (docs/cost-model.md section
        1), so only terms that cannot fall as ``P`` grows are taken, each at ``P = B``:

        * the MAC energy and the unit's least cycles (the layer's operations);
        * each pair's compulsory words (B3 with nothing fixed: a larger box touches a superset of words);
        * the lanes' words of a plain tensor, ``prod(P) / copies`` with its copies at most ``min(F, prod(P) over the
          dimensions not indexing it)`` (``F``: the lanes under one parent instance, the product of the fan-out
          sizes in between; no divisibility, which is what padding changes), so ``max(prod(P) / F, prod(P) over its
          dimensions)``; a sliding-window tensor's at least one word per step and parent instance, ``prod(P) / F``,
          and its touched words; the output's lane updates at the narrower of the final and the partial sums' width;
        * with read-modify-write, the accumulate reads of all but the first touches, ``out(P) x (prod(P) over the
          reduction dimensions / copies below - copies above)``, the copies below at most ``min(F, prod(P) over
          them)`` and above at most the product of the fan-out sizes above the parent (B4 without divisibility);
        * the hops of those words, and the refills of :meth:`_padded_refills`;
        * the latency's compute cycles with every lane busy and the backing store's cycles of the DRAM words bound."""
        n, D = 1, self.op_dims
        bounds = self.bounds.astype(float)
        ones = np.ones((n, self.L, D), dtype=np.int64)
        energy = cost.energy_breakdown[:1, self.L + 1].copy()  # MACs: the layer's operations
        dram, dram_words, hop = np.zeros(n), np.zeros((n, self.T)), np.zeros((n, self.L))
        out_words = self.out_words
        for pr in self.pairs:
            t, ch, p = pr.tensor, pr.child, pr.parent
            crossed = self.crossed(ch, p)
            if ch >= 0:
                e, d, h = self._compulsory(pr, ones, self.bounds[None, :], self.L, self.touched_all)
            elif t in self.registers:
                continue
            else:
                lanes = float(np.prod(self.fan[crossed]))
                if self.plain[t]:
                    words = max(self.iterations / lanes, float(np.prod(bounds[self.indexes[t]])))
                else:
                    words = max(self.iterations / lanes, float(self.touched_all[t]))
                if t == self.out:
                    e = words * min(self.energy[p, t, 2], self.update_full[p, t])
                    if self.arch.levels[p].read_modify_write:
                        above = float(np.prod(self.fan[p + 1:]))
                        per_out = max(float(np.prod(bounds[self.reduction])) / lanes, 1.0) - above
                        e = e + max(0.0, per_out) * out_words * self.read_full[p, t]
                else:
                    e = words * self.energy[p, t, 0]
                e, d, h = np.array([e]), np.array([words * self.word_bytes[t] if p == self.L - 1 else 0.0]), \
                    np.array([self.iterations])
            energy += e
            dram += d
            dram_words[:, t] += d / self.word_bytes[t]
            hop[:, crossed] += h[:, None]
        energy += hop @ self.hop_energy + self._padded_refills(largest)
        if objective == "energy":
            return float(energy[0])
        if objective == "dram":
            return float(dram[0])
        latency = self._latency(cost, ones, self.bounds[None, :], self.L, np.zeros(self.L, dtype=bool), dram,
                                dram_words, lanes=np.array([float(self.fan.prod())]))
        return float(latency[0] if objective == "latency" else energy[0] * latency[0])

    def _padded_refills(self, largest: np.ndarray) -> float:
        """The padded root bound's refills (B9 over every padded extent, without per-tensor placement). The innermost
        non-trivial loop above a child level ``c`` advances at each of its ``prod(P) / |x|`` events (``x``: level
        ``c``'s tile, which fits it), and each plain tensor ``t`` it indexes (every axis with one live term) then
        refills its whole tile, ``>= prod(x) over t's dimensions`` words: so ``>= prod(P) / most_t`` fills, with
        ``most_t`` the largest ``prod(x)`` over the dimensions not indexing ``t`` of a box that fits ``c`` (its other
        dimensions at 1: a footprint only shrinks), each at most its ``largest`` extent (no divisibility). The
        output's tile is drained, and all but the first touches of its copies at ``c`` (at most the fan-out sizes
        above ``c``) are read back: ``>= out x (prod(P) over the reduction dimensions / most - copies)`` reloads,
        monotone in ``P``. Each word beyond the compulsory ones (B3) costs the child's fill (drain), the hops in
        between and, where no fan-out lies between child and parent (one child instance per parent instance), the
        parent's read (update). The least over the innermost loop's dimension, summed over the child levels; 0 with
        placement (a level's box need not fit there)."""
        if self.placement:
            return 0.0
        total = 0.0
        dims = self.op.dim_names
        for c in range(self.L - 1):
            extra = np.zeros(self.T)
            for pr in self.pairs:
                t, p = pr.tensor, pr.parent
                live = [[d for d, _ in a.terms if self.op.bound(d) > 1] for a in self.op.tensors[t].axes]
                named = [d for terms in live for d in terms]
                if pr.child != c or not self.plain[t] or any(len(terms) > 1 for terms in live) \
                        or len(named) != len(set(named)):
                    continue
                free = np.nonzero(~self.indexes[t] & (largest > 1))[0]
                if np.prod(largest[free].astype(float)) > REFILL_BOXES:  # as if every box fitted
                    most = float(np.prod(largest[free].astype(float)))
                else:
                    boxes = np.ones((int(np.prod(largest[free])), len(dims)), dtype=np.int64)
                    if len(free):
                        grids = np.meshgrid(*[np.arange(1, int(largest[d]) + 1) for d in free], indexing="ij")
                        boxes[:, free] = np.stack([g.reshape(-1) for g in grids], axis=1)
                    fits = self.fit.fits(c, boxes)
                    if not fits.any():
                        continue
                    most = float(boxes[fits][:, free].prod(axis=1).max()) if len(free) else 1.0
                hop = float(self.hop_per_word(pr))
                one_to_one = not self.crossed(c, p)
                words = self.iterations / most
                if t == self.out:
                    drain = min(self.energy[c, t, 0], self.read_full[c, t]) + hop
                    drain += min(self.energy[p, t, 2], self.update_full[p, t]) if one_to_one else 0.0
                    fill = self.energy[c, t, 1] + hop + (min(self.energy[p, t, 0], self.read_full[p, t])
                                                         if one_to_one else 0.0)
                    red = float(np.prod(self.bounds[self.reduction].astype(float)))
                    reloads = self.out_words * max(0.0, red / most - float(np.prod(self.fan[c + 1:])))
                    extra[t] = max(0.0, words - self.out_words) * drain + reloads * fill
                else:
                    per_word = self.energy[c, t, 1] + hop + (self.read_full[p, t] if one_to_one else 0.0)
                    extra[t] = max(0.0, words - self.touched_all[t]) * per_word
            loops = np.nonzero(largest > 1)[0]
            total += float(min((extra[self.indexes[:, d]].sum() for d in loops), default=extra.sum()))
        return total

    def _exact(self, c: dict[str, np.ndarray], pr: Pair) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B1: (energy, DRAM bytes, words through each fan-out in between) of a pair from its exact counts."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        energy = ((c["reads"][:, p, t] + c["accumulate_reads"][:, p, t]) * self.read_full[p, t]
                  + c["updates"][:, p, t] * self.energy[p, t, 2])
        if ch >= 0:
            energy = energy + c["fills"][:, ch, t] * self.energy[ch, t, 1] + c["drains"][:, ch, t] * self.energy[ch, t, 0]
            hop = c["fills"][:, ch, t] + c["drains"][:, ch, t]
        else:
            hop = np.zeros(len(energy)) if t in self.registers else np.full(len(energy), self.iterations)
        dram = ((c["reads"][:, p, t] + c["updates"][:, p, t]) * self.word_bytes[t] if p == self.L - 1
                else np.zeros(len(energy)))
        return energy, dram, hop

    def _partial_widths(self, cost: CostBatch, pr: Pair) -> np.ndarray:
        """(n,) B29 at an exact output pair: what :meth:`_exact`'s final width leaves out where ``cost``'s completion
        moves partial sums, its child's drains below the lowest level whose drains carry final values and its parent's
        updates below the lowest whose updates do (docs/cost-model.md 2b). Those levels depend only on the loops above
        the child's tile, the copies over the fan-outs above it and whether a word crosses the pair twice: the same in
        every completion where the child's level and those above are fixed. Where the child's placement is open (P1,
        ``cost`` a completion with its tile holding all of its level's loops), every placement only adds loops of that
        level, inside those above, over its tile, and moves no fewer words: a spill or a second crossing stays one."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        c = cost.counts
        extra = np.where(cost.final_updates > p, c["updates"][:, p, t] * (self.update_full[p, t] - self.energy[p, t, 2]),
                         0.0)
        if ch >= 0:
            extra = extra + np.where(cost.final_drains > ch,
                                     c["drains"][:, ch, t] * (self.read_full[ch, t] - self.energy[ch, t, 0]), 0.0)
        return extra

    def _copies_drained(self, spatial: np.ndarray, ch: int, drains: np.ndarray) -> np.ndarray:
        """(n,) B29 where every fan-out above level ``ch`` is fixed: with copies of each output word over a spatially
        split reduction above it, no drain of ``ch`` carries a final value (docs/cost-model.md 2b), so each of its at
        least ``drains`` output drains costs the full width's energy, beyond the final width's the pair is priced at."""
        copies = self._fanned(spatial, ch)[:, self.reduction].prod(axis=1)
        return np.where(copies > 1, drains * (self.read_full[ch, self.out] - self.energy[ch, self.out, 0]), 0.0)

    def _compulsory(self, pr: Pair, spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                    touched_all: np.ndarray, tile: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(energy, DRAM bytes, fan-out words) lower bounds of an unknown pair (B3, B4, B5)."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        n = spatial.shape[0]
        is_out = t == self.out
        if ch < 0:
            if t in self.registers:
                return np.zeros(n), np.zeros(n), np.zeros(n)
            parent = self._lane_words(t, spatial, rest, fixed_from, p, tile)
            rmw = is_out and self.arch.levels[p].read_modify_write
            energy = self._lane_energy(t, p, parent, self._copies(spatial, rest, fixed_from, p, tile) if rmw else None)
            dram = parent * self.word_bytes[t] if p == self.L - 1 else np.zeros(n)
            return energy, dram, np.full(n, self.iterations)
        child = np.full(n, touched_all[t])
        if ch + 1 >= fixed_from:  # every spatial factor above the child is fixed
            child = self._instances(spatial, ch) * self._instance_words(spatial, ch, t)
        parent = np.full(n, touched_all[t])
        if fixed_from <= p + 1 < self.L:
            parent = self._instances(spatial, p) * self._instance_words(spatial, p, t)
        energy = child * self.energy[ch, t, 0 if is_out else 1] + parent * self.energy[p, t, 2 if is_out else 0]
        if is_out and ch + 1 >= fixed_from:
            energy = energy + self._copies_drained(spatial, ch, child)
        dram = parent * self.word_bytes[t] if p == self.L - 1 else np.zeros(n)
        return energy, dram, child

    def _lane_words(self, t: int, spatial: np.ndarray, rest: np.ndarray, fixed_from: int, p: int,
                    tile: np.ndarray | None = None) -> np.ndarray:
        """(n,) B3 at the lanes: a lower bound of the words of tensor ``t`` level ``p`` reads (is updated with) for
        the MAC lanes: ``iterations / |S| x`` the distinct words of the lanes' box ``S`` under one ``p`` instance in
        one step (the product of the spatial factors of the fan-outs between the lanes and ``p``; every step's box is
        a translate of it). Fixed fan-outs: per axis of the tensor at least ``sum of its terms' index counts -
        (terms - 1)`` values (``|A + B| >= |A| + |B| - 1`` for finite sets of integers, :func:`_sumset_words`; a
        plain tensor: ``1 / copies``, the product of the factors of the dimensions that do not index it). An
        unfixed fan-out: a plain tensor's copies at most its largest legal unrolling of those dimensions
        (:meth:`_largest`; the output's: its reduction dimensions), a sliding-window tensor's at most all lanes."""
        fans = [m for m in range(p + 1) if self.arch.levels[m].fanout is not None]
        if not fans:  # no fan-out between the lanes and ``p``: a box of one index, one word a step
            return np.full(spatial.shape[0], self.iterations)
        if all(m >= fixed_from for m in fans):
            box = np.ones((spatial.shape[0], self.op_dims), dtype=np.int64)
            for m in fans:
                box = box * spatial[:, m]
            # the fan-out's stride: the levels below it, folded into ``rest``; level 0's fan-out has none below it
            # (level 0's own loops, in ``rest`` at its factor stage, lie above it): stride 1
            step = (rest if fixed_from > 0 else np.ones_like(rest)) if fans == [fixed_from] else None
            return self.iterations * _lane_box_words(self.op, box, step)[:, t] / box.prod(axis=1)
        if not self.plain[t]:
            return self.iterations * self._window_lane_ratio(t, spatial, rest, fixed_from, fans, tile)
        copies = np.ones(spatial.shape[0])
        for m in fans:
            if m >= fixed_from:
                copies *= spatial[:, m][:, ~self.indexes[t]].prod(axis=1)
            else:
                copies *= self._largest(np.where(self.indexes[t][None, :], 1, self._fan_budget(rest, tile, fixed_from, m)), m)
        return self.iterations / copies

    def _lane_energy(self, t: int, p: int, parent: np.ndarray, copies: np.ndarray | None) -> np.ndarray:
        """B3/B4: energy of the lanes' pair of tensor ``t`` whose parent ``p`` moves ``parent`` words for them:
        reads, or for the output updates (more than one per output word are partial sums, at full width) and, with
        ``copies`` (the copies of each output word at ``p``, read-modify-write), the accumulate reads of all but the
        first touches."""
        if t != self.out:
            return parent * self.energy[p, t, 0]
        energy = parent * np.where(parent > self.out_words * (1 + 1e-9), self.update_full[p, t], self.energy[p, t, 2])
        if copies is not None:
            energy = energy + np.maximum(0.0, parent - self.out_words * copies) * self.read_full[p, t]
        return energy

    def _joint_lanes(self, spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                     tile: np.ndarray | None = None, front: bool = True,
                     drains: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """B3/B4 at the lanes taken jointly over the one open fan-out's unrolling ``U``: the lanes' pairs bound each on
        its own (:meth:`_compulsory`) take each its best ``U`` (the least words per lane of each input, the most copies
        of the output); every completion has one ``U`` for all of them, so their energy is at least ``min over U of
        the sum``. Returns (n, V) that sum less the sum of the per-pair minima, and (n, V) the lanes ``|U|``, at the
        Pareto points of (energy, lanes) (:meth:`_joint_fronts`; the least energy first, rows padded by repeating
        their last point): column 0 is what the energy bound adds, and a completion's ``U`` is dominated by one of
        the points (no more energy, no fewer lanes), which B6 uses for EDP. Without ``front`` only the least (n, 1)
        and None. (n, 1) zeros and None unless the node's only fan-out is open (a fixed one's factors would need a
        table each) and no tile below it is known (each tile would need its own front). ``drains``: the sum also holds
        the output's drains across the fan-out (B14, :meth:`_drain_pair`; the caller corrects for what it counted)."""
        fans = [m for m in range(self.L) if self.arch.levels[m].fanout is not None]
        if len(fans) != 1 or fans[0] >= fixed_from or (tile is not None and not self._joint_at_tile(fans[0], fixed_from)):
            return np.zeros((spatial.shape[0], 1)), None
        m = fans[0]
        keys, inverse = unique_rows(self._fan_budget(rest, tile, fixed_from, m))
        rows = inverse.reshape(-1)
        if not front or tile is not None:  # at the tile bound (one budget per tile) the least alone: no EDP front
            return self._joint_least(m, keys, drains)[rows][:, None], None
        missing = [k for k, key in enumerate(keys.tolist()) if ("front", m, drains, tuple(key)) not in self._front_cache]
        if missing:
            self._joint_fronts(m, keys[missing], self._joint_legal(m, keys[missing], drains), drains)
        fronts = [self._front_cache[("front", m, drains, tuple(key))] for key in keys.tolist()]
        V = max(len(e) for e, _ in fronts)
        extra = np.array([np.concatenate([e, np.repeat(e[-1:], V - len(e))]) for e, _ in fronts])
        lanes = np.array([np.concatenate([u, np.repeat(u[-1:], V - len(u))]) for _, u in fronts])
        return extra[rows], lanes[rows]

    def _joint_drain(self, fixed_from: int, tile: np.ndarray | None) -> tuple[int, float, float] | None:
        """B14: :meth:`_drain_pair` of the open fan-out where :meth:`_joint_lanes` applies (the node's only fan-out is
        open and no tile below it is known), else None."""
        fans = [m for m in range(self.L) if self.arch.levels[m].fanout is not None]
        if len(fans) != 1 or fans[0] >= fixed_from:
            return None
        # at the tile bound with placement too (B23: the drains' argument never uses the placement)
        if tile is not None and not self._joint_at_tile(fans[0], fixed_from):
            return None
        return self._drain_pair(fans[0])

    def _joint_at_tile(self, m: int, fixed_from: int) -> bool:
        """B14 and the lanes' joint term at the tile bound (docs/search.md, "The joint terms at the tile bound"): the
        open fan-out ``m`` lies right above the known tile (``m == fixed_from - 1``: every completion's unrolling there
        divides ``rest / tile``, :meth:`_fan_budget`), and no sliding-window tensor's lanes' pair crosses it (its
        per-pair bound at the tile bound counts the box with its known stride, which the table's sumset words need not
        reach; the other lanes' pairs' per-pair bounds are their least over the table's rows of that budget)."""
        if m != fixed_from - 1:
            return False
        return not any(pr.child < 0 and pr.tensor not in self.registers and m <= pr.parent and not self.plain[pr.tensor]
                       for pr in self.pairs)

    def _drain_pair(self, m: int) -> tuple[int, float, float] | None:
        """B14: (child level, energy per drained word, the parent's update energy per word) of the output's pair across
        the fan-out ``m`` (its child below ``m``, its parent at or above it), or None. With ``m`` the only fan-out, the
        child's instances under an unrolling ``U`` touch ``outputs x copies(U)`` words together (``U``'s reduction
        factors: the instances that differ only in them hold copies of the same words, those that differ in another
        dimension disjoint words), and each drains every word it touches at least once (B3), across ``m`` (B5): at the
        drain's and a hop's energy each; the parent is updated with every output word at least once (B3). Wherever a
        child's output tile is placed among its level's loops (per-tensor placement): every word it touches still
        leaves it at least once."""
        pr = next((q for q in self.pairs if q.tensor == self.out and 0 <= q.child < m <= q.parent), None)
        if pr is None:
            return None
        return (pr.child, float(self.energy[pr.child, self.out, 0] + self.hop_energy[m]),
                float(self.energy[pr.parent, self.out, 2]))

    def _joint_fronts(self, m: int, budgets: np.ndarray, legal: np.ndarray, drains: bool = False) -> None:
        """:meth:`_joint_lanes` for budgets not yet cached (rows of ``budgets``, what is left to the open fan-out
        ``m``; ``legal``: their rows of :meth:`_joint_legal`, the rows of :meth:`_joint_table` whose factors divide
        them: the same axis rule), cached per budget: of its legal unrollings ``U``, ``sum_pairs e(U) - sum_pairs
        min_U e(U)`` with ``|U|``, at the Pareto points by ascending energy (the table's rows by ascending energy, the
        most lanes first among equals: a legal row is a point where its lanes exceed every legal row's before it).
        All budgets at once: each pair's least over the legal rows is its first legal row by ascending energy."""
        _, energy, lanes, _ = self._joint_table(m, drains)
        sums = energy.sum(axis=0)
        low = np.array([e[order[legal[:, order].argmax(axis=1)]] for e, order in zip(energy, self._by_pair(m, drains))])
        spent = low.reshape(len(energy), len(budgets)).sum(axis=0)  # (u,) the sum of the per-pair minima
        small = lanes.astype(np.min_scalar_type(int(lanes.max())))  # the same counts in fewer bytes: a faster pass
        most = np.maximum.accumulate(np.where(legal, small[None, :], 0), axis=1)  # lanes >= 1
        points = legal.copy()  # row 0 a point where legal (lanes >= 1), each next one where its lanes exceed all before
        points[:, 1:] &= most[:, 1:] > most[:, :-1]
        for i, budget in enumerate(budgets.tolist()):
            cols = np.nonzero(points[i])[0]
            self._front_cache[("front", m, drains, tuple(budget))] = (np.maximum(sums[cols] - spent[i], 0.0),
                                                                     lanes[cols])

    def _joint_least(self, m: int, budgets: np.ndarray, drains: bool = False) -> np.ndarray:
        """(u,) the least point of :meth:`_joint_fronts` alone (the energy objective) for each row of ``budgets``: the
        first legal row of the table (sorted by the sum) less the per-pair minima over the legal rows (each pair's
        first legal row in its own order); 0 where fewer than two pairs depend on ``U``. Each first legal row is read
        off the layer's lattice (:meth:`_least_legal`)."""
        energy = self._joint_table(m, drains)[1]
        if len(energy) < 2:
            return np.zeros(len(budgets))
        first = self._first_rows(m, drains, budgets)
        low = self._pairs_least(m, drains, budgets)
        return np.maximum(0.0, energy[:, first].sum(axis=0) - low.sum(axis=0))

    def _first_rows(self, m: int, drains: bool, budgets: np.ndarray) -> np.ndarray:
        """(u,) per row of ``budgets`` its first legal row of :meth:`_joint_table` (row 0 where none)."""
        first = self._least_legal(m, drains, "first", lambda: np.arange(len(self._joint_table(m, drains)[0]))[None, :],
                                  budgets)[0]
        return np.where(first < len(self._joint_table(m, drains)[0]), first, 0)

    def _pairs_least(self, m: int, drains: bool, budgets: np.ndarray) -> np.ndarray:
        """(P, u) per pair of :meth:`_joint_table` and row of ``budgets``, the pair's least energy over the budget's
        legal rows: its first legal row in the pair's own order (:meth:`_by_pair`; its least row where none)."""
        energy, orders = self._joint_table(m, drains)[1], self._by_pair(m, drains)

        def ranks() -> np.ndarray:  # each row's position in each pair's order
            out = np.empty((len(orders), energy.shape[1]), dtype=np.int64)
            for rank, order in zip(out, orders):
                rank[order] = np.arange(len(order))
            return out
        least = self._least_legal(m, drains, "pairs", ranks, budgets)
        return np.array([e[order[np.where(r < len(order), r, 0)]] for e, order, r in zip(energy, orders, least)]
                        ).reshape(len(energy), len(budgets))

    def _least_legal(self, m: int, drains: bool, name: str, ranks: Callable[[], np.ndarray],
                     budgets: np.ndarray) -> np.ndarray:
        """(R, u) per row of ``ranks()`` ((R, V) integers, one per row of :meth:`_joint_table`; V for a row left out)
        the least rank among the legal rows of each row of ``budgets`` (those whose factors divide it:
        :meth:`_joint_legal`), V where none. A row divides a budget if and only if it divides the budget's gcd with
        the layer's bounds (every row divides them), a box of the layer's divisor lattice: per rank, the least over the
        boxes dividing each box (:func:`_divisor_min`) is computed once (cached by ``name``) and each budget is one
        look-up, not a pass over the table."""
        key = ("least legal", m, drains, name)
        if key not in self._front_cache:
            table = self._joint_table(m, drains)[0]
            values = [np.array(divisors(int(b)), dtype=np.int64) for b in self.bounds]
            at = tuple(np.searchsorted(values[d], table[:, d]) for d in range(self.op_dims))
            grids = []
            for rank in ranks():
                grid = np.full(tuple(len(v) for v in values), len(table), dtype=np.int64)
                np.minimum.at(grid, at, rank)
                grids.append(_divisor_min(grid, values))
            self._front_cache[key] = (values, np.array(grids).reshape((-1,) + tuple(len(v) for v in values)))
        values, grids = self._front_cache[key]
        cut = np.gcd(budgets, self.bounds[None, :])
        return grids[(slice(None),) + tuple(np.searchsorted(values[d], cut[:, d]) for d in range(self.op_dims))]

    def _by_pair(self, m: int, drains: bool = False) -> list[np.ndarray]:
        """Per pair of :meth:`_joint_table`, its rows by ascending energy of the pair (cached): a pair's least over a
        budget's legal rows is its first legal row in this order."""
        key = ("by pair", m, drains)
        if key not in self._front_cache:
            self._front_cache[key] = [np.argsort(e, kind="stable") for e in self._joint_table(m, drains)[1]]
        return self._front_cache[key]

    def _joint_legal(self, m: int, budgets: np.ndarray, drains: bool = False, distinct: bool = False) -> np.ndarray:
        """(u, V) per row of ``budgets`` the rows of :meth:`_joint_table` whose factors divide it (per dimension and
        value, cached); ``distinct``: (u, V') of its distinct rows only (:meth:`_distinct_rows`, B22)."""
        table, _, _, divides = self._joint_table(m, drains)
        if distinct:
            table, divides = table[self._distinct_rows(m)], self._front_cache.setdefault(("distinct", m, drains), {})
        return _dividing(table, divides, budgets, self.bounds)

    def _joint_table(self, m: int, drains: bool = False) -> tuple:
        """:meth:`_joint_fronts`' table, cached: the legal unrollings of the layer's bounds on the fan-out ``m`` (every
        unrolling of a budget dividing them is one), by ascending sum of the energies and most lanes first among
        equals, with (P, V) the energy ``e(U)`` (:meth:`_lane_energy`) of each lanes' pair whose energy depends on
        ``U`` (the fan-out lies between the lanes and the parent, or above a read-modify-write parent of the output),
        from the words of the box ``U`` (:func:`_lane_box_words`) and the output's copies (``U``'s reduction factors),
        (V,) the lanes ``|U|``, and a cache of which rows' factors divide a dimension's value."""
        key = ("table", m, drains)
        if key in self._front_cache:
            return self._front_cache[key]
        shape = tuple(self.arch.levels[m].fanout.shape)
        table = np.asarray(legal_table(m in self.both_axes)(tuple(int(x) for x in self.bounds), shape)[0])
        energies = []
        for pr in self.pairs:
            t, p = pr.tensor, pr.parent
            rmw = t == self.out and self.arch.levels[p].read_modify_write
            if pr.child >= 0 or t in self.registers or not (m <= p or rmw):
                continue
            box = table if m <= p else np.ones_like(table)
            words = self.iterations * _open_stride_words(self.op, box, np.broadcast_to(self.bounds, box.shape))[:, t] \
                / box.prod(axis=1)  # B17: the fan-out's strides divide the layer's bounds over ``U``
            copies = table[:, self.reduction].prod(axis=1) if rmw and m > p else np.ones(len(table)) if rmw else None
            energies.append(self._lane_energy(t, p, words, copies))
        drain = self._drain_pair(m) if drains else None
        if drain is not None:  # B14: every copy of an output word in a child instance is drained once
            energies.append(self.out_words * table[:, self.reduction].prod(axis=1) * drain[1])
        energy = np.array(energies).reshape(len(energies), len(table))
        lanes = table.prod(axis=1).astype(float)
        order = np.lexsort((-lanes, energy.sum(axis=0)))
        self._front_cache[key] = (table[order], energy[:, order], lanes[order], {})
        return self._front_cache[key]

    def _window_lane_ratio(self, t: int, spatial: np.ndarray, rest: np.ndarray, fixed_from: int, fans: list[int],
                           tile: np.ndarray | None = None) -> np.ndarray:
        """(n,) B3 at the lanes for a sliding-window tensor ``t`` under fan-outs ``fans`` some of which are not fixed:
        the least distinct words per lane per step, ``words(S) / |S|`` (the sumset bound, :func:`_sumset_words`), over
        every lanes' box ``S`` a completion may use: the fixed fan-outs' factors times, per unfixed fan-out, any of its
        legal unrollings of what is left to it (:meth:`_fan_budget`; over both axes where the level allows it). The
        dimensions the ratio does not depend on (:func:`_lane_live`) are dropped first (:meth:`_least_ratio`)."""
        live = self.lane_live[t][None, :]
        fixed = np.ones((spatial.shape[0], self.op_dims), dtype=np.int64)
        for m in fans:
            if m >= fixed_from:
                fixed = fixed * spatial[:, m]
        unfixed = tuple(m for m in fans if m < fixed_from)
        parts = [np.where(live, fixed, 1)] + [np.where(live, self._fan_budget(rest, tile, fixed_from, m), 1)
                                              for m in unfixed]
        stepped = tile is not None and fans == [fixed_from - 1]  # the fan-out's stride: the tile below it
        if stepped:
            parts.append(np.where(live, tile, 1))
        keys, inverse = unique_rows(np.concatenate(parts, axis=1))
        least = np.array([self._least_ratio(t, unfixed, tuple(int(x) for x in key), stepped) for key in keys])
        strided = any(len(a.terms) == 2 and a.terms[0][1] != a.terms[1][1] for a in self.op.tensors[t].axes)
        if strided and not stepped and len(fans) == 1 and unfixed == (fans[0],):  # B17: the one fan-out open, its
            # strides unknown (with equal coefficients, strides 1 reach the sumset count: nothing to add)
            D = self.op_dims
            least = np.maximum(least, [self._open_stride_ratio(t, fans[0], tuple(int(x) for x in key[D:2 * D]))
                                       for key in keys])
        return least[inverse.reshape(-1)]

    def _open_stride_ratio(self, t: int, m: int, limits: tuple[int, ...]) -> float:
        """B17: the least words per lane of sliding-window tensor ``t`` over the legal unrollings ``U`` of the open
        fan-out ``m`` (the only one between the lanes and the parent) dividing ``limits`` (:meth:`_least_ratio`'s rows),
        each box counted by :func:`_open_stride_words` (its stride unknown but dividing ``limits / U``). Cached."""
        key = ("open", t, m, limits)
        cached = self._front_cache.get(key)
        if cached is None:
            live = tuple(int(b) if keep else 1 for b, keep in zip(self.bounds, self.lane_live[t]))
            fac = legal_table(m in self.both_axes)(live, tuple(self.arch.levels[m].fanout.shape))[0]
            fac = fac[(np.array(limits)[None, :] % fac == 0).all(axis=1)]
            lim = np.broadcast_to(np.array(limits, dtype=np.int64), fac.shape)
            cached = float((_open_stride_words(self.op, fac, lim)[:, t] / fac.prod(axis=1)).min())
            self._front_cache[key] = cached
        return cached

    def _least_ratio(self, t: int, unfixed: tuple[int, ...], key: tuple[int, ...], stepped: bool = False) -> float:
        """B3: least ``words(S) / |S|`` of tensor ``t`` over the boxes ``S = fixed x U_1 x ...``: ``key`` holds the
        fixed fan-outs' box, then per level of ``unfixed`` the limits of its legal unrollings ``U_m``
        (:func:`.legal_table`: the rows of the table of the layer's bounds whose factors divide the limits, the same
        axis rule; one cached table, not one per limits), then (``stepped``: one fan-out, unfixed) the stride of its
        indices, the tile below it (:func:`_lane_box_words`). Where the product of the tables would exceed :data:`LANE_BOXES` rows,
        ``1 / (fixed x every unfixed fan-out's size)`` (at least one word per step). Cached."""
        cached = self._ratio_cache.get((t, unfixed, key))
        if cached is not None:
            return cached
        D = self.op_dims
        boxes = np.array(key[:D], dtype=np.int64)[None, :]
        step = np.array(key[-D:], dtype=np.int64)[None, :] if stepped else None
        live = tuple(int(b) if keep else 1 for b, keep in zip(self.bounds, self.lane_live[t]))
        for i, m in enumerate(unfixed):
            shape = tuple(self.arch.levels[m].fanout.shape)
            fac = legal_table(m in self.both_axes)(live, shape)[0]  # one table per tensor; the key's rows by divisibility
            fac = fac[(np.array(key[D * (i + 1):D * (i + 2)])[None, :] % fac == 0).all(axis=1)]
            if len(boxes) * len(fac) > LANE_BOXES:
                boxes = None
                break
            boxes = (boxes[:, None, :] * fac[None, :, :]).reshape(-1, D)
        if boxes is None:
            least = 1.0 / (math.prod(key[:D]) * float(np.prod(self.fan[list(unfixed)])))
        else:
            least = float((_lane_box_words(self.op, boxes, step)[:, t] / boxes.prod(axis=1)).min())
        self._ratio_cache[(t, unfixed, key)] = least
        return least

    def _sweeps(self, pr: Pair, spatial: np.ndarray, fixed_from: int, sweeps: np.ndarray, runs: np.ndarray,
                tile: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B7/B8 capacity bound of a pair whose child lies below the fixed tile of level ``j - 1``: each of
        the ``sweeps`` iterations of the fixed loops runs that tile (``tile`` words of the tensor); the
        children under one level-``j - 1`` instance (at most the product of the fan-outs between) hold at
        most their capacity when it starts, so they fill (drain) at least ``tile - children x capacity``
        words in it (``held``: a child's capacity, or its tile's words when known), and so does each parent
        instance read (receive). B8: ``runs`` (>= 1 for inputs)
        sweeps start a tensor footprint disjoint from the previous one (nothing held helps): all ``tile``
        words move in each of them."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        j = fixed_from
        children = float(np.prod(self.fan[ch + 1:j]))
        held = children * held
        per_sweep = np.maximum(0.0, tile - held)
        is_out = t == self.out
        words = runs * tile + (sweeps - runs) * per_sweep
        child = self._instances(spatial, j - 1) * words
        parent = self._instances(spatial, p) * words
        energy = child * self.energy[ch, t, 0 if is_out else 1] + parent * self.energy[p, t, 2 if is_out else 0]
        dram = parent * self.word_bytes[t] if p == self.L - 1 else np.zeros(len(tile))
        return energy, dram, child

    def _run_fills(self, pr: Pair, temporal: np.ndarray, spatial: np.ndarray, fixed_from: int,
                   tile: np.ndarray | None, e: np.ndarray, d: np.ndarray, h: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B40 (docs/search.md, "B40: the window's tile runs against the child's capacity"; with placement): the pair
        of a sliding-window input ``t`` whose child ``c`` has a known box (:meth:`_box`: ``c >= fixed_from - 1``, or
        ``tile`` at ``c = fixed_from - 2``), its ``(e, d, h)`` raised where larger. Every child instance runs its box once per
        iteration of the loops above it, ``iterations / |box|`` runs over all instances, and each run touches the box's
        words of ``t``; at a run's start the child holds at most its capacity of them (its placed tile fits), so it
        fills at least ``words - capacity`` in the run, whatever its placement and order. The parent reads at least
        those fills over the most children one read may feed; and where the parent is level ``c + 1`` with its
        fan-out fixed, the ``k`` children under one parent instance run their boxes together, their union is the box
        ``box x`` that fan-out, and a word of it that no child holds at the start is read from the parent at least
        once in the run: at least ``words(union) - k x capacity`` per run of the union. Taken part by part with the
        pair's bound so far: each of the bounds maxed into ``(e, h)`` is a child's fills ``F_i`` (``h`` their largest)
        and a parent's reads ``R_i`` priced together, so ``e - h x fill <= max_i R_i x read`` bounds the reads'
        energy."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        box = self._box(temporal, spatial, ch, fixed_from, tile) if ch >= 0 else None  # the lanes have no box
        if box is None:
            return e, d, h
        held = self.capacity[ch, t]
        fills = self.iterations / box.prod(axis=1) * np.maximum(
            0.0, touched_lower(self.op, box, contiguous=True)[:, t] - held)
        reads = fills / float(np.prod(self.fan[ch + 1:p + 1]))
        if ch + 1 >= fixed_from and p == ch + 1:
            fan = spatial[:, p]  # (n, D) the children under one parent instance
            union = box * fan
            reads = np.maximum(fills / fan.prod(axis=1), self.iterations / union.prod(axis=1) * np.maximum(
                0.0, touched_lower(self.op, union, contiguous=True)[:, t] - fan.prod(axis=1) * held))
        fill = self.energy[ch, t, 1]
        fills = np.maximum(h, fills)  # with the bound so far, part by part: ``e - h x fill`` is at most the parent's
        energy = fills * fill + np.maximum(e - h * fill, reads * self.energy[p, t, 0])  # reads' energy (docs)
        dram = reads * self.word_bytes[t] if p == self.L - 1 else np.zeros(len(fills))
        return np.maximum(e, energy), np.maximum(d, dram), fills

    def _box(self, temporal: np.ndarray, spatial: np.ndarray, ch: int, fixed_from: int,
             tile: np.ndarray | None) -> np.ndarray | None:
        """(n, D) the box of level ``ch`` (its loops and everything below them) where the node fixes it: levels
        ``>= fixed_from - 1`` (the levels below ``fixed_from`` are folded into level 0's slot), or level
        ``fixed_from - 2`` when its ``tile`` is given (:meth:`.search.BranchAndBound.tile_bound`); else None. Computed
        once per level in a call of :meth:`compute` (its ``temporal`` and ``spatial``)."""
        if ch >= fixed_from - 1:
            return self._of_spatial(spatial, ("box", ch, fixed_from),
                                    lambda: (_reduce_levels(np.multiply, temporal[:, :ch + 1])
                                             * _reduce_levels(np.multiply, spatial[:, :ch + 1])))
        if tile is not None and ch == fixed_from - 2:
            return tile
        return None

    def _box_words(self, spatial: np.ndarray, ch: int, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, T) each tensor's words of ``box`` (n, D; level ``ch``'s, :meth:`_box`) and (n,) its iterations, computed
        once per ``box`` in a call of :meth:`compute`."""
        held, *words = self._of_spatial(spatial, ("box words", ch), lambda: (
            box, touched_lower(self.op, box, contiguous=True), _reduce_last(np.multiply, box)))
        return tuple(words) if held is box else (touched_lower(self.op, box, contiguous=True),
                                                 _reduce_last(np.multiply, box))

    def _hold(self, level: int, words: dict[int, np.ndarray]) -> np.ndarray:
        """(n,) whether tiles of ``words`` (tensor -> (n,) words) fit one instance of ``level`` together, the other
        tensors it keeps taking no room (its partitions' weights, as :class:`Capacity` checks a tile; a level
        without a capacity holds anything)."""
        spec = self.fit.levels[level]
        n = len(next(iter(words.values())))
        if spec is None:
            return np.ones(n, dtype=bool)
        part, sizes = spec
        fits = np.ones(n, dtype=bool)
        for r in range(len(sizes)):  # partition by partition (numpy's reduction of a short axis is slower)
            used = np.zeros(n)
            for t, w in words.items():
                used += w * part[t, r]
            fits &= used <= sizes[r]
        return fits

    def _hold_sets(self, level: int, words: dict[int, np.ndarray], sets: list[tuple[int, ...]]) -> list[np.ndarray]:
        """:meth:`_hold` of each set of tensors of ``sets`` (all the combinations of ``words``' tensors, by size: each
        set's prefix without its last tensor comes before it), every nonempty set's words per partition summed once
        from its prefix's, in its order (the same sums as :meth:`_hold`'s); the empty set holds."""
        n = len(next(iter(words.values())))
        spec = self.fit.levels[level]
        if spec is None:
            return [np.ones(n, dtype=bool) for _ in sets]
        part, sizes = spec
        used = {(): np.zeros((len(sizes), n))}  # per set, (partitions, n) its words in each
        out = []
        for kept in sets:
            if kept:
                t = kept[-1]
                used[kept] = used[kept[:-1]] + part[t][:, None] * words[t][None, :]
            out.append((used[kept] <= sizes[:, None]).all(axis=0) if kept else np.ones(n, dtype=bool))
        return out

    def _level_trips(self, temporal: np.ndarray, ch: int, fixed_from: int, box: np.ndarray) -> np.ndarray | None:
        """(n, D) the trips of level ``ch``'s temporal loops where the node fixes them (a fixed level, or level 0
        without a fan-out, whose loops are its box), else None."""
        if ch >= fixed_from:
            return temporal[:, ch]
        if ch == 0 and self.arch.levels[0].fanout is None:
            return box
        return None

    def _unrolled(self, budget: np.ndarray, m: int) -> np.ndarray:
        """(n, V, T) per row of ``budget`` (what level ``m``'s unfixed fan-out may unroll), the products of each
        legal unrolling's factors over the dimensions that do not index each tensor (its multicast copies; the
        output's: its copies over reduction dimensions), the Pareto-largest vectors only (a larger product never
        raises B11), padded by repeating the first."""
        keys, inverse = unique_rows(budget)
        self._fill_copies(keys, m)
        found = [self._pareto_copies(tuple(key), m) for key in keys.tolist()]
        sizes = np.array([len(f) for f in found])
        pad = np.arange(sizes.max())[None, :]  # each key's rows, then its first row again up to the longest
        at = np.concatenate([[0], np.cumsum(sizes)[:-1]])[:, None] + np.where(pad < sizes[:, None], pad, 0)
        return np.concatenate(found).astype(float)[at][inverse.reshape(-1)]

    def _pareto_copies(self, limits: tuple[int, ...], m: int) -> np.ndarray:
        """(V, T) the Pareto-largest per-tensor copy products of the legal unrollings of ``limits`` on level ``m``'s
        fan-out (:meth:`_unrolled`), cached (:meth:`_fill_copies`)."""
        if (limits, m) not in self._copies_cache:
            self._fill_copies(np.array([limits], dtype=np.int64), m)
        return self._copies_cache[(limits, m)]

    def _fill_copies(self, keys: np.ndarray, m: int) -> None:
        """:meth:`_pareto_copies` of the rows of ``keys`` (limits) not cached yet, all at once. Where the limits divide
        the layer's bounds, their unrollings are the rows of the layer's own table whose factors divide them
        (:func:`.unroll.dividing_rows`), so the products, their dominance and the rows' divisibility are computed once
        per level (:meth:`_copies_table`), not per limits: per limits, the products present among its rows (the rows
        grouped by product, one ``reduceat``), less those another present product dominates. Other limits (padded
        extents): the table of the limits themselves, every row."""
        names = [tuple(key) for key in keys.tolist()]
        missing = [i for i, name in enumerate(names) if (name, m) not in self._copies_cache]
        dividing = [i for i in missing if not (self.bounds % keys[i]).any()]
        if dividing:
            table, prods, codes, dominates, divides = self._copies_table(m, tuple(int(x) for x in self.bounds))
            by_code = np.argsort(codes, kind="stable")  # the rows grouped by their product (every product has one)
            starts = np.searchsorted(codes[by_code], np.arange(len(prods)))
            step = max(1, 4_000_000 // max(len(table), 1))  # limits a block: (block, V) booleans at once
            for lo in range(0, len(dividing), step):
                block = dividing[lo:lo + step]
                legal = _dividing(table, divides, keys[block], self.bounds)
                present = np.logical_or.reduceat(legal[:, by_code], starts, axis=1)  # (block, P)
                # a product another present one dominates: a count of those, exact in integers (one pass per block)
                dominated = present.astype(np.int64) @ dominates.astype(np.int64) > 0
                for i, row in zip(block, present & ~dominated):
                    self._copies_cache[(names[i], m)] = prods[row]
        for i in missing:
            if (names[i], m) not in self._copies_cache:
                _, prods, _, dominates, _ = self._copies_table(m, names[i])
                self._copies_cache[(names[i], m)] = prods[~dominates.any(axis=0)]

    def _copies_table(self, m: int, limits: tuple[int, ...]) -> tuple:
        """:meth:`_pareto_copies`' table of the legal unrollings of ``limits`` on level ``m``'s fan-out, cached: the
        factor rows, the distinct per-tensor copy products (sorted), each row's product's index, (P, P) whether one
        product dominates another (no smaller for any tensor, larger for one), and a cache of which rows' factors
        divide a dimension's value (:func:`_dividing`)."""
        key = ("copies", m, limits)
        if key not in self._front_cache:
            fac = legal_table(m in self.both_axes)(limits, tuple(self.arch.levels[m].fanout.shape))[0]
            prods, codes = np.unique(np.stack([np.where(self.indexes[t][None, :], 1, fac).prod(axis=1)
                                               for t in range(self.T)], axis=1), axis=0, return_inverse=True)
            dominates = ((prods[:, None, :] >= prods[None, :, :]).all(axis=2)
                         & (prods[:, None, :] > prods[None, :, :]).any(axis=2))
            self._front_cache[key] = (fac, prods, codes.reshape(-1), dominates, {})
        return self._front_cache[key]

    def _refilled_whole(self, pr: Pair, spatial: np.ndarray, fixed_from: int, rest: np.ndarray,
                        tile: np.ndarray | None, box: np.ndarray, scale: np.ndarray | float = 1.0,
                        unrolled: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B11: (energy, DRAM bytes, fan-out words) of a plain tensor's pair whose child refills (drains) its whole
        footprint in the child level's ``box`` at every event of the level: ``iterations x touched(box) /
        iterations(box)`` words over all child instances. Each parent instance sends (receives) the union of its
        children's words: children whose spatial positions differ in a dimension indexing the tensor hold disjoint
        words, so the parent moves at least that divided by the product of the spatial factors, between child and
        parent, of the dimensions that do not index it (an unfixed fan-out: its largest legal unrolling of those
        dimensions, :meth:`_largest`). Outputs add the reloads of all but the first touches (B9), into the child and,
        of the parent's union, out of the parent (its first touches: the outputs times their copies above it).
        The parent's DRAM bytes count its reads of inputs and its updates of outputs. ``scale``
        (n,): the events multiplied by a loop of the level outside the tile that does not index the tensor.
        ``unrolled`` (n, V, T, :meth:`_unrolled`): the unfixed fan-out of level ``fixed_from - 1`` takes one of these
        vectors of copies instead of each tensor's largest alone. (n, V) each (V = 1 without ``unrolled``)."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        touched, size = self._box_words(spatial, ch, box)
        words = scale * self.iterations * touched[:, t] / size
        words = np.broadcast_to(words, (len(box),))[:, None]  # (n, 1)
        shared = np.ones((len(box), 1))  # children under one parent instance holding the same words of t
        for m in range(ch + 1, p + 1):
            if self.arch.levels[m].fanout is None:
                continue
            if m >= fixed_from:
                shared = shared * spatial[:, m][:, ~self.indexes[t]].prod(axis=1)[:, None]
            elif unrolled is not None and m == fixed_from - 1:
                shared = shared * unrolled[:, :, t]
            else:
                budget = self._fan_budget(rest, tile, fixed_from, m)
                shared = shared * self._largest(np.where(self.indexes[t][None, :], 1, budget), m)[:, None]
        parent = words / shared
        if t == self.out:
            if unrolled is not None and ch == fixed_from - 2:
                copies = self._copies(spatial, rest, fixed_from, fixed_from - 1, tile)[:, None] * unrolled[:, :, t]
            else:
                copies = self._copies(spatial, rest, fixed_from, ch, tile)[:, None]
            child = self._reloaded(words, copies)
            reloads = np.maximum(0.0, parent - self.out_words * self._copies(spatial, rest, fixed_from, p, tile)[:, None])
            energy = (words * self.energy[ch, t, 0] + (child - words) * self.energy[ch, t, 1]
                      + parent * self.energy[p, t, 2] + reloads * self.read_full[p, t])
        else:
            child = words
            energy = words * self.energy[ch, t, 1] + parent * self.energy[p, t, 0]
        dram = parent * self.word_bytes[t] if p == self.L - 1 else np.zeros_like(parent)
        return energy, dram, np.broadcast_to(child, parent.shape)

    def _held_refills(self, wholes: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]], extra: np.ndarray,
                      temporal: np.ndarray, rest: np.ndarray, fixed_from: int, ch: int) -> np.ndarray:
        """(n,) B11 with B9 at a child level whose box is known: of the plain tensors ``wholes`` (t -> (box words,
        energy a whole refill at every event adds, and that by the level's outermost loop (n, D or 1))), the set
        ``W`` whose tiles hold their whole box footprint must fit the level together; every other one lies below a
        loop of the level indexing it and is refilled whole at every event, times the trips of the level's
        outermost loop when that loop does not index it (it lies outside the indexing loop); those in ``W`` get B9
        (``extra``, refilled when the innermost loop above the box indexes them). The least over the sets ``W``
        that fit and the outermost loops."""
        tensors = list(wholes)
        sets = [kept for size in range(len(tensors) + 1) for kept in itertools.combinations(tensors, size)]
        cond = np.repeat(extra[None], len(sets), axis=0)  # (sets, n, T): B9 of the tensors in each set
        for cond_of, kept in zip(cond, sets):
            cond_of[:, [t for t in tensors if t not in kept]] = 0.0
        value = self._innermost_refills(cond, temporal, rest, fixed_from)  # (sets, n)
        # per set (a combination, so its prefix without its last tensor is one too, taken before it), the sum of its
        # tensors' whole refills, in its order (the same sums as one by one)
        refilled = {(): np.zeros((value.shape[1], 1))}
        for kept in sets[1:]:
            refilled[kept] = refilled[kept[:-1]] + wholes[kept[-1]][2]
        held = np.array(self._hold_sets(ch, {t: wholes[t][0] for t in tensors}, sets))  # (sets, n)
        others = [refilled[tuple(t for t in tensors if t not in kept)] for kept in sets]  # each (n, 1 or loops)
        # (sets, n): each row's least over its own columns (a column repeated over the loops has that least; a minimum
        # is exact in any order, and numpy's contiguous reduction of a wide axis is faster than :func:`_least_last`)
        least = np.array([o.min(axis=1) for o in others])
        return np.where(held, value + least, np.inf).min(axis=0)

    def _drained_pair(self, words: np.ndarray, pr: Pair, at_child: np.ndarray, spatial: np.ndarray, rest: np.ndarray,
                      fixed_from: int, tile: np.ndarray | None, hop_per_word: float) -> np.ndarray:
        """(n,) B16: a lower bound of the whole energy of the output's pair ``pr`` (child ``c``, parent ``p``) when its
        child drains ``words`` (B9: the tile at every event, over all instances), the parent's side included. The
        child instances that differ only in the reduction factors of the fan-outs between ``c`` and ``p`` (at most
        ``R`` = the copies at ``c`` over those at ``p``, :meth:`_copies`) hold copies of the same words, so one update
        of the parent takes at most ``R`` drains and one read of it feeds at most ``R`` fills: the parent is updated
        ``>= words / R`` times (more than once per output word: partial sums, at full width, else every output word
        once at the final width) and reads ``>= words / R - outputs x copies(p)`` words, either reloads (every drained
        word but the first touches, ``outputs x copies(c)``, is filled back, ``/ R``) or, read-modify-write,
        accumulate reads (every update but the first touches of its ``copies(p)`` copies). The child drains
        ``words`` and fills the reloads, each crossing the fan-outs in between. ``at_child``: :meth:`_copies` at ``c``."""
        t, c, p = pr.tensor, pr.child, pr.parent
        at_parent = self._copies(spatial, rest, fixed_from, p, tile)
        reloads = np.maximum(0.0, words - self.out_words * at_child)
        child = words * self.energy[c, t, 0] + reloads * self.energy[c, t, 1] + (words + reloads) * hop_per_word
        updates = words * at_parent / at_child
        partial = updates > self.out_words * (1 + 1e-9)
        parent = np.where(partial, updates * self.update_full[p, t], self.out_words * self.energy[p, t, 2])
        reads = np.maximum(0.0, updates - self.out_words * at_parent) * self.read_full[p, t]
        return child + parent + reads

    def _reloaded(self, words: np.ndarray, copies: np.ndarray) -> np.ndarray:
        """Output words drained ``words`` times plus the reloads: every drain but the first touches of the
        (outputs x ``copies``) words is read back (B9)."""
        return words + np.maximum(0.0, words - self.out_words * copies)

    def _placed_refills(self, entries: dict[int, tuple], spatial: np.ndarray, ch: int, left: np.ndarray | None,
                        loopable: np.ndarray, single: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B20 (docs/search.md, "B20: each tensor's own tiles under placement"): B10 with each tensor's refills priced
        over the boxes its own placed tile allows. ``entries``: t -> (compulsory child words, energy per word, output
        copies or None) of the plain tensors and sliding-window inputs kept at level ``ch``. A tensor's tile raised
        over the loops right above it that do not index it, ``R_t``, keeps its footprint, so it fits with the tiles of
        the tensors whose raised tiles hold it (those hold its extents in their dimensions, so at least its words of
        them: :meth:`_placed_ratio`); the raised tiles of one level nest, so the least over the nesting orders of the
        summed refills is a bound. Returns it (n,) and, per nesting order (P, n), the refills of the tensors other than
        the output and the output's (B14 replaces the output's alone, :meth:`_beside_drains`). B23: an entry's optional
        fourth item (the output's, with placement) is the output pair's whole energy as a function of its drained
        words (:meth:`_drained_pair`) and the pair's other bound: its refills are at least that less the bound."""
        n = len(spatial)
        kept = [u for u in range(self.T) if self.keeps[ch, u]]
        orders = list(itertools.permutations(kept))
        keys = list(dict.fromkeys((t, frozenset(o[:i])) for o in orders for i, t in enumerate(o) if t in entries))
        words = self._placed_words(spatial, ch, keys, left, loopable, single)  # (K, n): the orders share the keys
        refills_of: dict[tuple[int, frozenset[int]], np.ndarray] = {}
        for t in entries:
            of_t = [k for k, key in enumerate(keys) if key[0] == t]
            refills_of.update(zip([keys[k] for k in of_t], self._placed_tensor(entries[t], words[of_t])))
        others, outs = [], []
        for outer_first in orders:
            rest, out = np.zeros(n), np.zeros(n)
            for i, t in enumerate(outer_first):
                if t not in entries:
                    continue
                refills = refills_of[(t, frozenset(outer_first[:i]))]
                if t == self.out:
                    out += refills
                else:
                    rest += refills
            others.append(rest)
            outs.append(out)
        others, outs = np.array(others), np.array(outs)
        return (others + outs).min(axis=0), others, outs

    def _placed_tensor(self, entry: tuple, drained: np.ndarray) -> np.ndarray:
        """(k, n) :meth:`_placed_refills`' refills of one tensor (its ``entry``) whose child moves ``drained`` (k, n)
        words, one row per set of tensors outside it (the same values as row by row: elementwise)."""
        h, per_word, copies, *parent = entry
        words = drained if copies is None else self._reloaded(drained, copies)
        refills = np.maximum(0.0, words - h) * per_word
        if parent:  # B23: with the parent's updates and reads of these drains
            whole, bound = parent[0]
            refills = np.maximum(refills, whole(drained) - bound)
        return refills

    def _level_loops(self, temporal: np.ndarray, fixed_from: int, ch: int
                     ) -> tuple[np.ndarray | None, np.ndarray, bool]:
        """B30's facts of nodes whose levels ``>= fixed_from`` are fixed, for the raised tiles of level ``ch`` below
        them: the extents an instance of ``ch`` runs over its own loops and those below (``rest``, where no fan-out
        between ``ch`` and the fixed levels is open: else None), (n, D) the dimensions a loop above a raised tile
        may be on (one of the open levels', within ``rest``, or a fixed level's), and (B33) whether ``rest`` is the
        loops of ``ch`` alone, one a dimension (``ch`` the lowest level, the only open one)."""
        rest = temporal[:, 0]
        loopable = self._loop_candidates(temporal, rest, fixed_from)  # one left above ``ch`` or on a fixed level
        fans_open = any(self.arch.levels[m].fanout is not None for m in range(ch + 1, fixed_from))
        return (None if fans_open else rest), loopable, ch == 0 and fixed_from == 1

    def _tile_loops(self, temporal: np.ndarray, fixed_from: int, ch: int, tile: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """B36 (docs/search.md, "B36: the tile's own raised tiles at the tile bound"): :meth:`_level_loops`'s facts
        for the level ``ch = fixed_from - 2`` whose tile ``tile`` (n, D) is known before its parent's factors are
        split. Every child of the tile runs ``tile`` per instance of ``ch`` (its open extents: the split leaves
        ``rest / tile`` to the parent), so B30/B33 take ``tile`` as ``rest`` whatever the split and the fan-out above;
        the dimensions a loop above a raised tile may be on are those of ``rest`` or a fixed level (a superset of
        each child's), and at level 0 the tile is that level's loops alone, one a dimension."""
        _, loopable, _ = self._level_loops(temporal, fixed_from, ch)
        return tile, loopable, ch == 0

    def _placed_words(self, spatial: np.ndarray, ch: int, keys: list[tuple[int, frozenset[int]]],
                      left: np.ndarray | None, loopable: np.ndarray, single: bool = False) -> np.ndarray:
        """(K, n) B20 with B30: per B20 key ``(t, outer)`` of ``keys``, the least words tensor ``t``'s child at level
        ``ch`` moves, its raised tile fitting with the tensors ``outer`` (:meth:`_placed_ratio` over each node's cover,
        per group of nodes whose ``loopable`` (n, D) rows are equal; :meth:`_over_rest` where ``left``, the extents per
        instance of ``ch`` left to the open levels, is given; ``single``: those are the loops of ``ch`` alone,
        :meth:`_level_loops`). The groups are computed once per ``left`` and ``loopable`` in a call of :meth:`compute`
        (the same arrays for every tensor), with the covers' rows of the layer's lattice and where ``left`` is below
        the cover (shared by every tensor); the keys of a group are read together, the plain tensors' apart from the
        sliding-window inputs' (docs/search.md "Less fixed work per layer (session 21)")."""
        def groups() -> list[tuple[np.ndarray, tuple[bool, ...], np.ndarray, np.ndarray, np.ndarray,
                                   _RestRows | None]]:
            cover = self._cover(spatial, ch)
            masks, of_mask = unique_rows(loopable)
            out = []
            for g, row in enumerate(masks):
                sel = np.nonzero(of_mask.reshape(-1) == g)[0]
                keys, inverse = unique_rows(cover[sel])
                out.append((sel, tuple(bool(x) for x in row), keys, self._lattice_rows(keys), inverse.reshape(-1),
                            None if left is None else self._rest_rows(left[sel], keys[inverse.reshape(-1)])))
            return out

        words = np.empty((len(keys), len(spatial)))
        held_left, held_loopable, found = self._of_spatial(spatial, ("placed groups", ch, single),
                                                           lambda: (left, loopable, groups()))
        if held_left is not left or held_loopable is not loopable:  # other arrays than the call's first ones
            found = groups()
        kinds = [[k for k, (t, _) in enumerate(keys) if self.plain[t] == plain] for plain in (True, False)]
        for sel, mask, covers, cover_rows, inverse, rest in found:
            least = np.array([self._placed_ratio(covers, ch, t, outer, mask, cover_rows)
                              for t, outer in keys])[:, inverse]
            if rest is not None:
                for kind in kinds:
                    if kind:
                        least[kind] = self._over_rest(least[kind], rest, ch, [keys[k] for k in kind], mask, single)
            words[:, sel] = self.iterations * least
        return words

    def _rest_rows(self, rest: np.ndarray, cover: np.ndarray) -> _RestRows:
        """:class:`_RestRows` of ``rest`` (n, D) under the nodes' covers ``cover`` (n, D): what :meth:`_over_rest` reads
        of them for every tensor (B33)."""
        short = rest < cover
        rows = self._lattice_rows(rest)
        valid = rows >= 0
        spare = np.array([_reduce_last(np.logical_or, short[:, ~self.indexes[t] & (self.bounds > 1)])
                          for t in range(self.T)]).reshape(self.T, len(rest))
        return _RestRows(short, valid, np.where(valid, rows, 0), spare)

    def _unrolled_refills(self, entries: dict[int, tuple], rest: np.ndarray, drain: tuple[int, float, float]
                          ) -> np.ndarray:
        """(n,) B22 (docs/search.md, "B22: the register file's refills per unrolling of the open array"): B14's joint
        sum with the refills at its child ``c`` (``drain``: :meth:`_drain_pair`) at the same unrolling ``U`` of the
        open fan-out ``m`` (the node's only fan-out), the raised tiles taken together. Under ``U`` every instance of
        ``c`` runs ``bounds / U`` and each output word has exactly ``copies(U)`` copies there (``U``'s reduction
        factors). Each tensor ``t`` kept at ``c`` moves at least ``w_t`` words (B20's least over its raised tile
        ``R_t``), beyond its pair's ``h_t`` at ``e_t`` a word (B20's entries); the output drains at least
        ``max(w_O, outputs x copies(U))`` words, B14 counting ``outputs x copies(U)`` of them, and reloads all but
        the first touches: beyond B14's drains, at least ``(w_O - outputs x copies(U)) x`` a drain's and a fill's
        energy. Each term is at least its linear part, so the refills are at least ``sum_t a_t w_t - sum_t e_t h_t -
        a_O outputs x copies(U)``, and the raised tiles of ``c`` nest: the least of ``sum_t a_t w_t`` over the chains
        of nested boxes dividing ``bounds / U`` (:meth:`_nested_chains`, least over the nesting orders). That, plus
        B14's sum at ``U`` (:meth:`_joint_table`), least over the legal ``U`` of the budget ``rest``, less the
        per-pair minima over them; the caller subtracts what the bound counts for those parts (B14's ``counted``
        less its first touches), as for B14. ``entries``: B20's (t -> (h, energy per word, copies))."""
        m, chained, weights, others = self._unrolled_terms(entries, drain, rest)
        return self._least_unrolling(m, chained, rest) - self._held(entries, weights, others, len(rest))

    def _held(self, entries: dict[int, tuple], weights: tuple[float, ...], others: list[int] | tuple[int, ...],
              n: int) -> np.ndarray:
        """(n,) B22/B25/B26: the words the pairs' bounds hold for the tensors ``others`` at B22's weights
        (``sum_t e_t h_t``), subtracted after the least over ``U``."""
        return sum((entries[t][0] * weights[t] for t in others), np.zeros(n))

    def _unrolled_terms(self, entries: dict[int, tuple], drain: tuple[int, float, float],
                        rest: np.ndarray | None = None) -> tuple[int, np.ndarray, tuple[float, ...], list[int]]:
        """B22's per-unrolling terms (:meth:`_unrolled_refills`): the open fan-out ``m``, (V',) per distinct row ``U``
        of :meth:`_joint_table` B14's sum plus the least chained refills less the output's ``a_O outputs x
        copies(U)``, the weights ``a_t`` per tensor and the tensors other than the output among ``entries``. With
        ``rest`` (n, D), the chains per budget (B31, :meth:`_rooted_chains`): (u, V') per distinct row of ``rest``
        (:func:`unique_rows`' order, as :meth:`_least_unrolling` reads it)."""
        c = drain[0]
        m = self.array
        table, energy, _, _ = self._joint_table(m, drains=True)
        first = self._distinct_rows(m)  # one row per factor vector: the axes change none of the terms
        copies = table[first][:, self.reduction].prod(axis=1).astype(float)
        per_out = drain[1] + self.energy[c, self.out, 1] + self.hop_energy[m]  # a drain beyond the first touches
        # and its reload
        others = [t for t in entries if t != self.out]
        weights = tuple(float(entries[t][1]) if t in others else per_out if t == self.out else 0.0
                        for t in range(self.T))
        if rest is None:
            chains = self._nested_chains(m, c, weights).min(axis=0)  # (V',)
        else:  # B31: (u, V') the chains within what is left to the levels below the node's fixed ones
            kept = tuple(u for u in range(self.T) if self.keeps[c, u])
            chains = self._rooted_chains(m, tuple((c, u) for u in kept), tuple(weights[u] for u in kept),
                                         unique_rows(rest)[0])
        chained = energy.sum(axis=0)[first] + chains - per_out * self.out_words * copies  # (V',) or (u, V')
        return m, chained, weights, others

    def _rooted_chains(self, m: int, members: tuple[tuple[int, int], ...], weights: tuple[float, ...],
                       keys: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """(u, V') B31 (docs/search.md, "B31: the chains within the loops left below the fixed levels"):
        :meth:`_stacked_chains` per budget of ``keys`` (u, D) (``rest``: what is left to the levels below the node's
        fixed ones) and distinct row ``U`` of :meth:`_joint_table` (``cols``: only those rows). Under ``U`` an instance
        runs the loops left below the fixed levels, a box ``rest / U``, inside the fixed levels' loops, and every
        raised tile of the chain is a cut of that one loop sequence: it divides ``rest / U``, or it holds the whole of
        ``rest / U`` (and some fixed loops), so its tensor's words of ``rest / U`` fit its level alone (a larger box
        holds no fewer words of each tensor, B30's argument). The chain's tiles nest, so where the outermost member of
        a nesting order cannot hold ``rest / U`` alone, the whole chain lies inside ``rest / U``: that order's least is
        read at ``rest / U`` in :meth:`_chain_lattice`'s grid (least over the chains inside each box), else at
        ``bounds / U`` as before; an order with no chain that fits counts 0, as in :meth:`_stacked_chains`; the least
        over the orders. A box that is not on the layer's lattice (not dividing it) is read at ``bounds / U``."""
        index, at_bounds, inside, memo = self._rooted_index(m, keys)
        if cols is None and (members, weights) in memo:
            return memo[(members, weights)]
        grids = self._chain_lattice(m, members, weights)
        flat = grids.reshape(len(grids), -1)
        if cols is not None:
            index, at_bounds = index[:, cols], at_bounds[cols]
        out = np.full(index.shape, np.inf)
        for first, least in self._least_by_outermost(members, flat).items():  # the orders share ``inside`` per first
            within = inside[members[first]]
            value = np.where(within if cols is None else within[:, cols], least[index], least[at_bounds][None, :])
            out = np.minimum(out, value)
        if cols is None:
            out.setflags(write=False)
            memo[(members, weights)] = out
        return out

    @staticmethod
    def _least_by_outermost(members: tuple[tuple[int, int], ...], flat: np.ndarray) -> dict[int, np.ndarray]:
        """B31 (:meth:`_rooted_chains`): per outermost member, the least over the nesting orders it heads of their
        flat lattice grids (``flat``: one row per order of :func:`itertools.permutations`), an order with no chain
        that fits counting 0. Where the chain is read (inside the budget's box or at ``bounds / U``) depends only on
        the outermost member, so the least is taken on the grid before it is read, the same values."""
        out: dict[int, np.ndarray] = {}
        for o, outer_first in enumerate(itertools.permutations(range(len(members)))):
            grid = np.where(np.isfinite(flat[o]), flat[o], 0.0)
            first = outer_first[0]
            out[first] = grid if first not in out else np.minimum(out[first], grid)
        return out

    def _rooted_index(self, m: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict, dict]:
        """B31 (:meth:`_rooted_chains`): per budget of ``keys`` and distinct row ``U`` of :meth:`_joint_table`, (u, V')
        the flat index of ``keys / U`` in :meth:`_chain_grid`'s grid, (V',) that of ``bounds / U``, per (level,
        tensor) a lazily filled (u, V') mask of where the chain lies inside ``keys / U`` (that box is on the lattice
        and the tensor's words of it do not fit the level alone), and a memo of the chains read for these budgets.
        The last budgets' only (one node batch's)."""
        key = ("rooted index", m)
        cached = self._front_cache.get(key)
        if cached is not None and cached[0].shape == keys.shape and (cached[0] == keys).all():
            return cached[1]
        values, shape, _, cover_at = self._chain_grid(m)
        units = self._joint_table(m, drains=True)[0][self._distinct_rows(m)]  # (V', D)
        index = np.zeros((len(keys), len(units)), dtype=np.int64)
        size, stride = int(np.prod(shape)), 1
        for d in reversed(range(self.op_dims)):  # the flat index, last dimension fastest
            rows, row_of = np.unique(keys[:, d], return_inverse=True)
            cols, col_of = np.unique(units[:, d], return_inverse=True)
            pos = _lattice_places(rows, cols, values[d])  # (distinct budgets, distinct factors) of this dimension
            if (pos != 0).any():  # else every box lies on the lattice at its first place: nothing to add
                step = np.where(pos >= 0, stride * pos, -size)  # off the lattice: the sum stays below 0
                index += step[row_of.reshape(-1)][:, col_of.reshape(-1)]  # (u, V')
            stride *= shape[d]
        found = index >= 0
        np.maximum(index, 0, out=index)  # off the lattice: any place, never read

        lb = self

        class Inside(dict):  # per (level, tensor), filled when first read
            def __missing__(self, member: tuple[int, int]) -> np.ndarray:
                self[member] = found & ~lb._holds_alone(m, *member)[index]
                return self[member]

        out = (index, np.ravel_multi_index(cover_at, shape), Inside(), {})
        self._front_cache[key] = (keys.copy(), out)
        return out

    def _holds_alone(self, m: int, level: int, t: int) -> np.ndarray:
        """B31: per box of :meth:`_chain_grid`'s grid (flat), whether tensor ``t``'s words of it fit ``level`` (the
        other tensors taking one word, :meth:`_placed_ratio`'s test with no outer tensor). Cached."""
        key = ("holds alone", m, level, t)
        if key not in self._front_cache:
            _, shape, at, _ = self._chain_grid(m)
            tiles, _ = self._layer_lattice()
            covers_of = np.ones((len(tiles), self.T, self.op_dims), dtype=np.int64)
            covers_of[:, t] = tiles
            holds = np.zeros(int(np.prod(shape)), dtype=bool)
            holds[np.ravel_multi_index(at, shape)] = self.fit.fits(level, covers_of)
            self._front_cache[key] = holds
        return self._front_cache[key]

    def _parent_reads(self, entries: dict[int, tuple], paired: dict[int, np.ndarray], rest: np.ndarray,
                      drain: tuple[int, float, float]) -> np.ndarray:
        """(n,) B25 (docs/search.md, "B25: the parents' reads per unrolling, lazily"): B22 with the parents' reads.
        Under an unrolling ``U`` of the open fan-out ``m`` one read of a tensor ``t``'s parent feeds at most
        ``mc_t(U)`` children (:meth:`_read_groups`), so a parent across ``m`` reads at least ``w_t / mc_t(U)`` words
        of the ``w_t`` the child fills (each crossing ``m``): the pair costs at least ``w_t x (fill + hop + read /
        mc_t(U))``, in place of its whole bound (``paired``: its energy and hops as the bound counts them). Per ``U``
        the larger of this form and B22's (both linear in the chained ``w_t``), the least over the legal ``U`` of the
        budget less the per-pair minima; the caller subtracts what B22's caller does. Lazily: with ``A(U)`` B22's
        per-unrolling value and ``A(U) + max(0, g(U) - d)`` this one's (``g``: the reads' chain table less B22's, one
        table per distinct vector of ``mc_t(U)``; ``d``: the node's pairs' whole bounds less B22's ``h_t e_t``), only
        the ``U`` whose ``A(U)`` lies below the node's value at B22's least ``U`` can be its least, and only their
        vectors' tables are computed (at most :data:`READ_TABLES` new ones a call, cached for the search); a ``U``
        whose table is not yet computed counts ``A(U)``, B22's value, so the result is always a bound."""
        m, chained, weights, others = self._unrolled_terms(entries, drain)
        rooted = self._unrolled_terms(entries, drain, rest)[1]  # (u, V') B31: B22's per budget, at least ``chained``
        c, n, others = drain[0], len(rest), tuple(others)
        held = self._held(entries, weights, others, n)
        slack = sum((paired[t] for t in others), np.zeros(n)) - held  # (n,) d
        keys, inverse = unique_rows(rest)
        rows = inverse.reshape(-1)
        legal, low = self._unrolling_low(m, keys)
        candidates = np.where(legal, rooted, np.inf)  # (u, V')
        least = candidates.argmin(axis=1)[rows]  # B22's least ``U`` per node
        spare = READ_TABLES - self._read_tables(m, c, weights, others, _by_count(least), READ_TABLES)
        gain = self._read_gains(m, c, weights, others)
        at_least = np.maximum(rooted[rows, least], chained[least] + np.maximum(
            0.0, np.nan_to_num(gain[least], nan=-np.inf) - slack))
        cap = np.full(len(keys), -np.inf)
        np.maximum.at(cap, rows, at_least)  # no ``U`` at or above a budget's cap can be any of its nodes' least
        band = candidates < cap[:, None]  # (u, V')
        if band.any():
            width = int(band.sum(axis=1).max())
            order = np.argsort(~band, axis=1, kind="stable")[:, :width]  # (u, width) each budget's band rows first
            pick, ok = order[rows], np.take_along_axis(band, order, axis=1)[rows]  # (n, width)
            while True:  # the least over the band, each row's table computed when it is some node's least
                known = np.nan_to_num(gain[pick], nan=-np.inf)
                value = np.where(ok, np.maximum(rooted[rows[:, None], pick],
                                                chained[pick] + np.maximum(0.0, known - slack[:, None])), np.inf)
                arg = np.take_along_axis(pick, value.argmin(axis=1)[:, None], axis=1)[:, 0]
                wanted = arg[np.isnan(gain[arg]) & (value.min(axis=1) < at_least)]
                if not len(wanted) or spare <= 0:
                    break
                spare -= self._read_tables(m, c, weights, others, _by_count(wanted), 1)
            at_least = np.minimum(at_least, value.min(axis=1))
        best = at_least - low[rows] - held
        return np.where(legal.any(axis=1)[rows] & np.isfinite(best), best, -np.inf)

    def _read_gains(self, m: int, c: int, weights: tuple[float, ...], others: tuple[int, ...]) -> np.ndarray:
        """(V',) B25: per distinct row ``U`` of :meth:`_joint_table` the least chained refills with the parents' reads
        (each tensor of ``others`` weighted also by its parent's read energy over ``mc_t(U)``, :meth:`_read_groups`)
        less B22's (:meth:`_nested_chains` with ``weights``); NaN where its vector's table is not yet computed
        (:meth:`_read_tables`). Cached per search."""
        key = ("read gains", m, c, weights, others)
        if key not in self._front_cache:
            self._front_cache[key] = np.full(len(self._distinct_rows(m)), np.nan)
        return self._front_cache[key]

    def _read_tables(self, m: int, c: int, weights: tuple[float, ...], others: tuple[int, ...], wanted: np.ndarray,
                     limit: int) -> int:
        """B25: fills :meth:`_read_gains` for the vectors of the rows ``wanted`` (in that order) not yet computed, at
        most ``limit`` chain tables; returns how many it computed."""
        gain = self._read_gains(m, c, weights, others)
        missing = wanted[np.isnan(gain[wanted])]
        group, vectors = self._read_groups(m, c, others)
        todo = list(dict.fromkeys(group[missing].tolist()))[:limit]
        if todo:
            parents = {pr.tensor: pr.parent for pr in self.pairs if pr.child == c}
            plain = self._nested_chains(m, c, weights).min(axis=0)
        for g in todo:
            more = tuple(w + (float(self.read_full[parents[t], t]) / vectors[g, t] if t in others else 0.0)
                         for t, w in enumerate(weights))
            rows = group == g
            # without B43 (a chain table per vector: B43's cost there is not repaid), less B22's with it: B22 with
            # these reads as a whole, B43 left out
            gain[rows] = self._nested_chains(m, c, more, False).min(axis=0)[rows] - plain[rows]
        return len(todo)

    def _read_groups(self, m: int, c: int, others: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """B25: (V',) per distinct row ``U`` of :meth:`_joint_table` the index of its vector and (G, T) the distinct
        vectors of ``mc_t(U)``: the children of level ``c`` one read of ``t``'s parent may feed under ``U`` where the
        fan-out ``m`` lies between them (else 1), ``U``'s factors of the dimensions that are not the only term of an
        axis of ``t`` (children differing in such a dimension need disjoint words of ``t``; those differing only in the
        others may share words: a plain tensor's copies, a sliding-window input's overlapping windows, which the
        union rule reads once). Cached."""
        key = ("read groups", m, c, others)
        if key not in self._front_cache:
            table = self._joint_table(m, drains=True)[0][self._distinct_rows(m)]
            parents = {pr.tensor: pr.parent for pr in self.pairs if pr.child == c}
            shared = np.ones((len(table), self.T), dtype=np.int64)
            for t in others:
                if c < m <= parents[t]:
                    shared[:, t] = np.where(self.disjoint[t][None, :], 1, table).prod(axis=1)
            vectors, inverse = unique_rows(shared)
            self._front_cache[key] = (inverse.reshape(-1), vectors)
        return self._front_cache[key]

    def _spilled_refetch(self, entries: dict[int, tuple], rest: np.ndarray, drain: tuple[int, float, float],
                         top: dict[int, tuple], spent: dict[int, np.ndarray], fixed: np.ndarray | None = None,
                         shared: np.ndarray | None = None) -> np.ndarray | None:
        """(n,) B26 (docs/search.md, "B26: the backing store's refetches the on-chip capacity forces"): B22 with, per
        unrolling ``U`` of the open fan-out ``m``, the refetches from the backing store that a tensor ``s`` kept at
        B14's child ``c`` with the backing store as its parent (it bypasses the levels between, as Eyeriss's weights)
        forces where its words per instance of ``c`` under ``U`` (``s``'s words of ``bounds / U``) exceed ``c``'s
        capacity for it. Take the nest's outermost loops that do not index ``s`` (the prefix; ``T`` their trips per
        dimension, ``T_Z`` their product: every ``T`` dividing ``bounds / U`` is a case) and the loop ``Y`` right below
        them, on a dimension ``d`` indexing ``s`` (``bounds / U`` leaves ``d`` at least 2):
        * some loop ``X`` above ``s``'s raised tile ``R_s`` (B20) indexes ``s`` (else ``R_s`` holds the instance's whole
          slice, which does not fit), so the prefix lies above ``X``: the runs of ``R_s`` (each filling its words) are
          repeated by each prefix iteration, so each instance fills its slice ``T_Z`` times at different moments and the
          backing store, whose one read feeds only the fills of one moment, reads every word of ``s`` ``T_Z`` times;
        * in each prefix iteration (the box ``bounds / T``) every iteration of ``Y`` touches every word of that box of
          each tensor ``t`` that ``d`` does not index. At the boundary between two of them at most ``H_t`` words of
          ``t`` are on chip (each level below the backing store keeping ``t``: its capacity for it times its most
          instances), so ``T_Z x (|t(bounds / T)| - H_t)`` words come from the backing store again: an input's pair
          fills (and its parent reads) ``|t|`` and these; an output's drains as many (each word not on chip at a
          boundary was drained before it and is drained again later) and reloads these.
        Each prices pairs the bound counts apart from B22's terms, beyond what the bound counts for each (``top``: per
        tensor its backing store's pair, (pair, energy, child words, hop energy per word); its energy with the hops and
        the refills ``spent`` at its child level; ``s``'s fills beyond its child words are B22's), so per ``U`` the least
        over ``T`` and ``d`` of their sum adds to B22's sum at ``U``; the least over the legal ``U`` (rows with the same
        cases taken together, :meth:`_spilled_groups`), less B22's held words. None where no tensor is such an ``s``;
        else the larger over the tensors that are. A node's bound only, as B22. B31 (docs/search.md, "B31: the chains
        within the loops left below the fixed levels"): B22's chains per budget; and ``fixed`` (n, F, D), the trips of
        the node's fixed levels' loops: where one of them indexes ``s``, the nest's outermost loops are fixed ones, so
        ``Y`` is a fixed loop (on ``d`` with a fixed loop of ``y >= 2`` trips, ``y`` at least the least such loop's) and
        the prefix fixed loops (``T`` dividing their product): only those cases, each with its ``y - 1`` boundaries
        between the iterations of ``Y`` in every prefix iteration (the moves owed to different boundaries are distinct:
        each is in the iteration after its boundary), ``T_Z (y - 1) (|t(bounds / T)| - H_t)`` words again. B34
        (docs/search.md, "B34: the refetches one shared buffer forces across the backing store's iterations"):
        ``shared`` (n,), what the input's and output's pairs with the backing store cost at least beyond what the bound
        counts for them (their child level other than ``c``), each case's excess on those pairs at least it."""
        c, backed = drain[0], self._backed_terms(entries, drain, top, rest)  # B31: B22's chains per budget
        if backed is None:
            return None
        sources, m, chained, weights, others = backed
        n = len(rest)
        held = self._held(entries, weights, others, n)
        best = np.full(n, -np.inf)
        for s in sources:
            zs, words, keys, members = self._spilled_groups(m, c, s)
            pr, e, h, hop = top[s]
            reads = np.maximum(0.0, zs[None, :] * self.touched_all[s] * self.read_full[pr.parent, s]
                               + (h * (self.energy[c, s, 1] + hop) - (e + h * hop))[:, None])  # (n, K)
            again = np.zeros((self.T, n, len(zs)))  # per tensor, its pair's excess with the prefixes' refetches
            for t, (q, et, ht, hopt) in top.items():
                on_chip = self._chip_words(t)
                if t == s or not (words[:, t] > on_chip).any():
                    continue
                pair = self._refetched_pair(t, q, zs * np.maximum(0.0, words[:, t] - on_chip))  # (K,)
                again[t] = np.maximum(0.0, pair[None, :] - (et + ht * hopt + spent.get(q.child, 0.0))[:, None])
            inner = np.array([again[~self.indexes[:, d]].sum(axis=0) for d in range(self.op_dims)])  # (D, n, K)
            if shared is not None:  # B34 on the same pairs
                inner = np.maximum(inner, shared[None, :, None])
            ys = None  # B31: per node, ``Y``'s dimensions and the prefixes among the fixed loops, where one indexes ``s``
            if fixed is not None:
                trips = fixed.prod(axis=1)  # (n, D)
                ys = self.indexes[s][None, :] & (trips > 1)
                pinned = ys.any(axis=1)
                if pinned.any():
                    ys = np.where(pinned[:, None], ys, True)
                    ts = np.where(pinned[:, None], (trips[:, None, :] % self._prefixes(s)[None, :, :] == 0).all(axis=2),
                                  True)  # (n, K)
                    # ``Y``'s boundaries per prefix iteration: at least the least fixed loop's trips on ``d``, less 1
                    bounds_y = np.where(pinned[:, None], np.where(fixed > 1, fixed, np.iinfo(np.int64).max).min(axis=1)
                                        - 1, 1)  # (n, D)
                    bounds_y = np.where(ys & (trips > 1), bounds_y, 1).astype(float)
                    pinned_inner = np.zeros((self.op_dims, n, len(zs)))  # (D, n, K) ``inner`` over all the boundaries
                    for t, (q, et, ht, hopt) in top.items():
                        on_chip = self._chip_words(t)
                        if t == s or not (words[:, t] > on_chip).any():
                            continue
                        over = zs * np.maximum(0.0, words[:, t] - on_chip)  # (K,) one boundary's
                        counted = (et + ht * hopt + spent.get(q.child, 0.0))[:, None]
                        for d in np.nonzero(~self.indexes[t] & self.indexes[s])[0]:
                            pair = self._refetched_pair(t, q, bounds_y[:, d, None] * over[None, :])  # (n, K)
                            pinned_inner[d] += np.maximum(0.0, pair - counted)
                    if shared is not None:  # B34 on the same pairs
                        pinned_inner = np.maximum(pinned_inner, shared[None, :, None])
                else:
                    ys = None
            excess = np.zeros((len(keys), n)) + (0.0 if shared is None else shared[None, :])  # B34 in every case
            by_dims: dict[bytes, np.ndarray] = {}  # per set of ``Y``'s dimensions, (n, K) the least over them
            among_dims: dict[bytes, np.ndarray] = {}  # and (B31) over those among the fixed loops
            for g, key in enumerate(keys):
                dims, prefixes = key[1:1 + self.op_dims].astype(bool), key[1 + self.op_dims:].astype(bool)
                if key[0] and dims.any():
                    if dims.tobytes() not in by_dims:
                        by_dims[dims.tobytes()] = reads + inner[dims].min(axis=0)
                    excess[g] = by_dims[dims.tobytes()][:, prefixes].min(axis=1)
                    if ys is not None:  # B31: only the cases among the fixed loops (a least over fewer cases)
                        if dims.tobytes() not in among_dims:
                            among_dims[dims.tobytes()] = reads + np.where(
                                ys.T[dims][:, :, None], np.where(pinned[None, :, None], pinned_inner[dims], inner[dims]),
                                np.inf).min(axis=0)
                        among = np.where(ts & prefixes[None, :], among_dims[dims.tobytes()], np.inf).min(axis=1)
                        excess[g] = np.where(np.isfinite(among), np.maximum(among, excess[g]), excess[g])
            least = self._least_unrolling(m, chained, rest, members)  # (G, n)
            value = np.where(np.isneginf(least), np.inf, least + excess).min(axis=0)
            best = np.maximum(best, np.where(np.isfinite(value), value, -np.inf))
        return best - held

    def _chip_words(self, t: int) -> float:
        """B26/B27: the most words of tensor ``t`` the levels below the backing store hold at once (each level keeping
        ``t``: its capacity for it times its most instances)."""
        return float(sum(self.capacity[lv, t] * self.fan[lv + 1:].prod() for lv in range(self.L - 1)
                         if self.keeps[lv, t]))

    def _refetched_pair(self, t: int, q: Pair, over: np.ndarray) -> np.ndarray:
        """B26/B27: the least energy of tensor ``t``'s pair ``q`` with the backing store when ``over`` words beyond its
        first touches come from it again: an input's fills and parent reads of every word and of these; an output's
        drains and parent updates of every word and of these, and the reloads of these."""
        ch, p = q.child, q.parent
        if t == self.out:
            return ((self.touched_all[t] + over) * (self.energy[ch, t, 0] + self.energy[p, t, 2])
                    + over * (self.energy[ch, t, 1] + self.read_full[p, t]))
        return (self.touched_all[t] + over) * (self.energy[ch, t, 1] + self.read_full[p, t])

    def _shared_refetch(self, top: dict[int, tuple], temporal: np.ndarray, spatial: np.ndarray,
                        spent: dict[int, np.ndarray], order: np.ndarray | None = None) -> np.ndarray | None:
        """(n,) B34 (docs/search.md, "B34: the refetches one shared buffer forces across the backing store's
        iterations"): what the backing store's pairs of the output and of an input ``i`` cost beyond what the bound
        counts for them (``top``: per tensor its backing store's pair, (pair, energy, child words, hop energy per
        word); ``spent``: the refills the bound adds per child level), where both pairs have one child level ``g``
        whose capacity partition holds both (Eyeriss's buffer) and the backing store's loops are fixed (``N``
        iterations, each running the box ``bounds / trips``: ``F_i`` and ``F_o`` words). In the loops' order, at the
        boundary before each iteration but the first:
        * every word of the iteration's input not on chip then is read from the backing store (and filled) in it, and
          the words on chip that it uses are at most ``u``, those of its input an earlier iteration used;
        * every output word it updates that an earlier iteration updated (``F_o`` words where it revisits a block of
          the output the fixed loops split it into, none where it is the block's first) and is not on chip then was
          drained after its last update before the boundary and is reloaded in the iteration: one drain and one reload
          owed to that boundary alone;
        * on chip: at most ``h_i + R_i`` input and ``h_o + R_o`` output words, ``w_i h_i + w_o h_o <= S`` at ``g``
          (the partition's size and word weights, times ``g``'s instances; its other partitions ignored) and
          ``R_i``, ``R_o`` the other levels' most (:meth:`_chip_words` less ``g``'s).
        So the two pairs cost at least the input's ``N F_i`` fills and reads, the output's drains and updates of
        every word, and per boundary the least over ``h_o`` of ``e_o (live - h_o - R_o)^+ - e_i min(u, F_i, h_i +
        R_i)`` (:meth:`_boundary_least`); ``e_i``, ``e_o`` a word's fill and read, and drain, update, reload and fill,
        with the hops; ``live`` and ``u`` in the backing store's order ``order`` (n, D), outermost first, where it is
        fixed (:meth:`_walked_boundaries`), else order-free. None where no such pair of pairs exists."""
        if self.out not in top:
            return None
        g, d = top[self.out][0].child, self.L - 1
        inputs = [t for t in top if t != self.out and top[t][0].child == g]
        spec = self.fit.levels[g]
        if len(inputs) != 1 or spec is None:
            return None
        i, (part, sizes) = inputs[0], spec
        shared = np.nonzero((part[i] > 0) & (part[self.out] > 0))[0]
        if not len(shared):
            return None
        inst = self.fan[g + 1:].prod()
        weights = (sizes[shared[0]] * inst, part[i, shared[0]], part[self.out, shared[0]],
                   self._chip_words(i) - self.capacity[g, i] * inst,
                   self._chip_words(self.out) - self.capacity[g, self.out] * inst)
        hop_i, hop_o = top[i][3], top[self.out][3]
        e_i = self.energy[g, i, 1] + self.read_full[d, i] + hop_i
        e_o = (self.energy[g, self.out, 0] + self.energy[d, self.out, 2] + self.energy[g, self.out, 1]
               + self.read_full[d, self.out] + 2 * hop_o)
        trips = temporal[:, d] * spatial[:, d]  # (n, D) the backing store's loops
        keys, inverse = unique_rows(np.concatenate([trips, trips if order is None else order], axis=1))
        least = self._shared_least(i, keys, order is not None, weights, e_i, e_o)
        least = least[inverse.reshape(-1)] + self.touched_all[self.out] * (
            self.energy[g, self.out, 0] + self.energy[d, self.out, 2] + hop_o)
        counted = sum(top[t][1] + top[t][2] * top[t][3] for t in (i, self.out)) + spent.get(g, 0.0)
        return least - counted

    def _shared_least(self, i: int, keys: np.ndarray, ordered: bool, weights: tuple[float, ...], e_i: float,
                      e_o: float) -> np.ndarray:
        """(K,) B34 for each row of ``keys`` (K, D or 2D): a vector of the backing store's trips and, where
        ``ordered``, its order (else open): the input's ``N F_i`` plus, per boundary, the least of
        :meth:`_boundary_least`. The boundaries are walked in the order (:meth:`_walked_boundaries`) where it is known
        and the iterations (at most 64) and the input's grid (at most 1e6 words) are few, else taken order-free: the
        revisits (their count does not depend on the order) and the others, any input on chip. Cached per row (an
        order by its loops that are not trivial); the rows not cached yet are priced together."""
        D = self.op_dims
        n_it = keys[:, :D].prod(axis=1)
        walked = ordered & (n_it <= 64) & (self._input_grid(i)[1] <= 1e6)
        names = [("shared", i, tuple(int(x) for x in key[:D]),
                  tuple(int(d) for d in key[D:] if key[d] > 1) if w else None, weights, e_i, e_o)
                 for key, w in zip(keys, walked)]
        new = np.array([k for k, name in enumerate(names) if name not in self._front_cache], dtype=np.int64)
        if len(new):
            trips, n = keys[new, :D], n_it[new]
            box = touched_lower(self.op, self.bounds[None, :] // trips, contiguous=True)
            f_i, f_o = box[:, i], box[:, self.out]
            least = np.zeros(len(new))
            free = ~walked[new]
            if free.any():
                revisits = n[free] - np.where(self.reduction[None, :], 1, trips[free]).prod(axis=1)
                least[free] = (revisits * self._boundary_least(f_o[free], f_i[free], *weights, e_i, e_o)
                               + (n[free] - 1 - revisits) * self._boundary_least(0.0 * f_o[free], f_i[free], *weights,
                                                                                 e_i, e_o))
            rows = np.nonzero(~free)[0]
            if len(rows):
                parts = [self._walked_boundaries(i, names[new[m]][2], names[new[m]][3]) for m in rows]
                sizes = [len(live) for live, _ in parts]
                live, used = (np.concatenate([part[c] for part in parts]) for c in range(2))
                per = self._boundary_least(live * np.repeat(f_o[rows], sizes),
                                           np.minimum(np.repeat(f_i[rows], sizes), used), *weights, e_i, e_o)
                least[rows] = np.bincount(np.repeat(np.arange(len(rows)), sizes), weights=per, minlength=len(rows))
            for m, k in enumerate(new):
                self._front_cache[names[k]] = e_i * n[m] * f_i[m] + float(least[m])
        return np.array([self._front_cache[name] for name in names])

    def _input_grid(self, i: int) -> tuple[list[int], float]:
        """Input ``i``'s extent per axis over the whole layer, and their product (its grid's words). Cached."""
        key = ("input grid", i)
        if key not in self._front_cache:
            names = self.op.dim_names
            extents = [sum(c * (int(self.bounds[names.index(dn)]) - 1) for dn, c in a.terms) + 1
                       for a in self.op.tensors[i].axes]
            self._front_cache[key] = extents, float(np.prod(extents, dtype=float))
        return self._front_cache[key]

    def _walked_boundaries(self, i: int, trips: tuple[int, ...], order: tuple[int, ...]
                           ) -> tuple[np.ndarray, np.ndarray]:
        """B34: at each boundary of the backing store's loops in ``order`` (its loops that are not trivial, outermost
        first) whether the next iteration revisits a block of the output, and the words of its input an earlier
        iteration used (each axis's interval of values per iteration marked on the input's grid; an upper bound where
        a window's values are not contiguous)."""
        names = self.op.dim_names
        box = self.bounds // np.array(trips)
        at = np.zeros((int(np.prod(trips)), self.op_dims), dtype=np.int64)  # each iteration's index per dimension
        if order:
            at[:, list(order)] = np.indices([trips[d] for d in order]).reshape(len(order), -1).T
        ends = [(sum(c * at[:, names.index(dn)] * int(box[names.index(dn)]) for dn, c in a.terms),
                 sum(c * ((at[:, names.index(dn)] + 1) * int(box[names.index(dn)]) - 1) for dn, c in a.terms) + 1)
                for a in self.op.tensors[i].axes]  # per axis the intervals' first and past-last values
        _, first, block = np.unique(at[:, ~self.reduction], axis=0, return_index=True, return_inverse=True)
        live = (first[block.reshape(-1)] < np.arange(len(at)))[1:].astype(float)
        # the input's grid cut at the intervals' ends: each cell is marked whole or not at all, weighing its words
        cuts = [np.unique(np.concatenate([lo, hi])) for lo, hi in ends]
        weight = functools.reduce(np.multiply.outer, [np.diff(c) for c in cuts])
        cells = [(np.searchsorted(c, lo), np.searchsorted(c, hi)) for c, (lo, hi) in zip(cuts, ends)]
        grid = np.zeros(weight.shape, dtype=bool)
        used = np.zeros(len(at) - 1)
        for it in range(len(at)):
            span = tuple(slice(lo[it], hi[it]) for lo, hi in cells)
            if it:
                used[it - 1] = weight[span][grid[span]].sum()
            grid[span] = True
        return live, used

    @staticmethod
    def _boundary_least(live: np.ndarray, f_i: np.ndarray, size: float, w_i: float, w_o: float, r_i: float,
                        r_o: float, e_i: float, e_o: float) -> np.ndarray:
        """B34 at boundaries: the least over the output's words ``h_o`` at the shared level of ``e_o (live - h_o -
        r_o)^+ - e_i min(f_i, (size - w_o h_o) / w_i + r_i)``, a convex function of ``h_o`` in ``[0, size / w_o]``,
        so its least over the ends and the two breaks."""
        top_o = size / w_o
        cands = [np.zeros_like(live), np.full_like(live, top_o), np.clip(live - r_o, 0.0, top_o),
                 np.clip((size - w_i * np.maximum(0.0, f_i - r_i)) / w_o, 0.0, top_o)]
        return np.min([e_o * np.maximum(0.0, live - h - r_o) - e_i * np.minimum(f_i, (size - w_o * h) / w_i + r_i)
                       for h in cands], axis=0)

    def _spilled_groups(self, m: int, c: int, s: int) -> tuple[np.ndarray, ...]:
        """B26's cases for tensor ``s`` at level ``c``: (K,) the prefixes' ``T_Z`` (every ``T``: divisors of the
        dimensions not indexing ``s``, 1 on the others), (K, T) each tensor's words of ``bounds / T``, and the distinct
        rows ``U`` of :meth:`_joint_table` grouped by their cases: (G, 1 + D + K) per group whether ``s``'s words of
        ``bounds / U`` overflow ``c``, per dimension whether ``Y`` may lie on it (it indexes ``s`` and ``bounds / U``
        leaves it at least 2), per prefix whether it divides ``bounds / U``; the rows in the groups' order and where each
        group starts among them (:meth:`_least_unrolling`). Cached."""
        key = ("spilled", m, c, s)
        if key not in self._front_cache:
            cover = self.bounds[None, :] // self._joint_table(m, drains=True)[0][self._distinct_rows(m)]  # (V', D)
            prefixes = self._prefixes(s)
            words = touched_lower(self.op, self.bounds[None, :] // prefixes, contiguous=True)
            over = touched_lower(self.op, cover, contiguous=True)[:, s] > self.capacity[c, s]  # (V',)
            outer = over[:, None] & self.indexes[s][None, :] & (cover > 1)  # (V', D)
            fits = (cover[:, None, :] % prefixes[None, :, :] == 0).all(axis=2)  # (V', K)
            keys, inverse = unique_rows(np.concatenate([over[:, None], outer, fits], axis=1).astype(np.int64))
            order = np.argsort(inverse.reshape(-1), kind="stable")
            starts = np.searchsorted(inverse.reshape(-1)[order], np.arange(len(keys)))
            self._front_cache[key] = (prefixes.prod(axis=1).astype(float), words, keys, (order, starts))
        return self._front_cache[key]

    def _prefixes(self, s: int) -> np.ndarray:
        """B26/B27: (K, D) every trip vector ``T`` a prefix of loops that do not index tensor ``s`` may have: the
        divisors of the layer's bounds on the dimensions not indexing ``s``, 1 on the others. Cached."""
        key = ("prefixes", s)
        if key not in self._front_cache:
            self._front_cache[key] = np.array(list(itertools.product(
                *[divisors(int(b)) if not self.indexes[s, d] else (1,) for d, b in enumerate(self.bounds)])),
                dtype=np.int64)
        return self._front_cache[key]

    def _backed_terms(self, entries: dict[int, tuple], drain: tuple[int, float, float],
                      top: dict[int, tuple], rest: np.ndarray | None = None) -> tuple | None:
        """B26/B27: the plain tensors but the output whose pair with the backing store (``top``) has B14's child
        ``drain[0]`` as child (they bypass every level between, as Eyeriss's weights), and B22's terms
        (:meth:`_unrolled_terms`); None where there is none."""
        sources = [s for s, (pr, *_) in top.items() if pr.child == drain[0] and s != self.out and self.plain[s]]
        return (sources, *self._unrolled_terms(entries, drain, rest)) if sources else None

    def _rf_drains(self, entries: dict[int, tuple], rest: np.ndarray, drain: tuple[int, float, float],
                   top: dict[int, tuple], spent: dict[int, np.ndarray]) -> np.ndarray | None:
        """(n,) B27 (docs/search.md, "B27: the register file's refills between the overflowing tensor's loops"): B26's
        cases with the child's own refills. Fix the open fan-out's unrolling ``U`` (B22) and a tensor ``s`` kept at B14's
        child ``c`` whose parent is the backing store and whose words of ``B' = bounds / U`` (what each instance of ``c``
        runs) overflow ``c``'s capacity for it. Every instance runs the same loop sequence over ``B'``.
        * **Boundaries.** Take a loop with ``y`` trips over a box ``V`` (the loops inside it run ``V / y``) on a
          dimension ``e``: every iteration touches all of the instance's words of ``V`` of each tensor ``t`` that ``e``
          does not index, of which at most ``c``'s capacity for ``t`` stay at a boundary; every other word moves out
          before the boundary and in again after it. Attributing to a boundary the first move in of each such word in
          the next iteration (the last move out in the previous one) makes the moves of different boundaries distinct,
          and none is a word's first touch: ``X_e(V) = sum_t a_t max(0, |t(V)| - cap_c(t))`` per boundary beyond the
          first touches (``a_t``: B22's energy of a refill, for the output a drain, a reload and their hops; words
          counted without assuming contiguous indices, as an instance's share of a dimension split over the array may
          be strided).
        * **The nest (:meth:`_overflow_refills`).** While ``s`` overflows ``V``, the outermost loop of ``V`` splits it:
          ``f(V) = min`` over its dimension ``e`` and a prime ``q`` dividing its trips of ``(q - 1) X_e(V) + q f(V /
          q)`` (0 where ``s`` fits), a least over the layer's lattice; trips ``y`` owe at least that (by induction on
          ``y``). Each tensor kept at ``c`` then moves at least ``|U| |t(B')|`` words (the output: B14's ``outputs x
          copies(U)``) plus ``|U| f(B')`` in all.
        * **B26's case.** The prefix of outermost loops not indexing ``s`` (trips ``T``, product ``T_Z``) and the loop
          ``Y`` below it on a dimension ``d`` indexing ``s``, with ``y >= 2`` trips dividing ``B'_d`` and a prime factor
          ``p``: ``T_Z ((p - 1) X_d(B' / T) + p f(B' / (T p)))``, and the same with only ``d``'s tensors and one level
          (``(p - 1) X_d``); where every tensor kept at ``c`` overflows it over ``B' / T`` no raised tile holds ``Y``, so
          B22's chains lie inside ``B' / (T p)`` (:meth:`_chains_inside`). Each form replaces B22's chained ``w_t`` of
          the tensors it prices (the chain with those at weight 0 prices the others); per case the largest holds. The
          backing store's side is B26's, linear in what the bound counts: ``s`` read ``T_Z`` times (where ``T_Z > 1``)
          and each tensor ``d`` does not index kept on chip ``T_Z (p - 1)`` times over its on-chip words (where it
          overflows), each pair's energy replacing what the bound counts for it (its energy with the hops, the refills
          at its child level once per level).
        Per ``U`` the least over its cases, grouped by which pairs they reprice (:meth:`_drain_cases`), the ``U`` without
        the overflow at B22's value, and beside it the larger of B22's chain and the nest's form alone (every case's
        register-file part); the least over the legal ``U`` less the per-pair minima and B22's held words; the larger
        over the tensors ``s``. It extends B26 (one boundary, the chip only) and B22 (the chained ``w_t``); a node's
        bound only, never the tile bound, for B22's reason (a tile's instances run the tile over ``U``, not ``bounds /
        U``). None where no tensor is such an ``s``."""
        c, backed = drain[0], self._backed_terms(entries, drain, top)
        if backed is None:
            return None
        sources, m, chained, weights, others = backed
        n = len(rest)
        keys, inverse = unique_rows(rest)
        rows = inverse.reshape(-1)
        legal, low = self._unrolling_low(m, keys)
        best = np.full(n, -np.inf)
        for s in sources:
            (alone, _), *cases = self._drain_cases(m, c, s, entries, weights, chained)
            value = np.full(n, np.inf)
            for arr, repriced in cases:
                least = np.where(legal, arr[None, :], np.inf).min(axis=1) - low  # (u,)
                value = np.minimum(value, least[rows] - self._repriced(repriced, s, c, top, spent, n))
            alone = (np.where(legal, alone[None, :], np.inf).min(axis=1) - low)[rows]  # every case's RF part
            best = np.maximum(best, np.maximum(value, alone))
        best = best - self._held(entries, weights, others, n)
        return np.where(np.isfinite(best), best, -np.inf)

    def _repriced(self, tensors: tuple[int, ...], s: int, c: int, top: dict[int, tuple], spent: dict[int, np.ndarray],
                  n: int) -> np.ndarray:
        """(n,) B27: what the bound counts for the backing store's pairs of ``tensors`` that a case reprices: each
        pair's energy with its hops; for ``s`` less its ``h`` child fills (B22's chain prices ``s``'s fills beyond
        them), for the others with the refills the bound adds at their child levels (once per level)."""
        counted, levels = np.zeros(n), set()
        for t in tensors:
            q, e, h, hop = top[t]
            counted = counted + e + h * hop
            if t == s:
                counted = counted - h * (self.energy[c, s, 1] + hop)
            else:
                levels.add(q.child)
        return counted + sum((spent.get(lv, 0.0) for lv in levels), np.zeros(n))

    def _drain_cases(self, m: int, c: int, s: int, entries: dict[int, tuple], weights: tuple[float, ...],
                     chained: np.ndarray) -> list[tuple[np.ndarray, tuple[int, ...]]]:
        """B27's cases for tensor ``s`` at level ``c`` (:meth:`_rf_drains`), each (V',) per distinct row ``U`` of
        :meth:`_joint_table` with the backing store's pairs it reprices: first the larger of B22's value ``chained`` and
        the nest's form (:meth:`_overflow_refills`) at every ``U``, a bound beside the cases (none repriced); then the
        cases: the rows where ``s`` does not overflow at that value (none repriced), and per set of repriced pairs the
        least over the cases ``(d, T, p)`` with that set (B14's sum at ``U`` with the largest of the register file's
        forms, and B26's terms; inf where no such case is possible). Cached per weights."""
        key = ("drain cases", m, c, s, weights, tuple(sorted(entries)))
        if key in self._front_cache:
            return self._front_cache[key]
        table, energy, _, _ = self._joint_table(m, drains=True)
        first = self._distinct_rows(m)
        units = table[first]
        cover = self.bounds[None, :] // units  # (V', D) what each instance runs
        lanes = units.prod(axis=1).astype(float)
        copies = units[:, self.reduction].prod(axis=1).astype(float)
        base = energy.sum(axis=0)[first]
        prefixes = self._prefixes(s)
        zs = prefixes.prod(axis=1).astype(float)  # (K,)
        divides = (cover[:, None, :] % prefixes[None, :, :] == 0).all(axis=2)  # (V', K)
        inner = np.where(divides[:, :, None], cover[:, None, :] // prefixes[None, :, :], 1)  # (V', K, D)
        per_instance = touched_lower(self.op, inner.reshape(-1, self.op_dims)).reshape(len(cover), len(zs), self.T)
        own = touched_lower(self.op, cover)  # (V', T) an instance's words of ``B'``
        chip = touched_lower(self.op, self.bounds[None, :] // prefixes, contiguous=True)  # (K, T) B26's words
        over = touched_lower(self.op, cover, contiguous=True)[:, s] > self.capacity[c, s]  # (V',) as B26
        q = next(pr for pr in self.pairs if pr.tensor == s and pr.child == c)
        kept = [u for u in range(self.T) if self.keeps[c, u]]
        # where every tensor kept at ``c`` overflows it over ``B' / T``, no raised tile holds ``Y``: the chains lie
        # inside one iteration of ``Y``
        inside = np.all([per_instance[:, :, u] > self.capacity[c, u] for u in kept], axis=0)  # (V', K)
        reads = np.where(zs > 1, zs * self.touched_all[s] * self.read_full[q.parent, s], 0.0)  # (K,)
        drains = weights[self.out] * self.out_words * copies  # (V',) B14's drains, which the chains count
        # the refills the overflow forces at every nesting of loops (:meth:`_overflow_refills`), with the chain of the
        # tensors they do not price
        anywhere = tuple(t for t in kept if t in entries)
        values, shape, _, cover_at = self._chain_grid(m)
        nested = self._overflow_refills(m, c, s, anywhere, weights)
        whole = base + self._nested_chains(m, c, tuple(0.0 if u in anywhere else w for u, w in enumerate(weights))
                                           ).min(axis=0)  # the chain of the tensors the nested refills do not price
        whole = whole + sum((weights[t] * lanes * own[:, t] for t in anywhere if t != self.out), np.zeros(len(cover)))
        if self.out not in anywhere:
            whole = whole - drains
        top_level = whole.copy()  # (V',) B27's cases add the nested refills below their prefix and ``Y``
        whole = whole + lanes * nested[np.ravel_multi_index(cover_at, shape)]
        cases = [(np.maximum(chained, whole), ()), (np.where(over, np.inf, np.maximum(chained, whole)), ())]
        for d in np.nonzero(self.indexes[s])[0]:
            ok = over & (cover[:, d] >= 2)
            if not ok.any():
                continue
            free = [t for t in range(self.T) if t != s and not self.indexes[t, d]]
            moved = [t for t in free if t in entries]
            zero = tuple(0.0 if u in moved else w for u, w in enumerate(weights))  # the moved tensors at weight 0
            repriced = np.zeros((len(zs), self.T), dtype=bool)
            repriced[:, s] = zs > 1
            total = np.full((len(cover), len(zs)), np.inf)
            for prime in prime_factors(int(self.bounds[d])):  # ``y`` has a prime factor: ``y - 1 >= prime - 1``
                rows = ok & (cover[:, d] % prime == 0)
                if not rows.any():
                    continue
                box = inner.copy()
                box[:, :, d] //= prime  # B' / T with ``d`` over ``prime``: one iteration of ``Y`` lies inside it
                full = np.where(inside, self._chains_inside(m, c, weights, box) - drains[:, None],
                                (chained - base)[:, None])  # B22's chained refills, inside one iteration of ``Y``
                rf = np.where(inside, self._chains_inside(m, c, zero, box),
                              self._nested_chains(m, c, zero).min(axis=0)[:, None])
                if self.out not in moved:
                    rf = rf - drains[:, None]
                for t in moved:
                    extra = (prime - 1) * lanes[:, None] * zs[None, :] * np.maximum(
                        0.0, per_instance[:, :, t] - self.capacity[c, t])
                    rf = rf + weights[t] * (extra if t == self.out else extra + (lanes * own[:, t])[:, None])
                below = nested[np.ravel_multi_index(tuple(np.searchsorted(values[k], box[:, :, k])
                                                          for k in range(self.op_dims)), shape)]  # (V', K)
                step = sum((weights[t] * np.maximum(0.0, per_instance[:, :, t] - self.capacity[c, t]) for t in anywhere
                            if not self.indexes[t, d]), np.zeros(box.shape[:2]))
                cased = top_level[:, None] + lanes[:, None] * zs[None, :] * ((prime - 1) * step + prime * below)
                value = base[:, None] + np.maximum(np.maximum(full, rf), np.maximum(whole[:, None], cased) - base[:, None]
                                                   ) + reads[None, :]
                for t in free:
                    q_t = next((pr for pr in self.pairs if pr.tensor == t and pr.parent == self.L - 1 and pr.child >= 0),
                               None)
                    if q_t is None:
                        continue
                    spill = np.maximum(0.0, chip[:, t] - self._chip_words(t))  # (K,)
                    repriced[:, t] = spill > 0
                    value = value + np.where(spill > 0, self._refetched_pair(t, q_t, (prime - 1) * zs * spill), 0.0)
                total = np.where(rows[:, None] & divides, np.minimum(total, value), total)
            for mask in np.unique(repriced, axis=0):
                cols = (repriced == mask[None, :]).all(axis=1)
                cases.append((total[:, cols].min(axis=1), tuple(int(t) for t in np.nonzero(mask)[0])))
        self._front_cache[key] = cases
        return cases

    def _overflow_refills(self, m: int, c: int, s: int, moved: tuple[int, ...], weights: tuple[float, ...]
                          ) -> np.ndarray:
        """B27: per box ``V`` of the layer's lattice (:meth:`_chain_grid`'s grid) the least energy ``f(V)`` of the
        refills at level ``c`` that one instance running ``V`` owes to the boundaries between iterations of its loops,
        where tensor ``s`` overflows ``c`` over ``V``: ``f(V) = 0`` where ``s``'s words of ``V`` fit, else the least over
        the outermost loop of ``V`` (on a dimension ``e``, with a prime ``q`` dividing its trips) of ``q f(V / q)`` where
        ``e`` does not index ``s`` (each iteration runs ``V / q``) and ``(q - 1) X_e(V) + q f(V / q)`` where it does:
        at each boundary every word of ``V`` of each tensor of ``moved`` that ``e`` does not index beyond ``c``'s
        capacity for it moves out and in again (``X_e``: those words at ``weights``). Trips ``y`` with a prime factor
        ``q`` owe at least that (by induction on ``y``: ``f(V / q)`` is at most the split of ``V / q`` by ``y / q``), and
        the moves owed to different boundaries are distinct (each is the first move in after its boundary, or the last
        out before it, within the loop's next or previous iteration). Cached."""
        key = ("overflow refills", m, c, s, moved, weights)
        if key in self._front_cache:
            return self._front_cache[key]
        values, shape, at, _ = self._chain_grid(m)
        size = int(np.prod(shape))
        words = np.zeros((size, self.T))
        words[np.ravel_multi_index(at, shape)] = touched_lower(self.op, self._layer_lattice()[0])  # an instance's, any indices
        coords = np.indices(shape).reshape(self.op_dims, -1)
        box = np.array([values[d][coords[d]] for d in range(self.op_dims)])  # (D, G)
        over = words[:, s] > self.capacity[c, s]
        count = sum(np.array([_prime_count(int(v)) for v in values[d]])[coords[d]]
                    for d in range(self.op_dims))  # prime factors with multiplicity: a box's level
        steps = []  # (the dimension, its prime, the boxes it divides, the neighbour over it)
        for e in range(self.op_dims):
            for q in prime_factors(int(self.bounds[e])):
                ok = box[e] % q == 0
                near = coords.copy()
                near[e] = np.searchsorted(values[e], np.where(ok, box[e] // q, box[e]))
                x = sum((weights[t] * np.maximum(0.0, words[:, t] - self.capacity[c, t]) for t in moved
                         if not self.indexes[t, e]), np.zeros(size))
                steps.append((q, ok, np.ravel_multi_index(tuple(near), shape), x))
        f = np.zeros(size)
        for level in range(1, int(count.max()) + 1):
            rows = np.nonzero(over & (count == level))[0]
            if not len(rows):
                continue
            least = np.full(len(rows), np.inf)
            for q, ok, near, x in steps:
                least = np.where(ok[rows], np.minimum(least, (q - 1) * x[rows] + q * f[near[rows]]), least)
            f[rows] = np.where(np.isfinite(least), least, 0.0)
        self._front_cache[key] = f
        return f

    def _chains_inside(self, m: int, c: int, weights: tuple[float, ...], boxes: np.ndarray) -> np.ndarray:
        """B27: per box of ``boxes`` (..., D; divisors of the layer's bounds) the least over the nesting orders of level
        ``c``'s kept tensors of the chained refills with the raised tiles inside it (:meth:`_chain_lattice`, B22's
        weights ``weights`` per tensor; an order with no chain that fits counts 0, as B22's)."""
        kept = tuple(u for u in range(self.T) if self.keeps[c, u])
        grids = self._chain_lattice(m, tuple((c, u) for u in kept), tuple(weights[u] for u in kept))
        values = self._chain_grid(m)[0]
        at = tuple(np.searchsorted(values[d], boxes[..., d]) for d in range(self.op_dims))
        found = grids[(slice(None),) + at]
        return np.where(np.isfinite(found), found, 0.0).min(axis=0)

    def _least_unrolling(self, m: int, chained: np.ndarray, rest: np.ndarray,
                         groups: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(n,) B22/B24: the least of ``chained`` (V', per distinct row of :meth:`_joint_table`: B14's sum there plus
        the refills priced at it; or (u, V') per distinct row of ``rest``, B31) over the legal unrollings of each
        budget ``rest``, less the per-pair minima over them (B14's ``low``); -inf where none is legal. ``groups`` (B26): (V',) the rows in groups' order and (G,) where
        each group starts among them: (G, n), the least over each group's rows."""
        keys, inverse = unique_rows(rest)
        legal, low = self._unrolling_low(m, keys)
        values = np.where(legal, chained if chained.ndim == 2 else chained[None, :], np.inf)  # (u, V')
        if groups is None:
            best = values.min(axis=1) - low
            return np.where(legal.any(axis=1) & np.isfinite(best), best, -np.inf)[inverse.reshape(-1)]
        order, starts = groups
        best = np.minimum.reduceat(values[:, order], starts, axis=1).T - low[None, :]  # (G, u)
        return np.where(np.isfinite(best), best, -np.inf)[:, inverse.reshape(-1)]

    def _unrolling_low(self, m: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """B22/B24/B25: (u, V') the distinct rows of :meth:`_joint_table` legal for each budget of ``keys`` and (u,)
        the per-pair minima over them (B14's ``low``)."""
        energy, first = self._joint_table(m, drains=True)[1], self._distinct_rows(m)
        legal = self._joint_legal(m, keys, drains=True, distinct=True)  # (u, V')
        # the per-pair minima over the legal rows: the least sum (the table is sorted by it, ``first`` ascending) less
        # B14's joint term
        return legal, energy.sum(axis=0)[first][legal.argmax(axis=1)] - self._joint_least(m, keys, drains=True)

    def _stacked_refills(self, placed: dict[int, dict[int, tuple]], rest: np.ndarray,
                         drain: tuple[int, float, float]) -> np.ndarray:
        """(n,) B24 (docs/search.md, "B24: the two register files with the array's copies"): B22 with the tensors kept
        at the levels below B14's child ``c`` in the chain (each fitting its own level) and the output's parent side.
        Under an unrolling ``U`` of the open fan-out ``m`` (the node's only one) each instance runs ``bounds / U`` at
        every level below ``m``, and the raised tiles of all those levels are cuts of its one loop sequence, so they
        nest (:meth:`_stacked_chains`): a 128-word weight register under a 1-word output register caps the reduction
        an output's residency may run unless the weights' raised tile lies inside the output's. The output drains
        ``D >= max(w_O, outputs x c)`` words (``c``: ``U``'s reduction factors); beyond B14 (its ``outputs x c``
        drains and the parent's update of each output word, ``u0`` a word) they cost at least ``(D - outputs x c) x
        (a drain, a reload, two hops)`` and, at the parent (B16 with ``R = c``: at least ``D / c`` updates, at full
        width when more than the outputs, and ``D / c - outputs`` reads), at least ``(u + r)(D / c - outputs) -
        max(0, u0 - u) outputs``: increasing and linear in ``D``, so at least its value at ``w_O``. The other members
        (``t`` at level ``l``) add ``(w_t - h_t) e_t`` (B20's entries). Per distinct ``c`` one chain table; the least
        over the legal ``U`` less the per-pair minima (:meth:`_least_unrolling`). The caller subtracts what the bound
        counts for those parts: B14's ``counted`` less its first touches, and the refills at the lower levels."""
        return self._least_unrolling(self.array, self._stacked_rows(placed, drain), rest) - self._stacked_held(
            placed, drain[0], len(rest))

    def _stacked_members(self, placed: dict[int, dict[int, tuple]], c: int
                         ) -> tuple[tuple[tuple[int, int], ...], list[tuple[int, int]]]:
        """B24/B29: the chain's members ((level, tensor) kept at B14's child ``c`` or a level below it with B20's
        entries, outermost level first) and those priced at B20's energy per word (the output at ``c`` has its own)."""
        members = tuple((lv, t) for lv in sorted((lv for lv in placed if lv <= c), reverse=True)
                        for t in range(self.T) if self.keeps[lv, t])
        return members, [(lv, t) for lv, t in members if t in placed[lv] and not (t == self.out and lv != c)]

    def _stacked_held(self, placed: dict[int, dict[int, tuple]], c: int, n: int) -> np.ndarray:
        """(n,) B24/B29: what the pairs' bounds hold for the chain's priced members other than the output (``h_t e_t``;
        ``c``: B14's child), subtracted after the least over ``U``."""
        _, priced = self._stacked_members(placed, c)
        return sum((placed[lv][t][0] * placed[lv][t][1] for lv, t in priced if t != self.out), np.zeros(n))

    def _stacked_rows(self, placed: dict[int, dict[int, tuple]], drain: tuple[int, float, float],
                      case: str = "any") -> np.ndarray:
        """(V',) per distinct row ``U`` of :meth:`_joint_table`: B24's sum at ``U`` (``case`` "any"), less the
        per-pair minima still to subtract (:meth:`_least_unrolling`). B29's two cases (docs/search.md, "B29: the
        output's partial sums at full width"): "spill", the output's drains at the child exceed ``outputs x c``, so
        every drain and every parent update moves a partial sum at full width (the chain's output weight takes the
        drain's width difference, and ``(u - u0) x outputs`` is added); "once", each copy drains once (``D = outputs x
        c``): the output's raised tile must move at most that many words (:meth:`_capped_chains`), and with ``c > 1``
        the copies' drains are partial sums at full width."""
        c = drain[0]
        members, priced = self._stacked_members(placed, c)
        key = ("stacked rows", case, drain, members, tuple((lv, t, float(placed[lv][t][1])) for lv, t in priced))
        if key in self._front_cache:  # the same for every node with these pairs' energies per word
            return self._front_cache[key]
        m = self.array
        table, energy, _, _ = self._joint_table(m, drains=True)
        first = self._distinct_rows(m)
        copies = table[first][:, self.reduction].prod(axis=1).astype(float)
        p = next(q.parent for q in self.pairs if q.tensor == self.out and q.child == c)
        per_out = drain[1] + self.energy[c, self.out, 1] + self.hop_energy[m]  # a drain beyond the first touches, its reload
        side = float(self.update_full[p, self.out] + self.read_full[p, self.out])  # per parent update beyond the first
        slack = max(0.0, drain[2] - float(self.update_full[p, self.out])) * self.out_words
        wider = float(self.read_full[c, self.out] - self.energy[c, self.out, 0])  # a drain at full width, beyond B14's
        out = members.index((c, self.out))
        chained = np.full(len(first), np.inf)
        for cv in np.unique(copies):
            weights = tuple(per_out + side / cv + (wider if case == "spill" else 0.0) if (lv, t) == (c, self.out)
                            else float(placed[lv][t][1]) if (lv, t) in priced else 0.0 for lv, t in members)
            rows = copies == cv
            chains = self._stacked_chains(m, members, weights)
            if case == "once":  # no chain with the output's tile so capped: the case is impossible (where some fits)
                chains = np.where(chains > 0, self._capped_chains(m, members, weights, (out, cv * self.out_words)),
                                  chains)
            chained[rows] = (energy.sum(axis=0)[first][rows] + chains.min(axis=0)[rows]
                             - (per_out * cv + side) * self.out_words - slack)
            if case == "spill":  # every parent update at full width: beyond B14's first update of each output word
                chained[rows] += max(0.0, float(self.update_full[p, self.out]) - drain[2]) * self.out_words
            elif case == "once" and cv > 1:  # the copies' drains are partial sums
                chained[rows] += wider * cv * self.out_words
        chained.setflags(write=False)
        self._front_cache[key] = chained
        return chained

    def _partial_sums(self, placed: dict[int, dict[int, tuple]], rest: np.ndarray,
                      drain: tuple[int, float, float]) -> np.ndarray:
        """(n,) B29 (docs/search.md, "B29: the output's partial sums at full width"): B24 with the output's widths.
        The output's drains at B14's child ``c`` and its parent's updates move final values (at the final width,
        what B14 and B24 price them at) only when every output word crosses the pair once (docs/cost-model.md 2b):
        under ``U`` (``c`` copies of each word), either each copy drains once (``D = outputs x c``: the output's
        raised tile moves at most that many words; with ``c > 1`` the copies are partial sums, their drains at full
        width), or some word drains twice, and then every drain and every parent update moves a partial sum at full
        width. The least of the two cases per ``U`` (:meth:`_stacked_rows`), the least over the legal ``U``, less what
        the pairs' bounds hold (as B24; the caller subtracts what it counts, as for B24)."""
        rows = np.minimum(self._stacked_rows(placed, drain, "spill"), self._stacked_rows(placed, drain, "once"))
        return self._least_unrolling(self.array, rows, rest) - self._stacked_held(placed, drain[0], len(rest))

    def _distinct_rows(self, m: int) -> np.ndarray:
        """B22: the index of the first row of each distinct factor vector of :meth:`_joint_table` (its rows differ in
        the axes too), in the table's order. Cached."""
        key = ("distinct rows", m)
        if key not in self._front_cache:
            _, inverse = unique_rows(self._joint_table(m, drains=True)[0])
            self._front_cache[key] = np.sort(np.unique(inverse, return_index=True)[1])
        return self._front_cache[key]

    def _nested_chains(self, m: int, c: int, weights: tuple[float, ...], wrapped: bool = True) -> np.ndarray:
        """(orders, V') B22: per nesting order of level ``c``'s kept tensors (outermost first) and per distinct row ``U``
        of :meth:`_joint_table` (:meth:`_distinct_rows`), the least of ``sum_t weights[t] x iterations x ratio_t(R_t)`` over the chains of raised
        tiles ``R_inner | ... | R_outer | bounds / U`` (the raised tiles of one level nest, so each divides the next
        one out), each ``R_t`` a box where ``t``'s and the outer tensors' words fit (B20's per-box least ratio,
        :meth:`_placed_ratio`; inf where they do not). B20 takes each tensor's least box on its own; the chain takes
        them together (:meth:`_stacked_chains` over level ``c``'s tensors)."""
        kept = tuple(u for u in range(self.T) if self.keeps[c, u])
        return self._stacked_chains(m, tuple((c, u) for u in kept), tuple(weights[u] for u in kept), wrapped)

    def _stacked_chains(self, m: int, members: tuple[tuple[int, int], ...], weights: tuple[float, ...],
                        wrapped: bool = True) -> np.ndarray:
        """(orders, V') B22/B24: per nesting order of ``members`` ((level, tensor) kept below the open fan-out ``m``,
        outermost first; ``weights`` aligned with them) and per distinct row ``U`` of :meth:`_joint_table`, the least of
        ``sum weights x iterations x ratio_t(R_t)`` over the chains of raised tiles ``R_inner | ... | R_outer | bounds /
        U``. Every level below ``m`` runs its loops inside each instance's one loop sequence (the levels' loops nest,
        outer level outside), so the raised tiles of all these levels are cuts of that sequence and nest, whatever the
        level; each ``R_t`` is a box where ``t``'s words and those of the outer members of its own level fit that level
        (:meth:`_placed_ratio`; inf where they do not): a min-over-divisors transform of the layer's lattice per member,
        innermost first (:func:`_divisor_min`). Cached per members and weights."""
        raw = self._capped_chains(m, members, weights, None, wrapped)  # ``wrapped``: with B43
        return np.where(np.isfinite(raw), raw, 0.0)  # no chain fits: no bound from it

    def _capped_chains(self, m: int, members: tuple[tuple[int, int], ...], weights: tuple[float, ...],
                       cap: tuple[int, float] | None, wrapped: bool = True) -> np.ndarray:
        """:meth:`_stacked_chains` where ``cap`` (member index, words) limits that member's raised tile to the boxes
        moving at most ``words`` words (B29's case where each copy of an output word drains once); None: no limit.
        Inf where no chain fits. ``wrapped``: with B43 (:meth:`_chain_lattice`). Cached."""
        key = ("chains", m, members, weights, cap, wrapped)
        if key not in self._front_cache:
            cover_at = self._chain_grid(m)[3]
            self._front_cache[key] = self._chain_lattice(m, members, weights, cap, wrapped)[(slice(None),) + cover_at]
        return self._front_cache[key]

    def _chain_lattice(self, m: int, members: tuple[tuple[int, int], ...], weights: tuple[float, ...],
                       cap: tuple[int, float] | None = None, wrapped: bool = True) -> np.ndarray:
        """(orders, *lattice) :meth:`_capped_chains`' least per nesting order over the chains inside every box of the
        layer's divisor lattice (:meth:`_chain_grid`; inf where none fits), read at the covers ``bounds / U`` there and
        at B27's boxes inside one iteration of a loop (:meth:`_chains_inside`). ``wrapped``: a sliding-window input's
        raised tile priced with the loops right above it inside the next one (B43, :meth:`_wrapped_chain`), else
        B20's table over every box inside (B22 before B43). Cached per members, weights, cap and ``wrapped``."""
        key = ("chain lattice", m, members, weights, cap, wrapped)
        if key not in self._front_cache:
            values, shape, at, _ = self._chain_grid(m)
            out = []
            # the inner members' least over the chains inside each box, per inner part of an order: a member's outer
            # ones are those not inner to it, so orders that end alike share it
            inner: dict[tuple[int, ...], np.ndarray] = {(): np.zeros(shape)}
            for outer_first in itertools.permutations(range(len(members))):
                for i in reversed(range(len(outer_first))):
                    if outer_first[i:] in inner:
                        continue
                    least = inner[outer_first[i + 1:]]
                    level, t = members[outer_first[i]]
                    outer = frozenset(members[j][1] for j in outer_first[:i] if members[j][0] == level)
                    self._placed_ratio(np.ones((0, self.op_dims), dtype=np.int64), level, t, outer)
                    ratio = self._placed_tiles[(level, t, outer)]
                    weight = weights[outer_first[i]]
                    own = np.full(shape, np.inf)
                    words = self.iterations * np.where(np.isfinite(ratio), ratio, 0.0)
                    fits = np.isfinite(ratio)
                    if cap is not None and outer_first[i] == cap[0]:
                        fits &= words <= cap[1] * (1 + 1e-9)
                    own[at] = np.where(fits, weight * words, np.inf)
                    inner[outer_first[i:]] = (_divisor_min(own + least, values)
                                              if self.plain[t] or not weight or not wrapped else
                                              self._wrapped_chain(m, level, t, own, fits, weight * self.iterations,
                                                                  least))  # B43
                out.append(inner[outer_first])
            self._front_cache[key] = np.array(out)
        return self._front_cache[key]

    def _chain_grid(self, m: int) -> tuple[list[np.ndarray], tuple[int, ...], tuple, tuple]:
        """:meth:`_stacked_chains`' grid of the layer's divisor lattice: per dimension its sorted divisors, the grid's
        shape, each lattice box's and each cover ``bounds / U``'s (distinct rows of :meth:`_joint_table`) index in it.
        Cached."""
        key = ("chain grid", m)
        if key not in self._front_cache:
            table = self._joint_table(m, drains=True)[0][self._distinct_rows(m)]
            tiles, values = self._layer_lattice()
            at = tuple(np.searchsorted(values[d], tiles[:, d]) for d in range(self.op_dims))
            covers = self.bounds[None, :] // table
            cover_at = tuple(np.searchsorted(values[d], covers[:, d]) for d in range(self.op_dims))
            self._front_cache[key] = (values, tuple(len(v) for v in values), at, cover_at)
        return self._front_cache[key]

    def _wrapped_chain(self, m: int, level: int, t: int, own: np.ndarray, fits: np.ndarray, scale: float,
                       least: np.ndarray) -> np.ndarray:
        """(*grid) B43 (docs/search.md, "B43: the window's loops inside the next raised tile"): per box ``X`` of
        :meth:`_chain_grid`'s grid (the next outer member's raised tile, or the cover), the least cost of a sliding-window
        input ``t``'s raised tile ``Y`` at ``level`` inside ``X`` plus the chain inside ``Y`` (``least``, on the grid).
        ``Y = X``: B20's cost ``own`` (on the grid; any loop above ``X``). ``Y`` strictly inside ``X`` (``fits``
        (boxes,): ``Y`` fits with the outer members; ``scale``: the member's weight times the layer's iterations): the
        loops between ``Y`` and ``X`` multiply to ``X / Y``, so the loop ``L1`` right above ``Y`` is on a dimension
        ``d`` with ``X_d / Y_d`` a multiple of its trips ``T``, and the next loop ``L2`` lies inside ``X`` on a
        dimension ``j`` with ``X_j / (Y x T)_j >= 2``, unless ``X`` is ``Y`` times ``T`` on ``d`` (``L2`` above ``X``,
        anywhere): :meth:`_trip_values`' words per iteration for each case, each read over the ``Y`` its case allows
        (on a plain axis of ``t`` every event of ``L1`` brings the whole box, whatever ``T``)."""
        values, shape, _, _ = self._chain_grid(m)

        def cost(ratio: np.ndarray) -> np.ndarray:  # per box its cost at ``ratio`` words per iteration, plus the chain
            return np.where(fits & np.isfinite(ratio), scale * np.where(np.isfinite(ratio), ratio, 0.0),
                            np.inf).reshape(shape) + least

        out = own + least
        stacked = [np.array([1])] + values  # the cases of one dimension stacked on a first axis
        for d, groups in self._trip_values(t, level):
            cases = [(trips, exact, nexts) for trips, exact, _, by_next in groups for nexts, _ in by_next]
            least_in = _divisor_min(np.array([cost(ratio) for _, _, _, by_next in groups for _, ratio in by_next]),
                                    stacked)  # L2 inside X: the least over each box's divisors, per case
            for (trips, exact, nexts), grid in zip(cases, least_in):
                moved = _shifted(grid, values, d, trips) if exact else _ratio_min(grid, values, d, trips)
                for j in nexts if exact or d not in nexts else ():  # on one of ``nexts``
                    out = np.minimum(out, _proper_min(moved, values, j))
                if not exact and d in nexts:  # L2 on d: X_d / Y_d at least 2 T, taken as at least T
                    out = np.minimum(out, moved)
            for trips, exact, alone, _ in groups:  # X = Y x T on d: L2 above X
                if alone is not None:
                    grid = cost(alone)
                    out = np.minimum(out, _shifted(grid, values, d, trips) if exact
                                     else _ratio_min(grid, values, d, trips))
        return out

    def _trip_values(self, t: int, level: int) -> list[tuple[int, list[tuple[int, bool, np.ndarray | None,
                                                                          list[tuple[list[int], np.ndarray]]]]]]:
        """B43 (:meth:`_wrapped_chain`): per dimension ``d`` that may move the sliding-window input ``t`` and per trips
        ``T`` of a loop ``L1`` on it right above a raised tile of ``t`` at ``level`` (per box of the layer's lattice, in
        its order), the least words per iteration of the box: B28's ``((T - 1) x step + entry) / T`` per run, least over
        ``L1``'s strides, at least a step where every event brings one (:meth:`_every_event`); with ``L2`` on any
        dimension (None: not needed), and per class of dimensions of ``L2`` (the plain axes' of ``t``, the others;
        ``d`` itself: B28's entry without ``L2`` or on ``d``) the least over the class. An entry with ``L2`` on a plain
        axis of ``t`` counts whole: every entry changes that axis (``L2`` steps or wraps, a non-zero multiple of its
        stride, at least the box's extent), the others half (B28). Inf where ``L1`` cannot have ``T`` trips. Each
        ``T`` below :data:`FEW_TRIPS` on its own (``exact``), the others as one, the least over them (``T`` at least
        that many). On a plain axis of ``t``: the whole box at every event, as one class with ``T >= 2``. Cached."""
        key = ("trip values", t, level)
        if key in self._front_cache:
            return self._front_cache[key]
        tiles = self._layer_lattice()[0]
        size = tiles.prod(axis=1).astype(float)
        _, parts = self._run_parts(tiles, t, level, every_too=True)
        step = _step_words(self.op, tiles, t, True, self.bounds)
        every = self._every_event(tiles, t)
        share = np.where(np.append(False, self.disjoint[t]), 1.0, 0.5)[:, None]  # per row of the entries
        nexts = [j for j in range(self.op_dims) if self.bounds[j] > 1]
        plains = [j for j in nexts if self.disjoint[t, j]]
        classes = [c for c in (plains, [j for j in nexts if j not in plains]) if c]
        moving = self.indexes[t] & (self.bounds > 1)
        room = self._loop_room(tiles, moving)
        out = []
        for d in np.nonzero(moving)[0].tolist():
            if self.disjoint[t, d]:
                out.append((d, [(2, False, None, [([d], np.where(room[:, d], step[:, d], np.inf) / size)])]))
                continue
            floor = np.where(every[:, d], step[:, d], 0.0)
            found: dict[int, tuple[np.ndarray, dict[int, np.ndarray]]] = {}
            for i, rows, runs in parts:
                if i != d:
                    continue
                for ok, steps, trips, entries in runs:
                    alone, by_next = found.setdefault(min(trips, FEW_TRIPS), (
                        np.full(len(tiles), np.inf), {j: np.full(len(tiles), np.inf) for j in nexts}))
                    weighed = share * entries
                    alone[rows] = np.minimum(alone[rows], np.where(ok, (steps + weighed.min(axis=0)) / trips, np.inf))
                    for j in nexts:
                        value = np.where(ok, (steps + weighed[0 if j == d else 1 + j]) / trips, np.inf)
                        by_next[j][rows] = np.minimum(by_next[j][rows], value)
            out.append((d, [(trips, trips < FEW_TRIPS, np.maximum(alone, floor) / size,
                             [(c, np.maximum(np.min([by_next[j] for j in c], axis=0), floor) / size) for c in classes])
                            for trips, (alone, by_next) in sorted(found.items())]))
        self._front_cache[key] = out
        return out

    @staticmethod
    def _beside_drains(others: np.ndarray, outs: np.ndarray, joint: np.ndarray) -> np.ndarray:
        """(n,) B20 beside B14: B14 bounds the output's pair (and the lanes') jointly, ``joint`` (n,) more than the
        output pair's own bound, in place of the refills at its child; the other tensors' refills of B20 (``others``,
        per nesting order) hold beside it: the least over the orders of ``others + max(0, outs - joint)``, what the
        bound adds to B14's term."""
        return (others + np.maximum(0.0, outs - np.atleast_2d(joint))).min(axis=0)

    def _joint_drained(self, entries: dict[int, tuple], spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                       tile: np.ndarray | None, ch: int) -> np.ndarray | None:
        """(P, n) B23 (docs/search.md, "B23: the output's parent side under placement"): per nesting order of
        :meth:`_placed_refills` at the child ``ch`` of B14's output pair, a lower bound of that pair's whole energy
        (:meth:`_drained_pair`) plus the lanes' pairs' energy over their least (:meth:`_joint_lanes`), taken over one
        unrolling ``U`` of the open fan-out together: ``U``'s reduction factors ``c`` are the output's copies at the
        child (over those at its parent) and ``R``; each child copy drains every word it touches at least once
        (``outputs x c``, B14) and the order's placed tile at least the words B20 gives it (whatever the innermost
        loop: B9's words of the box hold only when it indexes the output).
        The least over the distinct ``c`` of the lanes' least sum at ``c`` (:meth:`_copies_front`) plus the pair's.
        None where the output's pair at ``ch`` is not among ``entries`` with its parent's side."""
        if len(entries.get(self.out, ())) < 4:
            return None
        *_, (whole, _) = entries[self.out]
        m = self.array
        keys, inverse = unique_rows(self._fan_budget(rest, tile, fixed_from, m))
        copies, lanes = self._copies_front(m, keys)  # (K,), (u, K)
        lanes = lanes[inverse.reshape(-1)]
        at_parent = self._copies(spatial, rest, fixed_from, next(q.parent for q in self.pairs if q.tensor == self.out
                                                                  and q.child == ch), tile)
        cover_keys, cover_inverse = unique_rows(self._cover(spatial, ch))
        at_child = copies[:, None] * at_parent[None, :]  # (K, n)
        kept = [u for u in range(self.T) if self.keeps[ch, u]]
        least: dict[frozenset[int], np.ndarray] = {}  # by the tensors outside the output's raised tile
        for outer_first in itertools.permutations(kept):
            outer = frozenset(outer_first[:outer_first.index(self.out)])
            if outer not in least:
                words = self.iterations * self._placed_ratio(cover_keys, ch, self.out, outer)[cover_inverse.reshape(-1)]
                pair = whole(np.maximum(words[None, :], self.out_words * at_child), at_child=at_child)
                least[outer] = (lanes.T + pair).min(axis=0)
        return np.array([least[frozenset(o[:o.index(self.out)])] for o in itertools.permutations(kept)])

    def _copies_front(self, m: int, budgets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """B23: (K,) the distinct products ``c`` of the reduction factors of the legal unrollings of the layer's bounds
        on the open fan-out ``m`` (:meth:`_joint_table`'s rows) and (u, K) per row of ``budgets``, of its legal
        unrollings with that ``c``, the least sum of the lanes' pairs' energies less the sum of the pairs' minima over
        all its legal rows (inf where none has that ``c``): each ``c``'s first legal row in the table's order (sorted
        by the sum), and each pair's, read off the layer's lattice (:meth:`_least_legal`)."""
        table, energy, _, _ = self._joint_table(m)
        key = ("copies", m)
        if key not in self._front_cache:
            self._front_cache[key] = np.unique(table[:, self.reduction].prod(axis=1).astype(float))
        cs = self._front_cache[key]
        V = len(table)

        def ranks() -> np.ndarray:  # per ``c``, the table's rows with it (their index: the order by the sum)
            copies = table[:, self.reduction].prod(axis=1).astype(float)
            return np.where(copies[None, :] == cs[:, None], np.arange(V)[None, :], V)
        first = self._least_legal(m, False, "copies", ranks, budgets)  # (K, u)
        sums = energy.sum(axis=0) if len(energy) else np.zeros(V)
        found = np.where(first < V, sums[np.minimum(first, V - 1)], np.inf).T  # (u, K)
        legal = (first < V).any(axis=0)  # a budget with no legal row has no minima (inf)
        mins = (np.where(legal[None, :], self._pairs_least(m, False, budgets), np.inf).sum(axis=0) if len(energy)
                else np.where(legal, 0.0, np.inf))
        return cs, np.maximum(0.0, found - mins[:, None])

    def _placed_ratio(self, covers: np.ndarray, level: int, t: int, outer: frozenset[int],
                      loopable: tuple[bool, ...] | None = None, rows: np.ndarray | None = None) -> np.ndarray:
        """(u,) B20: per row of ``covers`` (the extents one instance of ``level`` runs), the least words of tensor ``t``
        its child moves per iteration, over the boxes ``R`` dividing it that may be ``t``'s raised tile: ``t``'s words
        of ``R`` and, for each tensor ``u`` of ``outer`` (whose raised tiles hold ``R``), ``u``'s words of ``R`` fit the
        level together (:class:`Capacity`, the other tensors taking one word). A plain tensor moves ``touched_t(R)``
        at each run of ``R`` (the loop right above ``R`` moves an index of it: a disjoint footprint), a sliding-window
        input at least the new words of a step of that loop (:func:`_step_words` with halo reuse: the child holds at
        the run's start only a tile of the previous run's footprint) at half of the runs, or at all of them
        (:meth:`_every_event`); the least over the loop's dimensions. The least per box of the layer's lattice is
        computed once per (level, tensor, outer tensors), the least over a cover's divisors once per box of the lattice
        (:func:`_divisor_min`; once per cover where it is not a box of the lattice).
        ``loopable`` (B30, :meth:`_over_rest`): the dimensions a loop above ``R`` may be on (None: all). ``rows``: the
        covers' rows of the layer's lattice (:meth:`_lattice_rows`), when the caller has them."""
        tiles, _ = self._layer_lattice()
        key = (level, t, outer) if loopable is None else (level, t, outer, loopable)
        if key not in self._placed_tiles:
            touched, size = self._lattice_words()
            least = touched[:, t] / size  # plain, or no loop above R: once
            if not self.plain[t]:
                per = self._run_words(tiles, t, level, loopable) / size[:, None]
                moving = self.indexes[t] & (self.bounds > 1)
                if loopable is not None:
                    moving &= np.array(loopable)
                least = np.minimum(least, np.where(self._loop_room(tiles, moving), per, np.inf).min(axis=1))
            self._placed_tiles[key] = np.where(self._fits_held(level, outer | {t}), least, np.inf)
        ratio = self._placed_tiles[key]
        if ("covers",) + key not in self._divisor_least:  # the least over each box's divisors, inf as 0
            found = self._lattice_min(ratio)
            self._divisor_least[("covers",) + key] = np.where(np.isfinite(found), found, 0.0)
        if rows is None:
            rows = self._lattice_rows(covers)
        out = self._divisor_least[("covers",) + key][np.maximum(rows, 0)]
        for i in np.nonzero(rows < 0)[0]:  # a cover not in the lattice (the padded space)
            cover = tuple(covers[i].tolist())
            least = self._placed_least.get((key, cover))
            if least is None:
                if cover not in self._divisors:
                    self._divisors[cover] = np.nonzero((np.array(cover)[None, :] % tiles == 0).all(axis=1))[0]
                found = ratio[self._divisors[cover]].min(initial=np.inf)
                least = self._placed_least[(key, cover)] = float(found) if np.isfinite(found) else 0.0
            out[i] = least
        return out

    def _fits_held(self, level: int, held: frozenset[int]) -> np.ndarray:
        """(boxes,) B20 (:meth:`_placed_ratio`): whether each box of the layer's lattice, the tile of every tensor of
        ``held`` (the other tensors taking one word), fits ``level`` (:class:`Capacity`); computed once per (level,
        tensors): the B20 keys of a tensor and its outer tensors, whatever ``loopable``, share it."""
        got = self._held_fits.get((level, held))
        if got is None:
            tiles, _ = self._layer_lattice()
            covers_of = np.ones((len(tiles), self.T, self.op_dims), dtype=np.int64)
            covers_of[:, sorted(held)] = tiles[:, None, :]
            got = self._held_fits[(level, held)] = self.fit.fits(level, covers_of)
        return got

    def _lattice_words(self) -> tuple[np.ndarray, np.ndarray]:
        """(boxes, T) each tensor's words of each box of the layer's lattice (:func:`touched_lower`) and (boxes,) the
        boxes' sizes (B20, B33; computed once)."""
        if self._lattice_touched is None:
            tiles, _ = self._layer_lattice()
            self._lattice_touched = (touched_lower(self.op, tiles, contiguous=True), tiles.prod(axis=1).astype(float))
        return self._lattice_touched

    def _over_rest(self, least: np.ndarray, rest: _RestRows, level: int, keys: list[tuple[int, frozenset[int]]],
                   loopable: tuple[bool, ...] | None = None, single: bool = False) -> np.ndarray:
        """(K, n) B30 with B33 (docs/search.md, "B33: the raised tile inside or over the open levels' loops"): B20's least
        ratio ``least`` of each node (over the boxes dividing its cover) with each box taken where it may be ``t``'s
        raised tile ``R`` (its tile raised over the loops right above it that do not index ``t``) and the loop ``L1``
        right above it. Let ``rest`` (its :class:`_RestRows`: where it is below the node's cover, its rows of the
        layer's lattice, none in the padded space, which keeps ``least``) be the extents an instance of ``level`` runs
        over the open levels (only where no fan-out between ``level`` and the fixed levels is open: the caller's test).
        An ``R`` that reaches over a loop of a fixed level holds every open loop: it holds ``rest`` and differs from it
        only on dimensions that do not index ``t``; where ``rest`` leaves the cover room on none of those, ``R`` is
        ``rest`` and ``L1`` a loop on a dimension ``d`` with ``rest_d < cover_d`` (else B30's least over the cover holds
        for these). Any other ``R`` divides ``rest`` with ``L1`` an open level's loop on a dimension ``d`` indexing
        ``t`` with ``R_d < rest_d``, so ``R_d`` divides ``rest_d / p`` for a prime ``p``: the least over those boxes
        (:meth:`_short_least`); where ``single`` (``rest`` is one loop a dimension of ``level``) each ``R_d`` is 1 or
        ``rest_d`` (:meth:`_loop_boxes`). A sliding-window input's ratio of a box is the least over the ``d`` allowed
        there (B20's table per dimension, :meth:`_dims_ratio`), a plain tensor's B20's. One row of ``least`` (K, n) per
        B20 key ``(t, outer)`` of ``keys``, all of plain tensors or all of sliding-window inputs, read together (the same
        values as key by key: elementwise)."""
        names = [(level, t, outer) if loopable is None else (level, t, outer, loopable) for t, outer in keys]
        parts = [self._dims_ratio(name, t, level, loopable) for name, (t, _) in zip(names, keys)]
        valid, at = rest.valid, rest.at
        whole = np.array([once[at] for once, _ in parts])  # (K, n)
        over = whole
        if parts[0][1] is not None:  # R is rest: L1 above it within the cover
            over = np.minimum(over, _least_last(np.where(rest.short, np.array([per[at] for _, per in parts]), np.inf)))
        roomy = rest.spare[[t for t, _ in keys]] & np.isfinite(whole)
        # R may hold more than rest (only where rest fits: a larger box holds no fewer words of each tensor): B30's
        # least over the cover
        over = np.where(roomy, least, over)
        inside = (self._loop_boxes(names, parts, valid, at) if single
                  else self._short_least(names, parts, valid, at))
        best = np.minimum(over, inside)
        return np.where(valid & np.isfinite(best), np.maximum(least, best), least)

    def _short_least(self, names: list[tuple], parts: list[tuple[np.ndarray, np.ndarray | None]], valid: np.ndarray,
                     at: np.ndarray) -> np.ndarray:
        """(K, n) per B20 key of ``names`` (its :meth:`_dims_ratio` ``once``, ``per`` in ``parts``) B33: the least ratio
        over the boxes ``R`` dividing ``rest`` but for ``rest`` itself, with ``L1`` on a dimension ``d`` with ``R_d <
        rest_d`` (:meth:`_over_rest`): per dimension ``d`` and prime ``p`` of ``rest_d``, the least over the divisors
        of ``rest`` with ``d`` at ``rest_d / p`` of the box's whole words per iteration (``once``) or its ratio with
        ``L1`` on ``d`` (``per[:, d]``; a plain tensor: ``once`` alone). The least over each box's divisors of every
        column is computed once per B20 key (:func:`_divisor_min`), the value of each ``rest`` once per B20 key
        (:meth:`_by_rest`; ``valid``, ``at``: their rows of the layer's lattice)."""
        tables = []
        for key, (once, per) in zip(names, parts):
            got = self._divisor_least.get(("short",) + key)
            if got is None:
                got = self._divisor_least[("short",) + key] = (
                    self._lattice_min(once), None if per is None else [self._lattice_min(per[:, d])
                                                                      for d in range(self.op_dims)])
            tables.append(got)
        return self._by_rest([("short rows",) + key for key in names], valid, at,
                             functools.partial(self._short_boxes, tables))

    def _short_boxes(self, tables: list[tuple], rests: np.ndarray) -> np.ndarray:
        """(K, n) :meth:`_short_least` of each of ``rests`` per B20 key, from the key's ``tables`` (the divisors'
        least of ``once`` and per dimension of ``per``); the smaller boxes' rows are found once for all keys."""
        out = np.full((len(tables), len(rests)), np.inf)
        for d in np.nonzero(self.bounds > 1)[0]:
            for p in sorted(set(prime_factors(int(self.bounds[d])))):
                cut = rests[:, d] % p == 0
                if not cut.any():
                    continue
                smaller = rests.copy()
                smaller[cut, d] //= p
                at = self._lattice_rows(smaller)
                on = cut & (at >= 0)
                for k, (whole, by_dim) in enumerate(tables):
                    got = whole[at] if by_dim is None else np.minimum(whole[at], by_dim[d][at])
                    out[k] = np.where(on, np.minimum(out[k], got), out[k])
        return out

    def _by_rest(self, names: list[tuple], valid: np.ndarray, at: np.ndarray,
                 values: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """(K, n) per name of ``names`` (a B20 key), B33's value of each ``rest`` by its row ``at`` (n,) of the layer's
        lattice (where ``valid``), a function of the box alone: ``values(boxes)`` (K, u) of the lattice's boxes, kept in
        a table per name by its row and computed where some name's table has none yet (every name's filled there: the
        same values); inf where ``rest`` is not a box of the lattice (not ``valid``: the padded space, where
        :meth:`_over_rest` keeps B30's value)."""
        tiles, _ = self._layer_lattice()
        tables = [self._divisor_least.get(name) for name in names]
        for k, name in enumerate(names):
            if tables[k] is None:
                tables[k] = self._divisor_least[name] = np.full(len(tiles), np.nan)  # nan: not computed yet
        got = np.array([table[at] for table in tables])
        missing = valid & np.isnan(got)
        if missing.any():
            rows = np.unique(at[missing.any(axis=0)])
            for table, filled in zip(tables, values(tiles[rows])):
                table[rows] = filled
            got = np.array([table[at] for table in tables])
        return np.where(valid, got, np.inf)

    def _loop_boxes(self, names: list[tuple], parts: list[tuple[np.ndarray, np.ndarray | None]], valid: np.ndarray,
                    at: np.ndarray) -> np.ndarray:
        """(K, n) per B20 key of ``names`` (its :meth:`_dims_ratio` ``once``, ``per`` in ``parts``) B33 where ``rest``
        is one loop a dimension of the lowest level: a raised tile ``R`` inside it is a set of those loops whole,
        ``R_d`` 1 or ``rest_d``, and ``L1`` one of the others. The least over the sets but all of them of the box's
        ratio (:meth:`_over_rest`), once per B20 key and ``rest``
        (:meth:`_by_rest`, ``valid``, ``at`` their rows of the layer's lattice; inf where ``rest`` is not one of its
        boxes). A set's row of the lattice is the sum of its loops' (:meth:`_row_parts`)."""
        return self._by_rest([("loops",) + key for key in names], valid, at,
                             functools.partial(self._sets_least, parts))

    def _sets_least(self, parts: list[tuple[np.ndarray, np.ndarray | None]], boxes: np.ndarray) -> np.ndarray:
        """(K, n) :meth:`_loop_boxes` of each of ``boxes`` (n, D), boxes of the layer's lattice, per B20 key (its
        ``once``, ``per`` in ``parts``); the sets' rows are found once for all keys."""
        sets, members = self._loop_sets()
        rows = self._row_parts(boxes) @ members  # (u, sets)
        short = (boxes[:, None, :] > 1) & ~sets[None, :, :]  # the loops outside R: where L1 may be
        room = _reduce_last(np.logical_or, short)
        out = []
        for once, per in parts:
            got = once[rows]
            if per is not None:
                got = np.minimum(got, np.where(short, per[rows], np.inf).min(axis=2))
            out.append(np.where(room, got, np.inf).min(axis=1))
        return np.array(out)

    def _loop_sets(self) -> tuple[np.ndarray, np.ndarray]:
        """B33 (:meth:`_sets_least`): (S, D) every set of the layer's dimensions of two indices or more, as a mask, and
        (D, S) the same as integers (computed once)."""
        if self._sets is None:
            live = np.nonzero(self.bounds > 1)[0]
            sets = np.zeros((2 ** len(live), self.op_dims), dtype=bool)
            sets[:, live] = np.array(list(itertools.product((False, True), repeat=len(live))), dtype=bool)
            self._sets = (sets, sets.T.astype(np.int64))
        return self._sets

    def _row_parts(self, boxes: np.ndarray) -> np.ndarray:
        """(n, D) each dimension's part of the row of ``boxes`` (n, D), boxes of the layer's lattice, in it (its value's
        position times the dimension's stride; the box with 1 elsewhere has that row; the row is the parts' sum)."""
        positions, strides = self._lattice_positions(boxes)
        return positions * strides

    def _loop_room(self, tiles: np.ndarray, moving: np.ndarray) -> np.ndarray:
        """(boxes, D) B33: the dimensions the loop right above each box of ``tiles`` may be on: ``moving`` (D,) and not
        held whole by the box (a loop of two trips or more above it would run past the layer's bound)."""
        return moving[None, :] & (tiles < self.bounds[None, :])

    def _dims_ratio(self, key: tuple, t: int, level: int, loopable: tuple[bool, ...] | None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
        """B33: :meth:`_placed_ratio`'s table per box of the layer's lattice in parts (inf where the box does not fit
        with ``key``'s outer tensors): a plain tensor's ratio and None; a sliding-window input's words of the box over
        its iterations and (boxes, D) its words per iteration with ``L1`` on each dimension that may move it (inf on
        the others). Cached per B20 key."""
        got = self._rest_dims.get(key)
        if got is None:
            tiles, _ = self._layer_lattice()
            ratio = self._placed_tiles[key]
            if self.plain[t]:
                got = (ratio, None)
            else:
                touched, size = self._lattice_words()
                fits = np.isfinite(ratio)
                moving = self.indexes[t] & (self.bounds > 1)
                if loopable is not None:
                    moving &= np.array(loopable)
                per = self._run_words(tiles, t, level, loopable) / size[:, None]
                got = (np.where(fits, touched[:, t] / size, np.inf),
                       np.where(fits[:, None] & self._loop_room(tiles, moving), per, np.inf))
            self._rest_dims[key] = got
        return got

    def _layer_lattice(self) -> tuple[np.ndarray, list[np.ndarray]]:
        """The layer's lattice of boxes (every box dividing its bounds, last dimension fastest) and its values per
        dimension, ascending (computed once)."""
        if self._lattice is None:
            self._lattice = divisor_lattice(tuple(int(x) for x in self.bounds))
            self._lattice_values = [np.unique(self._lattice[:, d]) for d in range(self.op_dims)]
        return self._lattice, self._lattice_values

    def _lattice_min(self, flat: np.ndarray) -> np.ndarray:
        """Per box of the layer's lattice, the least of ``flat`` (one value a box, the lattice's order) over the boxes
        dividing it (:func:`_divisor_min`)."""
        _, values = self._layer_lattice()
        return _divisor_min(flat.reshape([len(v) for v in values]), values).reshape(-1)

    def _lattice_rows(self, extents: np.ndarray) -> np.ndarray:
        """(n,) the row of each of ``extents`` (n, D) in the layer's lattice of boxes (:meth:`_placed_ratio`'s), -1
        where it is not one (a padded extent)."""
        at, strides = self._lattice_positions(extents)
        return np.where(_reduce_last(np.logical_and, at >= 0), at @ strides, -1)

    def _lattice_positions(self, extents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, D) the position of each value of ``extents`` (n, D) among its dimension's values in the layer's lattice
        (-1 where it is not one of them: a padded extent), and (D,) the strides of the lattice's rows."""
        if self._lattice_index is None:  # per dimension each value's position (-1: none), and the rows' strides
            values = self._layer_lattice()[1]
            positions = np.full((self.op_dims, int(self.bounds.max()) + 2), -1, dtype=np.int64)
            for d, vals in enumerate(values):
                positions[d, vals] = np.arange(len(vals))
            self._lattice_index = (positions, np.cumprod([1] + [len(v) for v in values[:0:-1]])[::-1])
        positions, strides = self._lattice_index
        return positions[np.arange(self.op_dims)[None, :], np.minimum(extents, positions.shape[1] - 1)], strides

    def _run_words(self, tiles: np.ndarray, t: int, level: int, loopable: tuple[bool, ...] | None = None
                   ) -> np.ndarray:
        """(n, D) B20 with B28 (docs/search.md, "B28: the window's wraps under a small register file"): per box of
        ``tiles`` (a sliding-window input ``t``'s raised tile ``R`` at ``level``) and dimension ``d``, the least words
        ``t``'s child brings in per run of ``R`` when the loop ``L1`` right above ``R`` is on ``d``. Every step of ``L1``
        brings :func:`_step_words`; where :meth:`_every_event` so does every event. Else ``L1`` runs ``T >= 2`` trips
        of stride ``k1 e_d`` (``e_d k1 T`` divides the layer's bound of ``d``; ``k1``, the spatial factors of ``d``
        between ``R`` and ``L1``, at most the fan-outs above ``level``), ``d`` a term ``c d`` of window axis
        ``A``: per cycle ``T - 1`` steps and one entry, where ``L1`` wraps (``A`` shifts back by ``c (T - 1) k1
        e_d``). At least half of the entries are a step of the next loop ``L2`` (all but those where ``L2``, of
        ``T2 >= 2`` trips, wraps too; the first cycle's entry brings the whole box), on a dimension ``d2`` of stride
        ``k2 e_2`` (``e_2 k2 T2`` divides its bound, ``k2`` as ``k1``); at most ``span - |shift|`` of an axis' values stay after a
        non-zero shift, all after none, so such an entry brings at least (:meth:`_entry_words`): ``d2 = d``, the
        words of a shift by ``c k1 e_d``; ``d2`` another term of ``A``, those of ``A``'s shift ``c2 k2 e_2 - c (T -
        1) k1 e_d`` (none where it is 0: the diagonal reuse of ``p + r``); ``d2`` on another window axis, both axes
        shifted; on a plain axis of ``t``, the whole box; indexing no axis of ``t``, ``A`` shifted by the wrap. The
        least over ``T``, ``k1`` and the entries of ``((T - 1) x step + entry / 2) / T``, never below half a step
        (B20 before B28). ``L2`` only on the dimensions ``loopable`` allows (B30; None: any). Cached per tensor, level,
        tiles (B20 passes the layer's lattice) and ``loopable``."""
        key = ("run words", t, level, tiles.tobytes(), loopable)
        if key in self._front_cache:
            return self._front_cache[key]
        out, parts = self._run_parts(tiles, t, level)
        out = out.copy()
        allowed = np.ones(self.op_dims + 1, dtype=bool)  # the entry with no L2 (or L2 on L1's dimension), then per L2
        if loopable is not None:
            allowed[1:] = loopable
        for i, rows, runs in parts:
            best = np.full(len(rows), np.inf)
            for ok, steps, trips, entries in runs:
                per_run = (steps + 0.5 * entries[allowed].min(axis=0)) / trips
                best = np.where(ok, np.minimum(best, per_run), best)
            out[rows, i] = np.maximum(out[rows, i], np.where(np.isfinite(best), best, 0.0))
        out.setflags(write=False)
        self._front_cache[key] = out
        return out

    def _run_parts(self, tiles: np.ndarray, t: int, level: int, every_too: bool = False
                   ) -> tuple[np.ndarray, list[tuple]]:
        """:meth:`_run_words`'s terms whatever dimensions ``L2`` may be on: the words per run before B28 (n, D) and,
        per window term ``i`` of ``t``, its rows and per (trips, stride) of ``L1`` the rows it applies to, the steps'
        words, the trips and :meth:`_entry_words`' entries per ``L2`` (cached per tensor, level and tiles).
        ``every_too`` (B43, :meth:`_trip_values`): the rows where every event brings a step too."""
        key = ("run parts", t, level, tiles.tobytes(), every_too)
        if key in self._front_cache:
            return self._front_cache[key]
        step = _step_words(self.op, tiles, t, True, self.bounds)
        every = self._every_event(tiles, t)
        out = np.where(every, step, 0.5 * step)
        dims = self.op.dim_names
        spread = int(np.prod(self.fan[level + 1:]))  # the most spatial factors between R and a loop above it
        whole = _step_words(self.op, tiles, t, False).max(axis=1)  # the box's words
        axes = []  # per axis of t: its live terms (column, coefficient), (n,) counts and spans
        for axis in self.op.tensors[t].axes:
            count = np.array([_window_extent(tuple(c for _, c in axis.terms),
                                             tuple(int(tiles[r, dims.index(d)]) for d, _ in axis.terms))
                              for r in range(len(tiles))], dtype=float)
            span = 1 + sum(abs(c) * (tiles[:, dims.index(d)] - 1) for d, c in axis.terms)
            axes.append(([(dims.index(d), c) for d, c in axis.terms if self.op.bound(d) > 1], count, span))
        parts = []
        for a, (terms, count, span) in enumerate(axes):
            for i, c in terms if len(terms) > 1 else ():
                rows = np.arange(len(tiles)) if every_too else np.nonzero(~every[:, i])[0]
                if not len(rows):
                    continue
                room = self.bounds[i] // tiles[rows, i]
                runs = []
                for k1t in divisors(int(self.bounds[i])):
                    for trips in (x for x in divisors(k1t) if x >= 2 and k1t // x <= spread):
                        ok = room % k1t == 0
                        if not ok.any():
                            continue
                        moved = abs(c) * (trips - 1) * (k1t // trips) * tiles[rows, i]
                        entries = self._entry_words(tiles, rows, axes, a, i, c, k1t // trips, trips, moved, whole,
                                                    spread)
                        runs.append((ok, (trips - 1) * step[rows, i], trips, entries))
                parts.append((i, rows, runs))
        out.setflags(write=False)
        self._front_cache[key] = (out, parts)
        return out, parts

    def _entry_words(self, tiles: np.ndarray, rows: np.ndarray, axes: list, a: int, i: int, c: int, k1: int,
                     trips: int, moved: np.ndarray, whole: np.ndarray, spread: int) -> np.ndarray:
        """(1 + D, len(rows)) B28 (:meth:`_run_words`): the least words an entry of ``L1`` (dimension ``i``, term
        ``c i`` of axis ``a``, ``trips`` trips of stride ``k1`` tiles, its wrap shifting the axis by ``moved``) brings
        in: first with no ``L2`` or ``L2`` on ``i`` itself, then per dimension ``j`` of ``L2`` the least over its
        strides (at most ``spread`` tiles apart; inf where ``L2`` cannot be on ``j``)."""
        _, count, span = (x[rows] if isinstance(x, np.ndarray) else x for x in axes[a])
        kept = np.minimum(count, np.maximum(0.0, span - moved))  # A's values left by the wrap alone
        entry = whole[rows].copy()  # no L2: the one cycle's entry is the first event, the whole box
        itself = (count - np.minimum(count, np.maximum(0.0, span - abs(c) * k1 * tiles[rows, i]))) * whole[rows] / count
        entry = np.where(self.bounds[i] // tiles[rows, i] // (k1 * trips) >= 2, np.minimum(entry, itself), entry)
        # (L2 on d itself: A shifts forward by one stride of L1 at least)
        out = np.full((1 + self.op_dims, len(rows)), np.inf)
        out[0] = entry
        for j in range(self.op_dims):
            if j == i or self.bounds[j] < 2:
                continue
            room = self.bounds[j] // tiles[rows, j]
            where = [b for b, (terms, _, _) in enumerate(axes) if any(col == j for col, _ in terms)]
            for k2 in (x for x in divisors(int(self.bounds[j])) if x <= spread):
                ok = (room % k2 == 0) & (room // k2 >= 2)
                if not ok.any():
                    continue
                if not where:  # no axis of t moves (a dimension that does not index it)
                    words = (count - kept) * whole[rows] / count
                else:
                    b = where[0]
                    c2 = next(cc for col, cc in axes[b][0] if col == j)
                    if len(axes[b][0]) == 1 and b != a:  # a plain axis: a disjoint footprint
                        words = whole[rows]
                    elif b == a:  # another term of A: the shifts add
                        shift = np.abs(c2 * k2 * tiles[rows, j] - np.sign(c) * moved)
                        stay = np.where(shift == 0, count, np.minimum(count, np.maximum(0.0, span - shift)))
                        words = (count - stay) * whole[rows] / count
                    else:  # another window axis B: both shift
                        count_b, span_b = axes[b][1][rows], axes[b][2][rows]
                        stay_b = np.minimum(count_b, np.maximum(0.0, span_b - abs(c2) * k2 * tiles[rows, j]))
                        words = whole[rows] * (1.0 - (kept / count) * (stay_b / count_b))
                out[1 + j] = np.where(ok, np.minimum(out[1 + j], words), out[1 + j])
        return out

    def _refill_ratio(self, rest: np.ndarray, level: int) -> np.ndarray:
        """(n, T) least ``touched(tile) / iterations(tile)`` over the tiles of ``level`` (boxes dividing ``rest``
        whose footprint may fit, :meth:`Capacity.fits`): a tensor refilled whole at every event of
        ``level`` moves ``iterations x`` this many words into its instances (B9). 0 where no tile may fit."""
        if level not in self._tiles:
            self._tiles[level] = [_pareto_tiles(self.op, self.fit, level, self.bounds, t)
                                  for t in range(self.T)]
        keys, inverse = unique_rows(rest)
        out = np.zeros((len(keys), self.T))
        for t, (tiles, ratio) in enumerate(self._tiles[level]):
            out[:, t] = _least_dividing(keys, tiles, ratio)
        return out[inverse.reshape(-1)]

    def _innermost_refills(self, extra: np.ndarray, temporal: np.ndarray, rest: np.ndarray,
                           fixed_from: int, by_dim: np.ndarray | None = None) -> np.ndarray:
        """(n,) B9: the innermost non-trivial loop above the child level advances at every one of its events;
        every plain tensor it indexes then refills its whole (disjoint) tile each time. That loop is one of
        the dimensions still left (``rest > 1``) or moved by a fixed level; the least over them of the
        energy ``extra`` (n, T) it forces, plus ``by_dim`` (n, D; B13, the sliding-window inputs' energy when that
        loop is on each dimension), or all of ``extra`` when no loop is left above the child. ``extra`` (k, n, T):
        ``k`` such terms at once, (k, n)."""
        per_dim, candidate = self._refills_by_loop(extra, temporal, rest, fixed_from, by_dim)
        least = _least_last(per_dim)
        return np.where(candidate.any(axis=-1), least, extra.sum(axis=-1))

    def _refills_by_loop(self, extra: np.ndarray, temporal: np.ndarray, rest: np.ndarray, fixed_from: int,
                         by_dim: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """B9/B13 of one child level: (n, D) the energy the innermost non-trivial loop above the child forces when it is
        on each dimension (``extra`` (n, T) of the plain tensors it indexes plus ``by_dim``), inf where no such loop
        can be (``rest``: what is left above the child), and (n, D) where one can be (:meth:`_loop_candidates`;
        ``extra`` (k, n, T): (k, n, D) energies)."""
        candidate = self._loop_candidates(temporal, rest, fixed_from)
        per_dim = extra @ self.indexes.astype(float) + (0.0 if by_dim is None else by_dim)
        return np.where(candidate, per_dim, np.inf), candidate

    @staticmethod
    def _loop_candidates(temporal: np.ndarray, rest: np.ndarray, fixed_from: int) -> np.ndarray:
        """(n, D) B9: the dimensions the innermost non-trivial loop above a child level may be on, one still left
        above it (``rest > 1``) or moved by a fixed level."""
        candidate = rest > 1
        for level in range(fixed_from, temporal.shape[1]):  # elementwise: faster than numpy's reduction of a short axis
            candidate = candidate | (temporal[:, level] > 1)
        return candidate

    def _coupled_refills(self, innermost: dict[int, tuple], temporal: np.ndarray, rest: np.ndarray,
                         tile: np.ndarray | None, fixed_from: int) -> np.ndarray:
        """(n,) B15, B9/B13 of two adjacent child levels together: what they force over the sum of their separate
        least terms (the largest over the pairs of levels: each pair alone is a bound). ``innermost``: per child level
        ``c`` (extra, what is left above it, by_dim, its separate term) as :meth:`_innermost_refills` took them. The
        innermost non-trivial temporal loop above level ``c - 1`` is level ``c``'s innermost one if level ``c`` has
        a non-trivial temporal loop, on a dimension of level ``c``'s tile (``rest`` where level ``c`` is the one
        right below the fixed levels, the known ``tile`` where it is the level below that, else at most ``rest``);
        otherwise it is the innermost loop above level ``c`` itself. So the two levels force at least ``min(min over
        the dimensions d above c of (f_c(d) + f_{c-1}(d)), min over the dimensions of c's tile of f_{c-1}(d) + min
        over d of f_c(d))``, each ``f`` the per-loop energy of :meth:`_refills_by_loop`: every completion is in one
        of the two cases, and its refills at the two levels are of different pairs, so they add. 0 where no loop is
        left above level ``c`` (B9 then counts every tensor's refills already)."""
        best = np.zeros(temporal.shape[0])
        for c in innermost:
            if c - 1 not in innermost:
                continue
            upper, lower = innermost[c], innermost[c - 1]
            per_c, above = self._refills_by_loop(upper[0], temporal, upper[1], fixed_from, upper[2])
            per_b, _ = self._refills_by_loop(lower[0], temporal, lower[1], fixed_from, lower[2])
            own = tile if tile is not None and c == fixed_from - 2 else rest  # level c's tile: its loops' dimensions
            shared = (per_c + per_b).min(axis=1)  # inf outside ``above``: per_c is
            apart = np.where(own > 1, per_b, np.inf).min(axis=1) + per_c.min(axis=1)
            joint = np.minimum(shared, apart)
            gain = np.where(above.any(axis=1) & np.isfinite(joint), joint - upper[3] - lower[3], 0.0)
            best = np.maximum(best, gain)
        return best

    def _window_refills(self, t: int, ch: int, temporal: np.ndarray, rest: np.ndarray, tile: np.ndarray | None,
                        fixed_from: int, h: np.ndarray, per_word: float) -> np.ndarray:
        """(n, D) B13 for a sliding-window input ``t`` at child level ``ch`` whose tile or the order above it is open:
        the energy its fills add over the pair's other bound (``h`` words, ``per_word`` each) when the innermost
        non-trivial loop above the child is on each dimension ``d``. The child's ``E`` events over its instances are
        ``iterations / iterations(tile)``; a loop on a dimension on a plain axis of ``t`` moves it to a disjoint
        footprint at every event, one on a window axis at ``(T - 1) / T`` of them (the steps of a loop of ``T``
        trips, not its wraps) or at all of them (:meth:`_every_event`), each bringing in at least :func:`_step_words`.
        ``T``: the trips of ``d`` at the lowest fixed level with a non-trivial loop where the child's tile is fixed,
        else at least 2. The tile's words per iteration: the fixed tile's, or the least over the tiles that may fit
        (:meth:`_step_ratio`)."""
        halo = self.arch.levels[ch].halo_reuse is not False
        if ch == fixed_from - 1 or (tile is not None and ch == fixed_from - 2):
            own = rest if ch == fixed_from - 1 else tile
            trips = np.full(own.shape, 2.0)
            if ch == fixed_from - 1:  # the innermost loop above the child is one of the lowest non-trivial level's
                lowest = fixed_from + (temporal[:, fixed_from:] > 1).any(axis=2).argmax(axis=1)
                at = temporal[np.arange(len(rest)), lowest].astype(float)
                trips = np.where(at > 1, at, 2.0)
            share = np.where(self._every_event(own, t), 1.0, (trips - 1) / trips)
            steps = _step_words(self.op, own, t, halo) * share / own.prod(axis=1)[:, None]
        else:
            steps = self._step_ratio(rest if tile is None else tile, ch, t, halo)
        return np.maximum(0.0, self.iterations * steps - h[:, None]) * per_word

    def _wrap_refills(self, t: int, temporal: np.ndarray, spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                      h: np.ndarray, per_word: float) -> np.ndarray:
        """(n, D) B19 (docs/search.md, "B19: known strides at a factor stage"): B13 for a sliding-window input ``t`` at
        the child ``c = fixed_from - 1`` of a factor stage, whose tile (``rest``) and every loop above are known but
        for level ``fixed_from``'s order, so every loop's trips and stride are. The innermost non-trivial loop above
        ``c`` is one of the lowest level with one, on ``d*`` with ``T`` trips and stride ``s*``: a dimension without a
        loop there cannot be it (inf). Of every run of ``T`` events, ``T - 1`` are its steps, each shifting ``d*``'s
        axes by ``c_d* s*`` exactly, and one (or the first fill, at least as many words) is a wrap: an event of an
        outer loop on some ``x``, at which ``d*``'s index goes back by ``W* in [(T - 1) s*, the sum over d*'s loops of
        (T_i - 1) s_i]``, ``x``'s goes forward by between the stride of its innermost loop (the wrapped ones inside
        telescope) and of its outermost, and any other dimension's goes back by between 0 and its loops' sum. Per
        axis the shift is known (a step) or lies in the interval of these sums (a wrap). The tile's values of an axis
        lie in one residue class modulo ``g`` (the gcd of the coefficients of its terms of extent > 1) within an
        interval of ``span``, so a shift ``delta`` leaves at most ``ceil((span - |delta|) / g)`` of them in place,
        none where ``g`` does not divide it (:meth:`_new_values`); the rest are new (all of the tile where the child
        keeps no halo and the shift is not 0). An event's words: the most over the axes of the new values times the
        other axes' counts; a wrap's the least over ``x``. The fills are ``iterations x (step x (T - 1) + wrap) / T
        / iterations(tile)``; returned: their excess over ``h`` at ``per_word`` each."""
        keep = np.nonzero(self.bounds > 1)[0]  # a dimension of one index has no loop: it cannot be d* or x
        column = {int(d): k for k, d in enumerate(keep)}
        temporal, spatial, rest = temporal[:, :, keep], spatial[:, :, keep], rest[:, keep]
        n, D = rest.shape
        halo = self.arch.levels[fixed_from - 1].halo_reuse is not False
        trips = temporal[:, fixed_from:].astype(float)  # (n, L', D) over the dimensions kept
        live = trips > 1
        # a loop's stride: the coverage of its dimension below it (the tile, the spatial factors up to its level and
        # the temporal ones below it)
        spat = np.cumprod(spatial[:, fixed_from:].astype(float), axis=1)
        below = np.concatenate([np.ones((n, 1, D)), np.cumprod(trips, axis=1)[:, :-1]], axis=1)
        stride = rest[:, None, :] * spat * below
        s_min = np.where(live, stride, np.inf).min(axis=1)  # (n, D) stride of each dimension's innermost loop
        s_max = np.where(live, stride, 0.0).max(axis=1)
        w_max = np.where(live, (trips - 1) * stride, 0.0).sum(axis=1)
        loops = live.sum(axis=1)
        rows = np.arange(n)
        lowest = live.any(axis=2).argmax(axis=1)
        T = trips[rows, lowest]  # (n, D) trips at the lowest level with a loop (d*'s innermost loop)
        s_star = stride[rows, lowest]
        axes = []  # per axis whose values may move: (terms as (column, coefficient), count, span, residue modulus)
        for axis in self.op.tensors[t].axes:
            cols = [(column[self.op.dim_names.index(d)], c) for d, c in axis.terms
                    if self.op.dim_names.index(d) in column]
            if not cols:
                continue
            if len(cols) == 1:
                count = rest[:, cols[0][0]].astype(float)
            elif len(cols) == 2 and min(c for _, c in cols) > 0:  # the exact count of :func:`_lane_box_words`
                (i1, c1), (i2, c2) = cols
                a, b, g = rest[:, i1], rest[:, i2], math.gcd(c1, c2)
                count = (a * b - np.maximum(0, a - c2 // g) * np.maximum(0, b - c1 // g)).astype(float)
            else:
                keys, inverse = unique_rows(rest[:, [i for i, _ in cols]])
                count = np.array([_window_extent(tuple(c for _, c in cols), tuple(int(v) for v in k)) for k in keys],
                                 dtype=float)[inverse.reshape(-1)]
            span = 1 + sum(abs(c) * (rest[:, i] - 1) for i, c in cols)
            g = np.gcd.reduce([np.where(rest[:, i] > 1, abs(c), 0) for i, c in cols], axis=0).astype(float)
            axes.append((cols, count, span, np.where(g > 0, g, 1.0)))
        whole = np.prod([count for _, count, _, _ in axes], axis=0) if axes else np.ones(n)
        step = np.zeros((n, D))  # per d*: the words one of its steps brings in
        # (n, X, D): the words a wrap brings in when a loop on x steps, per d*; per axis, every x at once (columns)
        wrap_by = np.zeros((n, D))  # per x, d* off the axis (or d* = x): the most over the axes
        special: dict[int, np.ndarray] = {}  # per d* on some axis: (n, X) the most over the axes holding it
        for cols, count, span, g in axes:
            other = (whole / count)[:, None]
            count, span, g = count[:, None], span[:, None], g[:, None]
            back_lo = {i: np.minimum(-c * w_max[:, i], 0.0) for i, c in cols}  # other dimensions go back
            back_hi = {i: np.maximum(-c * w_max[:, i], 0.0) for i, c in cols}
            lo = np.repeat(sum(back_lo.values())[:, None], D, axis=1)  # (n, X)
            hi = np.repeat(sum(back_hi.values())[:, None], D, axis=1)
            for i, c in cols:  # x = i goes forward by its innermost to its outermost stride
                a, b = c * s_min[:, i], c * s_max[:, i]
                lo[:, i] += np.minimum(a, b) - back_lo[i]
                hi[:, i] += np.maximum(a, b) - back_hi[i]
            wrap_by = np.maximum(wrap_by, self._new_values(count, span, g, lo, hi, halo) * other)
            for i, c in cols:
                shift = abs(c) * s_star[:, i:i + 1]  # a step of d* = i shifts this axis by c s* exactly
                step[:, i] = np.maximum(step[:, i], (self._new_values(count, span, g, shift, shift, halo) * other)[:, 0])
                a, b = -c * w_max[:, i], -c * (T[:, i] - 1) * s_star[:, i]  # d* = i goes back by at least (T - 1) s*
                new = self._new_values(count, span, g, lo + (np.minimum(a, b) - back_lo[i])[:, None],
                                       hi + (np.maximum(a, b) - back_hi[i])[:, None], halo) * other
                new[:, i] = 0.0  # x = d*: the interval of the x columns (its wraps inside telescope)
                special[i] = np.maximum(special[i], new) if i in special else new
        words = np.repeat(wrap_by[:, :, None], D, axis=2)  # (n, X, D)
        for i, new in special.items():
            words[:, :, i] = np.maximum(words[:, :, i], new)
        stepping = loops[:, :, None] >= np.where(np.eye(D, dtype=bool), 2, 1)[None, :, :]  # x = d* needs a second loop
        wrap = np.minimum(whole[:, None], np.where(stepping, words, np.inf).min(axis=1))  # none: the first fill
        fills = (step * (T - 1) + wrap) / np.maximum(T, 1.0)
        out = np.maximum(0.0, self.iterations * fills / rest.prod(axis=1)[:, None] - h[:, None]) * per_word
        full = np.full((n, self.op_dims), np.inf)
        full[:, keep] = np.where(T > 1, out, np.inf)  # d* has a loop at the lowest level
        return np.where(live.any(axis=(1, 2))[:, None], full, 0.0)

    def _step_reads(self, pr: Pair, e: np.ndarray, h: np.ndarray, temporal: np.ndarray, spatial: np.ndarray,
                    rest: np.ndarray, fixed_from: int, hop_per_word: float) -> np.ndarray:
        """(n, D) B19 of a sliding-window input's pair with child ``fixed_from - 1`` (its fills over ``h``), or B38
        (docs/search.md, "B38: the parent's reads of the window's steps") where larger: the pair's whole energy with
        its parent's reads, over what the bound counts for it (``e``, ``h`` words through the fan-outs), per dimension
        of the innermost loop above the child. The children under one parent instance step together (the same loops
        above them), so at each event the parent reads at least the words new to the union of their tiles (a word in
        the union now but not before is new to a child holding it now): B19 of that union, the box ``rest x`` the
        fan-out between them with the same strides."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        per_word = self.energy[ch, t, 1] + hop_per_word
        none = np.zeros(len(rest))
        fills = self._wrap_refills(t, temporal, spatial, rest, fixed_from, none, 1.0)  # words, per dimension
        can = np.isfinite(fills)  # inf: no innermost loop on that dimension
        fills = np.where(can, fills, 0.0)
        alone = np.maximum(0.0, fills - h[:, None]) * per_word
        if p == fixed_from:
            reads = self._union_reads(t, temporal, spatial, rest, fixed_from)
            whole = fills * per_word + np.where(np.isfinite(reads), reads, 0.0) * self.energy[p, t, 0]
            alone = np.maximum(alone, whole - (e + h * hop_per_word)[:, None])
        return np.where(can, alone, np.inf)

    def _union_reads(self, t: int, temporal: np.ndarray, spatial: np.ndarray, rest: np.ndarray, fixed_from: int
                     ) -> np.ndarray:
        """(n, D) B38: the words of sliding-window input ``t`` its parent (level ``fixed_from``) reads at least, per
        dimension of the innermost loop above the child: B19's words of the union of the children's tiles under one
        parent instance (``rest x`` that level's fan-out, each loop's stride unchanged)."""
        above = spatial.copy()
        above[:, fixed_from] = 1
        return self._wrap_refills(t, temporal, above, rest * spatial[:, fixed_from], fixed_from, np.zeros(len(rest)),
                                  1.0)

    @staticmethod
    def _new_values(count: np.ndarray, span: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    halo: bool) -> np.ndarray:
        """(n,) B19: the least number of an axis' ``count`` values (one residue class modulo ``g`` within an interval
        of ``span``) not among the old ones after a shift ``delta`` in ``[lo, hi]``: the old values left in place are
        at most ``ceil((span - |delta|) / g)``, where ``g`` divides ``delta`` (else none), largest at the multiple of
        ``g`` in the interval nearest 0. Without halo reuse, all of them unless the shift may be 0."""
        up = np.ceil(lo / g) * g  # the least multiple of g at or above lo
        down = np.floor(hi / g) * g  # the largest at or below hi
        none = up > hi
        nearest = np.where(up > 0, up, np.where(down < 0, -down, 0.0))
        if not halo:
            return np.where(none | (nearest > 0), count, 0.0)
        kept = np.where(none, 0.0, np.ceil(np.maximum(0.0, span - nearest) / g))
        return np.maximum(0.0, count - kept)

    def _every_event(self, tiles: np.ndarray, t: int) -> np.ndarray:
        """(n, D) B13: whether every event of an innermost loop on each dimension ``d`` (wraps included) brings in
        :func:`_step_words` of tensor ``t``: ``d`` is on a plain axis (a disjoint footprint), or every other moving
        term of each window axis holding ``d`` is whole in the tile (no loop above moves it, so at each event the axis
        shifts by a non-zero multiple of the innermost ``d`` loop's stride, at least ``|c_d| e_d``, either way)."""
        whole = np.ones(tiles.shape, dtype=bool)
        for axis in self.op.tensors[t].axes:
            live = [self.op.dim_names.index(d) for d, _ in axis.terms if self.op.bound(d) > 1]
            for i in live if len(live) > 1 else ():
                others = [k for k in live if k != i]
                whole[:, i] &= (tiles[:, others] == self.bounds[others]).all(axis=1)
        return self.disjoint[t][None, :] | (whole & self.indexes[t][None, :])

    def _step_ratio(self, rest: np.ndarray, level: int, t: int, halo: bool) -> np.ndarray:
        """(n, D) B13: per dimension, the least :func:`_step_words` of tensor ``t`` times the share of the events that
        bring them in (1 where :meth:`_every_event`, else at least half: ``T >= 2``) over ``iterations(tile)``, among
        the tiles of ``level`` that divide ``rest`` and may fit (the Pareto tiles per dimension, cached)."""
        if (level, t) not in self._step_tiles:
            tiles = _fitting_tiles(self.fit, level, self.bounds)
            share = np.where(self._every_event(tiles, t), 1.0, 0.5)  # a window loop's steps: at least half its events
            per = (_step_words(self.op, tiles, t, halo) * share / tiles.prod(axis=1)[:, None] if len(tiles)
                   else np.zeros((0, self.op_dims)))
            self._step_tiles[(level, t)] = [_pareto(tiles, per[:, d]) for d in range(self.op_dims)]
        keys, inverse = unique_rows(rest)
        out = np.zeros((len(keys), self.op_dims))
        for d in np.nonzero(self.indexes[t] & (self.bounds > 1))[0]:  # a dimension of one index never moves
            out[:, d] = _least_dividing(keys, *self._step_tiles[(level, t)][d])
        return out[inverse.reshape(-1)]

    def _instance_words(self, spatial: np.ndarray, level: int, t: int) -> np.ndarray:
        """(n,) B3: lower bound of the words of tensor ``t`` one instance of ``level`` touches over the layer (every
        spatial factor above it fixed). Its indices per dimension are the layer's with the digits of the spatial
        factors above fixed (``cover`` of them): the whole range where no such factor splits the dimension. Per axis
        of ``t``: where none of its dimensions is split, exactly the layer's count of the axis; else at least the
        sumset bound ``sum of cover - (terms - 1)``, which holds for any index sets (:func:`_sumset_words`; a
        single-term axis: its cover), times over the axes."""
        return self._of_spatial(spatial, ("words", level), lambda: self._level_words(self._cover(spatial, level)))[:, t]

    def _level_words(self, cover: np.ndarray) -> np.ndarray:
        """(n, T) :meth:`_instance_words` of every tensor from the ``cover`` of the level's instance."""
        out = axis_plan(self.op).single_product(cover)  # a one-term axis: its cover
        for t, axes in enumerate(self._axes):
            for idx, full in axes:
                if len(idx) > 1:  # the short axis of the axis' columns reduced elementwise (:func:`_reduce_last`)
                    columns = cover[:, idx]
                    sumset = _reduce_last(np.add, columns) - (len(idx) - 1)
                    out[:, t] *= np.where(_reduce_last(np.logical_and, columns == self.bounds[idx]), full, sumset)
        return out

    def runs(self, temporal: np.ndarray, order: np.ndarray, fixed_from: int, known: int) -> np.ndarray:
        """(n, T) lower bound of the sweeps (iterations of the loops of levels ``>= j``) that start a new
        footprint of each tensor (B8). With no sliding-window axis moved by those loops, a tensor's
        footprint changes to a disjoint one exactly when a loop indexing it, or one outside such a loop,
        advances: the product of the trips from the innermost loop indexing it outward (the cost
        model's single-dimension rule). Level ``j``'s order unknown (``known == j``): the order putting its
        other loops innermost, the least product. Otherwise 1 for inputs (the first sweep) and 0 for
        outputs (no disjointness to rely on)."""
        j = fixed_from
        n = temporal.shape[0]
        # the loops of levels >= j innermost first (level j's as one position when its order is open): their dims and
        # trips; the trips are integers, so their products are exact in any order
        dims = order[:, j:, ::-1]
        walk = np.take_along_axis(temporal[:, j:], dims, axis=2).astype(float)
        open_order = known == j
        if open_order:
            dims, walk = dims[:, 1:], walk[:, 1:]
        dims, walk = dims.reshape(n, -1), walk.reshape(n, -1)
        sweeps = _reduce_last(np.multiply, temporal[:, j:].reshape(n, -1)).astype(float)
        moving = _reduce_levels(np.logical_or, temporal[:, j:] > 1)
        live = walk > 1
        # every tensor at once, (T, n, ...): the same elementwise steps per tensor
        relevant = self.indexes[:, None, :]  # (T, 1, D)
        found = np.logical_or.accumulate(self.indexes[:, dims] & live, axis=2)  # a loop indexing it at or before each
        inner = np.ones((self.T, n))  # trips of the loops inside the innermost one indexing the tensor
        if open_order:  # level j: the order putting its other loops innermost
            trips = temporal[:, j].astype(float)
            inner = _reduce_last(np.multiply, np.where(relevant, 1.0, trips[None]))
            found |= _reduce_last(np.logical_or, (trips > 1)[None] & relevant)[:, :, None]
        inner = inner * _reduce_last(np.multiply, np.where(found, 1.0, walk[None]))
        hit = found[:, :, -1] if found.shape[2] else (
            _reduce_last(np.logical_or, (temporal[:, j] > 1)[None] & relevant) if open_order
            else np.zeros((self.T, n), dtype=bool))
        moved = _reduce_last(np.logical_or, moving[None] & self.window[:, None, :])
        plain = np.where(hit, sweeps[None] / inner, 1.0)
        first = np.where(np.arange(self.T) == self.out, 0.0, 1.0)[:, None]  # moved: 0 for the output, 1 for inputs
        return np.ascontiguousarray(np.where(moved, first, plain).T)

    def _fan_budget(self, rest: np.ndarray, tile: np.ndarray | None, fixed_from: int, m: int) -> np.ndarray:
        """(n, D) extents an unfixed fan-out of level ``m`` may unroll (B4, B6; the tile bound): what is left
        (``rest``), or with the tile of level ``fixed_from - 2`` known, ``rest / tile`` at level
        ``fixed_from - 1`` and the tile below it."""
        if tile is None:
            return rest
        return rest // tile if m == fixed_from - 1 else tile

    def _largest(self, budget: np.ndarray, m: int) -> np.ndarray:
        """(n,) :meth:`_largest_of` each row of ``budget``, kept per box of the layer's lattice (:meth:`_lattice_rows`)
        in a table by its row, looked up at once; the rows off the lattice (padded extents) and those not yet in the
        table computed."""
        rows = self._lattice_rows(budget)
        table = self._front_cache.get(("most by row", m))
        if table is None:
            table = self._front_cache[("most by row", m)] = np.full(len(self._layer_lattice()[0]), np.nan)
        at = np.maximum(rows, 0)
        out = table[at]
        need = (rows < 0) | np.isnan(out)
        if need.any():
            out[need] = self._largest_of(budget[need], m)
            on = need & (rows >= 0)
            table[at[on]] = out[on]
        return out

    def _largest_of(self, budget: np.ndarray, m: int) -> np.ndarray:
        """(n,) :func:`largest_unrolling` of each row of ``budget`` on level ``m``'s fan-out (over both axes where
        the level allows it), cached per row; rows dividing the layer's bounds read off the level's one table."""
        keys, inverse = unique_rows(budget)
        shape = tuple(self.arch.levels[m].fanout.shape)
        got = [self._front_cache.get(("most", m, k)) for k in map(tuple, keys.tolist())]
        missing = [i for i, v in enumerate(got) if v is None]
        dividing = [i for i in missing if not (self.bounds % keys[i]).any()]
        if dividing:  # the largest product of the layer's table's rows dividing the budget (:meth:`_most_lanes`)
            values, most = self._most_lanes(m)
            at = most[tuple(np.searchsorted(values[d], keys[dividing, d]) for d in range(self.op_dims))]
            for i, lanes in zip(dividing, at.tolist()):
                got[i] = lanes
        for i in missing:
            if got[i] is None:  # padded extents: the budget's own search
                got[i] = largest_unrolling(tuple(int(x) for x in keys[i]), shape, m in self.both_axes)
            self._front_cache[("most", m, tuple(keys[i].tolist()))] = got[i]
        return np.array(got, dtype=float)[inverse.reshape(-1)]

    def _most_lanes(self, m: int) -> tuple[list[np.ndarray], np.ndarray]:
        """B6: per box of the layer's divisor lattice (each dimension's sorted divisors, and the grid over them), the
        largest product of a row of level ``m``'s table of legal unrollings (:meth:`_copies_table`) whose factors divide
        it, 1 where none does: every row divides the layer's bounds, so each row's product is placed at its own box and
        the most over each box's divisors taken (:func:`_divisor_min` of the negated grid: exact on integers), once per
        level, in place of a pass over the table per budget. Cached."""
        key = ("most lanes", m)
        if key not in self._front_cache:
            table = self._copies_table(m, tuple(int(x) for x in self.bounds))[0]
            values = [np.array(divisors(int(b)), dtype=np.int64) for b in self.bounds]
            grid = np.full(tuple(len(v) for v in values), -1, dtype=np.int64)
            np.minimum.at(grid, tuple(np.searchsorted(values[d], table[:, d]) for d in range(self.op_dims)),
                          -table.prod(axis=1))
            self._front_cache[key] = values, -_divisor_min(grid, values)
        return self._front_cache[key]

    def _copies(self, spatial: np.ndarray, rest: np.ndarray, fixed_from: int, p: int,
                tile: np.ndarray | None = None) -> np.ndarray:
        """(n,) upper bound of the copies of each output word at level ``p`` (B4, B9): the spatial factors of
        reduction dimensions above it; an unfixed fan-out at most its largest legal unrolling of the reduction
        dimensions left to it (:meth:`_fan_budget`). Computed once per level in a call of :meth:`compute` (its
        ``rest`` and ``tile``)."""
        held_rest, held_tile, copies = self._of_spatial(spatial, ("copies", p, fixed_from), lambda: (
            rest, tile, self._copies_above(spatial, rest, fixed_from, p, tile)))
        if held_rest is rest and held_tile is tile:
            return copies
        return self._copies_above(spatial, rest, fixed_from, p, tile)

    def _copies_above(self, spatial: np.ndarray, rest: np.ndarray, fixed_from: int, p: int,
                      tile: np.ndarray | None) -> np.ndarray:
        """(n,) :meth:`_copies`, computed."""
        copies = np.ones(spatial.shape[0])
        for m in range(p + 1, fixed_from):
            if self.arch.levels[m].fanout is not None:
                budget = self._fan_budget(rest, tile, fixed_from, m)
                copies *= self._largest(np.where(self.reduction[None, :], budget, 1), m)
        for m in range(max(p + 1, fixed_from), self.L):
            copies *= _reduce_last(np.multiply, spatial[:, m][:, self.reduction])
        return copies

    def _parallel(self, spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                  tile: np.ndarray | None = None) -> np.ndarray:
        """B6: (n,) upper bound of the lanes a completion uses: the fixed spatial factors times, per unfixed
        fan-out, the largest product of legal spatial factors that divide what is left to it."""
        par = _reduce_last(np.multiply, spatial[:, fixed_from:].reshape(len(spatial), -1)).astype(float)
        for m in range(fixed_from):
            if self.arch.levels[m].fanout is not None:
                par *= self._largest(self._fan_budget(rest, tile, fixed_from, m), m)
        return par

    def _latency(self, cost: CostBatch, spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                 level_known: np.ndarray, dram: np.ndarray, dram_words: np.ndarray,
                 tile: np.ndarray | None = None, lanes: np.ndarray | None = None) -> np.ndarray:
        """B6: (n,) latency bound: the compute cycles (:meth:`_compute_cycles`) and the cycles of the levels whose
        counts are all exact; the backing store's at least its transfer time for the DRAM bytes bound and its
        bandwidth cycles for ``dram_words`` (n, T), per tensor a lower bound of the words it reads or is updated
        with (:meth:`_store_cycles`). ``lanes`` (n,): the lanes of the completions bounded, if known (EDP's joint
        bound, :meth:`_joint_lanes`)."""
        known = np.where(level_known[None, :], cost.level_cycles, 0.0)
        known[:, -1] = np.maximum(known[:, -1], np.maximum(dram * self.cycles_per_byte, self._store_cycles(dram_words)))
        steps = self._compute_cycles(spatial, rest, fixed_from, tile, lanes)
        if self.arch.overlap:
            return np.maximum(steps, _reduce_last(np.maximum, known))
        return steps + known.sum(axis=1)

    def _compute_cycles(self, spatial: np.ndarray, rest: np.ndarray, fixed_from: int,
                        tile: np.ndarray | None = None, lanes: np.ndarray | None = None) -> np.ndarray:
        """B6: (n,) compute cycles of every completion: the model's ``max(steps x cycles per step, the unit's
        least cycles)`` with ``steps >= iterations / lanes`` (:meth:`_parallel`); cycles per step are the
        effectual share of the operations (sparse operands whose zeros are skipped) times the unit's cycles per
        step, and the least cycles those of the unit running the layer (the vector unit's ``operations /
        lanes`` and ``words / bandwidth`` for a pooling or element-wise layer, docs/cost-model.md section 3)."""
        par = self._parallel(spatial, rest, fixed_from, tile) if lanes is None else lanes
        steps = self.iterations / par * self.step_cycles
        return np.maximum(steps, self.least_compute)

    def _store_cycles(self, words: np.ndarray) -> np.ndarray:
        """(n,) B6: the backing store's bandwidth cycles (it has one instance) given ``words`` (n, T), lower bounds
        of its reads (inputs, weights) or reads and updates (the output) per tensor: all of them over its
        ``bandwidth``, the inputs' and weights' over its ``read_bandwidth`` (the kernel's ``bandwidth_cycles``
        counts at least these words on each port)."""
        top = self.arch.levels[-1]
        cycles = np.zeros(words.shape[0])
        if top.bandwidth:
            cycles = words.sum(axis=1) / top.bandwidth
        if top.read_bandwidth:
            cycles = np.maximum(cycles, np.delete(words, self.out, axis=1).sum(axis=1) / top.read_bandwidth)
        return cycles

    def _root_order(self, terms: list[tuple], temporal: np.ndarray, spatial: np.ndarray, fixed_from: int,
                    sweeps: np.ndarray, tile_words: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n,) twice, B18, the root's order taken jointly (the widened space's root factor stage, docs/search.md "The
        root stage in the widened space"): the least energy of the plain tensors' pairs (and, B21, a sliding-window
        tensor's pair of child ``L - 2``) when the top level's one loop order is taken for all of them, and what they
        count with each tensor's own best order (``runs``, :meth:`runs`); the bound adds the excess of the first.
        ``terms``: (pair, held, safe, energy, fan-out words, growth) of each such pair: a B2 pair (``held`` None; exact
        counts at the tensor's best order where ``safe``; ``growth``: B21's, :meth:`_reload_growth`), a B7/B8 pair (its
        compulsory energy and words; the capacity bound :meth:`_sweeps` taken with the order's refills) or a
        sliding-window tensor's pair (``held`` and ``safe`` None: :meth:`_disjoint_refills`), priced by
        :meth:`_root_value`. A tensor's tile is refilled whole, under an order, the top level's trips over those of the
        loops inside its innermost loop on a plain axis of it, so only the loops up to the first such loop of each of
        these tensors matter: the least over those chains (:meth:`_root_chains`) of the summed energies."""
        j, n = fixed_from, temporal.shape[0]
        tensors = tuple(sorted({pr.tensor for pr, *_ in terms}))
        every = np.arange(n)
        now = sum(self._root_value(term, every, runs[:, term[0].tensor], runs, spatial, fixed_from, sweeps,
                                   tile_words) for term in terms)
        best = now.copy()
        keys, inverse = unique_rows((temporal[:, j] > 1).astype(np.int64))
        for g, key in enumerate(keys):
            rows = np.nonzero(inverse.reshape(-1) == g)[0]
            chains = self._root_chains(tuple(int(d) for d in np.nonzero(key)[0]), tensors)
            trips = temporal[rows, j].astype(float)
            tiled = np.tile(rows, len(chains))  # the rows once per chain, chain by chain
            total = np.zeros(len(tiled))
            for term in terms:
                t = term[0].tensor
                refills = np.concatenate([sweeps[rows] / trips[:, list(inner[t])].prod(axis=1) if inner[t] is not None
                                          else np.ones(len(rows)) for inner in chains])
                total += self._root_value(term, tiled, refills, runs, spatial, fixed_from, sweeps, tile_words)
            best[rows] = total.reshape(len(chains), len(rows)).min(axis=0)
        return best, now

    def _root_value(self, term: tuple, rows: np.ndarray, refills: np.ndarray, runs: np.ndarray, spatial: np.ndarray,
                    fixed_from: int, sweeps: np.ndarray, tile_words: np.ndarray) -> np.ndarray:
        """(rows,) B18: one pair's energy (with its fan-out words' hops) when its tensor's tile is refilled ``refills``
        times. A B2 pair's exact counts at its best order (``runs`` refills) each have the form ``max(0, a x refills -
        c)`` with ``c >= 0`` (fills, reads and drains of whole tiles; reloads and accumulate reads beyond the first
        touches; partial updates at full width beyond the final ones, at a width no larger), so with more refills
        each grows at least in proportion, and the reloads by the first touches more (B21, :meth:`_reload_growth`,
        which also takes out the accumulate reads a child feeds: constant); a B7/B8 pair is :meth:`_sweeps` with these
        refills."""
        pr, held, safe, e, h, growth = term
        hop = self.hop_per_word(pr)
        if held is None and safe is None:  # B21: a sliding-window tensor's pair
            es, hs = self._disjoint_refills(pr, spatial[rows], fixed_from, sweeps[rows], refills,
                                            tile_words[rows, pr.tensor])
            return np.maximum(e[rows], es) + np.maximum(h[rows], hs) * hop
        if held is None:
            base = e[rows] + h[rows] * hop
            more = refills / runs[rows, pr.tensor]  # >= 1: the tensor's best order refills its tile the least
            return np.where(safe[rows], base * more + growth[rows] * (more - 1), base)  # B21: the reloads' growth
        es, _, hs = self._sweeps(pr, spatial[rows], fixed_from, sweeps[rows], refills, tile_words[rows, pr.tensor],
                                 held[rows])
        return np.maximum(e[rows], es) + np.maximum(h[rows], hs) * hop

    def _reload_growth(self, c: dict[str, np.ndarray], pr: Pair) -> np.ndarray:
        """(n,) B21: the energy a B2 pair of B18 (its child's tile refilled whole at every event of the top level's
        loops from the innermost indexing it outward) adds beyond the proportional ``(rho - 1) x`` its energy at its
        best order (``c``: those counts) for each refill ratio ``rho - 1`` more. An output tile's reloads are its
        drains less the first touches (``|O| x`` copies, order-independent: docs/cost-model.md section 4), so they
        grow by the drains' whole growth, ``(rho - 1) x`` drains, not ``(rho - 1) x`` reloads: ``(rho - 1) x
        first`` more fills at the child (with their hops) and, with no fan-out between the two (the parent reads what
        the child fills), as many more reads at the parent. Accumulate reads fed by a child (``|O| x (rep_c -
        rep_p)``) do not grow: they come off. Every other count is a whole-tile count (``a x rho``): 0."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        if t != self.out:
            return np.zeros(len(c["fills"]))
        crossed = self.crossed(ch, p)
        first = np.maximum(0.0, c["drains"][:, ch, t] - c["fills"][:, ch, t])
        per_word = self.energy[ch, t, 1] + self.hop_energy[crossed].sum() + (0.0 if crossed else self.read_full[p, t])
        return first * per_word - c["accumulate_reads"][:, p, t] * self.read_full[p, t]

    def _disjoint_refills(self, pr: Pair, spatial: np.ndarray, fixed_from: int, sweeps: np.ndarray,
                          refills: np.ndarray, tile: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(energy, the child's words) B21 of a sliding-window tensor's pair of child ``fixed_from - 1`` under the top
        level, ``refills`` the events of the top level's loops from the innermost on a dimension of a plain axis of the
        tensor (:attr:`disjoint`) outward: each moves that axis by the tile's whole extent (or wraps it back), so the
        new tile shares no word with the one before and every one of its ``tile`` words is filled in its run, wherever
        the tensor's tile sits among the child's loops and whatever the halo rule (:meth:`_sweeps` with nothing
        held)."""
        e, _, h = self._sweeps(pr, spatial, fixed_from, sweeps, refills, tile, np.full(len(tile), np.inf))
        return e, h

    def _root_chains(self, live: tuple[int, ...], tensors: tuple[int, ...]) -> list[dict[int, tuple[int, ...] | None]]:
        """B18: the distinct effects of the orders of the top level's ``live`` loops on ``tensors``: per order, each
        tensor's loops inside its innermost loop on a dimension of a plain axis of it (:attr:`disjoint`: every dimension
        indexing a plain tensor; None: no live loop is one), the order walked innermost first until every tensor some
        live loop meets has met one (the rest of the order changes none of them); one per distinct set of loops inside
        (their product is what counts). Cached."""
        key = (live, tensors)
        if key not in self._chains:
            found: dict[tuple, dict[int, tuple[int, ...] | None]] = {}
            meets = {t for t in tensors if self.disjoint[t, list(live)].any()}  # the others meet none: None

            def walk(inner: tuple[int, ...], met: dict[int, tuple[int, ...]]) -> None:
                if len(met) == len(meets):
                    effect = {t: None if met.get(t) is None else tuple(sorted(met[t])) for t in tensors}
                    found.setdefault(tuple(effect.items()), effect)  # the loops inside matter, not their order
                    return
                for d in (d for d in live if d not in inner):
                    hit = {t: inner for t in meets if t not in met and self.disjoint[t, d]}
                    walk(inner + (d,), {**met, **hit})
            walk((), {})
            self._chains[key] = list(found.values())
        return self._chains[key]


def compile_kernels() -> None:
    """Compile (first run) or load from numba's on-disk cache :func:`_min_along` for the grids :func:`_divisor_min`
    takes (float and integer): called by :func:`dnnmap.cost.warmup.compile_kernels`, so that no search pays its
    compilation."""
    values = [np.array([1, 2])]
    for dtype in (np.float64, np.int64):
        _divisor_min(np.ones(2, dtype=dtype), values)
