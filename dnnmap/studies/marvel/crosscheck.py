"""The off-chip result as a core mapping, and the DB model beside the core's exact DRAM bursts.

Both count DRAM blocks of the same level-3 tiles and layouts, differently:

* DB (Marvel Sec. 3.1) prices every tile alone: each tensor's distinct blocks, outputs twice,
  once per tile (``n_tiles x sum(DB)``), rows along the innermost axis never merged.
* The core (docs/cost-model.md section 4, "DRAM bursts") walks the level-3 loop nest: a tensor
  is fetched only when its tile changes (a tensor the innermost DRAM loop does not index stays
  in L2), a sliding window fetches only its new part, an output is written back once per visit
  and reloaded only when it holds a partial sum, and rows that are contiguous in memory (inner
  axes whole) join into one run.

**Bounds** (``tests/marvel/test_crosscheck.py``): for unit-coefficient windows (stride and
dilation 1, or DB's ``stride="ignore"`` on such a layer), divisor tiles, outputs counted twice
and the core layout's innermost axis the DB one, ``compulsory <= core <= DB``: each core
transfer is a subset of one tile whose rows along the innermost non-whole axis are single
intervals (a stride-1 move leaves an interval), so it costs at most the tile's DB blocks
(``ceil(m s / B) <= m ceil(s / B)`` when whole inner axes join rows); inputs and weights move
at most once per tile, outputs at most one write-back and one reload per tile; and every word
crosses at least once (``sum ceil(run / B) >= bytes / B``). With stride > 1 a core transfer of
a strided window is many one-word runs and no such bound holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.search.marvel.db_model import block_bytes, db_tables
from dnnmap.search.marvel.offchip import OffchipResult
from dnnmap.studies.marvel.roofline import touched_words


def dram_trips(result: OffchipResult) -> dict[str, int]:
    """Level-3 (DRAM) trip count of each dimension."""
    return {d: math.ceil(b / t) for (d, b), t in zip(result.op.dims, result.tile)}


def offchip_mapping(result: OffchipResult, arch: ArchSpec) -> Mapping:
    """The off-chip mapping alone as a core mapping: the level-3 tile held by the level below DRAM
    (one instance, no spatial split), the DRAM loops in the derived order, the chosen layouts."""
    op = result.op
    trips = dram_trips(result)
    levels = [LevelMapping() for _ in arch.levels[:-2]]
    levels.append(LevelMapping(temporal=tuple((d, t) for d, t in zip(op.dim_names, result.tile) if t > 1)))
    levels.append(LevelMapping(temporal=tuple((d, n) for d, n in trips.items() if n > 1), order=result.order))
    return Mapping(tuple(levels), result.space.core_layouts(result.choice), op.name, arch.name)


def price_mapping(mapping: Mapping, result: OffchipResult, arch: ArchSpec) -> CostBatch:
    return CostModel(result.op, arch).evaluate(MappingBatch.from_mappings(result.op, arch, [mapping]))


@dataclass(frozen=True)
class CrossCheck:
    """DB vs core DRAM counts of one off-chip result."""

    layer: str
    db_blocks: int  # n_tiles x weighted DB blocks of a tile
    core_bursts: int
    compulsory: int  # sum over tensors of ceil(touched bytes / block): every touched word crosses once
    db_words: dict[str, int]  # per tensor: n_tiles x tile words (outputs x output_weight)
    core_words: dict[str, int]  # per tensor: words the core moves (outputs: write-backs + reloads)

    @property
    def ratio(self) -> float:
        """DB / core: how many times the DB model over-counts the core's bursts."""
        return self.db_blocks / self.core_bursts if self.core_bursts else math.inf


def crosscheck(result: OffchipResult, arch: ArchSpec) -> CrossCheck:
    """Price ``result``'s tile, order and layout on the core model and set its DRAM counts beside DB's."""
    op, s = result.op, result.settings
    n_tiles = math.prod(dram_trips(result).values())
    cost = price_mapping(offchip_mapping(result, arch), result, arch)
    row = np.array([result.tile], dtype=np.int64)
    tables = db_tables(op, arch, result.space, row, s)
    block = block_bytes(arch, s)
    top = len(arch.levels) - 1
    db_words, core_words, compulsory = {}, {}, 0
    for tl, fp, w in zip(result.space.tensors, tables.footprint, tables.weights):
        t = op.tensor(tl.tensor)
        j = op.tensors.index(t)
        db_words[t.name] = int(fp[0]) * w * n_tiles
        reads = cost.counts["reads"][0, top, j]
        core_words[t.name] = int(reads + (cost.counts["updates"][0, top, j] if t.role == "output" else 0))
        compulsory += math.ceil(touched_words(op, t.name) * arch.bytes_of(t.role) / block)
    return CrossCheck(op.name, result.blocks * n_tiles, int(cost.dram_bursts[0]), compulsory, db_words, core_words)
