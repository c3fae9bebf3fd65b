"""Marvel's on-chip step (Marvel Sec. 3.2, Algorithm 1) as a constraint on the core map space plus an exhaustive walk.

The off-chip result fixes, per dimension, the DRAM trip count (bound / level-3 tile), the DRAM
loop order and the layouts. What remains is the declared space of the levels below DRAM
(docs/search.md): each level-3 tile factored over the on-chip temporal and spatial slots
(divisors only), and the orders of the levels between L1 and DRAM. Marvel's names: level-1 tile
= level 0's factors (one PE's L1), level-2 tile = the spatial factors (parallelism), level-2
order = the order of the level above L1. Level 0's order changes no count (docs/search.md).

Pruning switches (Marvel Sec. 3.2, Sec. 4 methodology), each a filter on that space:

* ``unroll_rs``: R and S whole in one PE (level 0 holds the full filter window). Lossy.
* ``batch_one``: the batch loop stays off-chip (its level-3 tile is 1). Lossy for N > 1.
* ``max_parallel_loops``: at most this many dimensions split spatially. Lossy.
* ``min_utilization`` (p): used PEs / PEs >= p; relaxed to the best achievable when nothing
  reaches it (a layer with fewer iterations than 0.1 x PEs). Lossy.
* ``divisor_only``: tiles divide the bounds (no prologue/epilogue); the core's declared space is
  divisor-only, so only True is supported.
* ``l1_buffers``: every level below L2 holds its tile double-buffered (capacity / 2). Lossy.
* buffer-size pruning: a lower bound of each tile's words (the largest term of every axis) is
  checked before pricing; the core model checks the exact tiles.

Every candidate is priced by ``CostModel`` (no second cost model). When the constrained space
still has more than ``max_candidates`` factor choices, a uniform random subset (``seed``) is
priced (reported as ``sampled``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.search.marvel.db_model import DbSettings
from dnnmap.search.marvel.offchip import OffchipResult
from dnnmap.search.mappers import _decode
from dnnmap.search.space import MapSpace, level_orders, ordered_factorizations
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class MarvelOptions:
    """Marvel's pruning switches (module docstring) and the off-chip step's DB settings."""

    unroll_rs: bool = True
    batch_one: bool = True
    max_parallel_loops: int = 2
    min_utilization: float = 0.1
    divisor_only: bool = True
    l1_buffers: int = 2
    max_candidates: int = 200_000
    seed: int = 0
    db: DbSettings = field(default_factory=DbSettings)

    def __post_init__(self) -> None:
        if not self.divisor_only:
            raise DnnmapError("Marvel option divisor_only=False (prologue/epilogue tiles) is not supported: the "
                              "core map space holds exact divisors only (docs/marvel.md)")
        if self.max_parallel_loops < 1:
            raise DnnmapError(f"max_parallel_loops must be >= 1, got {self.max_parallel_loops}")
        if not 0 <= self.min_utilization <= 1:
            raise DnnmapError(f"min_utilization must be in [0, 1], got {self.min_utilization}")
        if self.l1_buffers < 1 or self.max_candidates < 1:
            raise DnnmapError("l1_buffers and max_candidates must be >= 1")

    def db_settings(self) -> DbSettings:
        """The DB settings with this object's R, S and batch switches."""
        full = tuple(sorted(set(self.db.full_dims) | {"R", "S"})) if self.unroll_rs else self.db.full_dims
        return replace(self.db, full_dims=full, batch_one=self.batch_one)


@dataclass(frozen=True)
class OnchipResult:
    batch: MappingBatch  # the best mapping (one row)
    cost: CostBatch
    evaluated: int  # mappings priced
    valid: int  # of which every tile fits (L1 double-buffered)
    factor_choices: int  # factor choices left by the switches (before orders and sampling)
    sampled: bool
    utilization_relaxed: bool


