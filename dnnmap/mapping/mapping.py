"""Mappings: per memory level temporal tile factors and loop order, spatial factors, bypass, DRAM layouts.

Loop-nest semantics (the contract the cost model and the simulator share; see
``docs/cost-model.md``): levels are indexed innermost first like the architecture.
Written outermost first, the nest is

    for level L-1 (DRAM) temporal loops, in ``order`` (outer -> inner)
      parallel-for DRAM fan-out spatial loops
        for level L-2 temporal loops
          ...
            for level 0 temporal loops
              parallel-for level-0 fan-out (MAC lanes)
                MAC

The tile a level instance holds covers the product of all temporal and spatial
factors at that level and below, unless the mapping places a tensor's tile lower
(``LevelMapping.loops_above``: the level's outermost loops then lie above that tensor's
tile, so they refill it). The product over all levels of a dimension's
factors must be >= its bound; a product larger than the bound is an imperfect
factorization whose edge tiles are clipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import MappingError
from dnnmap.workload.ir import Operator


BOTH_AXES = 2  # spatial_axis value of a dimension split over both axes of a 2-D fan-out


@dataclass(frozen=True)
class LevelMapping:
    """The loops of one memory level.

    ``temporal``/``spatial`` map dimension -> factor (missing dims have factor 1);
    ``order`` lists the temporal dims outermost first (dims not listed are treated as
    innermost, in the operator's dim order); ``spatial_axis`` assigns each spatial dim to
    axis 0 (x) or 1 (y) of a 2-D fan-out, or to :data:`BOTH_AXES` (x and y: the dim spans the
    instances the other dims leave free, as on a hierarchical fan-out such as the NMP's TLEs x
    TLTs); ``keeps`` names the tensors stored at this level (None = every tensor whose role the
    architecture level keeps); ``loops_above`` places a kept tensor's tile boundary inside the
    level's loop nest (per-tensor placement, docs/cost-model.md section 1b): tensor -> how many of
    the level's non-trivial temporal loops (factor > 1), outermost first in ``order``, lie above
    the tensor's tile. Absent or 0: the tile holds all of the level's loops.
    """

    temporal: tuple[tuple[str, int], ...] = ()
    order: tuple[str, ...] = ()
    spatial: tuple[tuple[str, int], ...] = ()
    spatial_axis: tuple[tuple[str, int], ...] = ()
    keeps: tuple[str, ...] | None = None
    loops_above: tuple[tuple[str, int], ...] = ()

    def t(self, dim: str) -> int:
        return dict(self.temporal).get(dim, 1)

    def s(self, dim: str) -> int:
        return dict(self.spatial).get(dim, 1)

    def full_order(self, dims: tuple[str, ...]) -> tuple[str, ...]:
        """Temporal loop order outer -> inner over all ``dims``."""
        listed = [d for d in self.order if d in dims]
        return tuple(listed + [d for d in dims if d not in listed])

    def above(self, tensor: str) -> int:
        """How many of the level's non-trivial temporal loops (outermost first) lie above ``tensor``'s tile."""
        return dict(self.loops_above).get(tensor, 0)

    def loops(self, dims: tuple[str, ...]) -> tuple[str, ...]:
        """The level's non-trivial temporal loops (factor > 1), outermost first."""
        return tuple(d for d in self.full_order(dims) if self.t(d) > 1)


@dataclass(frozen=True)
class Mapping:
    """A complete mapping of one operator onto an architecture."""

    levels: tuple[LevelMapping, ...]
    layouts: tuple[tuple[str, tuple[str, ...]], ...] = ()  # tensor -> axis names, outermost first
    layer: str = ""
    arch: str = ""
    notes: tuple[str, ...] = field(default=())

    def coverage(self, dim: str, upto: int) -> int:
        """Product of the factors of ``dim`` at levels 0..upto (the tile extent at level ``upto``)."""
        return math.prod(lv.t(dim) * lv.s(dim) for lv in self.levels[: upto + 1])

    def total(self, dim: str) -> int:
        return self.coverage(dim, len(self.levels) - 1)

    @property
    def placed(self) -> bool:
        """Whether some tensor's tile boundary lies inside its level's loops (per-tensor placement)."""
        return any(n > 0 for lm in self.levels for _, n in lm.loops_above)

    def layout(self, tensor: str, default: tuple[str, ...]) -> tuple[str, ...]:
        return dict(self.layouts).get(tensor, default)

    def kept_tensors(self, level: int, op: Operator, arch: ArchSpec) -> tuple[str, ...]:
        """Tensors stored at ``level``: the mapping's choice, else by the arch's role list."""
        lm = self.levels[level]
        if level == len(self.levels) - 1:
            return tuple(t.name for t in op.tensors)
        if lm.keeps is not None:
            return lm.keeps
        return tuple(t.name for t in op.tensors if t.role in arch.levels[level].keeps)


def _check_axes(lm: LevelMapping, level: str, shape: tuple[int, ...] | None, where: str) -> None:
    """Refuse a ``spatial_axis`` entry that cannot be placed: on a level without a fan-out, on an axis the fan-out
    lacks, or over both axes (:data:`BOTH_AXES`) of a fan-out that has one axis. (An entry for a dimension without
    a spatial factor places nothing: importers that clip an unrolling to a bound of 1 may keep one; a mapping
    file may not, ``mapping.io``.)"""
    for d, a in lm.spatial_axis:
        entry = f"{where}: level {level}: spatial_axis {d}: {a}"
        if shape is None:
            raise MappingError(f"{entry}: the level has no fan-out, so no loop of it is spatial")
        if a == BOTH_AXES and len(shape) != 2:
            raise MappingError(f"{entry}: {BOTH_AXES} splits {d} over both axes of a 2-D fan-out; the fan-out of "
                               f"{level} is {list(shape)} (one axis: 0)")
        if not (0 <= a < len(shape) or a == BOTH_AXES):
            raise MappingError(f"{entry}: the fan-out {list(shape)} has no axis {a} (0, 1, or {BOTH_AXES} = both "
                               "axes of a 2-D fan-out)")


def validate_mapping(m: Mapping, op: Operator, arch: ArchSpec) -> None:
    """Raise :class:`MappingError` naming the level/dimension when ``m`` is not legal for ``op``/``arch``.

    Checks structure only (level count, factors cover the bounds, fan-out sizes, bypass
    choices). Capacity is checked by the cost model, which reports the offending level.
    """
    where = f"layer {op.name!r}" if op.name else "mapping"
    if len(m.levels) != len(arch.levels):
        raise MappingError(f"{where}: mapping has {len(m.levels)} levels, architecture {arch.name!r} has "
                           f"{len(arch.levels)} ({', '.join(lv.name for lv in arch.levels)})")
    dims = set(op.dim_names)
    for i, lm in enumerate(m.levels):
        lv = arch.levels[i]
        for d, f in (*lm.temporal, *lm.spatial):
            if d not in dims:
                raise MappingError(f"{where}: level {lv.name}: unknown dimension {d!r}; "
                                   f"dimensions are {', '.join(op.dim_names)}")
            if f < 1:
                raise MappingError(f"{where}: level {lv.name}: factor of {d} must be >= 1, got {f}")
        unknown = [d for d in lm.order if d not in dims]
        if unknown:
            raise MappingError(f"{where}: level {lv.name}: loop order names unknown dimensions {unknown}")
        if len(set(lm.order)) != len(lm.order):
            raise MappingError(f"{where}: level {lv.name}: loop order lists a dimension twice")
        spatial = math.prod(f for _, f in lm.spatial)
        if spatial > 1 and lv.fanout is None:
            raise MappingError(f"{where}: level {lv.name} has no fan-out but the mapping has spatial factors")
        _check_axes(lm, lv.name, lv.fanout.shape if lv.fanout is not None else None, where)
        if lv.fanout is not None:
            axes = dict(lm.spatial_axis)
            shape = lv.fanout.shape
            free = 1  # instances left on each axis for the dims spanning both
            for ax, size in enumerate(shape):
                used = math.prod(f for d, f in lm.spatial if axes.get(d, 0) == ax)
                if used > size:
                    raise MappingError(f"{where}: level {lv.name}: spatial factors on axis {ax} use {used} "
                                       f"instances, the fan-out has {size}")
                free *= size // used
            spanning = math.prod(f for d, f in lm.spatial if axes.get(d, 0) == BOTH_AXES)
            if spanning > free:
                raise MappingError(f"{where}: level {lv.name}: spatial factors over both axes use {spanning} "
                                   f"instances, the other dims leave {free} of the fan-out {list(shape)}")
        if lm.keeps is not None and i < len(m.levels) - 1:
            names = {t.name: t.role for t in op.tensors}
            for t in lm.keeps:
                if t not in names:
                    raise MappingError(f"{where}: level {lv.name}: keeps unknown tensor {t!r}")
                if names[t] not in lv.keeps:
                    raise MappingError(f"{where}: level {lv.name} cannot store {t} (role {names[t]}); "
                                       f"it keeps {list(lv.keeps)}")
        _check_placement(m, i, op, arch, where)
    for d, b in op.dims:
        if m.total(d) < b:
            raise MappingError(f"{where}: factors of {d} multiply to {m.total(d)}, less than its bound {b}")
    for tname, layout in m.layouts:
        axes = [a.name for a in op.tensor(tname).axes]
        if sorted(layout) != sorted(axes):
            raise MappingError(f"{where}: layout of {tname} must be a permutation of {axes}, got {list(layout)}")


def _check_placement(m: Mapping, level: int, op: Operator, arch: ArchSpec, where: str) -> None:
    """A tensor placed inside a level's loops (``loops_above``) must be kept there, not at the backing
    store, and can have at most the level's non-trivial loops above its tile."""
    lm, name = m.levels[level], arch.levels[level].name
    if not lm.loops_above:
        return
    if len({t for t, _ in lm.loops_above}) != len(lm.loops_above):
        raise MappingError(f"{where}: level {name}: loops_above names a tensor twice")
    if level == len(m.levels) - 1:
        raise MappingError(f"{where}: level {name} is the backing store: it holds whole tensors, so loops_above "
                           "does not apply there")
    kept, loops = m.kept_tensors(level, op, arch), lm.loops(op.dim_names)
    for t, n in lm.loops_above:
        if t not in kept:
            raise MappingError(f"{where}: level {name}: loops_above places {t!r}, which the level does not keep "
                               f"(it keeps {list(kept)})")
        if not 0 <= n <= len(loops):
            raise MappingError(f"{where}: level {name}: loops_above of {t} is {n}; the level has {len(loops)} "
                               f"loops with a factor > 1 ({', '.join(loops) or 'none'})")
