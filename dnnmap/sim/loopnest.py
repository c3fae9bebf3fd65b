"""Literal execution of a mapping's loop nest: output check and buffer access counts.

``simulate`` implements sections 1 and 2 of ``docs/cost-model.md`` without any formula:

1. it enumerates every (temporal step, MAC lane) of the nest (:mod:`dnnmap.sim.nest`),
   skips those outside the bounds, and executes the active ones in time order on random
   int64 tensors; the result is compared bit-exactly with :func:`reference_output`;
2. the *tile* of each (level, event, instance) is taken literally as the set of words the
   MACs below that instance touch during the event; the resident set is the previous
   event's tile, so fills are the words of a tile that were not in the previous one
   (for outputs only those touched by an earlier MAC), and drains the output words that
   are not in the next one (or the last tile, at the end). An instance whose iterations
   are all skipped during an event (edge tile) moves nothing and keeps its resident set.
   The parent reads what the children fill and receives what they drain as updates, as
   the union over the children under one parent instance when every fan-out in between
   multicasts (reduces), else the sum; MAC lanes read / update the innermost level
   keeping a tensor the same way.

``hop_words`` counts, for every fan-out, the words delivered through it to or from the
instances below: each word a child fills or drains (each lane read or partial-sum write)
counts once at every fan-out between that child and its parent.

Element sets are sorted numpy arrays of integer keys ``(event, instance, word)``, so the
cost is a few sorts of the active lane-steps per (level, tensor): about 1.4 million
lane-steps per second (``benchmarks/sim_speed.py``). Meant for small layers (up to ~10^6 lane-steps; larger nests are
refused, see ``MAX_LANE_STEPS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.sim.nest import LANES, ActiveIterations, LoopNest, build_loop_nest, tensor_words
from dnnmap.sim.reference import combine_rule, initial_output, random_tensors, reference_output
from dnnmap.workload.ir import Operator, Tensor

MAX_LANE_STEPS = 20_000_000  # temporal steps x lanes (idle ones included) the simulator accepts

Direction = Literal["read", "update"]


@dataclass(frozen=True)
class AccessCounts:
    """Words moved at one (level, tensor), summed over the level's instances."""

    reads: int = 0
    fills: int = 0
    updates: int = 0
    drains: int = 0

    def __add__(self, other: "AccessCounts") -> "AccessCounts":
        return AccessCounts(self.reads + other.reads, self.fills + other.fills,
                            self.updates + other.updates, self.drains + other.drains)


@dataclass(frozen=True)
class TransferLog:
    """The words one tensor moves between DRAM and its DRAM child, one row per (transfer, word).

    A *transfer* is one event's words for one child instance (``group``), or for all child
    instances at once (``group == -1``) when every fan-out in between multicasts (reads) or
    reduces (updates). ``step`` is the temporal step at which the event happens
    (``temporal_steps`` for the final drain).
    """

    tensor: str
    direction: Direction
    axis_names: tuple[str, ...]
    shape: tuple[int, ...]
    step: np.ndarray
    group: np.ndarray
    word: np.ndarray  # row-major flat index in ``shape``


@dataclass(frozen=True)
class SimResult:
    """Outcome of :func:`simulate`. Counts are keyed by (level name, tensor name)."""

    output_matches: bool | None  # None when run with compute=False
    iterations_exact: bool  # every iteration of the operator executed exactly once
    macs: int  # active lane-steps (iterations executed; also for pooling/add, which have no MACs)
    temporal_steps: int  # compute cycles: temporal steps of the nest, idle edge steps included
    lanes: int  # MAC lanes the mapping uses
    counts: dict[tuple[str, str], AccessCounts]
    instance_words: dict[str, np.ndarray]  # per level: words in+out of each used instance, all tensors
    hop_words: dict[str, int]  # per level with a fan-out: words delivered to/from children through it
    dram_log: tuple[TransferLog, ...]

    def count(self, level: str, tensor: str) -> AccessCounts:
        """Counts of ``tensor`` at ``level`` (all zero when the level does not keep it)."""
        return self.counts.get((level, tensor), AccessCounts())

    def max_instance_words(self, level: str) -> int:
        """Largest number of words moved in or out of one instance of ``level`` (bandwidth-limited latency)."""
        words = self.instance_words[level]
        return int(words.max()) if len(words) else 0


@dataclass(frozen=True)
class _Moves:
    """Words crossing one child->parent link: child event step, child instance, word."""

    step: np.ndarray
    instance: np.ndarray
    word: np.ndarray