def buffered_view(arch: ArchSpec, buffers: int) -> ArchSpec:
    """``arch`` with every level below the one under DRAM holding its tiles ``buffers``-fold (Marvel's
    double-buffered L1): the core then checks each such tile against capacity / buffers."""
    levels = tuple(lv.model_copy(update={"buffers": max(lv.buffers, buffers)}) if i < len(arch.levels) - 2 else lv
                   for i, lv in enumerate(arch.levels))
    return arch.model_copy(update={"levels": levels})


class OnchipSpace:
    """The declared space of ``op`` on ``arch`` with the DRAM factors, order and layouts of ``off`` fixed."""

    def __init__(self, op: Operator, arch: ArchSpec, off: OffchipResult, options: MarvelOptions) -> None:
        self.op, self.arch, self.off, self.options = op, arch, off, options
        self.space = MapSpace(op, arch)
        self.L = len(arch.levels)
        self.slots = self.space.spatial_slots
        if any(s.level == self.L - 1 and s.size > 1 for s in self.slots):
            raise DnnmapError(f"architecture {arch.name!r}: the Marvel mapper needs one shared buffer under DRAM; "
                              "DRAM has a fan-out")
        self.tables = [self._table(d, t) for d, t in zip(op.dim_names, off.tile)]

    def _table(self, dim: str, tile: int) -> np.ndarray:
        """(rows, slots) factorizations of the level-3 tile of ``dim`` in MapSpace's slot layout."""
        L = self.L
        onchip = [i for i in range(L - 1)] + [L + k for k, s in enumerate(self.slots) if s.level < L - 1]
        facs = ordered_factorizations(tile, len(onchip))
        full = np.ones((len(facs), self.space.n_slots), dtype=np.int64)
        full[:, onchip] = facs
        full[:, L - 1] = math.ceil(self.op.bound(dim) / tile)
        keep = np.ones(len(full), dtype=bool)
        for k, s in enumerate(self.slots):
            keep &= full[:, L + k] <= s.size
        if self.options.unroll_rs and dim in ("R", "S"):
            keep &= (np.delete(full, [0, L - 1], axis=1) == 1).all(axis=1)
        return full[keep]

    @property
    def size(self) -> int:
        return math.prod(len(t) for t in self.tables)

    def decode(self, idx: np.ndarray) -> np.ndarray:
        """Mixed-radix indices -> (n, D, slots) factors (the exhaustive mapper's decoding)."""
        return _decode(idx, self.tables)

    def prune(self, fac: np.ndarray, min_util: float) -> np.ndarray:
        """Rows passing the fan-out, parallel-loop, utilization and capacity-lower-bound switches."""
        L = self.L
        ok = self.space.spatial_legal(fac)
        spatial = fac[:, :, L:]
        ok &= ((spatial > 1).any(axis=2).sum(axis=1) <= self.options.max_parallel_loops)
        pes = math.prod(s.size for s in self.slots) or 1
        ok &= spatial.prod(axis=(1, 2)) >= min_util * pes
        return ok & self._fits_lower_bound(fac)

    def _fits_lower_bound(self, fac: np.ndarray) -> np.ndarray:
        """A tile's words are at least the product over axes of the largest term's coverage: drop the rows
        whose bound already exceeds capacity / buffers at some level below L2 (never drops a fitting tile)."""
        L, ok = self.L, np.ones(len(fac), dtype=bool)
        dims = self.op.dim_names
        cover = np.ones((len(fac), len(dims)), dtype=np.int64)
        for i in range(L - 2):
            cover *= fac[:, :, i]
            cover *= np.prod([fac[:, :, L + k] for k, s in enumerate(self.slots) if s.level == i] or [1], axis=0)
            lv = self.arch.levels[i]
            if lv.capacity is None or isinstance(lv.capacity, dict):
                continue
            words = np.zeros(len(fac))
            for t in self.op.tensors:
                if t.role not in lv.keeps:
                    continue
                unit = self.arch.bits_of(t.role) if lv.capacity_unit == "bits" else 1
                axes = [np.max([cover[:, dims.index(d)] for d in a.dims], axis=0) for a in t.axes]
                words += np.prod(axes, axis=0) * unit
            ok &= words * max(lv.buffers, self.options.l1_buffers) <= lv.capacity
        return ok

    def batches(self, fac: np.ndarray):  # noqa: ANN201 - generator of MappingBatch
        """Every row with every order of the non-trivial loops of the levels between L1 and DRAM."""
        L, D = self.L, len(self.op.dim_names)
        dram = np.array([self.op.dim_names.index(d) for d in self.off.order], dtype=np.int64)
        dram = np.concatenate([dram, [k for k in range(D) if k not in dram]])
        layouts = self.off.space.core_layouts(self.off.choice)
        nontrivial = fac[:, :, 1:L - 1] > 1
        keys = np.packbits(nontrivial.reshape(len(fac), -1), axis=1)
        _, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for g in range(inverse.max() + 1 if len(fac) else 0):
            rows = np.nonzero(inverse == g)[0]
            mask = nontrivial[rows[0]]
            per_level = [[tuple(range(D))]] + [level_orders(tuple(np.nonzero(mask[:, j])[0]), D)
                                               for j in range(L - 2)] + [[tuple(dram)]]
            combos = np.array(list(itertools.product(*per_level)), dtype=np.int64)
            f = np.repeat(fac[rows], len(combos), axis=0)
            order = np.tile(combos, (len(rows), 1, 1))
            yield replace(self.space.to_batch(f, order), layouts=layouts)


