"""Marvel's on-chip step (Marvel Sec. 3.2, Algorithm 1) as a constraint on the core map space plus an exhaustive walk.

The off-chip result fixes, per dimension, the DRAM trip count (bound / level-3 tile), the DRAM
loop order and the layouts. What remains is the declared space of the levels below DRAM
(docs/search.md): each level-3 tile factored over the on-chip temporal and spatial slots
(divisors only), and the orders of the levels between L1 and DRAM. Marvel's names: level-1 tile
= level 0's factors (one PE's L1), level-2 tile = the spatial factors (parallelism), level-2
order = the order of the level above L1. Level 0's order changes no count (docs/search.md).

Pruning switches (Marvel Sec. 3.2, Sec. 4 methodology), each a filter on that space:

* ``unroll_rs``: R and S unrolled: no temporal loop over them between L1 and DRAM (level 0 holds
  the filter window, or the part of it a PE gets when a dataflow splits R or S across PEs, as
  the RS-like baseline does). Lossy.
* ``batch_one``: the batch loop stays off-chip (its level-3 tile is 1). Lossy for N > 1.
* ``max_parallel_loops``: at most this many dimensions split spatially. Lossy.
* ``min_utilization`` (p): used PEs / PEs >= p; relaxed to the best achievable when nothing
  reaches it (a layer with fewer iterations than 0.1 x PEs). Lossy.
* ``divisor_only``: level-1 and level-2 tiles divide the level-3 tile (no prologue/epilogue).
  Lossy. Off, each level-3 tile is split by the core's imperfect-factorization chains
  (``space.ceil_factorizations``, docs/search.md) with at most ``prologue_padding`` padding, the
  edge (prologue/epilogue) tiles clipped by the core model.
* ``symmetry``: when the operator, the level-3 tile, the DRAM loops and the dataflow are
  unchanged by exchanging width and height (P <-> Q, R <-> S), a factor choice and its mirror
  cost the same: only the lexicographically smaller of the two is priced. Lossless.
* ``parallel``: a dataflow (``dataflows.Dataflow``): only its loops may be split across PEs
  (Marvel's RS-, DLA- and ShiDianNao-like baselines, ``Dataflow.constraints``; R and S may then be
  spatial even with ``unroll_rs``, which keeps them off the temporal levels above L1).
* ``l1_buffers``: every level below L2 holds its tile double-buffered (capacity / 2). Lossy.
* buffer-size pruning: a lower bound of each tile's words (the largest term of every axis) is
  checked before pricing; the core model checks the exact tiles.

The level-3 tile, the DRAM order and layouts, ``unroll_rs``, ``parallel`` and the padding are constraints on
the core map space (``onchip_constraints``, ``search/constraints.py``): its factor tables and order expansion
are the exhaustive mapper's. The other switches prune the walk. Every candidate is priced by ``CostModel`` (no second cost model). When the constrained space
still has more than ``max_candidates`` factor choices, a uniform random subset (``seed``) is
priced (reported as ``sampled``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.arch.variants import buffered_view
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.search.marvel.dataflows import Dataflow
from dnnmap.search.marvel.db_model import DbSettings
from dnnmap.search.marvel.offchip import OffchipResult
from dnnmap.search.constraints import Constraints
from dnnmap.search.space import MapSpace, decode, touched_lower
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class MarvelOptions:
    """Marvel's pruning switches (module docstring) and the off-chip step's DB settings."""

    unroll_rs: bool = True
    batch_one: bool = True
    max_parallel_loops: int = 2
    min_utilization: float = 0.1
    divisor_only: bool = True
    prologue_padding: float = 0.15  # with divisor_only off: padded on-chip extent <= (1 + this) x level-3 tile
    symmetry: bool = True
    parallel: Dataflow | None = None  # None: any loop may be split across PEs
    published_pe_tile: bool = False  # with a baseline ``parallel``: its published PE tile too (the fixed schedule)
    l1_buffers: int = 2
    max_candidates: int = 200_000
    seed: int = 0
    db: DbSettings = field(default_factory=DbSettings)

    def __post_init__(self) -> None:
        if not 0 < self.prologue_padding <= 1:
            raise DnnmapError(f"prologue_padding must be in (0, 1], got {self.prologue_padding}")
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


def onchip_constraints(op: Operator, arch: ArchSpec, off: OffchipResult, options: MarvelOptions) -> Constraints:
    """Marvel's on-chip step as constraints on the core map space: the dataflow's parallel loops (any
    loop without one), the level-3 tile held under DRAM, R and S off the temporal levels between L1 and
    DRAM (``unroll_rs``), the DRAM loop order and the layouts of ``off``, the padding of the prologue and
    epilogue tiles (``divisor_only`` off)."""
    L, names = len(arch.levels), [lv.name for lv in arch.levels]
    if options.parallel is None:
        base = Constraints()
    else:
        pe = options.parallel.published_pe_tile(op, dict(zip(op.dim_names, off.tile))) if options.published_pe_tile else None
        base = options.parallel.constraints(op, arch, pe)
    dram = [d for d in off.order] + [d for d in op.dim_names if d not in off.order]
    out = base.with_level(names[L - 2], tile=tuple(zip(op.dim_names, (int(t) for t in off.tile))))
    out = out.with_level(names[L - 1], order=tuple(dram))
    if options.unroll_rs:
        for i in range(1, L - 1):
            out = out.with_level(names[i], temporal=tuple((d, 1) for d in ("R", "S") if d in op.dim_names))
    return replace(out, waste=None if options.divisor_only else options.prologue_padding,
                   layouts=off.space.core_layouts(off.choice))


class OnchipSpace:
    """The declared space of ``op`` on ``arch`` under :func:`onchip_constraints` and Marvel's pruning switches."""

    def __init__(self, op: Operator, arch: ArchSpec, off: OffchipResult, options: MarvelOptions) -> None:
        self.op, self.arch, self.off, self.options = op, arch, off, options
        self.L = len(arch.levels)
        slots = MapSpace(op, arch).spatial_slots
        if any(s.level == self.L - 1 and s.size > 1 for s in slots):
            raise DnnmapError(f"architecture {arch.name!r}: the Marvel mapper needs one shared buffer under DRAM; "
                              "DRAM has a fan-out")
        self.space = MapSpace(op, arch, onchip_constraints(op, arch, off, options))
        self.slots = slots
        self.parallel = None if options.parallel is None else options.parallel.ir_dims(op)
        self.tables = self.space.tables()
        self.mirror = mirror_permutation(op, off, self.parallel) if options.symmetry else None

    @property
    def size(self) -> int:
        return math.prod(len(t) for t in self.tables)

    def decode(self, idx: np.ndarray) -> np.ndarray:
        """Mixed-radix indices -> (n, D, slots) factors (the exhaustive mapper's decoding)."""
        return decode(idx, self.tables)

    def prune(self, fac: np.ndarray, min_util: float) -> np.ndarray:
        """Rows passing the fan-out, parallel-loop, utilization and capacity-lower-bound switches."""
        L = self.L
        ok = self.space.spatial_legal(fac)
        spatial = fac[:, :, L:]
        ok &= ((spatial > 1).any(axis=2).sum(axis=1) <= self.options.max_parallel_loops)
        pes = math.prod(s.size for s in self.slots) or 1
        ok &= spatial.prod(axis=(1, 2)) >= min_util * pes
        if self.mirror is not None:
            ok &= _not_after_mirror(fac, fac[:, self.mirror, :])
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
            touched = touched_lower(self.op, cover)
            for j, t in enumerate(self.op.tensors):
                if t.role not in lv.keeps:
                    continue
                unit = self.arch.capacity_units_of(lv, t.role)
                words += touched[:, j] * unit
            ok &= words * max(lv.buffers, self.options.l1_buffers) <= lv.capacity
        return ok

    def batches(self, fac: np.ndarray):  # noqa: ANN201 - generator of MappingBatch
        """Every row with every order of the non-trivial loops of the levels between L1 and DRAM."""
        for f, order, above in self.space.expand_orders(fac):
            yield self.space.to_batch(f, order, above)


