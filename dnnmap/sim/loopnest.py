"""Literal execution of a mapping's loop nest: output check and buffer access counts.

``simulate`` implements sections 1, 2 and 2b of ``docs/cost-model.md`` without any formula:

1. it enumerates every (temporal step, MAC lane) of the nest (:mod:`dnnmap.sim.nest`),
   skips those outside the bounds, and executes the active ones in time order on random
   int64 tensors; the result is compared bit-exactly with :func:`reference_output`;
2. the *tile* of each (level, event, instance) is taken literally as the set of words the
   MACs below that instance touch during the event. A word's stay in one instance is a
   *copy* (:class:`_Copies`): it enters at the event whose tile has it and the previous
   tile does not (with ``halo_reuse: false``: or the tile changed at all), and leaves at the
   next event whose tile does not keep it (or at the end). A copy entering an input level is
   a fill; an output copy is a fill (a reload) only when a MAC of an earlier step touched the
   word, else it *enters at zero*; every output copy drains when it leaves. An instance whose
   iterations are all skipped during an event (edge tile) moves nothing and keeps its copies.
   The parent reads what the children fill and receives what they drain as updates: the union
   over the children under one parent instance when every fan-out in between multicasts
   (``identical`` rule: one read per distinct fill set) or reduces, else the sum. MAC lanes
   read / update the innermost level keeping a tensor the same way, one word per lane-step,
   or through a one-word *operand register* per lane (``mac.operand_registers``), which is a
   level of one event per step and one instance per lane with no counts of its own;
3. an update is an *accumulation* when it carries a partial contribution (a lane's result,
   the drain of a copy that entered at zero; a reduced update only when all its
   contributions are); with ``read_modify_write`` each accumulation into a copy of the
   receiving level reads the copy first, except the first update of a copy that entered at
   zero (the backing store's copies enter at zero at the start): ``accumulate_reads``.

``hop_words`` counts, for every fan-out, the words delivered through it to or from the
instances below: each word a child (or operand register) fills or drains, and each lane
read and partial-sum write without a register, counts once at every fan-out between that
child and its parent. ``network_ingress``/``network_egress`` count, per fan-out and per instance of
the level owning it, the parent-side words of every link crossing it: the parent's reads (or updates)
of that link merged by the link's rule over the children under that instance (docs/cost-model.md 2b).

Element sets are sorted numpy arrays of integer keys ``(event, instance, word)``, so the
cost is a few sorts of the active lane-steps per (level, tensor): about 1.2 million
lane-steps per second (``benchmarks/sim_speed.py``; the section 2b bookkeeping costs 10-18%).
Meant for small layers (up to ~10^6 lane-steps; larger nests are refused, see ``MAX_LANE_STEPS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dnnmap.arch.sparsity import SparseOperand, sparse_operand
from dnnmap.arch.spec import ArchSpec, Role
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.sim.nest import LANES, ActiveIterations, LoopNest, build_loop_nest, tensor_words
from dnnmap.sim.reference import combine_rule, initial_output, random_tensors, reference_output
from dnnmap.sim.sparse import random_pattern, sync_cycles
from dnnmap.workload.ir import Operator, Tensor

MAX_LANE_STEPS = 20_000_000  # temporal steps x lanes (idle ones included) the simulator accepts

Direction = Literal["read", "update"]


@dataclass(frozen=True)
class AccessCounts:
    """Words moved at one (level, tensor), summed over the level's instances (docs/cost-model.md 2, 2b)."""

    reads: int = 0
    fills: int = 0
    updates: int = 0
    drains: int = 0
    accumulate_reads: int = 0
    # of the drains and of the updates, the words carrying final output values (docs/cost-model.md 2b); parts
    # of the counts above, so not compared: two counts are equal when their five kinds are
    final_drains: int = field(default=0, compare=False)
    final_updates: int = field(default=0, compare=False)

    def __add__(self, other: "AccessCounts") -> "AccessCounts":
        return AccessCounts(self.reads + other.reads, self.fills + other.fills, self.updates + other.updates,
                            self.drains + other.drains, self.accumulate_reads + other.accumulate_reads,
                            self.final_drains + other.final_drains, self.final_updates + other.final_updates)

    @property
    def read_words(self) -> int:
        """Words read out of the level: to children or lanes, drained to the parent, read to accumulate."""
        return self.reads + self.drains + self.accumulate_reads

    @property
    def write_words(self) -> int:
        """Words written into the level: from the parent, and from children or lanes."""
        return self.fills + self.updates