def _argbest(cost: CostBatch, objective: str) -> tuple[float, int]:
    score = cost.objective(objective)
    tie = np.where(cost.valid, cost.energy + 1e-9 * cost.cycles, np.inf)  # as the core mappers break ties
    idx = int(np.lexsort((tie, score))[0])
    return float(score[idx]), idx


def onchip_search(op: Operator, arch: ArchSpec, off: OffchipResult, objective: str = "edp",
                  options: MarvelOptions | None = None, chunk: int = 100_000) -> OnchipResult:
    """The best on-chip completion of ``off`` (Marvel Sec. 3.2) priced by the core model on ``arch``
    with the switches of ``options``; the reported costs are those of ``arch`` itself."""
    options = options or MarvelOptions()
    space = OnchipSpace(op, arch, off, options)
    model = CostModel(op, buffered_view(arch, options.l1_buffers))
    keep, relaxed = _surviving(space, options.min_utilization), False
    if len(keep) == 0:  # the bound is out of reach: keep the best achievable PE use instead
        keep, relaxed = _surviving(space, 0.0), True
        if len(keep):
            used = space.decode(keep)[:, :, space.L:].prod(axis=(1, 2))
            keep = keep[used == used.max()]
    n_choices = len(keep)
    sampled = n_choices > options.max_candidates
    if sampled:
        keep = np.sort(np.random.default_rng(options.seed).choice(keep, options.max_candidates, replace=False))
    best: tuple[float, MappingBatch | None] = (math.inf, None)
    evaluated = valid = 0
    for start in range(0, len(keep), chunk):
        for batch in space.batches(space.decode(keep[start:start + chunk])):
            cost = model.evaluate(batch, reuse_buffers=True)
            score, idx = _argbest(cost, objective)
            evaluated += len(batch)
            valid += int(cost.valid.sum())
            if score < best[0]:
                best = (score, batch.take([idx]))
    if best[1] is None:
        raise MappingError(f"layer {op.name!r}: no on-chip mapping of the level-3 tile "
                           f"{dict(zip(op.dim_names, off.tile))} fits {arch.name!r} under Marvel's switches "
                           f"(L1 buffered {options.l1_buffers}x; try unroll_rs=False)")
    return OnchipResult(best[1], CostModel(op, arch).evaluate(best[1]), evaluated, valid, n_choices, sampled, relaxed)


def _surviving(space: OnchipSpace, min_util: float, chunk: int = 1_000_000) -> np.ndarray:
    """Indices of the factor choices that pass the switches (the utilization bound ``min_util``)."""
    out = []
    for start in range(0, space.size, chunk):
        idx = np.arange(start, min(space.size, start + chunk), dtype=np.int64)
        out.append(idx[space.prune(space.decode(idx), min_util)])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
