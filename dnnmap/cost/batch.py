"""Arrays of candidate mappings for one operator: the cost model's input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class MappingBatch:
    """``B`` mappings of one operator sharing bypass choices and DRAM layouts.

    temporal, spatial: (B, L, D) factors; order: (B, L, D) dim indices outermost first;
    keeps: (L, T) bool, tensor ``j`` stored at level ``i``; axes: (B, L, D) spatial axis;
    above: (B, L, T) per-tensor placement, the level's non-trivial loops (outermost first) above tensor
    ``j``'s tile (``LevelMapping.loops_above``), or None: every tile holds all of its level's loops.
    """

    temporal: np.ndarray
    spatial: np.ndarray
    order: np.ndarray
    keeps: np.ndarray
    layouts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    axes: np.ndarray | None = None
    above: np.ndarray | None = None

    def __len__(self) -> int:
        return self.temporal.shape[0]

    def take(self, idx: np.ndarray | list[int]) -> "MappingBatch":
        idx = np.asarray(idx)
        return MappingBatch(self.temporal[idx], self.spatial[idx], self.order[idx], self.keeps, self.layouts,
                            None if self.axes is None else self.axes[idx],
                            None if self.above is None else self.above[idx])

    @staticmethod
    def concat(batches: list["MappingBatch"]) -> "MappingBatch":
        """The rows of ``batches`` (same bypass and layouts; axes and placements given in all or none) as one batch."""
        first = batches[0]
        axes = None if first.axes is None else np.concatenate([b.axes for b in batches])
        above = None if first.above is None else np.concatenate([b.above for b in batches])
        return MappingBatch(*(np.concatenate([getattr(b, f) for b in batches]) for f in ("temporal", "spatial", "order")),
                            first.keeps, first.layouts, axes, above)

    @staticmethod
    def default_keeps(op: Operator, arch: ArchSpec) -> np.ndarray:
        keeps = np.array([[t.role in lv.keeps for t in op.tensors] for lv in arch.levels], dtype=bool)
        keeps[-1] = True
        return keeps

    @classmethod
    def from_mappings(cls, op: Operator, arch: ArchSpec, mappings: list[Mapping]) -> "MappingBatch":
        dims = op.dim_names
        L, D = len(arch.levels), len(dims)
        B = len(mappings)
        temporal = np.ones((B, L, D), dtype=np.int64)
        spatial = np.ones((B, L, D), dtype=np.int64)
        order = np.empty((B, L, D), dtype=np.int64)
        axes = np.zeros((B, L, D), dtype=np.int64)
        names = [t.name for t in op.tensors]
        above = np.zeros((B, L, len(names)), dtype=np.int64) if any(m.placed for m in mappings) else None
        keeps = None
        layouts = mappings[0].layouts if mappings else ()
        for b, m in enumerate(mappings):
            k = np.array([[t.name in m.kept_tensors(i, op, arch) for t in op.tensors] for i in range(L)])
            if keeps is None:
                keeps = k
            elif not np.array_equal(keeps, k) or m.layouts != layouts:
                raise ValueError("a MappingBatch needs equal bypass choices and layouts; group the mappings first")
            for i, lm in enumerate(m.levels):
                temporal[b, i] = [lm.t(d) for d in dims]
                spatial[b, i] = [lm.s(d) for d in dims]
                order[b, i] = [dims.index(d) for d in lm.full_order(dims)]
                ax = dict(lm.spatial_axis)
                axes[b, i] = [ax.get(d, 0) for d in dims]
                if above is not None:
                    above[b, i] = [lm.above(t) for t in names]
        if keeps is None:
            keeps = cls.default_keeps(op, arch)
        return cls(temporal, spatial, order, keeps, layouts, axes, above)

    def mapping(self, b: int, op: Operator, arch: ArchSpec) -> Mapping:
        """Row ``b`` as a :class:`Mapping`."""
        dims = op.dim_names
        levels = []
        default = self.default_keeps(op, arch)
        for i in range(len(arch.levels)):
            keeps = None
            if i < len(arch.levels) - 1 and not np.array_equal(self.keeps[i], default[i]):
                keeps = tuple(t.name for j, t in enumerate(op.tensors) if self.keeps[i, j])
            axes = self.axes[b, i] if self.axes is not None else np.zeros(len(dims), dtype=np.int64)
            levels.append(LevelMapping(
                temporal=tuple((d, int(self.temporal[b, i, k])) for k, d in enumerate(dims)
                               if self.temporal[b, i, k] > 1),
                order=tuple(dims[k] for k in self.order[b, i] if self.temporal[b, i, k] > 1),
                spatial=tuple((d, int(self.spatial[b, i, k])) for k, d in enumerate(dims)
                              if self.spatial[b, i, k] > 1),
                spatial_axis=tuple((d, int(axes[k])) for k, d in enumerate(dims)
                                   if self.spatial[b, i, k] > 1 and axes[k]),
                keeps=keeps,
                loops_above=() if self.above is None else tuple(
                    (t.name, int(self.above[b, i, j])) for j, t in enumerate(op.tensors) if self.above[b, i, j] > 0),
            ))
        return Mapping(tuple(levels), self.layouts, op.name, arch.name)
