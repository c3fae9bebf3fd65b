"""Edge tiles: a dimension of extent E cut in tiles of t is floor(E/t) full tiles and one remainder.

TSO's equations multiply ceil(E/t) by the cost of a full tile (``ceil``); ``exact`` prices the last
tile at its true size (docs/tso.md, ambiguity 4). Both return two classes, (count, size), that the
cost formulas sum over; ``combine`` forms the classes of a tile cut along several dimensions.
"""

from __future__ import annotations

import itertools

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


def combine(*dims: Classes) -> list[tuple[np.ndarray, tuple[np.ndarray, ...]]]:
    """Tiles of a product of dimensions: (count, per-dimension sizes) for every combination of classes."""
    out = []
    for combo in itertools.product(*dims):
        count = np.ones((), dtype=np.int64)
        for c, _ in combo:
            count = count * c
        out.append((count, tuple(s for _, s in combo)))
    return out
