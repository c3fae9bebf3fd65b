"""Marvel's baseline dataflows (Marvel Sec. 4.2, Fig. 8) as constraints on the core map space (``Dataflow.constraints``).

A dataflow here is the set of loops that may run in parallel across the PEs (Marvel's level-2
tiles > 1), written in Marvel's letters: K, C (channels), R, S (filter height, width), Q, P
(output height, width), N. Everything else (level-1 tiles, the degree of parallelism, the
level-2 order, the off-chip step) is searched by the same on-chip walk, best kept:

* ``RS-like`` (Eyeriss, QR-partitioned): output rows Q and filter rows R across PEs.
* ``DLA-like`` (NVDLA, KC-partitioned): output and input channels across PEs.
* ``ShiDianNao-like`` (QP-partitioned): output rows and columns across PEs.

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
    """A named set of parallel loops (Marvel letters); the rest of the mapping is searched."""

    name: str
    parallel: tuple[str, ...]

    def __post_init__(self) -> None:
        for letter in self.parallel:
            if letter not in MARVEL_LOOPS + ("N",):
                raise ValueError(f"dataflow {self.name!r}: unknown loop {letter!r}; loops are "
                                 f"{', '.join(MARVEL_LOOPS)}, N")

    @property
    def label(self) -> str:
        """Marvel's label, e.g. ``QR-partitioned``."""
        return f"{''.join(self.parallel)}-partitioned"

    def ir_dims(self, op: Operator) -> frozenset[str]:
        """The IR dimensions of ``op`` this dataflow may split across PEs."""
        return frozenset(d for d in (ir_dim(op, x) for x in self.parallel) if d is not None)

    def constraints(self, op: Operator, arch: ArchSpec) -> Constraints:
        """The dataflow as constraints on the map space of ``op`` on ``arch``: at every fan-out only its
        loops may be split (on any axis)."""
        dims = tuple(sorted(self.ir_dims(op)))
        out = Constraints(name=self.name)
        for lv in arch.levels:
            if lv.fanout is not None:
                out = out.with_level(lv.name, spatial_dims=dims)
        return out


RS_LIKE = Dataflow("RS-like", ("Q", "R"))
DLA_LIKE = Dataflow("DLA-like", ("K", "C"))
SHIDIANNAO_LIKE = Dataflow("ShiDianNao-like", ("Q", "P"))
BASELINES = (RS_LIKE, DLA_LIKE, SHIDIANNAO_LIKE)


def two_loop_dataflows() -> tuple[Dataflow, ...]:
    """Every pair of Marvel's six loops as a dataflow (15), named by its label."""
    return tuple(Dataflow(f"{a}{b}", (a, b)) for a, b in itertools.combinations(MARVEL_LOOPS, 2))
