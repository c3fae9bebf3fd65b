"""A deliberately plain, sequential re-implementation of docs/cost-model.md sections 1, 2 and 2b.

Python tuples, sets and dicts only, written from the contract text and independently of
``dnnmap.sim.loopnest`` (no shared helpers): loops are iterated with ``itertools.product``,
instances and events are tuples of loop indices, and time is swept step by step. At each
step every level (innermost first, the operand registers before level 0) whose event starts
there replaces its resident sets, sends what leaves to its parent and takes what enters from
it; then the lanes compute. Each resident output word remembers whether it entered at zero
and whether it has been updated, which decides the read-modify-write reads. Used by the tests
to cross-check the vectorized simulator on tiny cases.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.workload.ir import Operator

REGISTER = -1  # the operand registers' pseudo level


@dataclass
class NaiveResult:
    counts: dict[tuple[str, str, str], int]  # (level, tensor, kind) -> words, zeros left out
    tile_words: dict[tuple[str, str], int]  # (on-chip level, tensor) -> largest tile of one instance
    instance_reads: dict[str, list[int]] = field(default_factory=dict)  # level -> sorted non-zero words
    instance_writes: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class _Copy:
    at_zero: bool  # entered without a reload
    touched: bool = False  # has received an update


def naive_counts(op: Operator, arch: ArchSpec, mapping: Mapping) -> NaiveResult:
    """Every count of section 2/2b by a sequential sweep (see the module docstring)."""
    dims = op.dim_names
    bounds = op.bounds
    n_levels = len(arch.levels)
    # loops per level: (dim, factor, stride); stride = product of the factors of dim below the loop
    temporal: list[list[tuple[str, int, int]]] = []
    spatial: list[list[tuple[str, int, int]]] = []
    below = dict.fromkeys(dims, 1)
    for lm in mapping.levels:
        spatial.append([(d, lm.s(d), below[d]) for d in dims])
        temporal.append([(d, lm.t(d), below[d] * lm.s(d)) for d in lm.full_order(dims)])
        for d in dims:
            below[d] *= lm.t(d) * lm.s(d)

    def ranges(loops: list[tuple[str, int, int]]) -> list[range]:
        return [range(f) for _, f, _ in loops]

    # time steps: tuple per level (outermost level first) of that level's temporal indices
    levels_desc = list(range(n_levels - 1, -1, -1))
    steps = list(itertools.product(*[list(itertools.product(*ranges(temporal[i]))) for i in levels_desc]))
    lanes = list(itertools.product(*[list(itertools.product(*ranges(spatial[i]))) for i in levels_desc]))

    def index_of(step: tuple, lane: tuple) -> dict[str, int] | None:
        idx = dict.fromkeys(dims, 0)
        for pos, i in enumerate(levels_desc):
            for (d, _, stride), k in zip(temporal[i], step[pos]):
                idx[d] += k * stride
            for (d, _, stride), k in zip(spatial[i], lane[pos]):
                idx[d] += k * stride
        return idx if all(idx[d] < bounds[d] for d in dims) else None

    def word(tensor_name: str, idx: dict[str, int]) -> tuple[int, ...]:
        return tuple(sum(c * idx[d] for d, c in a.terms) for a in op.tensor(tensor_name).axes)

    def outer(key: tuple, level: int) -> tuple:
        """The part of a step/lane tuple belonging to levels above ``level`` (REGISTER: all of it)."""
        return key[: n_levels - 1 - level]

    def innermost_step(before: tuple, after: tuple, level: int) -> bool:
        """Whether step ``after`` follows ``before`` by one iteration of the innermost loop above
        ``level`` (trip > 1) alone: the transitions ``halo_reuse: innermost`` keeps a halo across."""
        trips = [f for i in levels_desc[: n_levels - 1 - level] for _, f, _ in temporal[i]]
        b = [k for part in outer(before, level) for k in part]
        a = [k for part in outer(after, level) for k in part]
        moving = [j for j, f in enumerate(trips) if f > 1]
        if not moving:
            return False
        j = moving[-1]
        return a[:j] == b[:j] and a[j] == b[j] + 1 and a[j + 1:] == b[j + 1:]

    # the literal execution: which words each (step, lane) touches
    by_step: list[list[tuple[tuple, dict[str, tuple[int, ...]]]]] = [[] for _ in steps]
    for s, step in enumerate(steps):
        for lane in lanes:
            idx = index_of(step, lane)
            if idx is not None:
                by_step[s].append((lane, {t.name: word(t.name, idx) for t in op.tensors}))
    out = op.output.name
    first_touch: dict[tuple[int, ...], int] = {}
    for s, active in enumerate(by_step):
        for _, words in active:
            first_touch.setdefault(words[out], s)

    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    tile_words: dict[tuple[str, str], int] = defaultdict(int)
    reads_of: dict[tuple[str, tuple], int] = defaultdict(int)  # (level, instance) -> words read out
    writes_of: dict[tuple[str, tuple], int] = defaultdict(int)

    def count(level: int, tensor: str, kind: str, n: int, instance: tuple) -> None:
        name = arch.levels[level].name
        counts[(name, tensor, kind)] += n
        if kind in ("reads", "drains", "accumulate_reads"):
            reads_of[(name, instance)] += n
        else:
            writes_of[(name, instance)] += n

    for t in op.tensors:
        is_out = t.role == "output"
        chain = [i for i in range(n_levels) if t.name in mapping.kept_tensors(i, op, arch)]
        children = ([REGISTER] if t.role in arch.mac.operand_registers else []) + chain[:-1]
        parent_of = {c: next(p for p in chain if p > c) for c in children}
        lane_parent = chain[0]  # the level the lanes talk to when the tensor has no register

        def rule(child: int, parent: int) -> tuple[bool, bool, bool]:
            between = [arch.levels[k].fanout for k in range(child + 1, parent + 1)
                       if arch.levels[k].fanout is not None]
            multicast = all(f.multicast and t.role not in f.no_multicast for f in between)
            identical = multicast and any(f.multicast_rule == "identical" for f in between)
            return multicast, identical, all(f.reduction for f in between)

        # tiles: words touched per (event, instance) of each child level
        tiles: dict[int, dict[tuple, set]] = {c: defaultdict(set) for c in children}
        for s, active in enumerate(by_step):
            for lane, words in active:
                for c in children:
                    tiles[c][(outer(steps[s], c), outer(lane, c))].add(words[t.name])
        resident: dict[int, dict[tuple, set]] = {c: defaultdict(set) for c in children}
        last_event: dict[int, dict[tuple, tuple]] = {c: {} for c in children}  # step of the last non-idle event
        copies: dict[int, dict[tuple, dict]] = {lv: defaultdict(dict) for lv in chain + children}
        backing = chain[-1]
        for w in first_touch if is_out else ():
            copies[backing][()][w] = _Copy(at_zero=True)  # the backing store's outputs start at zero

        def receive(parent: int, instance: tuple, arrivals: list[tuple[tuple, bool]]) -> None:
            """Updates arriving at one parent instance at one time, accumulations first."""
            rmw = arch.levels[parent].read_modify_write
            for w, partial in sorted(arrivals, key=lambda a: not a[1]):
                copy = copies[parent][instance].get(w)
                if partial and rmw and not (copy is not None and copy.at_zero and not copy.touched):
                    count(parent, t.name, "accumulate_reads", 1, instance)
                if copy is not None:
                    copy.touched = True
                count(parent, t.name, "updates", 1, instance)

        def identical_reads(group: list[tuple[tuple, set]], k: int, child: int) -> int:
            """Reads under the identical rule of the children ``group`` under one level-``k`` instance: the
            positions of level ``k``'s fan-out whose subtrees need the same words share one read; the
            lowest position of each such group is looked into at the next fan-out down."""
            if k == child:
                return sum(len(f) for _, f in group)
            subtrees: dict[tuple, list[tuple[tuple, set]]] = defaultdict(list)
            for x, f in group:
                subtrees[outer(x, k - 1)].append((x, f))
            lowest: dict[frozenset, tuple] = {}
            for key in sorted(subtrees):
                lowest.setdefault(frozenset().union(*(f for _, f in subtrees[key])), key)
            return sum(identical_reads(subtrees[key], k - 1, child) for key in lowest.values())

        def deliver(child: int, parent: int, fills: dict[tuple, set], drains: dict[tuple, list]) -> None:
            """The parent's reads of the children's fills and updates from their drains (one event)."""
            multicast, identical, reduction = rule(child, parent)
            by_parent: dict[tuple, list[tuple[tuple, set]]] = defaultdict(list)
            for x, filled in fills.items():
                if filled:
                    by_parent[outer(x, parent)].append((x, filled))
            for px, group in by_parent.items():
                if identical:
                    n = identical_reads(group, parent, child)
                elif multicast:
                    n = len(set().union(*(f for _, f in group)))
                else:
                    n = sum(len(f) for _, f in group)
                count(parent, t.name, "reads", n, px)
            arrivals: dict[tuple, list[tuple[tuple, bool]]] = defaultdict(list)
            for x, drained in drains.items():
                arrivals[outer(x, parent)].extend(drained)
            for px, items in arrivals.items():
                if reduction:
                    merged: dict[tuple, bool] = {}
                    for w, partial in items:
                        merged[w] = merged.get(w, True) and partial
                    items = list(merged.items())
                receive(parent, px, items)

        for s in range(len(steps) + 1):  # s == len(steps): the end of the nest
            for c in children:
                if s < len(steps) and s > 0 and outer(steps[s], c) == outer(steps[s - 1], c):
                    continue  # no event of c at this step
                mode = True if c == REGISTER else arch.levels[c].halo_reuse
                fills: dict[tuple, set] = {}
                drains: dict[tuple, list] = {}
                for x in sorted({outer(lane, c) for lane in lanes}):
                    new = set() if s == len(steps) else tiles[c].get((outer(steps[s], c), x), set())
                    if s < len(steps) and not new:  # every iteration skipped (edge tile): nothing moves
                        continue
                    old = resident[c][x]
                    halo = mode is True or (mode == "innermost" and s < len(steps) and x in last_event[c]
                                            and innermost_step(last_event[c][x], steps[s], c))
                    entering, leaving = (new - old, old - new) if halo or new == old else (set(new), set(old))
                    drains[x] = [(w, copies[c][x][w].at_zero) for w in leaving] if is_out else []
                    for w in leaving:
                        del copies[c][x][w]
                    filled = {w for w in entering if not is_out or first_touch[w] < s}
                    for w in entering:
                        copies[c][x][w] = _Copy(at_zero=w not in filled)
                    fills[x] = filled
                    resident[c][x] = set(new)
                    if s < len(steps):
                        last_event[c][x] = steps[s]
                    if c != REGISTER:  # a register has no counts of its own
                        key = (arch.levels[c].name, t.name)
                        count(c, t.name, "fills", len(filled), x)
                        count(c, t.name, "drains", len(drains[x]), x)
                        tile_words[key] = max(tile_words[key], len(new))
                deliver(c, parent_of[c], fills, drains)
            if s == len(steps) or REGISTER in children:
                continue
            # lanes without a register: one word read / one partial sum written per active lane
            multicast, identical, reduction = rule(REGISTER, lane_parent)
            grouped: dict[tuple, list[tuple[tuple, tuple[int, ...]]]] = defaultdict(list)
            for lane, words in by_step[s]:
                grouped[outer(lane, lane_parent)].append((lane, words[t.name]))
            for px, items in grouped.items():
                ws = [w for _, w in items]
                if is_out:
                    receive(lane_parent, px, [(w, True) for w in (set(ws) if reduction else ws)])
                elif identical:
                    n = identical_reads([(lane, {w}) for lane, w in items], lane_parent, REGISTER)
                    count(lane_parent, t.name, "reads", n, px)
                else:
                    count(lane_parent, t.name, "reads", len(set(ws)) if multicast else len(ws), px)

    levels = {lv.name for lv in arch.levels}
    return NaiveResult(
        counts={k: v for k, v in counts.items() if v},
        tile_words=dict(tile_words),
        instance_reads={lv: sorted(v for (name, _), v in reads_of.items() if name == lv and v) for lv in levels},
        instance_writes={lv: sorted(v for (name, _), v in writes_of.items() if name == lv and v) for lv in levels},
    )