def mirror_permutation(op: Operator, off: OffchipResult, parallel: frozenset[str] | None) -> np.ndarray | None:
    """The dimension permutation exchanging width and height (P <-> Q, R <-> S) when it maps the whole
    on-chip problem onto itself (Marvel Sec. 3.2's symmetric property), else None.

    Required: the exchange (with the input axes H <-> W) leaves every tensor's accesses and the bounds
    unchanged; the four loops have one DRAM step (the level-3 tile is the whole plane and filter, so the
    fixed DRAM loops and the L2 tile are symmetric too); the dataflow allows both or neither of each pair."""
    names = op.dim_names
    if not {"P", "Q", "R", "S"} <= set(names):
        return None
    swap = {"P": "Q", "Q": "P", "R": "S", "S": "R"}
    b = op.bounds
    if any(b[d] != b[swap[d]] for d in swap) or any(off.tile_of(d) != b[d] for d in swap):
        return None
    if parallel is not None and any((d in parallel) != (swap[d] in parallel) for d in swap):
        return None
    for t in op.tensors:
        axes = sorted(tuple(sorted(a.terms)) for a in t.axes)
        mirrored = sorted(tuple(sorted((swap.get(d, d), c) for d, c in a.terms)) for a in t.axes)
        if axes != mirrored:
            return None
    return np.array([names.index(swap.get(d, d)) for d in names], dtype=np.int64)