_NO_MOVES = _Moves(*(np.zeros(0, dtype=np.int64),) * 3)


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


def _neighbour_events(pairs: np.ndarray, n_inst: int) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``event * n_inst + instance`` pairs: the previous and next event of the same
    instance among the pairs (-1 when there is none)."""
    event, instance = pairs // n_inst, pairs % n_inst
    by_instance = np.lexsort((event, instance))
    same = instance[by_instance[1:]] == instance[by_instance[:-1]]
    previous = np.full(len(pairs), -1, dtype=np.int64)
    following = np.full(len(pairs), -1, dtype=np.int64)
    previous[by_instance[1:][same]] = event[by_instance[:-1][same]]
    following[by_instance[:-1][same]] = event[by_instance[1:][same]]
    return previous, following


def _residency(nest: LoopNest, level: int, it: ActiveIterations, word: np.ndarray, size: int,
               first_touch: np.ndarray | None) -> tuple[_Moves, _Moves]:
    """Fills and drains of one tensor at one level (drains are empty for inputs: ``first_touch`` None).

    Tiles are the words touched per (event, instance). At an event with a non-empty tile the
    resident set is the tile of the instance's previous non-empty event (``R := S``); an
    instance whose iterations are all skipped in an event (edge tile) moves nothing and keeps R.
    """
    per_event = nest.steps_per_event(level)
    n_inst = nest.instances(level)
    members = _unique((it.step // per_event * n_inst + it.lane // nest.lanes_per_instance(level)) * size + word)
    pair, member_word = members // size, members % size
    event, instance = pair // n_inst, pair % n_inst
    pairs = _unique(pair)  # the non-empty (event, instance) tiles
    previous, following = (e[np.searchsorted(pairs, pair)] for e in _neighbour_events(pairs, n_inst))
    entering = (previous < 0) | ~_contains(members, (previous * n_inst + instance) * size + member_word)
    if first_touch is None:
        fills = _Moves(event[entering] * per_event, instance[entering], member_word[entering])
        return fills, _NO_MOVES
    reload = entering & (first_touch[member_word] < event * per_event)  # already holds a partial sum
    leaving = (following < 0) | ~_contains(members, (following * n_inst + instance) * size + member_word)
    leave_step = np.where(following < 0, nest.steps, following * per_event)
    fills = _Moves(event[reload] * per_event, instance[reload], member_word[reload])
    drains = _Moves(leave_step[leaving], instance[leaving], member_word[leaving])
    return fills, drains


def _merges(arch: ArchSpec, child: int, parent: int, flag: Literal["multicast", "reduction"]) -> bool:
    """Whether every fan-out between ``child`` and ``parent`` (levels child+1..parent) has ``flag``."""
    return all(arch.levels[k].fanout is None or getattr(arch.levels[k].fanout, flag) for k in range(child + 1, parent + 1))


def _merge_at_parent(nest: LoopNest, arch: ArchSpec, child: int, parent: int, moves: _Moves, size: int,
                     flag: Literal["multicast", "reduction"]) -> tuple[int, np.ndarray, _Moves, bool]:
    """Words the parent reads (``multicast``) or receives as updates (``reduction``) for ``moves``.

    When every fan-out in between has ``flag`` the parent moves the union over the child
    instances under it (per event), else the sum. Returns the total, the per-parent-instance
    counts, the moves as the parent sees them (instance = parent instance when merged, else
    child instance) and whether they were merged.
    """
    merged_children = _merges(arch, child, parent, flag)
    children = nest.lanes_per_instance(parent) // nest.lanes_per_instance(child)  # per parent instance
    group = moves.instance // children if merged_children else moves.instance
    n_groups = nest.instances(parent) if merged_children else nest.instances(child)
    keys = _unique((moves.step * n_groups + group) * size + moves.word)
    seen = _Moves(keys // (n_groups * size), keys // size % n_groups, keys % size)
    parent_of = seen.instance if merged_children else seen.instance // children
    return len(keys), np.bincount(parent_of, minlength=nest.instances(parent)), seen, merged_children


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


class _Tally:
    """Counts being accumulated during one simulation (internal, mutable)."""

    def __init__(self, arch: ArchSpec, nest: LoopNest) -> None:
        self.arch, self.nest = arch, nest
        self.counts: dict[tuple[str, str], AccessCounts] = {}
        self.instance_words = {lv.name: np.zeros(nest.instances(i), dtype=np.int64)
                               for i, lv in enumerate(arch.levels)}
        self.hop_words = {lv.name: 0 for lv in arch.levels if lv.fanout is not None}
        self.dram_log: list[TransferLog] = []

    def add(self, level: int, tensor: str, delta: AccessCounts) -> None:
        key = (self.arch.levels[level].name, tensor)
        self.counts[key] = self.counts.get(key, AccessCounts()) + delta

    def child_moves(self, level: int, tensor: str, fills: _Moves, drains: _Moves) -> None:
        """Fills and drains of an on-chip level, and the words they move in/out of each instance."""
        self.add(level, tensor, AccessCounts(fills=len(fills.word), drains=len(drains.word)))
        n_inst = self.nest.instances(level)
        self.instance_words[self.arch.levels[level].name] += (np.bincount(fills.instance, minlength=n_inst)
                                                              + np.bincount(drains.instance, minlength=n_inst))

    def parent_moves(self, op: Operator, tensor: str, child: int, parent: int, moves: _Moves,
                     direction: Direction) -> None:
        """Reads (of what the children fill) or updates (of what they drain) at the parent."""
        if not len(moves.word):
            return
        t = op.tensor(tensor)
        flag: Literal["multicast", "reduction"] = "multicast" if direction == "read" else "reduction"
        total, per_parent, seen, merged = _merge_at_parent(self.nest, self.arch, child, parent, moves,
                                                           t.size(op.bounds), flag)
        self.add(parent, tensor, AccessCounts(reads=total) if direction == "read" else AccessCounts(updates=total))
        self.instance_words[self.arch.levels[parent].name] += per_parent
        for k in range(child + 1, parent + 1):
            if self.arch.levels[k].fanout is not None:
                self.hop_words[self.arch.levels[k].name] += len(moves.word)
        if parent == len(self.arch.levels) - 1:
            group = np.full(len(seen.word), -1, dtype=np.int64) if merged else seen.instance
            self.dram_log.append(TransferLog(tensor, direction, tuple(a.name for a in t.axes), t.shape(op.bounds),
                                             seen.step, group, seen.word))


def _count_tensor(tally: _Tally, op: Operator, mapping: Mapping, it: ActiveIterations, t: Tensor,
                  word: np.ndarray) -> None:
    """All counts of tensor ``t``, link by link from the MAC lanes up to DRAM."""
    nest, arch = tally.nest, tally.arch
    first_touch = None
    if t.role == "output":
        first_touch = np.full(t.size(op.bounds), nest.steps + 1, dtype=np.int64)
        touched, first = np.unique(word, return_index=True)
        first_touch[touched] = it.step[first]
    child = LANES
    for parent in (i for i in range(len(arch.levels)) if t.name in mapping.kept_tensors(i, op, arch)):
        if child == LANES:  # every active lane reads one word / writes one partial sum per step
            lane_moves = _Moves(it.step, it.lane, word)
            fills, drains = (_NO_MOVES, lane_moves) if first_touch is not None else (lane_moves, _NO_MOVES)
        else:
            fills, drains = _residency(nest, child, it, word, t.size(op.bounds), first_touch)
            tally.child_moves(child, t.name, fills, drains)
        tally.parent_moves(op, t.name, child, parent, fills, "read")
        tally.parent_moves(op, t.name, child, parent, drains, "update")
        child = parent


def simulate(op: Operator, arch: ArchSpec, mapping: Mapping, seed: int = 0, compute: bool = True) -> SimResult:
    """Execute ``mapping`` of ``op`` on ``arch`` literally; see the module docstring.

    ``seed`` draws the random int64 input tensors; ``compute=False`` skips the output check.
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

    output_matches = None
    if compute:
        tensors = random_tensors(op, np.random.default_rng(seed))
        output_matches = bool(np.array_equal(_execute(op, it, words, tensors), reference_output(op, tensors)))

    tally = _Tally(arch, nest)
    for t in op.tensors:
        _count_tensor(tally, op, mapping, it, t, words[t.name])

    return SimResult(
        output_matches=output_matches,
        iterations_exact=bool(iterations_exact),
        macs=len(it.step),
        temporal_steps=nest.steps,
        lanes=nest.lanes,
        counts=tally.counts,
        instance_words=tally.instance_words,
        hop_words=tally.hop_words,
        dram_log=tuple(tally.dram_log),
    )
