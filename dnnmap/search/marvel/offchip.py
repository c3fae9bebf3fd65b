"""Marvel's off-chip step (Marvel Sec. 3.1): level-3 tiles x layouts by exhaustive enumeration.

Every tile (divisors of each bound, or every size) whose double-buffered footprint fits the
level below DRAM (Marvel's constraint 2) is priced by the DB model under every layout of the
layout space, all at once (one ``(tiles, layouts)`` integer array); the argmin is the
off-chip mapping, and :func:`dnnmap.search.marvel.order.level3_order` gives its loop order.

Ties are exact (DMC is a ratio of integers, compared by cross-multiplication) and frequent
(the digest finds 22 tie entries on L1). Marvel gives no tie rule; ours, in this order: the
largest tile (fewest DRAM steps), the fewest stepping DRAM loops, then enumeration order
(layouts as in ``LayoutSpace.choices``, tiles smallest first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.search.marvel.db_model import DbSettings, DbTables, db_tables
from dnnmap.search.marvel.order import dmc_gradient, level3_order
from dnnmap.search.marvel.view import LayoutSpace, layout_space
from dnnmap.workload.ir import Operator

MAX_TILES = 5_000_000


@dataclass(frozen=True)
class OffchipResult:
    """The off-chip mapping of one layer: level-3 tile, layout, loop order and their DB cost."""

    op: Operator
    space: LayoutSpace
    settings: DbSettings
    tile: tuple[int, ...]  # per op dimension
    choice: tuple[int, ...]  # layout: innermost index per tensor of ``space``
    blocks: int  # weighted DB blocks of one tile (the DMC numerator)
    order: tuple[str, ...]  # stepping DRAM loops, outermost first
    gradient: tuple[float, ...]  # dDMC/dT per dimension at the tile
    ties: int  # (tile, layout) pairs of exactly the optimal DMC
    tiles_evaluated: int  # feasible tiles priced (each under every layout)
    layout_best: np.ndarray  # (layouts, 2) per layout the least DMC as (numerator, denominator)

    @property
    def iterations(self) -> int:
        return math.prod(self.tile)

    @property
    def dmc(self) -> Fraction:
        """Memory cost per iteration (blocks per loop iteration of the tile)."""
        return Fraction(self.blocks, self.iterations)

    @property
    def layout(self) -> str:
        return self.space.label(self.choice)

    @property
    def total_blocks(self) -> float:
        """DMC x the layer's iterations: the DB blocks of the whole layer (n_tiles x blocks for divisor tiles)."""
        return float(self.dmc * self.op.iterations)

    def tile_of(self, dim: str) -> int:
        return self.tile[self.op.dim_names.index(dim)]


def tile_candidates(op: Operator, settings: DbSettings) -> list[np.ndarray]:
    """Per dimension, the level-3 tile sizes the enumeration tries (Marvel constraint 1 and the switches)."""
    out = []
    for d, b in op.dims:
        if d in settings.full_dims:
            out.append(np.array([b]))
        elif d == "N" and settings.batch_one:
            out.append(np.array([1]))
        elif settings.tiles == "all":
            out.append(np.arange(1, b + 1))
        else:
            out.append(np.array([t for t in range(1, b + 1) if b % t == 0]))
    return out


def enumerate_tiles(op: Operator, settings: DbSettings) -> np.ndarray:
    """(N, D) every combination of the per-dimension candidates; refuses more than MAX_TILES."""
    cands = tile_candidates(op, settings)
    n = math.prod(len(c) for c in cands)
    if n > MAX_TILES:
        raise DnnmapError(f"layer {op.name!r}: {n:.2e} level-3 tiles to enumerate (limit {MAX_TILES:.0e}); "
                          "use DbSettings(tiles='divisors')")
    grids = np.meshgrid(*cands, indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=1).astype(np.int64)


