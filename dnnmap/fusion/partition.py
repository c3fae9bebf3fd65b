"""Hardware shares of fused layers (HW-Flow-Fusion Sec. 4.3), each an ordinary :class:`ArchSpec`.

A fused layer is mapped by the core mappers on the share of the accelerator it gets, so the core
cost model prices it; nothing here estimates cost.

- **Temporal fusion** (Sec. 4.3.2): every layer uses the whole PE array; each section of the
  per-PE register file (weights, inputs, partial sums) is split into N equal parts (floor).
- **Spatial fusion** (Sec. 4.3.1): every layer gets its own sub-array. Sub-array sides are
  divisors of the array's sides no smaller than a quarter of them (our reading of "even
  divisors", G14); sub-arrays must pack into the array without overlap, checked by guillotine
  cuts (a sub-case of rectangle packing [22] that suffices for these divisor shapes); a
  sub-array with fewer rows than a layer's kernel rows is dropped (the RS prune; we put filter
  rows along PE_y as Eyeriss does, G14).
- In both, the on-chip buffer level offers the layer what the other fused layers do not
  reserve (their Eq. 5 + Eq. 8 shares), rounded down to a power of two words (a search
  resolution that lets identical layers share one search).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec, Level
from dnnmap.fusion.geometry import FusionError

Shape = tuple[int, int]  # (PE_x, PE_y)


@dataclass(frozen=True)
class ArchLayout:
    """Where the per-PE register file, the PE array and the on-chip buffer sit in an ArchSpec."""

    rf: int
    array: int
    buffer: int

    @staticmethod
    def of(arch: ArchSpec) -> "ArchLayout":
        levels = arch.levels
        arrays = [i for i, lv in enumerate(levels) if lv.fanout is not None and len(lv.fanout.shape) == 2]
        if len(levels) < 3 or not arrays or levels[0].fanout is not None:
            raise FusionError(f"architecture {arch.name!r}: fusion needs a per-PE register file (level 0), "
                              "a 2-D PE array fan-out and an on-chip buffer below DRAM (HW-Flow-Fusion Fig. 1)")
        return ArchLayout(0, arrays[0], len(levels) - 2)


def array_shape(arch: ArchSpec) -> Shape:
    fanout = arch.levels[ArchLayout.of(arch).array].fanout
    assert fanout is not None
    return (fanout.shape[0], fanout.shape[1])


def buffer_words(arch: ArchSpec) -> float:
    """Capacity of the on-chip buffer in words (``math.inf`` when unbounded)."""
    level = arch.levels[ArchLayout.of(arch).buffer]
    if level.capacity is None:
        return math.inf
    cap = sum(level.capacity.values()) if isinstance(level.capacity, dict) else level.capacity
    return cap / arch.capacity_units_of(level, "input")


def _with_level(arch: ArchSpec, index: int, level: Level, suffix: str) -> ArchSpec:
    levels = tuple(level if i == index else lv for i, lv in enumerate(arch.levels))
    return arch.model_copy(update={"levels": levels, "name": f"{arch.name}{suffix}"})


def granted_buffer(words: float) -> int:
    """Buffer words granted to one layer: rounded down to a power of two (at least 1)."""
    return 1 << max(int(math.floor(math.log2(max(words, 1)))), 0)


def with_buffer(arch: ArchSpec, words: int) -> ArchSpec:
    """``arch`` with an on-chip buffer of ``words`` words (in its capacity unit: bits count each word's bits)."""
    index = ArchLayout.of(arch).buffer
    level = arch.levels[index]
    capacity = words * arch.capacity_units_of(level, "input")
    return _with_level(arch, index, level.model_copy(update={"capacity": capacity}), f"[buf={words}]")


def temporal_share(arch: ArchSpec, n: int) -> ArchSpec:
    """Sec. 4.3.2: each register-file section split into ``n`` parts."""
    rf = arch.levels[0]
    if rf.capacity is None:
        raise FusionError(f"architecture {arch.name!r}: temporal fusion needs a bounded register file")
    cap = ({r: c // n for r, c in rf.capacity.items()} if isinstance(rf.capacity, dict) else rf.capacity // n)
    return _with_level(arch, 0, rf.model_copy(update={"capacity": cap}), f"[rf/{n}]")


def spatial_share(arch: ArchSpec, shape: Shape) -> ArchSpec:
    """Sec. 4.3.1: the PE array replaced by a ``shape`` sub-array."""
    index = ArchLayout.of(arch).array
    level = arch.levels[index]
    assert level.fanout is not None
    fanout = level.fanout.model_copy(update={"shape": tuple(shape)})
    return _with_level(arch, index, level.model_copy(update={"fanout": fanout}), f"[{shape[0]}x{shape[1]}]")


def subarray_sides(size: int) -> list[int]:
    """Divisors of ``size`` of at least a quarter of it."""
    return [d for d in range(max(1, size // 4), size + 1) if size % d == 0]


def packs(shapes: tuple[Shape, ...], width: int, height: int) -> bool:
    """Whether the rectangles fit in ``width x height`` by recursive guillotine cuts."""
    if len(shapes) == 1:
        return shapes[0][0] <= width and shapes[0][1] <= height
    if sum(x * y for x, y in shapes) > width * height:
        return False
    rest = range(1, len(shapes))
    for k in range(1, len(shapes)):
        for left in itertools.combinations(rest, k - 1):
            a = (shapes[0], *(shapes[i] for i in left))
            b = tuple(shapes[i] for i in rest if i not in left)
            for wa in sorted({s[0] for s in a}):
                if packs(a, wa, height) and packs(b, width - wa, height):
                    return True
            for ha in sorted({s[1] for s in a}):
                if packs(a, width, ha) and packs(b, width, height - ha):
                    return True
    return False


def spatial_partitions(arch: ArchSpec, kernel_rows: tuple[int, ...]) -> list[tuple[Shape, ...]]:
    """Every assignment of one sub-array per fused layer that packs and passes the RS prune."""
    width, height = array_shape(arch)
    shapes = [(x, y) for x in subarray_sides(width) for y in subarray_sides(height)]
    per_layer = [[s for s in shapes if s[1] >= k] for k in kernel_rows]
    return [combo for combo in itertools.product(*per_layer) if packs(combo, width, height)]
