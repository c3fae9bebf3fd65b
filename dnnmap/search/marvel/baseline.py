"""Marvel's baselines at full strength: each dataflow's fixed schedule on its own best level-3 tile.

A baseline (``dataflows.Dataflow`` with ``fixes_schedule``) fixes its parallel loops, its level-2 order
and its PE share; it must not inherit Marvel's level-3 tile, which was chosen for Marvel's flexible
on-chip step (on L8, platform 1, that tile has 6 output rows, so an output-row-parallel dataflow
uses 18 of 168 PEs). Each baseline therefore chooses its own level-3 tile under the same off-chip model:

* the candidate tiles are those of the off-chip step (``offchip.enumerate_tiles``, the same DB
  settings and the same double-buffered L2 constraint), reduced to the *maximal* ones (no loop can
  grow to its next candidate size and still fit; the off-chip footprint grows with every loop), plus
  the off-chip step's own optimum;
* each tile takes the DB model's best layout for it (ties: the first in ``LayoutSpace.choices``) and
  the DB model's derived DRAM order (``order.level3_order``), as Marvel's own tile does;
* the dataflow's on-chip space on every candidate tile is walked exhaustively by the same walk and
  the same switches as Marvel's (``onchip.OnchipWalk``); the best mapping per objective wins.

The candidate set contains Marvel's tile, so a baseline is never worse than its fixed schedule on
that tile (tested).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.marvel.dataflows import Dataflow
from dnnmap.search.marvel.db_model import db_tables
from dnnmap.search.marvel.offchip import (
    OffchipResult,
    enumerate_tiles,
    fits_l2,
    offchip_search,
    tile_candidates,
)
from dnnmap.search.marvel.onchip import (
    MarvelOptions,
    OnchipResult,
    OnchipSpace,
    OnchipWalk,
)
from dnnmap.search.marvel.order import dmc_gradient, level3_order
from dnnmap.search.marvel.view import layout_space
from dnnmap.workload.ir import Operator


def maximal(tiles: np.ndarray, candidates: list[np.ndarray]) -> np.ndarray:
    """(N,) True for the rows of the feasible ``tiles`` that no loop can grow to its next candidate size
    and stay feasible (feasibility is monotone: a larger tile has a larger footprint)."""
    index = np.stack([np.searchsorted(c, tiles[:, k]) for k, c in enumerate(candidates)], axis=1)
    feasible = {tuple(r) for r in index.tolist()}
    out = np.ones(len(tiles), dtype=bool)
    for k, c in enumerate(candidates):
        grown = index.copy()
        grown[:, k] += 1
        out &= ~np.array([grown[i, k] < len(c) and tuple(grown[i]) in feasible for i in range(len(tiles))])
    return out


def candidate_offchip(op: Operator, arch: ArchSpec, options: MarvelOptions) -> list[OffchipResult]:
    """The off-chip results a baseline chooses from: the off-chip step's optimum first, then every other
    maximal feasible level-3 tile with its DB-best layout and derived DRAM order."""
    settings = options.db_settings()
    best = offchip_search(op, arch, settings)
    space = layout_space(op)
    tiles = enumerate_tiles(op, settings)
    tables = db_tables(op, arch, space, tiles, settings)
    ok = fits_l2(op, arch, tables, space, settings)
    tiles, num = tiles[ok], tables.numerators(space)[ok]
    keep = maximal(tiles, tile_candidates(op, settings))
    out = [best]
    for t in np.nonzero(keep)[0]:
        tile = tiles[t]
        if tuple(int(x) for x in tile) == best.tile:
            continue
        li = int(np.argmin(num[t]))
        choice = space.choices[li]
        grad = dmc_gradient(op, arch, space, choice, tile, settings)
        out.append(OffchipResult(op, space, settings, tuple(int(x) for x in tile), choice, int(num[t, li]),
                                 level3_order(op, tile, grad), tuple(float(g) for g in grad), 0, len(tiles),
                                 best.layout_best))
    return out


def baseline_search_objectives(op: Operator, arch: ArchSpec, dataflow: Dataflow, objectives: tuple[str, ...],
                               options: MarvelOptions | None = None,
                               ) -> dict[str, tuple[OnchipResult, OffchipResult]]:
    """Per objective the baseline's best mapping over its candidate level-3 tiles and the off-chip result
    (tile, layout, DRAM order) it was found on."""
    options = replace(options or MarvelOptions(), parallel=dataflow, symmetry=False)
    offs = candidate_offchip(op, arch, options)
    walk = OnchipWalk(op, arch, objectives, options)
    for off in offs:
        walk.add(OnchipSpace(op, arch, off, options))
    found = walk.results(f"of any of {len(offs)} level-3 tiles ")
    return {o: (r, offs[walk.source(o)]) for o, r in found.items()}