def _not_after_mirror(fac: np.ndarray, mirrored: np.ndarray) -> np.ndarray:
    """Rows that are lexicographically <= their mirror (one of every mirror pair, and every self-mirror)."""
    diff = (fac - mirrored).reshape(len(fac), -1)
    nonzero = diff != 0
    first = np.argmax(nonzero, axis=1)
    return ~nonzero.any(axis=1) | (diff[np.arange(len(fac)), first] < 0)


def onchip_search(op: Operator, arch: ArchSpec, off: OffchipResult, objective: str = "edp",
                  options: MarvelOptions | None = None, chunk: int = 100_000) -> OnchipResult:
    """The best on-chip completion of ``off`` (Marvel Sec. 3.2) priced by the core model on ``arch``
    with the switches of ``options``; the reported costs are those of ``arch`` itself."""
    return onchip_search_objectives(op, arch, off, (objective,), options, chunk)[objective]


def onchip_search_objectives(op: Operator, arch: ArchSpec, off: OffchipResult, objectives: tuple[str, ...],
                             options: MarvelOptions | None = None,
                             chunk: int = 100_000) -> dict[str, OnchipResult]:
    """One walk, the best mapping for each of ``objectives`` (Algorithm 1 keeps best[runtime],
    best[energy] and best[EDP] in the same loop)."""
    options = options or MarvelOptions()
    walk = OnchipWalk(op, arch, objectives, options, chunk)
    walk.add(OnchipSpace(op, arch, off, options))
    return walk.results(f"of the level-3 tile {dict(zip(op.dim_names, off.tile))} ")


class OnchipWalk:
    """The exhaustive walk of one or more on-chip spaces (e.g. one per level-3 tile), priced by one
    ``CostModel`` (L1 buffered ``options.l1_buffers``-fold), keeping the best mapping per objective."""

    def __init__(self, op: Operator, arch: ArchSpec, objectives: tuple[str, ...], options: MarvelOptions,
                 chunk: int = 100_000) -> None:
        self.op, self.arch, self.options, self.chunk = op, arch, options, chunk
        self.model = CostModel(op, buffered_view(arch, options.l1_buffers))
        self.best: dict[str, tuple[float, MappingBatch | None, int]] = {o: (math.inf, None, -1) for o in objectives}
        self.evaluated = self.valid = self.factor_choices = 0
        self.sampled = self.relaxed = False
        self.spaces = 0

    def add(self, space: OnchipSpace) -> None:
        """Walk ``space`` (its surviving factor choices, every allowed order); the best of each objective is
        kept with the index of the space it came from (ties keep the earlier space)."""
        options = self.options
        keep, relaxed = _surviving(space, options.min_utilization), False
        if len(keep) == 0:  # the bound is out of reach: keep the best achievable PE use instead
            keep, relaxed = _surviving(space, 0.0), True
            if len(keep):
                used = space.decode(keep)[:, :, space.L:].prod(axis=(1, 2))
                keep = keep[used == used.max()]
        self.factor_choices += len(keep)
        self.relaxed |= relaxed
        if len(keep) > options.max_candidates:
            self.sampled = True
            keep = np.sort(np.random.default_rng(options.seed).choice(keep, options.max_candidates, replace=False))
        for start in range(0, len(keep), self.chunk):
            for batch in space.batches(space.decode(keep[start:start + self.chunk])):
                cost = self.model.evaluate(batch, reuse_buffers=True)
                self.evaluated += len(batch)
                self.valid += int(cost.valid.sum())
                for o in self.best:
                    score, idx = cost.best(o)
                    if score < self.best[o][0]:
                        self.best[o] = (score, batch.take([idx]), self.spaces)
        self.spaces += 1

    def source(self, objective: str) -> int:
        """Index (in the order added) of the space the best mapping for ``objective`` came from."""
        return self.best[objective][2]

    def results(self, what: str = "") -> dict[str, OnchipResult]:
        """The best mapping per objective, priced on the architecture itself (not the buffered view)."""
        exact = CostModel(self.op, self.arch)
        out = {}
        for o, (_, batch, _) in self.best.items():
            if batch is None:
                raise MappingError(f"layer {self.op.name!r}: no on-chip mapping {what}fits {self.arch.name!r} under "
                                   f"Marvel's switches (L1 buffered {self.options.l1_buffers}x; try unroll_rs=False)")
            out[o] = OnchipResult(batch, exact.evaluate(batch), self.evaluated, self.valid, self.factor_choices,
                                  self.sampled, self.relaxed)
        return out


def _surviving(space: OnchipSpace, min_util: float, chunk: int = 1_000_000) -> np.ndarray:
    """Indices of the factor choices that pass the switches (the utilization bound ``min_util``)."""
    out = []
    for start in range(0, space.size, chunk):
        idx = np.arange(start, min(space.size, start + chunk), dtype=np.int64)
        out.append(idx[space.prune(space.decode(idx), min_util)])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