@dataclass(frozen=True)
class TransferLog:
    """The words one tensor moves between DRAM and its DRAM child, one row per (transfer, word).

    A *transfer* is one event's words for one child instance (``group``), or for all child
    instances at once (``group == -1``) when every fan-out in between multicasts by the
    ``union`` rule (reads) or reduces (updates); under the ``identical`` rule one transfer per
    distinct fill set, ``group`` the lowest child instance receiving it. ``step`` is the
    temporal step at which the event happens (``temporal_steps`` for the final drain).
    """

    tensor: str
    role: Role
    direction: Direction
    axis_names: tuple[str, ...]
    shape: tuple[int, ...]
    step: np.ndarray
    group: np.ndarray
    word: np.ndarray  # row-major flat index in ``shape``
    compressed_words: float | None = None  # a compressed sparse operand: its non-zeros (``word``) plus metadata
    final: bool = False  # final output values (written at the final output width, docs/cost-model.md 2b)


@dataclass(frozen=True)
class SimResult:
    """Outcome of :func:`simulate`. Counts are keyed by (level name, tensor name)."""

    output_matches: bool | None  # None when run with compute=False
    iterations_exact: bool  # every iteration of the operator executed exactly once
    macs: int  # active lane-steps (iterations executed; also for pooling/add, which have no MACs)
    temporal_steps: int | float  # compute cycles: temporal steps of the nest, idle edge steps included (lanes
    # skipping zeros, docs/sparse.md: per event of the sparse operand's innermost level, the busiest lane's work)
    lanes: int  # MAC lanes the mapping uses
    counts: dict[tuple[str, str], AccessCounts]
    instance_reads: dict[str, np.ndarray]  # per level: reads + drains + accumulate_reads of each used instance
    instance_writes: dict[str, np.ndarray]  # per level: fills + updates of each used instance
    tile_words: dict[tuple[str, str], int]  # largest tile one instance holds at one event (last level: tensor)
    hop_words: dict[str, int]  # per level with a fan-out: words delivered to/from children through it
    network_ingress: dict[str, np.ndarray]  # per level with a fan-out, per instance: words sent down through it
    network_egress: dict[str, np.ndarray]  # ... and words arriving up through it (after reduction)
    dram_log: tuple[TransferLog, ...]
    balanced_steps: float | None = None  # zero-skipping lanes (docs/sparse.md): the compute cycles with every
    # event's work spread evenly over the lanes (``temporal_steps`` waits for the slowest lane at each event)

    def count(self, level: str, tensor: str) -> AccessCounts:
        """Counts of ``tensor`` at ``level`` (all zero when the level does not keep it)."""
        return self.counts.get((level, tensor), AccessCounts())

    def instance_words(self, level: str) -> np.ndarray:
        """Words read from and written into each used instance of ``level`` (docs/cost-model.md 2b)."""
        return self.instance_reads[level] + self.instance_writes[level]

    def max_instance_words(self, level: str) -> int:
        """Largest number of words moved in or out of one instance of ``level`` (bandwidth-limited latency)."""
        words = self.instance_words(level)
        return int(words.max()) if len(words) else 0


@dataclass(frozen=True)
class _Moves:
    """Words crossing one child->parent link: child event step, child instance, word, and whether the
    word carries a partial contribution (an update that accumulates; only meaningful for drains)."""

    step: np.ndarray
    instance: np.ndarray
    word: np.ndarray
    partial: np.ndarray


_EMPTY = np.zeros(0, dtype=np.int64)
_NO_MOVES = _Moves(_EMPTY, _EMPTY, _EMPTY, np.zeros(0, dtype=bool))


@dataclass(frozen=True)
class _Copies:
    """The copies of one tensor at one level: word ``word`` held by ``instance`` from the event at
    step ``enter`` to the event at step ``leave`` (the nest's step count: the end; None for inputs,
    which never drain). ``reloaded``: entered by a fill from the parent (inputs: always; outputs:
    the word held a partial sum), else it entered at zero."""

    instance: np.ndarray
    word: np.ndarray
    enter: np.ndarray
    leave: np.ndarray | None
    reloaded: np.ndarray

    def fills(self) -> _Moves:
        r = self.reloaded
        return _Moves(self.enter[r], self.instance[r], self.word[r], np.zeros(int(r.sum()), dtype=bool))

    def drains(self) -> _Moves:
        """Every output copy drains when it leaves; it is a partial contribution iff it entered at zero."""
        if self.leave is None:
            return _NO_MOVES
        return _Moves(self.leave, self.instance, self.word, ~self.reloaded)


