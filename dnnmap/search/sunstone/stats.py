"""Pruning statistics of a Sunstone search (the figures RTML Sec. 3.2 quotes for ResNet-18)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields


@dataclass
class SunstoneStats:
    orders_all: int = 0  # permutations of the non-trivial loops of every trie built
    orders_kept: int = 0  # trie leaves kept (rules 1 and 2)
    l1_tiles_fitting: int = 0  # level-0 tiles that fit (the nodes of the Fig. 9 tree)
    l1_tiles_maximal: int = 0  # ... that survive Observation 4
    tiles_fitting: int = 0  # the same over every level
    tiles_maximal: int = 0
    unroll_legal: int = 0  # legal unrollings of the fan-outs visited
    unroll_kept: int = 0  # maximal, Observation 5 (with its escape clause), one per factor vector
    level_candidates: list[int] = field(default_factory=list)  # per step: candidates priced
    level_expanded: list[int] = field(default_factory=list)  # per step: candidates whose next level was searched
    level_cut: list[int] = field(default_factory=list)  # per step: candidates cut by alpha-beta
    evaluated: int = 0  # mappings priced by the cost model

    def step(self, i: int) -> None:
        for lst in (self.level_candidates, self.level_expanded, self.level_cut):
            while len(lst) <= i:
                lst.append(0)

    def merge(self, other: "SunstoneStats") -> None:
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, list):
                n = max(len(a), len(b))
                setattr(self, f.name, [(a[k] if k < len(a) else 0) + (b[k] if k < len(b) else 0) for k in range(n)])
            else:
                setattr(self, f.name, a + b)

    def ratios(self) -> dict[str, float]:
        """Fractions pruned, as the report states them (RTML Sec. 3.2.4-3.2.10)."""
        cut = self.level_cut[0] if self.level_cut else 0
        paired = cut + (self.level_expanded[0] if self.level_expanded else 0)  # (tile, unrolling) with best order
        next_level = self.level_candidates[1] if len(self.level_candidates) > 1 else 0
        per_parent = next_level / (paired - cut) if paired > cut else 0.0
        return {
            "orders_kept_fraction": self.orders_kept / self.orders_all if self.orders_all else math.nan,
            "l1_tiles_pruned": 1 - self.l1_tiles_maximal / self.l1_tiles_fitting if self.l1_tiles_fitting else math.nan,
            "unrollings_pruned": 1 - self.unroll_kept / self.unroll_legal if self.unroll_legal else math.nan,
            "l1_candidates_cut_by_alpha_beta": cut / paired if paired else math.nan,
            # level-1 candidates never priced: the cut parents times the children an expanded parent had
            "l2_candidates_cut_by_alpha_beta": cut * per_parent / (cut * per_parent + next_level)
            if next_level else math.nan,
        }
