"""Marvel's baseline dataflows (Marvel Sec. 4.2, Fig. 8) as constraints on the core map space (``Dataflow.constraints``).

A dataflow names the loops that may run in parallel across the PEs (Marvel's level-2 tiles > 1),
written in Marvel's letters: K, C (channels), R, S (filter height, width), Q, P (output height,
width), N. A baseline (Marvel's footnote 5: "loop order and parallelization as per the dataflow")
also fixes the loop order of the level between L1 and DRAM (Marvel's level-2 order) and what a PE
holds (its stationarity); the degrees of parallelism, the other per-PE tile sizes and the off-chip
tile are searched (``baseline.py``: each baseline picks its own level-3 tile). The fixed parts follow
MAESTRO's published dataflows (``data/dataflow/rs.m``, ``dla.m``, ``data/mapping/*_shi.m``):

* ``RS-like`` (Eyeriss, QR-partitioned, row stationary; MAESTRO rs.m): output rows Q and the whole
  filter height R across PEs (one filter row per PE), the filter width S whole in the PE; level-2
  order Q, P, C, K (K innermost: the PE's input row stays while filters step). MAESTRO's PE tile: 16
  filters, one channel, one output column.
* ``DLA-like`` (NVDLA, KC-partitioned, weight stationary; MAESTRO dla.m): output and input channels
  across PEs, the filter window R x S whole in the PE, one output pixel per step; level-2 order K, C,
  Q, P (output pixels innermost: the PE's weights stay). MAESTRO's PE tile: one filter, one channel.
* ``ShiDianNao-like`` (QP-partitioned, output stationary): output rows and columns across PEs, R x S
  whole in the PE; level-2 order K, Q, P, C (channels innermost: the PE's outputs stay while the
  reduction steps; MAESTRO's shi mappings step C outside the pixels, the paper calls ShiDianNao output
  stationary and we follow the paper). MAESTRO's PE tile: one filter, one channel, one output pixel.

A dataflow with only ``parallel`` (the pairs of :func:`two_loop_dataflows`) fixes nothing else: the
on-chip walk searches its orders on Marvel's own off-chip tile.

:func:`two_loop_dataflows` lists every pair of Marvel's loops for the uniform-dataflow study
(Marvel Sec. 4.2: CP-partitioned is the best single dataflow for throughput on platform 1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.constraints import Constraints
from dnnmap.workload.ir import Operator

MARVEL_LOOPS = ("K", "C", "R", "S", "Q", "P")  # Marvel's loops (N = 1 is off-chip)


def ir_dim(op: Operator, letter: str) -> str | None:
    """The IR dimension of ``op`` Marvel's ``letter`` names (docs/marvel.md "Names"), None if absent.

    Marvel P (output width) is the IR ``Q``, Marvel Q (output height) the IR ``P``; a layer whose
    channels are groups (depthwise, residual add, pooling: IR C is 1 and G > 1) has Marvel's C as
    the IR ``G``."""
    b = op.bounds
    channel = "G" if b.get("G", 1) > 1 and b.get("C", 1) == 1 else "C"
    table = {"N": "N", "K": "K", "C": channel, "R": "R", "S": "S", "P": "Q", "Q": "P"}
    if letter not in table:
        raise ValueError(f"unknown Marvel loop {letter!r}; loops are {', '.join(table)}")
    dim = table[letter]
    return dim if dim in b else None


@dataclass(frozen=True)
class Dataflow:
    """A named set of parallel loops (Marvel letters) and, for a baseline, its fixed schedule.

    ``order``: the level-2 loop order, outermost first (None: searched). ``whole_in_pe``: loops (R, S)
    whose whole extent one PE steps through (level-0 factor = bound). ``whole_across_pes``: loops (R, S)
    split entirely across PEs. ``one_in_pe``: loops a PE takes one index at a time (level-0 factor 1).
    ``pe_tile``: the published schedule's other level-0 factors (capped by the level-3 tile), used only
    by the fixed schedule. ``stationary``: what stays in a PE, for the docs."""

    name: str
    parallel: tuple[str, ...]
    order: tuple[str, ...] | None = None
    whole_in_pe: tuple[str, ...] = ()
    whole_across_pes: tuple[str, ...] = ()
    one_in_pe: tuple[str, ...] = ()
    pe_tile: tuple[tuple[str, int], ...] = ()
    stationary: str = ""

    def __post_init__(self) -> None:
        named = (*self.parallel, *(self.order or ()), *self.one_in_pe, *(d for d, _ in self.pe_tile))
        for letter in named:
            if letter not in MARVEL_LOOPS + ("N",):
                raise ValueError(f"dataflow {self.name!r}: unknown loop {letter!r}; loops are "
                                 f"{', '.join(MARVEL_LOOPS)}, N")
        for letter in (*self.whole_in_pe, *self.whole_across_pes):
            if letter not in ("R", "S"):
                raise ValueError(f"dataflow {self.name!r}: only the filter loops R, S can be held whole, "
                                 f"got {letter!r}")

    @property
    def fixes_schedule(self) -> bool:
        """True for a baseline with its own fixed schedule (order and stationarity), searched on its own tile."""
        return self.order is not None

    @property
    def label(self) -> str:
        """Marvel's label, e.g. ``QR-partitioned``."""
        return f"{''.join(self.parallel)}-partitioned"

    def ir_dims(self, op: Operator) -> frozenset[str]:
        """The IR dimensions of ``op`` this dataflow may split across PEs."""
        return frozenset(d for d in (ir_dim(op, x) for x in self.parallel) if d is not None)

    def _ir(self, op: Operator, letters: tuple[str, ...]) -> list[str]:
        return [d for d in (ir_dim(op, x) for x in letters) if d is not None]

    def published_pe_tile(self, op: Operator, tile: dict[str, int]) -> dict[str, int]:
        """The published schedule's level-0 factors for a level-3 ``tile`` (IR dimension -> extent): each
        ``pe_tile`` entry capped to the largest divisor of the tile's extent not above it."""
        out = {}
        for letter, f in self.pe_tile:
            d = ir_dim(op, letter)
            if d is not None:
                out[d] = max(x for x in range(1, min(f, tile[d]) + 1) if tile[d] % x == 0)
        return out

    def constraints(self, op: Operator, arch: ArchSpec, pe_tile: dict[str, int] | None = None) -> Constraints:
        """The dataflow as constraints on the map space of ``op`` on ``arch``: at every fan-out only its
        loops may be split (on any axis); a baseline adds its level-2 order (every level between L1 and
        DRAM) and the PE's share (level 0). ``pe_tile``: further fixed level-0 factors (the fixed schedule,
        :meth:`published_pe_tile`)."""
        dims = tuple(sorted(self.ir_dims(op)))
        out = Constraints(name=self.name)
        across = tuple((d, op.bound(d)) for d in self._ir(op, self.whole_across_pes))
        for lv in arch.levels:
            if lv.fanout is not None:
                out = out.with_level(lv.name, spatial_dims=dims, spatial=across)
        if self.order is None:
            return out
        pe = {d: op.bound(d) for d in self._ir(op, self.whole_in_pe)}
        pe.update({d: 1 for d in self._ir(op, self.one_in_pe + self.whole_across_pes)})
        pe.update(pe_tile or {})
        out = out.with_level(arch.levels[0].name, temporal=tuple(pe.items()))
        for lv in arch.levels[1:-1]:
            out = out.with_level(lv.name, order=tuple(self._ir(op, self.order)))
        return out


RS_LIKE = Dataflow("RS-like", ("Q", "R"), order=("Q", "P", "C", "K"), whole_in_pe=("S",), whole_across_pes=("R",),
                   pe_tile=(("K", 16), ("C", 1), ("P", 1)), stationary="row")
DLA_LIKE = Dataflow("DLA-like", ("K", "C"), order=("K", "C", "Q", "P"), whole_in_pe=("R", "S"), one_in_pe=("Q", "P"),
                    pe_tile=(("K", 1), ("C", 1)), stationary="weights")
SHIDIANNAO_LIKE = Dataflow("ShiDianNao-like", ("Q", "P"), order=("K", "Q", "P", "C"), whole_in_pe=("R", "S"),
                           pe_tile=(("K", 1), ("C", 1), ("Q", 1), ("P", 1)), stationary="outputs")
BASELINES = (RS_LIKE, DLA_LIKE, SHIDIANNAO_LIKE)


def two_loop_dataflows() -> tuple[Dataflow, ...]:
    """Every pair of Marvel's six loops as a dataflow (15), named by its label."""
    return tuple(Dataflow(f"{a}{b}", (a, b)) for a, b in itertools.combinations(MARVEL_LOOPS, 2))
