"""The design space of hardware generation: parameter grids, the budget and the candidate moves.

The search (:mod:`dnnmap.hwgen.generate`) walks these grids. Stage 1 tries every array shape
``rows x cols`` of :data:`ARRAY_SIDES` (aspect ratio at most :data:`MAX_ASPECT`) that meets the budget
and uses at least :data:`MIN_ARRAY_SHARE` of the largest array that does, each with the reference
buffers shrunk (or the GLB grown) to fit; stage 2 moves one buffer parameter of the best point one grid
step at a time (:func:`neighbours`). The report gives no generation algorithm (digest section 5, item 2):
this one is ours, docs/hwgen.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dnnmap.arch.area import area_of
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.errors import DnnmapError

ARRAY_SIDES = (4, 8, 12, 16, 24, 32)
MAX_ASPECT = 3.0
MIN_ARRAY_SHARE = 1 / 3
GRIDS: dict[str, tuple[int, ...]] = {
    "pe_input_words": (128, 256, 512, 1024, 2048),
    "pe_psum_words": (128, 256, 512, 1024, 2048),
    "row_sram_words": (2048, 4096, 8192, 16384, 32768, 65536),
    "glb_words": (32768, 65536, 131072, 262144, 524288, 1048576, 2097152),
    "glb_banks": (4, 8, 16, 32),
}
SHRINK_ORDER = ("glb_words", "row_sram_words", "pe_psum_words", "pe_input_words")


@dataclass(frozen=True)
class Budget:
    """The constraint every candidate meets: model area at most ``area_mm2`` and/or at most ``pes`` PEs."""

    area_mm2: float | None = None
    pes: int | None = None

    def __post_init__(self) -> None:
        if self.area_mm2 is None and self.pes is None:
            raise DnnmapError("give a budget: --area-mm2 X and/or --pes N")
        if self.area_mm2 is not None and not 0 < self.area_mm2 <= 10_000:
            raise DnnmapError(f"--area-mm2 {self.area_mm2:g}: must be in (0, 10000] mm^2")
        if self.pes is not None and not 1 <= self.pes <= 65_536:
            raise DnnmapError(f"--pes {self.pes}: must be in 1..65536")

    def meets(self, p: SparseSimdParams) -> bool:
        return ((self.area_mm2 is None or area_of(p).total <= self.area_mm2)
                and (self.pes is None or p.pes <= self.pes))

    def describe(self) -> str:
        parts = ([f"area <= {self.area_mm2:g} mm^2"] if self.area_mm2 is not None else []) + (
            [f"PEs <= {self.pes}"] if self.pes is not None else [])
        return " and ".join(parts)


def _step(p: SparseSimdParams, field: str, delta: int) -> SparseSimdParams | None:
    grid = GRIDS[field]
    value = getattr(p, field)
    i = grid.index(value) + delta if value in grid else None
    if i is None or not 0 <= i < len(grid):
        return None
    q = p.model_copy(update={field: grid[i]})
    return q if q.glb_words % q.glb_banks == 0 else None


def fit(p: SparseSimdParams, budget: Budget) -> SparseSimdParams | None:
    """``p`` with its buffers shrunk one grid step at a time (GLB first) until it meets the budget, or with
    its GLB grown while it still does (so a small array spends the area it leaves); None if nothing fits."""
    while not budget.meets(p):
        smaller = next((q for f in SHRINK_ORDER if (q := _step(p, f, -1)) is not None), None)
        if smaller is None:
            return None
        p = smaller
    if budget.area_mm2 is not None:
        while (bigger := _step(p, "glb_words", +1)) is not None and budget.meets(bigger):
            p = bigger
    return p


def array_shapes(budget: Budget, reference: SparseSimdParams) -> list[SparseSimdParams]:
    """Stage 1: one fitted point per array shape worth trying, largest arrays first."""
    fitted = []
    for rows in ARRAY_SIDES:
        for cols in ARRAY_SIDES:
            if max(rows, cols) / min(rows, cols) > MAX_ASPECT:
                continue
            p = fit(reference.model_copy(update={"rows": rows, "cols": cols, "name": f"simd_{rows}x{cols}"}), budget)
            if p is not None:
                fitted.append(p)
    if not fitted:
        return []
    largest = max(p.pes for p in fitted)
    return sorted((p for p in fitted if p.pes >= MIN_ARRAY_SHARE * largest), key=lambda p: (-p.pes, p.rows))


def neighbours(p: SparseSimdParams, budget: Budget) -> Iterator[SparseSimdParams]:
    """Stage 2: every point one grid step away in one buffer parameter that meets the budget."""
    for field in GRIDS:
        for delta in (-1, +1):
            q = _step(p, field, delta)
            if q is not None and budget.meets(q):
                yield q