def _unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values of ``keys`` (a sort and a mask: faster than hash-based ``np.unique`` here)."""
    ordered = np.sort(keys)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered


def _contains(sorted_keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Membership of ``queries`` in the sorted unique array ``sorted_keys``."""
    if not len(sorted_keys):
        return np.zeros(len(queries), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, queries), len(sorted_keys) - 1)
    return sorted_keys[pos] == queries


def _neighbour_pairs(pairs: np.ndarray, n_inst: int) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``event * n_inst + instance`` pairs: the position in ``pairs`` of the previous and
    of the next pair of the same instance (-1 when there is none)."""
    instance = pairs % n_inst
    by_instance = np.lexsort((pairs // n_inst, instance))
    same = instance[by_instance[1:]] == instance[by_instance[:-1]]
    previous = np.full(len(pairs), -1, dtype=np.int64)
    following = np.full(len(pairs), -1, dtype=np.int64)
    previous[by_instance[1:][same]] = by_instance[:-1][same]
    following[by_instance[:-1][same]] = by_instance[1:][same]
    return previous, following


def _innermost_trip(nest: LoopNest, level: int, above: int) -> int:
    """Trip count of the innermost temporal loop above the tile of ``level`` (placed below ``above`` of
    its loops) with more than one iteration (1: none)."""
    trips = [lp.factor for lp in nest.loops if not lp.spatial and lp.level > level and lp.factor > 1]
    trips += [lp.factor for lp in nest.level_loops(level)[:above]] if level >= 0 else []
    return trips[-1] if trips else 1


def _residency(nest: LoopNest, level: int, it: ActiveIterations, word: np.ndarray, size: int,
               first_touch: np.ndarray | None, halo_reuse: bool | str,
               word_cost: np.ndarray | None = None, above: int = 0) -> tuple[_Copies, int | float]:
    """The copies of one tensor at one level (``LANES``: the operand registers), and the largest tile.

    Tiles are the words touched per (event, instance). At an event with a non-empty tile the
    resident set R is the tile of the instance's previous non-empty event: a word of the tile S
    not in R enters, a word of R not in S leaves (``halo_reuse`` false: when S != R, all of R
    leaves and all of S enters; ``"innermost"``: as false, except across a step of the innermost
    loop above the level, i.e. from event ``e - 1`` to ``e`` with ``e`` not a multiple of that
    loop's trip count). An instance whose iterations are all skipped in an event (edge
    tile) moves nothing and keeps R. ``first_touch`` (outputs only) is each word's first step.
    ``above``: the tensor's tile is placed below that many of the level's outermost loops, which then
    make events of their own (per-tensor placement).
    """
    per_event = nest.steps_per_tile(level, above) if level >= 0 else nest.steps_per_event(level)
    n_inst = nest.instances(level)
    members = _unique((it.step // per_event * n_inst + it.lane // nest.lanes_per_instance(level)) * size + word)
    pair, member_word = members // size, members % size
    pairs = _unique(pair)  # the non-empty (event, instance) tiles
    at = np.searchsorted(pairs, pair)
    tile = np.bincount(at, minlength=len(pairs))
    previous, following = _neighbour_pairs(pairs, n_inst)
    member_prev, member_next = previous[at], following[at]
    in_previous = (member_prev >= 0) & _contains(members, pairs[member_prev] * size + member_word)
    unchanged = np.ones(len(pairs), dtype=bool)
    if halo_reuse is not True:  # only an unchanged tile (S == R) keeps its words
        unchanged = (previous >= 0) & (np.bincount(at[in_previous], minlength=len(pairs)) == tile)
        unchanged &= tile[previous] == tile
        if halo_reuse == "innermost":  # ... or one reached by a step of the innermost loop above
            event = pairs // n_inst
            trip = _innermost_trip(nest, level, above)
            unchanged |= (previous >= 0) & (pairs[previous] // n_inst == event - 1) & (event % trip != 0)
        in_previous &= unchanged[at]
    held = tile if word_cost is None else np.bincount(at, word_cost[member_word], len(pairs))  # compressed words
    largest = held.max().item() if len(held) else 0
    if first_touch is None:  # inputs never drain: a copy is its fill
        enter_at = np.flatnonzero(~in_previous)
        enter = pair[enter_at] // n_inst * per_event
        return _Copies(pair[enter_at] % n_inst, member_word[enter_at], enter, None,
                       np.ones(len(enter), dtype=bool)), largest
    in_next = ((member_next >= 0) & _contains(members, pairs[member_next] * size + member_word)
               & unchanged[member_next])
    # a copy runs from an entering member to the next leaving one of the same (instance, word)
    order = np.argsort(pair % n_inst * size + member_word, kind="stable")  # members are in event order
    enter_at, leave_at = order[~in_previous[order]], order[~in_next[order]]
    enter = pair[enter_at] // n_inst * per_event
    leave = np.where(member_next[leave_at] < 0, nest.steps, pairs[member_next[leave_at]] // n_inst * per_event)
    words = member_word[enter_at]
    return _Copies(pair[enter_at] % n_inst, words, enter, leave, first_touch[words] < enter), largest


def _set_contents(step: np.ndarray, instance: np.ndarray, word: np.ndarray) -> np.ndarray:
    """Per move, an id of the set of words its (step, instance) moves: equal ids iff equal sets (no
    (step, instance, word) twice)."""
    order = np.lexsort((word, instance, step))
    s, i, w = step[order], instance[order], word[order]
    starts = np.flatnonzero(np.concatenate(([True], (s[1:] != s[:-1]) | (i[1:] != i[:-1]))))
    sizes = np.diff(np.append(starts, len(w)))
    content = np.empty(len(starts), dtype=np.int64)
    next_id = 0
    for k in np.unique(sizes):  # sets of one size compared as rows of their sorted words
        sets = np.flatnonzero(sizes == k)
        _, inverse = np.unique(w[starts[sets][:, None] + np.arange(k)], axis=0, return_inverse=True)
        content[sets] = next_id + inverse.ravel()
        next_id += int(inverse.max()) + 1
    out = np.empty(len(word), dtype=np.int64)
    out[order] = np.repeat(content, sizes)
    return out


def _identical_representatives(nest: LoopNest, child: int, parent: int, moves: _Moves) -> np.ndarray:
    """Which child moves the parent reads under the identical rule (Timeloop's, docs/cost-model.md 2b).

    Fan-out by fan-out from the parent down (the fan-out of level ``k``, ``k = parent .. child + 1``),
    within each (step, level-``k`` instance) still served, the level-``k - 1`` positions whose subtrees
    need identical sets of words (the union of their children's fills at that step) share one multicast:
    only the lowest of them is kept and looked into at the next fan-out. Every kept child's fills are read.
    """
    lane = moves.instance * nest.lanes_per_instance(child)
    keep = np.ones(len(moves.word), dtype=bool)
    for k in range(parent, child, -1):
        if nest.lanes_per_instance(k) == nest.lanes_per_instance(k - 1):
            continue  # no fan-out used below level k: one position
        below, above = lane // nest.lanes_per_instance(k - 1), lane // nest.lanes_per_instance(k)
        at = np.flatnonzero(keep)
        # each subtree's set of words: its distinct (step, position, word) triples
        triples, first = np.unique(np.stack([moves.step[at], below[at], moves.word[at]]), axis=1, return_index=True)
        content = _set_contents(triples[0], triples[1], triples[2])
        group = np.unique(np.stack([triples[0], above[at][first], content]), axis=1, return_inverse=True)[1].ravel()
        lowest = np.full(int(group.max()) + 1 if len(group) else 0, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(lowest, group, triples[1])
        kept_positions = triples[:2, triples[1] == lowest[group]]  # (step, position) of each kept subtree
        keys = moves.step[at] * nest.lanes + below[at]
        keep[at] = np.isin(keys, kept_positions[0] * nest.lanes + kept_positions[1])
    return keep


@dataclass(frozen=True)
class _LinkRule:
    """How a child->parent link merges (docs/cost-model.md 2b: every fan-out in between must merge)."""

    multicast: bool  # reads of one event are merged over the children under one parent instance
    identical: bool  # ... by the identical-set rule instead of the union
    reduction: bool  # updates of one event are merged (the union)


def _link_rule(arch: ArchSpec, child: int, parent: int, role: str) -> _LinkRule:
    """The merge rule of the fan-outs of levels ``child+1..parent`` for a tensor of ``role``."""
    fanouts = [f for lv in arch.levels[child + 1: parent + 1] if (f := lv.fanout) is not None]
    multicast = all(f.multicast and role not in f.no_multicast for f in fanouts)
    return _LinkRule(multicast, multicast and any(f.multicast_rule == "identical" for f in fanouts),
                     all(f.reduction for f in fanouts))


@dataclass(frozen=True)
class _Arrivals:
    """Words a parent reads or receives over one link, one row per word moved at the parent.
    ``group``: the transfer it belongs to (see :class:`TransferLog`)."""

    step: np.ndarray
    group: np.ndarray
    parent: np.ndarray
    word: np.ndarray
    partial: np.ndarray


def _merge_at_parent(nest: LoopNest, child: int, parent: int, moves: _Moves, size: int, merged: bool,
                     identical: bool) -> _Arrivals:
    """The words the parent moves for the child ``moves`` of one link.

    Merged (union rule): per (step, parent instance) the distinct words, a partial contribution
    only if all its merged contributions are. Identical rule: the moves of the children
    :func:`_identical_representatives` keeps, one transfer per child. Else every move.
    """
    children = nest.lanes_per_instance(parent) // nest.lanes_per_instance(child)  # per parent instance
    parent_of = moves.instance // children
    if identical:
        keep = _identical_representatives(nest, child, parent, moves)
        moves = _Moves(moves.step[keep], moves.instance[keep], moves.word[keep], moves.partial[keep])
        parent_of = parent_of[keep]
    group = parent_of if merged and not identical else moves.instance
    n_groups = nest.instances(parent) if merged and not identical else nest.instances(child)
    keys = (moves.step * n_groups + group) * size + moves.word
    kept = _unique(keys)
    partial = ~_contains(_unique(keys[~moves.partial]), kept)  # every merged contribution is partial
    step, grp, word = kept // (n_groups * size), kept // size % n_groups, kept % size
    per_parent = grp if merged and not identical else grp // children
    return _Arrivals(step, np.full(len(kept), -1, dtype=np.int64) if merged and not identical else grp,
                     per_parent, word, partial)


def _accumulate_reads(arrivals: _Arrivals, copies: _Copies | None, size: int, steps: int,
                      during_step: bool) -> np.ndarray:
    """Per update, whether it reads the receiving copy first (read-modify-write, docs 2b).

    Each update lands in the parent copy of its (parent instance, word) resident when it arrives
    (``copies`` None: the backing store, one copy per word entered at zero before the first step).
    A drain at step s arrives before the events at s replace the parent's copies, a lane's update
    (``during_step``) after them. An accumulation reads unless it is the first update of a copy
    that entered at zero (at equal times accumulations come first). An update arriving when no
    copy is resident (possible only after idle edge events) reads if it accumulates.
    """
    time = 4 * arrivals.step + (2 if during_step else 0)
    if copies is None:
        copy_of = arrivals.parent * size + arrivals.word
        landed = at_zero = np.ones(len(time), dtype=bool)
    else:  # updates come from words the parent holds, so it has copies
        horizon = 4 * steps + 8
        copy_keys = (copies.instance * size + copies.word) * horizon + 4 * copies.enter + 1
        by_key = np.argsort(copy_keys)
        ix = np.searchsorted(copy_keys[by_key], (arrivals.parent * size + arrivals.word) * horizon + time) - 1
        copy_of = by_key[np.maximum(ix, 0)]
        landed = ((ix >= 0) & (copies.instance[copy_of] == arrivals.parent) & (copies.word[copy_of] == arrivals.word)
                  & (4 * copies.leave[copy_of] + 1 > time))
        at_zero = ~copies.reloaded[copy_of]
        copy_of = np.where(landed, copy_of, -1)
    order = np.argsort((copy_of * (4 * steps + 8) + time) * 2 + ~arrivals.partial)
    first = np.zeros(len(time), dtype=bool)
    first[order] = np.concatenate(([True], copy_of[order][1:] != copy_of[order][:-1]))
    free = first & landed & at_zero
    return arrivals.partial & ~free


def _execute(op: Operator, it: ActiveIterations, words: dict[str, np.ndarray],
             tensors: dict[str, np.ndarray]) -> np.ndarray:
    """The output computed by the active iterations, one at a time in execution order."""
    rule = combine_rule(op)
    values = [tensors[t.name].ravel()[words[t.name]] for t in op.inputs]
    term = values[0]
    for v in values[1:]:
        term = term * v if rule == "product" else (np.maximum(term, v) if rule == "max" else term + v)
    out = initial_output(op, term.dtype).ravel()
    (np.maximum if rule == "max" else np.add).at(out, words[op.output.name], term)
    return out.reshape(op.tensor_shape(op.output.name))


def _total(word: np.ndarray, cost: np.ndarray | None) -> int | float:
    """Words of a move: one per word, or the sum of their costs (a compressed operand)."""
    return len(word) if cost is None else float(cost.sum())


class _Tally:
    """Counts being accumulated during one simulation (internal, mutable)."""

    def __init__(self, arch: ArchSpec, nest: LoopNest) -> None:
        self.arch, self.nest = arch, nest
        self.counts: dict[tuple[str, str], AccessCounts] = {}
        self.reads, self.writes = ({lv.name: np.zeros(nest.instances(i), dtype=np.int64)
                                    for i, lv in enumerate(arch.levels)} for _ in range(2))
        self.tile_words: dict[tuple[str, str], int] = {}
        self.hop_words = {lv.name: 0 for lv in arch.levels if lv.fanout is not None}
        self.network_ingress, self.network_egress = ({lv.name: np.zeros(nest.instances(i), dtype=np.int64)
                                                      for i, lv in enumerate(arch.levels) if lv.fanout is not None}
                                                     for _ in range(2))
        self.dram_log: list[TransferLog] = []
        # per level, the words one moved word of the tensor being counted costs there (a compressed sparse
        # operand: 1 + metadata per non-zero, metadata alone per zero; docs/sparse.md); absent: 1 each
        self.word_cost: dict[int, np.ndarray] = {}

    def words(self, level: int, word: np.ndarray) -> np.ndarray | None:
        """The cost of each moved word at ``level``, or None when every word counts 1."""
        cost = self.word_cost.get(level)
        return None if cost is None else cost[word]

    def add(self, level: int, tensor: str, delta: AccessCounts, instances: dict[str, np.ndarray],
            costs: dict[str, np.ndarray | None] | None = None) -> None:
        """Add ``delta`` to the level's counts and its per-instance ``instances[kind]`` words (weighted by
        ``costs[kind]`` when given)."""
        key = (self.arch.levels[level].name, tensor)
        self.counts[key] = self.counts.get(key, AccessCounts()) + delta
        n_inst = self.nest.instances(level)
        per = {kind: np.bincount(inst, (costs or {}).get(kind), n_inst) for kind, inst in instances.items()}
        zero = np.zeros(n_inst, dtype=np.int64)
        name = self.arch.levels[level].name
        self.reads[name] = self.reads[name] + sum((per.get(k, zero) for k in ("reads", "drains", "accumulate_reads")),
                                                  zero)
        self.writes[name] = self.writes[name] + sum((per.get(k, zero) for k in ("fills", "updates")), zero)

    def child_moves(self, level: int, tensor: str, fills: _Moves, drains: _Moves) -> None:
        """Fills and drains of an on-chip level."""
        costs = {"fills": self.words(level, fills.word), "drains": self.words(level, drains.word)}
        self.add(level, tensor, AccessCounts(fills=_total(fills.word, costs["fills"]),
                                             drains=_total(drains.word, costs["drains"])),
                 {"fills": fills.instance, "drains": drains.instance}, costs)

    def parent_moves(self, op: Operator, t: Tensor, child: int, parent: int, moves: _Moves, direction: Direction,
                     parent_copies: _Copies | None, during_step: bool = False, dense: _Moves | None = None) -> bool:
        """Reads (of what the children fill) or updates (of what they drain) at the parent, with the
        updates' accumulate reads (``parent_copies``: the parent's copies, None for the backing store).

        Returns whether the updates carry final values: every word arrives once (after merging). A word's
        value moves up only in updates, so its one update holds every contribution; a word arriving twice
        arrived incomplete the first time (every copy takes a contribution in the child). Final updates
        are counted as ``final_updates`` too. ``dense``: the moves of every lane-step when the lanes skip a
        sparse operand's zeros (``moves`` the effectual ones): the dense schedule decides, as the hardware
        cannot know which words its skipped steps leave complete."""
        if not len(moves.word):
            return False
        rule = _link_rule(self.arch, child, parent, t.role)
        size = t.size(op.bounds)
        final = False
        if direction == "read":
            seen = _merge_at_parent(self.nest, child, parent, moves, size, rule.multicast, rule.identical)
            cost = self.words(parent, seen.word)
            self.add(parent, t.name, AccessCounts(reads=_total(seen.word, cost)), {"reads": seen.parent},
                     {"reads": cost})
        else:
            seen = _merge_at_parent(self.nest, child, parent, moves, size, rule.reduction, False)
            accumulate = np.zeros(len(seen.word), dtype=bool)
            if self.arch.levels[parent].read_modify_write:
                accumulate = _accumulate_reads(seen, parent_copies, size, self.nest.steps, during_step)
            decided = seen if dense is None else _merge_at_parent(self.nest, child, parent, dense, size,
                                                                  rule.reduction, False)
            final = len(_unique(decided.word)) == len(decided.word)
            self.add(parent, t.name, AccessCounts(updates=len(seen.word), accumulate_reads=int(accumulate.sum()),
                                                  final_updates=len(seen.word) if final else 0),
                     {"updates": seen.parent, "accumulate_reads": seen.parent[accumulate]})
        merged, identical = (rule.multicast, rule.identical) if direction == "read" else (rule.reduction, False)
        network = self.network_ingress if direction == "read" else self.network_egress
        for k in range(child + 1, parent + 1):
            if self.arch.levels[k].fanout is not None:
                name = self.arch.levels[k].name
                # words cross compressed when the parent is compressed (decompression at the child's side)
                self.hop_words[name] += _total(moves.word, self.words(parent, moves.word))
                # the parent-side words of this link, grouped by the level-k instance they pass through
                at_k = seen if k == parent else _merge_at_parent(self.nest, child, k, moves, size, merged, identical)
                network[name] = network[name] + np.bincount(at_k.parent, self.words(parent, at_k.word),
                                                            len(network[name]))
        if parent == len(self.arch.levels) - 1:
            cost = self.words(parent, seen.word)
            self.dram_log.append(TransferLog(t.name, t.role, direction, tuple(a.name for a in t.axes),
                                             t.shape(op.bounds), seen.step, seen.group, seen.word,
                                             None if cost is None else float(cost.sum()), final))
        return final


def _count_tensor(tally: _Tally, op: Operator, mapping: Mapping, it: ActiveIterations, t: Tensor,
                  word: np.ndarray, lane_keep: np.ndarray | None = None) -> None:
    """All counts of tensor ``t``, link by link from the MAC lanes (or operand registers) up to DRAM.
    ``lane_keep``: the lane-steps the MACs execute (zero-skipping, docs/sparse.md; default all): the lanes
    and operand registers touch ``t`` on those only, the levels' tiles stay those of every lane-step."""
    nest, arch = tally.nest, tally.arch
    size = t.size(op.bounds)
    lane_it, lane_word = (it, word) if lane_keep is None else (_subset(it, lane_keep), word[lane_keep])
    first_touch = None
    if t.role == "output":
        first_touch = np.full(size, nest.steps + 1, dtype=np.int64)
        touched, first = np.unique(lane_word, return_index=True)
        first_touch[touched] = lane_it.step[first]
    chain = [i for i in range(len(arch.levels)) if t.name in mapping.kept_tensors(i, op, arch)]
    copies: dict[int, _Copies] = {}
    if t.role in arch.mac.operand_registers:
        copies[LANES] = _residency(nest, LANES, lane_it, lane_word, size, first_touch, halo_reuse=True)[0]
    for c in chain[:-1]:
        copies[c], tally.tile_words[(arch.levels[c].name, t.name)] = _residency(
            nest, c, it, word, size, first_touch, arch.levels[c].halo_reuse, tally.word_cost.get(c),
            mapping.levels[c].above(t.name))
    whole = tally.word_cost.get(len(arch.levels) - 1)
    tally.tile_words[(arch.levels[-1].name, t.name)] = size if whole is None else float(whole.sum())
    for child, parent in zip([LANES] + chain[:-1], chain):
        dense = None  # the output's moves of every lane-step, when the lanes skip zeros (lane_keep)
        if child in copies:
            fills, drains = copies[child].fills(), copies[child].drains()
            if child != LANES:  # an operand register has no counts of its own
                tally.child_moves(child, t.name, fills, drains)
            elif first_touch is not None and lane_keep is not None:
                dense = _residency(nest, LANES, it, word, size, first_touch, halo_reuse=True)[0].drains()
        else:  # every active lane reads one word / writes one partial sum per step
            lane_moves = _Moves(lane_it.step, lane_it.lane, lane_word, np.ones(len(lane_word), dtype=bool))
            fills, drains = (_NO_MOVES, lane_moves) if first_touch is not None else (lane_moves, _NO_MOVES)
            if first_touch is not None and lane_keep is not None:
                dense = _Moves(it.step, it.lane, word, np.ones(len(word), dtype=bool))
        tally.parent_moves(op, t, child, parent, fills, "read", copies.get(parent))
        final = tally.parent_moves(op, t, child, parent, drains, "update", copies.get(parent),
                                   during_step=child not in copies, dense=dense)
        if final and child in copies and child != LANES and len(_unique(drains.word)) == len(drains.word):
            # the child's drains are final values too unless a reducing network merged partial ones
            tally.add(child, t.name, AccessCounts(final_drains=len(drains.word)), {})


