"""The distinct-block (DB) off-chip cost model (Marvel Sec. 3.1; Ferrante et al. 1991; Sarkar 1997).

For a level-3 (L2-resident) tile ``T`` and a layout, each tensor touches

    DB_t = ceil(span of its innermost axis / B) * prod(extent of every other axis)

distinct DRAM blocks of ``B`` elements, and the data-movement cost of the tile is

    DMC = (DB_W + DB_I + w_O * DB_O) / prod(T)          (memory cost per iteration)

Marvel's example (SRCK / XYCN / PQKN layouts) is ``DB_W = ceil(T_S/B) T_R T_C T_K``,
``DB_I = ceil((T_P + T_S - 1)/B) (T_Q + T_R - 1) T_C T_N``, ``DB_O = ceil(T_P/B) T_Q T_K T_N``
(the equations are lost in the extraction; reconstructed in the digest and tested here).
The settings the lost text leaves open are :class:`DbSettings` fields; ``DbSettings.table3()``
is the reading that reproduces Marvel Table 3 (docs/marvel.md).

Per tensor axis ``sum(c_d * d)`` over tile extents ``T_d`` the model uses the *span*
(``sum(c_d (T_d - 1)) + 1``, the addresses a row along that axis covers) for the innermost
axis and the *count* of distinct indices for the others and for the footprint. With
``stride="ignore"`` every coefficient is 1 (the window extent ``T_P + T_S - 1`` of Marvel's
example); with ``stride="real"`` the count is the exact size of the index set (``T_P`` rows
of a stride-2 1x1 window, not its span), as the core cost model counts tile words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import DnnmapError
from dnnmap.search.marvel.view import LayoutSpace
from dnnmap.workload.ir import Axis, Operator


@dataclass(frozen=True)
class DbSettings:
    """Choices of the off-chip step (Marvel Sec. 3.1, Sec. 4 methodology); docs/marvel.md gives each reason.

    output_weight: DB_O counted this many times (2: outputs are read and written back).
    stride: ``real`` window geometry, or ``ignore`` (every coefficient 1; Table 3's reading).
    full_dims: dimensions whose level-3 tile is their whole bound ("unroll R and S").
    batch_one: the batch dimension's level-3 tile is 1 (Marvel's N = 1 switch).
    buffers: L2 buffering depth; the tile's footprint times this must fit the L2 capacity.
    block_bytes: DRAM block size; None = the architecture's DRAM burst size.
    tiles: ``divisors`` of each bound only, or ``all`` sizes 1..bound (Marvel's constraint 1).
    """

    output_weight: int = 2
    stride: Literal["ignore", "real"] = "real"
    full_dims: tuple[str, ...] = ("R", "S")
    batch_one: bool = True
    buffers: int = 2
    block_bytes: int | None = None
    tiles: Literal["divisors", "all"] = "divisors"

    @classmethod
    def table3(cls) -> "DbSettings":
        """The reading that reproduces Marvel Table 3 (14 of 15 entries co-optimal; docs/marvel.md)."""
        return cls(stride="ignore")

    def __post_init__(self) -> None:
        if self.stride not in ("ignore", "real"):
            raise ValueError(f"stride must be 'ignore' or 'real', got {self.stride!r}")
        if self.tiles not in ("divisors", "all"):
            raise ValueError(f"tiles must be 'divisors' or 'all', got {self.tiles!r}")
        if self.output_weight < 1 or self.buffers < 1:
            raise ValueError("output_weight and buffers must be >= 1")


def block_bytes(arch: ArchSpec, settings: DbSettings) -> int:
    """The DRAM block size in bytes: the setting, else the burst size of the architecture's DRAM."""
    if settings.block_bytes is not None:
        return settings.block_bytes
    transfer = arch.dram.transfer
    if transfer is None:
        raise DnnmapError(f"architecture {arch.name!r}: the DB model needs a DRAM block size; give its DRAM a "
                          "transfer model with burst_bytes or set DbSettings.block_bytes")
    return transfer.burst_bytes


def _axis_terms(axis: Axis, dims: tuple[str, ...], unit: bool) -> list[tuple[int, int]]:
    """(dimension index, coefficient) of an axis, coefficients sorted ascending (1 if ``unit``)."""
    terms = [(dims.index(d), 1 if unit else c) for d, c in axis.terms]
    return sorted(terms, key=lambda t: t[1])


def axis_span(axis: Axis, tiles: np.ndarray, dims: tuple[str, ...], unit: bool) -> np.ndarray:
    """(N,) addresses covered along ``axis`` by each tile: ``sum(c (T - 1)) + 1``."""
    out = np.ones(len(tiles), dtype=np.int64)
    for d, c in _axis_terms(axis, dims, unit):
        out += c * (tiles[:, d] - 1)
    return out


def axis_count(axis: Axis, tiles: np.ndarray, dims: tuple[str, ...], unit: bool) -> np.ndarray:
    """(N,) distinct indices along ``axis``. Exact for one term and for two terms whose smaller coefficient
    divides the larger (every conv window: dilation 1); otherwise the span (an over-estimate)."""
    terms = _axis_terms(axis, dims, unit)
    if len(terms) == 1:
        return tiles[:, terms[0][0]].copy()
    if len(terms) == 2 and terms[1][1] % terms[0][1] == 0:
        (d1, c1), (d2, c2) = terms
        m = c2 // c1  # {a + m b : a < n1, b < n2} scaled by c1
        n1, n2 = tiles[:, d1], tiles[:, d2]
        return np.where(n1 >= m, m * (n2 - 1) + n1, n1 * n2)
    return axis_span(axis, tiles, dims, unit)


@dataclass(frozen=True)
class DbTables:
    """DB counts of ``N`` tiles: per tensor of the layout space, blocks for each innermost choice."""

    blocks: tuple[np.ndarray, ...]  # per tensor (N, choices) distinct blocks of one tile
    footprint: tuple[np.ndarray, ...]  # per tensor (N,) words of one tile
    weights: tuple[int, ...]  # per tensor: how many times its blocks count (outputs: output_weight)
    iterations: np.ndarray  # (N,) loop iterations in one tile

    def numerators(self, space: LayoutSpace) -> np.ndarray:
        """(N, layouts) sum of weighted blocks per tile for every layout of ``space.choices``."""
        choice = np.array(space.choices, dtype=np.int64)  # (layouts, tensors)
        total = np.zeros((len(self.iterations), len(choice)), dtype=np.int64)
        for t, blocks in enumerate(self.blocks):
            total += self.weights[t] * blocks[:, choice[:, t]]
        return total


def db_tables(op: Operator, arch: ArchSpec, space: LayoutSpace, tiles: np.ndarray,
              settings: DbSettings) -> DbTables:
    """DB counts (Marvel Sec. 3.1) of every tile row of ``tiles`` (N, D) under every innermost choice."""
    dims = op.dim_names
    unit = settings.stride == "ignore"
    block = block_bytes(arch, settings)
    blocks, footprints, weights = [], [], []
    for tl in space.tensors:
        tensor = op.tensor(tl.tensor)
        by_name = {a.name: a for a in tensor.axes}
        counts = {a.name: axis_count(a, tiles, dims, unit) for a in tensor.axes}
        elem = arch.bytes_of(tensor.role)
        per_choice = []
        for inner in tl.axes:
            rows = np.ones(len(tiles), dtype=np.int64)
            for name, c in counts.items():
                if name != inner:
                    rows *= c
            span = axis_span(by_name[inner], tiles, dims, unit)
            per_choice.append(rows * np.ceil(span * elem / block).astype(np.int64))
        blocks.append(np.stack(per_choice, axis=1))
        footprints.append(np.prod(np.stack(list(counts.values()), axis=1), axis=1))
        weights.append(settings.output_weight if tensor.role == "output" else 1)
    return DbTables(tuple(blocks), tuple(footprints), tuple(weights), np.prod(tiles, axis=1))
