"""A deliberately plain, sequential re-implementation of docs/cost-model.md sections 1-2.

Python tuples and sets only, written from the contract text and independently of
``dnnmap.sim.loopnest`` (no shared helpers): loops are iterated with ``itertools.product``,
instances and events are tuples of loop indices, resident sets are Python sets updated
event by event. Used by the tests to cross-check the vectorized simulator on tiny cases.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.workload.ir import Operator


def naive_counts(op: Operator, arch: ArchSpec, mapping: Mapping) -> dict[tuple[str, str, str], int]:
    """{(level, tensor, kind): words} for kind in reads/fills/updates/drains, zeros left out."""
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
        """The part of a step/lane tuple belonging to levels above ``level``."""
        return key[: n_levels - 1 - level]

    # the literal execution: which words each (step, lane) touches
    accesses: list[tuple[int, tuple, dict[str, tuple[int, ...]]]] = []
    for s, step in enumerate(steps):
        for lane in lanes:
            idx = index_of(step, lane)
            if idx is not None:
                accesses.append((s, lane, {t.name: word(t.name, idx) for t in op.tensors}))
    out = op.output.name
    first_touch: dict[tuple[int, ...], int] = {}
    for s, _, words in accesses:
        first_touch.setdefault(words[out], s)

    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    for t in op.tensors:
        chain = [i for i in range(n_levels) if t.name in mapping.kept_tensors(i, op, arch)]
        for child, parent in zip([-1] + chain[:-1], chain):
            between = [arch.levels[k].fanout for k in range(child + 1, parent + 1)]
            multicast = all(f is None or f.multicast for f in between)
            reduction = all(f is None or f.reduction for f in between)
            pname = arch.levels[parent].name
            if child == -1:  # MAC lanes, one word per active lane per step
                per_step: dict[tuple[int, tuple], set] = defaultdict(set)
                n = 0
                for s, lane, words in accesses:
                    per_step[(s, outer(lane, parent))].add(words[t.name])
                    n += 1
                merged = sum(len(v) for v in per_step.values())
                kind, merge = ("updates", reduction) if t.role == "output" else ("reads", multicast)
                counts[(pname, t.name, kind)] += merged if merge else n
                continue
            cname = arch.levels[child].name
            # tiles: words touched per (event, instance) of the child level
            tiles: dict[tuple, dict[tuple, set]] = defaultdict(lambda: defaultdict(set))
            for s, lane, words in accesses:
                tiles[outer(steps[s], child)][outer(lane, child)].add(words[t.name])
            events = list(dict.fromkeys(outer(step, child) for step in steps))
            start = {}
            for s, step in enumerate(steps):
                start.setdefault(outer(step, child), s)
            instances = list(dict.fromkeys(outer(lane, child) for lane in lanes))
            resident = {x: set() for x in instances}
            for e in events + [None]:  # None: the end of the nest
                fills_by_parent: dict[tuple, list[set]] = defaultdict(list)
                drains_by_parent: dict[tuple, list[set]] = defaultdict(list)
                for x in instances:
                    new = set() if e is None else tiles[e][x]
                    if e is not None and not new:  # every iteration skipped (edge tile): nothing moves
                        continue
                    old = resident[x]
                    if t.role == "output":
                        filled = {w for w in new - old if first_touch[w] < start[e]}
                        drained = old - new
                    else:
                        filled, drained = new - old, set()
                    counts[(cname, t.name, "fills")] += len(filled)
                    counts[(cname, t.name, "drains")] += len(drained)
                    fills_by_parent[x[: n_levels - 1 - parent]].append(filled)
                    drains_by_parent[x[: n_levels - 1 - parent]].append(drained)
                    resident[x] = new
                for group in fills_by_parent.values():
                    counts[(pname, t.name, "reads")] += len(set().union(*group)) if multicast else sum(map(len, group))
                for group in drains_by_parent.values():
                    counts[(pname, t.name, "updates")] += (len(set().union(*group)) if reduction
                                                           else sum(map(len, group)))
    return {k: v for k, v in counts.items() if v}