def _subset(it: ActiveIterations, keep: np.ndarray) -> ActiveIterations:
    return ActiveIterations(it.step[keep], it.lane[keep], it.index[keep])


def _count_sparse_tensor(tally: _Tally, op: Operator, mapping: Mapping, it: ActiveIterations, t: Tensor,
                         word: np.ndarray, nonzero: np.ndarray, sparse: SparseOperand) -> None:
    """All counts of the sparse operand ``t`` (docs/sparse.md): the dense schedule's moves, each moved word
    at a compressed level costing what it costs in the compressed form (:meth:`SparseOperand.compressed_words`:
    a non-zero ``word_per_nonzero`` + ``metadata_per_element``, a zero the metadata alone; ``nonzero``: the
    tensor's flat non-zero mask). Uncompressed levels count every word 1."""
    cost = sparse.compressed_words(1.0, nonzero)  # one element each: bool * float is 0.0 or word_per_nonzero
    tally.word_cost = {i: cost for i, compressed in enumerate(sparse.compressed) if compressed}
    _count_tensor(tally, op, mapping, it, t, word)
    tally.word_cost = {}


def simulate(op: Operator, arch: ArchSpec, mapping: Mapping, seed: int = 0, compute: bool = True,
             nonzero: np.ndarray | None = None) -> SimResult:
    """Execute ``mapping`` of ``op`` on ``arch`` literally; see the module docstring.

    ``seed`` draws the random int64 input tensors; ``compute=False`` skips the output check.
    A layer with a compressed sparse operand (:func:`dnnmap.arch.sparsity.sparse_operand`, docs/sparse.md)
    runs with that tensor zero outside ``nonzero`` (its boolean non-zero mask; default: a random pattern
    of the layer's density drawn from ``seed``): its counts are its non-zeros plus metadata at compressed
    levels, and with zero-skipping the MACs execute only the lane-steps whose sparse word is non-zero, each
    lane its own, waiting for the slowest lane at every event of the innermost level keeping the operand.
    Raises :class:`~dnnmap.errors.MappingError` for an illegal mapping and ``ValueError``
    for a nest too large to enumerate.
    """
    validate_mapping(mapping, op, arch)
    nest = build_loop_nest(op, mapping)
    if nest.steps * nest.lanes > MAX_LANE_STEPS:
        raise ValueError(f"layer {op.name!r}: {nest.steps} steps x {nest.lanes} lanes is too large for the "
                         f"reference simulator (limit {MAX_LANE_STEPS} lane-steps); use a smaller layer")
    it = nest.active_iterations()
    words = {t.name: tensor_words(op, t, it.index) for t in op.tensors}
    bounds = [b for _, b in op.dims]
    executed = _unique(np.ravel_multi_index(tuple(it.index.T), bounds))
    iterations_exact = len(executed) == len(it.step) == op.iterations
    sparse = sparse_operand(op, arch)
    effectual = None  # the lane-steps the MACs execute when they skip the sparse operand's zeros
    if sparse is not None:
        if nonzero is None:
            nonzero = random_pattern(op.tensor_shape(sparse.tensor), sparse.density, np.random.default_rng(seed))
        nz_word = np.asarray(nonzero, dtype=bool).ravel()[words[sparse.tensor]]
        effectual = nz_word if sparse.skip_zeros else None
    executed_it = it if effectual is None else _subset(it, effectual)

    output_matches = None
    if compute:
        tensors = random_tensors(op, np.random.default_rng(seed))
        if sparse is not None:  # the sparse operand: non-zero values where the mask says so, zeros elsewhere
            values = tensors[sparse.tensor]
            tensors[sparse.tensor] = np.where(np.asarray(nonzero, dtype=bool), np.where(values == 0, 1, values), 0)
        done = words if effectual is None else {name: w[effectual] for name, w in words.items()}
        output_matches = bool(np.array_equal(_execute(op, executed_it, done, tensors), reference_output(op, tensors)))

    tally = _Tally(arch, nest)
    for t in op.tensors:
        if sparse is not None and t.name == sparse.tensor:
            _count_sparse_tensor(tally, op, mapping, it, t, words[t.name], np.asarray(nonzero, dtype=bool).ravel(),
                                 sparse)
        else:
            _count_tensor(tally, op, mapping, it, t, words[t.name], effectual)
    steps: float = nest.steps
    balanced = None
    if effectual is not None:  # lanes walk their effectual steps, synchronised per event of the operand's level
        level = min(i for i in range(len(arch.levels)) if sparse.tensor in mapping.kept_tensors(i, op, arch))
        per_tile = nest.steps_per_tile(level, mapping.levels[level].above(sparse.tensor))
        steps, balanced = sync_cycles(executed_it.step, executed_it.lane, per_tile, nest.lanes)

    return SimResult(
        output_matches=output_matches,
        iterations_exact=bool(iterations_exact),
        macs=len(executed_it.step),
        temporal_steps=steps,  # type: ignore[arg-type]
        lanes=nest.lanes,
        counts=tally.counts,
        instance_reads=tally.reads,
        instance_writes=tally.writes,
        tile_words=tally.tile_words,
        hop_words=tally.hop_words,
        network_ingress=tally.network_ingress,
        network_egress=tally.network_egress,
        dram_log=tuple(tally.dram_log),
        balanced_steps=balanced,
    )
