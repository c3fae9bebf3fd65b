"""Choice of the final schedule over the layer sequence: dynamic programming, beside the greedy restarts.

HW-Flow-Fusion does not say how overlapping candidates become one schedule (digest G12). Two
rules are implemented on the same evaluated candidates:

- **greedy** (Sec. 4.4's walk): from layer ``i``, take the kept candidate starting at ``i``
  with the largest gain over single-layer scheduling, restart after its last layer; with none,
  schedule layer ``i`` singly and restart at ``i + 1``;
- **dynamic programming**: ``best[j] = min(best[j-1] + single(j-1), min over kept candidates
  [i, j) of best[i] + fused(i, j))``, which minimizes the sum over groups of the objective.

The objective of a schedule is the sum over its layers of each layer's objective (each
layer's own EDP for ``edp``, the convention of the per-layer search); the DP is exact for it, the greedy walk is not: a
pair taken at ``i`` can block a better pair starting at ``i + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.fusion.costing import ZERO, Cost
from dnnmap.fusion.search import GroupSchedule


@dataclass(frozen=True)
class Schedule:
    groups: tuple[GroupSchedule, ...]
    objective: str

    @property
    def cost(self) -> Cost:
        return sum((g.cost for g in self.groups), ZERO)

    @property
    def score(self) -> float:
        return sum(g.score(self.objective) for g in self.groups)

    @property
    def fused(self) -> tuple[GroupSchedule, ...]:
        return tuple(g for g in self.groups if g.mode != "single")


def dp_schedule(singles: list[GroupSchedule], kept: dict[tuple[int, int], GroupSchedule], objective: str) -> Schedule:
    """Optimal partition of the layer sequence into single layers and kept candidates ``[i, j)``."""
    n = len(singles)
    best = [0.0] + [float("inf")] * n
    choice: list[tuple[int, GroupSchedule] | None] = [None] * (n + 1)
    for j in range(1, n + 1):
        options = [(j - 1, singles[j - 1])] + [(i, g) for (i, e), g in kept.items() if e == j]
        for i, g in options:
            value = best[i] + g.score(objective)
            if value < best[j]:
                best[j], choice[j] = value, (i, g)
    groups: list[GroupSchedule] = []
    j = n
    while j > 0:
        i, g = choice[j]  # type: ignore[misc]
        groups.append(g)
        j = i
    return Schedule(tuple(reversed(groups)), objective)


def greedy_schedule(singles: list[GroupSchedule], kept: dict[tuple[int, int], GroupSchedule],
                    objective: str) -> Schedule:
    """Sec. 4.4's walk with our restart rule (module docstring)."""
    groups: list[GroupSchedule] = []
    i = 0
    while i < len(singles):
        starting = [(e, g) for (s, e), g in kept.items() if s == i]
        if starting:
            e, g = max(starting, key=lambda eg: eg[1].single_score(objective) - eg[1].score(objective))
            groups.append(g)
            i = e
        else:
            groups.append(singles[i])
            i += 1
    return Schedule(tuple(groups), objective)
