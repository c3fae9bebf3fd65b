"""The literal iteration space of a mapping: every (temporal step, MAC lane) and its loop indices.

Implements section 1 of ``docs/cost-model.md``. Loops are listed outermost first:
for each level from DRAM (``L-1``) down to ``0``, its temporal loops in the mapping's
order, then its spatial loops. A temporal *step* is one iteration of all temporal loops
(mixed radix, level 0 innermost); a *lane* is one iteration of all spatial loops (mixed
radix, the fan-out of level ``L-1`` most significant). The index of dimension ``d`` is
``sum(loop_index * stride)`` where a loop's stride is the product of the factors of
``d`` below it; at one level the spatial loop is inside the temporal one.

Because the digits of inner levels are the low digits, the *event* of level ``i`` that a
step belongs to is ``step // steps_per_event(i)`` and the *instance* of level ``i`` a lane
runs on is ``lane // lanes_per_instance(i)``. Level ``-1`` stands for the MAC lanes
themselves (one event per step, one instance per lane).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dnnmap.mapping.mapping import Mapping
from dnnmap.workload.ir import Operator, Tensor

LANES = -1  # pseudo level index of the MAC lanes


@dataclass(frozen=True)
class Loop:
    """One loop of the nest: ``for index in range(factor)`` adding ``index * stride`` to ``dim``."""

    level: int
    dim: str
    factor: int
    stride: int
    spatial: bool


@dataclass(frozen=True)
class ActiveIterations:
    """The lane-steps whose indices are all inside the bounds, in execution (time, then lane) order."""

    step: np.ndarray  # (n,) temporal step of each active lane-step
    lane: np.ndarray  # (n,) lane of each active lane-step
    index: np.ndarray  # (n, ndims) dimension indices, columns in the operator's dim order


@dataclass(frozen=True)
class LoopNest:
    """The loops of ``mapping`` applied to ``op``, outermost first, with per-level trip counts."""

    op: Operator
    loops: tuple[Loop, ...]
    temporal_per_level: tuple[int, ...]  # product of the temporal factors of each level
    spatial_per_level: tuple[int, ...]  # product of the spatial factors of each level

    @property
    def steps(self) -> int:
        """Temporal steps of the whole nest (compute cycles, idle edge steps included)."""
        return math.prod(self.temporal_per_level)

    @property
    def lanes(self) -> int:
        """MAC lanes the mapping uses (product of all spatial factors)."""
        return math.prod(self.spatial_per_level)

    def steps_per_event(self, level: int) -> int:
        """Steps between two events of ``level`` (product of temporal factors at levels <= level)."""
        return math.prod(self.temporal_per_level[: level + 1])

    def level_loops(self, level: int) -> tuple[Loop, ...]:
        """The temporal loops of ``level`` (factor > 1), outermost first."""
        return tuple(lp for lp in self.loops if lp.level == level and not lp.spatial)

    def steps_per_tile(self, level: int, above: int = 0) -> int:
        """Steps between two events of a tile of ``level`` placed below the level's ``above`` outermost
        loops (per-tensor placement; 0: :meth:`steps_per_event`): those loops step it too."""
        return self.steps_per_event(level) // math.prod(lp.factor for lp in self.level_loops(level)[:above])

    def lanes_per_instance(self, level: int) -> int:
        """Lanes below one instance of ``level`` (product of spatial factors at levels <= level)."""
        return math.prod(self.spatial_per_level[: level + 1])

    def events(self, level: int) -> int:
        return self.steps // self.steps_per_event(level)

    def instances(self, level: int) -> int:
        """Instances of ``level`` the mapping uses (at most ``arch.instances(level)``)."""
        return self.lanes // self.lanes_per_instance(level)

    def _offsets(self, spatial: bool) -> np.ndarray:
        """(count, ndims) dimension offsets contributed by the temporal (or spatial) loops."""
        loops = [lp for lp in self.loops if lp.spatial == spatial]
        count = math.prod(lp.factor for lp in loops)
        position = {d: k for k, d in enumerate(self.op.dim_names)}
        offsets = np.zeros((count, len(position)), dtype=np.int64)
        counter = np.arange(count, dtype=np.int64)
        below = 1
        for lp in reversed(loops):  # innermost loop is the least significant digit
            digit = (counter // below) % lp.factor
            offsets[:, position[lp.dim]] += digit * lp.stride
            below *= lp.factor
        return offsets

    def active_iterations(self) -> ActiveIterations:
        """All lane-steps, with those whose index reaches a bound (edge tiles) skipped."""
        temporal = self._offsets(spatial=False)
        spatial = self._offsets(spatial=True)
        bounds = np.array([b for _, b in self.op.dims], dtype=np.int64)
        index = temporal[:, None, :] + spatial[None, :, :]
        step, lane = np.nonzero((index < bounds).all(axis=2))
        return ActiveIterations(step.astype(np.int64), lane.astype(np.int64), index[step, lane])


def build_loop_nest(op: Operator, mapping: Mapping) -> LoopNest:
    """The loop nest of ``mapping`` for ``op`` (factor-1 loops are left out: they do not iterate)."""
    dims = op.dim_names
    below = {d: 1 for d in dims}  # product of the factors of d inside the loop being placed
    per_level: list[list[Loop]] = []
    for level, lm in enumerate(mapping.levels):  # innermost level first, to accumulate strides
        spatial = [Loop(level, d, lm.s(d), below[d], True) for d in dims if lm.s(d) > 1]
        temporal = [Loop(level, d, lm.t(d), below[d] * lm.s(d), False)
                    for d in lm.full_order(dims) if lm.t(d) > 1]
        per_level.append(temporal + spatial)
        for d in dims:
            below[d] *= lm.t(d) * lm.s(d)
    loops = tuple(lp for level_loops in reversed(per_level) for lp in level_loops)
    return LoopNest(
        op=op,
        loops=loops,
        temporal_per_level=tuple(math.prod(lm.t(d) for d in dims) for lm in mapping.levels),
        spatial_per_level=tuple(math.prod(lm.s(d) for d in dims) for lm in mapping.levels),
    )


def tensor_words(op: Operator, tensor: Tensor, index: np.ndarray) -> np.ndarray:
    """Row-major flat index, in ``op.tensor_shape(tensor.name)``, of the word each iteration touches."""
    position = {d: k for k, d in enumerate(op.dim_names)}
    shape = tensor.shape(op.bounds)
    flat = np.zeros(len(index), dtype=np.int64)
    for axis, extent in zip(tensor.axes, shape):
        coordinate = np.zeros(len(index), dtype=np.int64)
        for d, coef in axis.terms:
            coordinate += coef * index[:, position[d]]
        flat = flat * extent + coordinate
    return flat
