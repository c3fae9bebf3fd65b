"""Edge tiles: a dimension of extent E cut in tiles of t is floor(E/t) full tiles and one remainder.

TSO's equations multiply ceil(E/t) by the cost of a full tile (``ceil``); ``exact`` prices the last
tile at its true size (docs/tso.md, ambiguity 4). Both give classes, (count, size), that the cost
formulas sum over. The sums over the classes of a tile cut along several dimensions factorize per
dimension (:func:`summed_bursts`), so no combination is formed, and every per-dimension sum is
computed once per distinct tile size and gathered for the candidates (:class:`Axis`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Classes = tuple[tuple[np.ndarray, np.ndarray], ...]  # ((count, size) per class)


def tile_classes(extent: np.ndarray | int, tile: np.ndarray, exact: bool) -> Classes:
    """The tiles of one dimension as classes of equal size: full tiles and the remainder."""
    extent = np.asarray(extent, dtype=np.int64)
    tile = np.minimum(np.asarray(tile, dtype=np.int64), extent)
    if not exact:
        return ((-(-extent // tile), tile),)
    rem = extent % tile
    return ((extent // tile, tile), ((rem > 0).astype(np.int64), np.where(rem > 0, rem, tile)))


def total(classes: Classes) -> np.ndarray:
    """Number of tiles: the sum of the classes' counts."""
    return sum(c for c, _ in classes)


def covered(classes: Classes) -> np.ndarray:
    """Sum of count x size over the classes (the extent itself with exact edges)."""
    return sum(c * s for c, s in classes)


@dataclass(frozen=True)
class Axis:
    """The tiles of one dimension for every candidate: classes of the distinct tile sizes 1..extent and,
    per candidate, the index of its tile (``None``: one tile size for all candidates)."""

    classes: Classes
    index: np.ndarray | None = None

    @classmethod
    def cut(cls, extent: int, tiles: np.ndarray, exact: bool) -> "Axis":
        """Extent ``extent`` cut in tiles ``tiles`` (one per candidate, >= 1)."""
        idx = np.minimum(np.asarray(tiles, dtype=np.int64), extent) - 1
        return cls(tile_classes(extent, np.arange(1, extent + 1), exact), idx)

    @classmethod
    def whole(cls, size: np.ndarray | int) -> "Axis":
        """A dimension every tile covers whole (one tile of ``size``, per candidate or for all)."""
        return cls(((np.ones((), dtype=np.int64), np.asarray(size, dtype=np.int64)),))

    def _gather(self, values: np.ndarray) -> np.ndarray:
        return values if self.index is None else values[self.index]

    def sized(self, size: Callable[[np.ndarray], np.ndarray]) -> "Axis":
        """The same tiles with their sizes mapped (OFM rows -> IFM rows, TSO Eq. 1)."""
        return Axis(tuple((c, size(e)) for c, e in self.classes), self.index)

    @functools.cached_property
    def count(self) -> np.ndarray:
        """Tiles per candidate (ceil(E/t))."""
        return self._gather(total(self.classes))

    @functools.cached_property
    def cover(self) -> np.ndarray:
        """Sum of count x size per candidate."""
        return self._gather(covered(self.classes))

    @functools.cached_property
    def tile(self) -> np.ndarray:
        """The full tile's size per candidate."""
        return self._gather(self.classes[0][1])

    def summed(self, cost: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Sum of count x cost(size) per candidate."""
        return self._gather(sum(c * cost(e) for c, e in self.classes))


def summed_bursts(axes: list[Axis], full: list[int], elem_bytes: float, burst_bytes: int) -> np.ndarray:
    """Sum, over every combination of the axes' classes, of count x CalBurstCount(box) (TSO Alg. 4,
    :func:`dnnmap.cost.transfer.box_bursts`), without forming the combinations.

    A box of a row-major tensor (axes outermost first) whose innermost partly covered axis is k is
    prod_{x<k} e_x runs of ceil(e_k prod_{x>k} f_x type / BURST) bytes' bursts (the axes inside k are
    whole). Whether an axis is whole is a property of the tile, not of its class (a tile as large as
    the tensor's axis leaves no remainder), so the sum over combinations factorizes per axis:
    prod_{x<k} sum(c e) x sum(c_k ceil(e_k inner_k type / BURST)) x prod_{x>k} sum(c)."""
    X = len(axes)
    inner = np.cumprod([1, *reversed(full[1:])])[::-1]  # prod_{x>k} f_x, per k
    lead = [np.ones((), dtype=np.int64)]  # prod_{x<k} sum(c e)
    for x in range(X - 1):
        lead.append(lead[-1] * axes[x].cover)
    tiles = functools.reduce(np.multiply, (a.count for a in axes))
    out = tiles * np.ceil(int(np.prod(full)) * elem_bytes / burst_bytes)  # every axis whole: one run
    trail = np.ones((), dtype=np.int64)  # prod_{x>k} sum(c)
    done = np.zeros((), dtype=bool)  # an axis inside k is partly covered
    for k in range(X - 1, -1, -1):
        partial = axes[k].tile < full[k]
        if np.any(partial & ~done):
            size = int(inner[k])
            run = axes[k].summed(lambda e: np.ceil(e * size * elem_bytes / burst_bytes))
            out = np.where(partial & ~done, lead[k] * run * trail, out)
        done = done | partial
        if np.all(done):
            break
        trail = trail * axes[k].count
    return out
