"""Load balancing of sparse work tiles over PE rows (RTML section 3.2.11, Fig. 10; docs/sparse.md).

The rows of a SIMD array each walk the non-zeros of their own tile of the sparse operand; a wave of
tiles (one per row) ends when its slowest row does, so a tile's work is its non-zero count and a wave
costs its largest. The report's scheme: (b) cut every work tile in half along one tile dimension, (c)
sort the half-tiles by density and match them from opposite ends, the sparsest with the densest, (d) so
that every new tile is close to the average. Sorted opposite-end matching minimises the largest pair sum
over all perfect matchings of the halves (the classic exchange argument: if the largest half ``h1`` were
not matched with the smallest ``h2n``, swapping partners never raises the maximum), so it never does worse
than the original tiles, which are one such matching.

Choices the report leaves open (docs/sparse.md): the halves are balanced within each wave (the tiles
that run at once; ``scope="layer"`` pools every half of the layer and deals the pairs out wave by wave in
sorted order), halves of equal size so density and non-zero count order them alike, an even count of
halves always (every tile gives two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

Scope = Literal["wave", "layer"]


def tile_halves(nonzero: np.ndarray, tile: tuple[int, ...], split_axis: int) -> np.ndarray:
    """Non-zero counts of the two halves of every work tile: the mask ``nonzero`` cut into tiles of ``tile``
    elements per axis (edge tiles smaller; tiles in row-major grid order), each cut in half along
    ``split_axis`` (the first half takes the extra element of an odd extent). Shape ``(tiles, 2)``."""
    if len(tile) != nonzero.ndim or not 0 <= split_axis < nonzero.ndim:
        raise ValueError(f"a tile needs one size per axis of the {nonzero.ndim}-D tensor and a split axis among them")
    grid = [range(0, n, t) for n, t in zip(nonzero.shape, tile)]
    out = []
    for corner in np.stack(np.meshgrid(*[np.array(g) for g in grid], indexing="ij"), -1).reshape(-1, nonzero.ndim):
        block = nonzero[tuple(slice(c, c + t) for c, t in zip(corner, tile))]
        cut = math.ceil(block.shape[split_axis] / 2)
        first = np.take(block, range(cut), axis=split_axis)
        out.append((int(first.sum()), int(block.sum() - first.sum())))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def pair_halves(work: np.ndarray) -> np.ndarray:
    """RTML 3.2.11 (c): indices ``(n, 2)`` into ``work`` (2n half-tile works) matching the sparsest half with
    the densest, the second sparsest with the second densest, and so on."""
    if len(work) % 2:
        raise ValueError("an even number of half-tiles is needed")
    order = np.argsort(work, kind="stable")
    return np.stack([order[: len(work) // 2], order[::-1][: len(work) // 2]], axis=1)


def waves(work: np.ndarray, rows: int) -> np.ndarray:
    """The tile works ``work`` (in issue order) as waves of ``rows`` tiles, the last padded with idle rows (NaN)."""
    padded = np.concatenate([work.astype(float), np.full(-len(work) % rows, np.nan)])
    return padded.reshape(-1, rows)


@dataclass(frozen=True)
class Imbalance:
    """Compute time of a layer's waves: the sum over waves of the slowest row's work, against the sum over
    waves of the mean work of the wave's tiles (perfect balance within every wave)."""

    slowest: float
    mean: float

    @property
    def overhead(self) -> float:
        """Latency overhead of imbalance: slowest / mean - 1 (0.5: the layer takes 50% longer)."""
        return self.slowest / self.mean - 1 if self.mean else 0.0


def imbalance(wave_work: np.ndarray) -> Imbalance:
    """:class:`Imbalance` of waves ``(waves, rows)`` of tile works, idle rows (NaN) left out: a last wave with
    fewer tiles than rows is not imbalance of sparsity."""
    return Imbalance(float(np.nanmax(wave_work, axis=1).sum()), float(np.nanmean(wave_work, axis=1).sum()))


def balance(halves: np.ndarray, rows: int, scope: Scope = "wave") -> tuple[np.ndarray, np.ndarray]:
    """Waves of tile works before and after balancing (RTML 3.2.11): ``halves`` ``(tiles, 2)`` the works of
    every tile's two halves in issue order, ``rows`` tiles per wave. Per wave (``scope="wave"``) the wave's
    halves are paired by :func:`pair_halves`; with ``scope="layer"`` all halves are, and the pairs fill the
    waves in sorted order. Returns the two ``(waves, rows)`` arrays."""
    before = waves(halves.sum(axis=1), rows)
    if scope == "layer":
        flat = halves.reshape(-1)
        pairs = pair_halves(flat)
        return before, waves(flat[pairs].sum(axis=1), rows)
    after = []
    for start in range(0, len(halves), rows):
        flat = halves[start:start + rows].reshape(-1)
        after.append(flat[pair_halves(flat)].sum(axis=1))
    return before, waves(np.concatenate(after), rows)


@lru_cache(maxsize=4096)
def expected_overhead(positions: int, density: float, rows: int) -> float:
    """Expected :func:`imbalance` overhead of waves of ``rows`` tiles of ``positions`` element positions each,
    every position non-zero independently with probability ``density`` (unstructured sparsity): a tile's work
    is Binomial(positions, density), a wave costs its largest, so the overhead is E[max of ``rows`` draws] /
    (positions x density) - 1. Exact up to float rounding: E[max] = sum over x of 1 - F(x)^rows, summed over
    the binomial's support within 40 standard deviations of its mean (the tails beyond add under 1e-300).
    0 for one row or a dense tile. The cost model adds it to the compute cycles of zero-skipping lanes."""
    if rows <= 1 or positions <= 0 or density >= 1:
        return 0.0
    n, d = int(positions), float(density)
    mean, sd = n * d, math.sqrt(n * d * (1 - d))
    lo, hi = max(0, math.floor(mean - 40 * sd - 1)), min(n, math.ceil(mean + 40 * sd + 1))
    x = np.arange(lo, hi + 1, dtype=float)
    log_lo = (math.lgamma(n + 1) - math.lgamma(lo + 1) - math.lgamma(n - lo + 1)
              + lo * math.log(d) + (n - lo) * math.log1p(-d))
    steps = np.log((n - x[:-1]) / (x[:-1] + 1)) + math.log(d) - math.log1p(-d)  # log pmf(x + 1) - log pmf(x)
    pmf = np.exp(log_lo + np.concatenate([[0.0], np.cumsum(steps)]))
    cdf = np.minimum(np.cumsum(pmf), 1.0)
    expected_max = lo + float(np.sum(1.0 - cdf[:-1] ** rows))  # P(max > x) is 1 below lo, 0 from hi on
    return expected_max / mean - 1.0
