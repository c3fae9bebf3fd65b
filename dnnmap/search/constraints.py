"""Constraints on the map space as data (Timeloop's constraints: each one shrinks a sub-space of the map space).

A :class:`Constraints` value says, per storage level (by the architecture's level name), which temporal
and spatial factors are fixed, which extent the level holds (its tile), which dimensions may be split
across its fan-out and on which axis, the loop order, and which tensors the level keeps (bypass); plus
the allowed padding (imperfect factorization) and the DRAM layouts. ``Constraints()`` constrains
nothing: the declared space of docs/search.md. :class:`~dnnmap.search.space.MapSpace` applies a value
to its factor tables, loop orders, bypass and layouts; every enumerating mapper walks that space.

Dimensions are the operator's IR dimensions (N, G, K, C, P, Q, R, S for a convolution, docs/ir.md). A
dimension a layer does not have is ignored for that layer, so one value can constrain a whole network.
:func:`load_constraints` reads the YAML form (docs/search.md, "Constraints").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace

from pydantic import BaseModel, ConfigDict, Field

from dnnmap.arch.spec import ALL_ROLES, ArchSpec, Role
from dnnmap.errors import DnnmapError
from dnnmap.fileio import as_tuples, load_data, validate_strict
from dnnmap.mapping.mapping import BOTH_AXES
from dnnmap.workload.ir import Operator

Pairs = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class LevelConstraints:
    """Constraints on one storage level; every field's default leaves that sub-space whole.

    ``temporal``/``spatial``: dimension -> its fixed temporal factor / spatial factor (over all axes of
    the level's fan-out). ``tile``: dimension -> the extent one instance of the level holds (the slots at
    and below the level split it, the slots above split what it leaves, ``ceil(bound / tile)``).
    ``spatial_dims``: only these dimensions may be split across the level's fan-out (None: any).
    ``axes``: dimension -> the one fan-out axis it may use. ``both_axes``: a dimension may be split over both
    axes of the level's 2-D fan-out at once (K12 as 4 rows x 3 columns; off: each dimension uses one axis,
    the declared space). ``order``: these loops of the level run in
    this relative order, outermost first; when it names every dimension of a layer the order is fixed as
    written. ``keep``: the tensor roles the level stores, the others bypass it (None: the architecture's)."""

    temporal: Pairs = ()
    spatial: Pairs = ()
    tile: Pairs = ()
    spatial_dims: tuple[str, ...] | None = None
    axes: Pairs = ()
    order: tuple[str, ...] | None = None
    keep: tuple[Role, ...] | None = None
    both_axes: bool = False

    def __post_init__(self) -> None:  # one spelling per value: pairs sorted by dimension
        for name in ("temporal", "spatial", "tile", "axes"):
            object.__setattr__(self, name, tuple(sorted(getattr(self, name))))

    def dims(self) -> set[str]:
        """Every dimension this level's constraints name."""
        named = {d for pairs in (self.temporal, self.spatial, self.tile, self.axes) for d, _ in pairs}
        return named | set(self.spatial_dims or ()) | set(self.order or ())


@dataclass(frozen=True)
class Constraints:
    """Per-level constraints (level name -> :class:`LevelConstraints`), the allowed padding ``waste``
    (imperfect factorization: padded extent up to ``(1 + waste) x bound``; None: exact factors), the
    DRAM ``layouts`` (tensor -> axes outermost first; empty: row-major), ``placement`` (the space also holds
    every per-tensor placement: each tensor a level keeps may have its tile below 0..n of the level's n
    non-trivial loops, ``LevelMapping.loops_above``, docs/cost-model.md section 1b; off: one shared tile
    boundary per level, the declared space), and where they were read from."""

    levels: tuple[tuple[str, LevelConstraints], ...] = ()
    waste: float | None = None
    layouts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    name: str = ""
    source: str = ""  # the file the constraints were read from, for error messages
    placement: bool = False

    def __post_init__(self) -> None:  # one spelling per value: levels sorted by name
        object.__setattr__(self, "levels", tuple(sorted(self.levels, key=lambda x: x[0])))

    def level(self, name: str) -> LevelConstraints:
        """The constraints of level ``name`` (none when it is not constrained)."""
        return dict(self.levels).get(name, LevelConstraints())

    def with_level(self, name: str, **fields: object) -> Constraints:
        """These constraints with fields of level ``name`` replaced (e.g. ``with_level("L2", tile=...)``)."""
        new = replace(self.level(name), **fields)
        return replace(self, levels=tuple((n, c) for n, c in self.levels if n != name) + ((name, new),))

    @property
    def empty(self) -> bool:
        """True when nothing is constrained or widened beyond the padding (the declared space)."""
        return not self.layouts and not self.placement and all(c == LevelConstraints() for _, c in self.levels)

    def narrowing_fields(self) -> tuple[str, ...]:
        """The fields that narrow the declared space, as a constraints file spells them (``levels.GLB.order``,
        ``layouts``), levels by name and each level's fields in declaration order; empty when the value only
        widens it (``placement``, every level's ``both_axes``) or constrains nothing. The padding ``waste``
        widens the space too and is not named. One rule for every caller: the mapper check, ``auto``'s choice
        of Sunstone and the optimal mapper's space (which also refuses padding) read it."""
        plain = LevelConstraints()
        named = tuple(f"levels.{name}.{f.name}" for name, c in self.levels for f in fields(LevelConstraints)
                      if f.name != "both_axes" and getattr(c, f.name) != getattr(plain, f.name))
        return named + (("layouts",) if self.layouts else ())

    @property
    def both_axes(self) -> bool:
        """True when some level may split a dimension over both axes of its 2-D fan-out."""
        return any(c.both_axes for _, c in self.levels)

    def prefix(self) -> str:
        """Where error messages say the constraints come from."""
        return f"constraints file {self.source}: " if self.source else "constraints: "

    def _field(self, level: str, sub: str = "") -> str:
        return f"{self.prefix()}field 'levels.{level}{sub}'"

    def check(self, arch: ArchSpec, ops: tuple[Operator, ...] = ()) -> None:
        """Refuse levels the architecture lacks, fan-out constraints on a level without one, axes beyond
        its fan-out, bypass at the backing store, factors below 1, and (given ``ops``) dimensions no
        operator has - a DnnmapError naming the file and field."""
        names = [lv.name for lv in arch.levels]
        known_dims = {d for op in ops for d in op.dim_names}
        for name, c in self.levels:
            if name not in names:
                raise DnnmapError(f"{self._field(name)}: architecture {arch.name!r} has no level {name!r}; levels: "
                                  f"{', '.join(names)}")
            lv = arch.levels[names.index(name)]
            if lv.fanout is None and (c.spatial or c.spatial_dims is not None or c.axes):
                raise DnnmapError(f"{self._field(name)}: level {name} has no fan-out, so no dimension can be spatial there")
            if c.both_axes and (lv.fanout is None or len(lv.fanout.shape) != 2):
                raise DnnmapError(f"{self._field(name, '.both_axes')}: level {name} has no 2-D fan-out to split a "
                                  "dimension over both axes of")
            for d, a in c.axes:
                if lv.fanout is not None and not 0 <= a < len(lv.fanout.shape):
                    both = len(lv.fanout.shape) == 2 and a == BOTH_AXES
                    hint = (f"; to split {d} over both axes, write both_axes: true" if both else
                            " (a mapping's spatial_axis 2, both axes, is both_axes: true on a 2-D fan-out)"
                            if a == BOTH_AXES else "")
                    raise DnnmapError(f"{self._field(name, f'.axes.{d}')}: axis {a} does not exist; the fan-out of {name} has "
                                      f"{len(lv.fanout.shape)} axis(es), numbered from 0{hint}")
            for field_name in ("temporal", "spatial", "tile"):
                for d, f in getattr(c, field_name):
                    if f < 1:
                        raise DnnmapError(f"{self._field(name, f'.{field_name}.{d}')}: factor {f} must be at least 1")
            if c.keep is not None and name == names[-1] and set(c.keep) != set(ALL_ROLES):
                raise DnnmapError(f"{self._field(name, '.keep')}: the backing store ({name}) keeps every tensor")
            if c.tile and name == names[-1]:
                raise DnnmapError(f"{self._field(name, '.tile')}: the backing store holds the whole layer; fix a tile below it")
            if c.order is not None and len(set(c.order)) != len(c.order):
                raise DnnmapError(f"{self._field(name, '.order')}: a dimension appears twice in {list(c.order)}")
            unknown = sorted(c.dims() - known_dims) if ops else []
            if unknown:
                raise DnnmapError(f"{self._field(name)}: dimension(s) {', '.join(unknown)} appear in no selected layer "
                                  f"(dimensions: {', '.join(sorted(known_dims))})")


# ---- the YAML form ------------------------------------------------------------------
class _LevelFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    temporal: dict[str, int] = Field(default_factory=dict, description="dimension -> fixed temporal factor")
    spatial: dict[str, int] = Field(default_factory=dict, description="dimension -> fixed spatial factor")
    tile: dict[str, int] = Field(default_factory=dict, description="dimension -> extent the level holds")
    spatial_dims: tuple[str, ...] | None = Field(None, description="only these may be split across the "
                                                    "level's fan-out")
    axes: dict[str, int] = Field(default_factory=dict, description="dimension -> the fan-out axis it uses")
    order: tuple[str, ...] | None = Field(None, description="relative loop order, outermost first")
    keep: tuple[Role, ...] | None = Field(None, description="tensor roles the level stores")
    both_axes: bool = Field(False, description="a dimension may split over both axes of the 2-D fan-out")


class _ConstraintsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str = ""
    levels: dict[str, _LevelFile] = Field(default_factory=dict)
    placement: bool = Field(False, description="also enumerate per-tensor placements (loops_above)")


def _pairs(d: dict[str, int]) -> Pairs:
    return tuple(d.items())


def load_constraints(path: str | os.PathLike[str]) -> Constraints:
    """Constraints from a YAML (or JSON) file; an InputFileError naming the file and field otherwise."""
    data = load_data(path, "constraints file")
    parsed = validate_strict(_ConstraintsFile, as_tuples(data), path, "constraints file")
    assert isinstance(parsed, _ConstraintsFile)
    levels = tuple((name, LevelConstraints(_pairs(c.temporal), _pairs(c.spatial), _pairs(c.tile), c.spatial_dims,
                                           _pairs(c.axes), c.order, c.keep, c.both_axes)) for name, c in parsed.levels.items())
    return Constraints(levels, name=parsed.name, source=str(path), placement=parsed.placement)