def fits_l2(op: Operator, arch: ArchSpec, tables: DbTables, space: LayoutSpace, settings: DbSettings) -> np.ndarray:
    """(N,) the tile's footprint times the buffering depth fits the level below DRAM (Marvel constraint 2)."""
    lv = arch.levels[-2]
    roles = {op.tensor(t.tensor).role for t in space.tensors}
    missing = roles - set(lv.keeps)
    if missing:
        raise DnnmapError(f"architecture {arch.name!r}: level {lv.name} bypasses {sorted(missing)}; Marvel's "
                          "off-chip step stages every tensor in the level below DRAM")
    if lv.capacity is None:
        return np.ones(len(tables.iterations), dtype=bool)
    used: dict[str, np.ndarray] = {}
    for t, fp in zip(space.tensors, tables.footprint):
        role = op.tensor(t.tensor).role
        key = role if isinstance(lv.capacity, dict) else ""
        unit = arch.capacity_units_of(lv, role)
        used[key] = used.get(key, 0) + fp * unit
    ok = np.ones(len(tables.iterations), dtype=bool)
    for key, words in used.items():
        ok &= words * settings.buffers <= lv.capacity_for(key or "input") * lv.buffers
    return ok


def offchip_search(op: Operator, arch: ArchSpec, settings: DbSettings | None = None,
                   space: LayoutSpace | None = None) -> OffchipResult:
    """Marvel's off-chip mapping of ``op``: the least-DMC (tile, layout), ties broken as the module says."""
    settings = settings or DbSettings()
    space = space or layout_space(op)
    tiles = enumerate_tiles(op, settings)
    tables = db_tables(op, arch, space, tiles, settings)
    ok = fits_l2(op, arch, tables, space, settings)
    if not ok.any():
        raise MappingError(f"layer {op.name!r}: no level-3 tile fits {arch.levels[-2].name} of {arch.name!r} "
                           f"with {settings.buffers}x buffering (Marvel Sec. 3.1 constraint 2)")
    tiles = tiles[ok]
    num = tables.numerators(space)[ok]  # (N, layouts)
    den = tables.iterations[ok]
    ratio = num / den[:, None]
    t_best, l_best = np.unravel_index(np.argmin(ratio), ratio.shape)
    bn, bd = int(num[t_best, l_best]), int(den[t_best])
    tie = num * bd == bn * den[:, None]  # exact equality of the two fractions
    ti, li = np.nonzero(tie)
    stepping = (np.ceil(np.array([b for _, b in op.dims]) / tiles) > 1).sum(axis=1)
    key = np.lexsort((ti, li, stepping[ti], -den[ti]))  # last key first: largest tile, fewest steps, order
    t_sel, l_sel = int(ti[key[0]]), int(li[key[0]])
    tile = tiles[t_sel]
    choice = space.choices[l_sel]
    grad = dmc_gradient(op, arch, space, choice, tile, settings)
    per_layout = np.argmin(ratio, axis=0)
    layout_best = np.stack([num[per_layout, np.arange(num.shape[1])], den[per_layout]], axis=1)
    return OffchipResult(op, space, settings, tuple(int(x) for x in tile), choice, int(num[t_sel, l_sel]),
                         level3_order(op, tile, grad), tuple(float(g) for g in grad), int(tie.sum()), len(tiles),
                         layout_best)


def tile_cost(op: Operator, arch: ArchSpec, tile: dict[str, int], layout: str, settings: DbSettings,
              space: LayoutSpace | None = None) -> tuple[Fraction, bool]:
    """The DMC of one given tile (missing dimensions: whole bound) and layout label, and whether it fits L2."""
    space = space or layout_space(op)
    unknown = set(tile) - set(op.dim_names)
    if unknown:
        raise ValueError(f"layer {op.name!r}: unknown dimensions {sorted(unknown)}")
    row = np.array([[tile.get(d, b) for d, b in op.dims]], dtype=np.int64)
    tables = db_tables(op, arch, space, row, settings)
    choice = space.choices.index(space.index_of(layout))
    return (Fraction(int(tables.numerators(space)[0, choice]), int(tables.iterations[0])),
            bool(fits_l2(op, arch, tables, space, settings)[0]))
