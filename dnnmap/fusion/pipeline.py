"""Pipelined latency of a spatially fused group: sub-arrays run concurrently, tile by tile.

In spatial fusion every layer of a group owns a sub-array (Sec. 4.3.1), so while layer ``p``
works on bottom tile ``k`` the layer above it can already work on tile ``k + 1``. The model:

- **stages.** Layer ``p`` on tile ``k`` computes its new multi-tile (Eq. 10-12). It lasts the
  layer's own latency on its share (``max(compute, buffer, DRAM)`` of its fused costing) times
  the share of the layer's output pixels that tile produces: ``d[k, p]``.
- **order.** A sub-array runs its tiles in the executor's order (bottom tiles row-major), and a
  layer may start tile ``k`` once every group layer it reads has finished the latest tile whose pixels
  its window at tile ``k`` reads, ``dep[k, q] <= k`` (from the plan's geometry):
  ``finish[k, p] = max(finish[k-1, p], finish[dep[k, q], q] for q read by p) + d[k, p]``.
- **tiles in flight.** A producer running ahead holds blocks its consumers have not read, beyond Eq. 5 + 8.
  So at most ``W`` bottom tiles are in flight: a step of tile ``k`` also waits until every step of tiles
  ``<= k - W`` has finished, and the buffer holds at most :meth:`~dnnmap.fusion.buffers.OverlapBuffer.words`
  ``(W)``. The search takes the largest ``W`` up to the group's layer count (one tile per stage keeps every
  stage busy) whose bound fits the buffer, and refuses spatial fusion when not even ``W = 1`` fits.
  The group's *pipeline* latency is the last finish: the slowest stage's own work plus the fill
  before its first tile and the drain after its last one (reported as such).
- **shared buffer and DRAM.** Concurrent stages share the on-chip buffer's port and the DRAM
  channel, so the group cannot end before the sum of its layers' buffer cycles, nor before the
  sum of their DRAM cycles. The latency is the largest of the three.

Temporal fusion interleaves its layers on one array: its latency stays the sum of its layers'.
``tests/fusion/test_pipeline.py`` replays the executor's schedule with its measured pixel
dependencies and buffer words (:func:`dnnmap.fusion.execute.replay`) and finds the same pipeline latency,
and a peak occupancy within the bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dnnmap.fusion.buffers import produced_tiles
from dnnmap.fusion.tiling import TilePlan


@dataclass(frozen=True)
class Pipeline:
    """A spatially fused group's timing in cycles; ``start``/``duration`` are (tiles, layers) arrays."""

    layers: tuple[str, ...]
    start: np.ndarray
    duration: np.ndarray
    stage_cycles: tuple[float, ...]  # each layer's own latency on its sub-array (the sum of its tiles)
    buffer_floor: float  # the shared buffer port: the sum of the layers' buffer cycles
    dram_floor: float  # the shared DRAM channel: the sum of the layers' DRAM cycles
    window: int | None = None  # bottom tiles in flight at most (None: unbounded)
    buffer_words: int = 0  # the buffer the overlap needs with that window (OverlapBuffer.words)

    @property
    def finish(self) -> np.ndarray:
        return self.start + self.duration

    @property
    def critical(self) -> float:
        """The last stage's finish: the latency of the sub-arrays alone."""
        return float(self.finish.max()) if self.finish.size else 0.0

    @property
    def cycles(self) -> float:
        """The group's latency: the pipeline, or the shared buffer or DRAM when they take longer."""
        return max(self.critical, self.buffer_floor, self.dram_floor)

    @property
    def serial(self) -> float:
        """The latency without overlap: the sum of the layers' (the model before issue 22)."""
        return float(sum(self.stage_cycles))

    @property
    def slowest(self) -> int:
        return int(np.argmax(self.stage_cycles))

    @property
    def fill(self) -> float:
        """Cycles before the slowest stage starts its first tile."""
        return float(self.start[:, self.slowest].min())

    @property
    def drain(self) -> float:
        """Cycles after the slowest stage ends its last tile."""
        return self.cycles - float(self.finish[:, self.slowest].max())

    @property
    def bound(self) -> str:
        """What sets the latency: ``pipeline``, ``buffer`` or ``DRAM``."""
        return max((self.critical, "pipeline"), (self.buffer_floor, "buffer"), (self.dram_floor, "DRAM"))[1]


def tile_shares(plan: TilePlan) -> np.ndarray:
    """(tiles, layers) share of each layer's output pixels that its new multi-tile at each tile holds."""
    group = plan.group
    out = np.zeros((plan.n_tiles, len(group)))
    for p, layer in enumerate(group.layers):
        h, w = group.maps[layer.name].hw
        for k, (i, j) in enumerate(plan.tiles()):
            (y0, y1), (x0, x1) = plan.new_box(layer.name, i, j)
            out[k, p] = max(y1 - y0, 0) * max(x1 - x0, 0) / (h * w)
    return out


def producers(plan: TilePlan) -> list[list[tuple[int, np.ndarray]]]:
    """For each group layer (by position), the group layers it reads: (position, ``dep``), where ``dep[k]`` is
    the latest tile at which that layer wrote a pixel of the window read at tile ``k`` (-1: none)."""
    group = plan.group
    position = {g.name: p for p, g in enumerate(group.layers)}
    made = {m: produced_tiles(plan, m) for m in position if group.consumers(m)}
    out = []
    for g in group.layers:
        reads = []
        for m in dict.fromkeys(src for src in g.inputs if src in position):
            dep = np.full(plan.n_tiles, -1, dtype=np.int64)
            for k, (i, j) in enumerate(plan.tiles()):
                (y0, y1), (x0, x1) = plan.window_box(g, m, i, j)
                dep[k] = made[m][max(y0, 0):max(y1, 0), max(x0, 0):max(x1, 0)].max(initial=-1)
            reads.append((position[m], dep))
        out.append(reads)
    return out


def _ready(finish: np.ndarray, reads: list[tuple[int, np.ndarray]], k: slice | int) -> np.ndarray | float:
    """The latest finish, at tiles ``k``, of the steps whose pixels layer's windows read (0 when none)."""
    ready = np.zeros(len(finish))[k]
    for q, dep in reads:
        ready = np.maximum(ready, np.where(dep[k] >= 0, finish[dep[k], q], 0.0))
    return ready


def pipeline(plan: TilePlan, stage_cycles: Mapping[str, float], buffer_cycles: Mapping[str, float],
             dram_cycles: Mapping[str, float], shares: np.ndarray | None = None, window: int | None = None,
             buffer_words: int = 0) -> Pipeline:
    """The group's pipelined timing (module docstring) from each layer's latency, buffer and DRAM cycles;
    ``shares``: :func:`tile_shares` of ``plan`` when the caller already has them; ``window``: bottom tiles in
    flight at most (None: unbounded), whose buffer bound ``buffer_words`` the caller checked.

    Layer by layer (positions are topological), the recurrence ``f[k] = max(f[k-1], r[k]) + d[k]`` with
    ``r[k]`` the producers' finish at tile ``k`` unrolls to ``f[k] = max_{j<=k} (r[j] + d[j] + ... + d[k])``
    ``= C[k] + max_{j<=k} (r[j] - C[j] + d[j])`` with ``C`` the running sum of ``d``."""
    names = plan.group.names
    duration = (tile_shares(plan) if shares is None else shares) * np.array([stage_cycles[n] for n in names])
    reads = producers(plan)
    finish = np.zeros_like(duration)
    for p, rd in enumerate(reads):
        d = duration[:, p]
        ready = _ready(finish, rd, slice(None))
        total = np.cumsum(d)
        finish[:, p] = total + np.maximum.accumulate(ready - total + d)
    if window is not None and window < plan.n_tiles:
        gate = _gate(finish, window)
        if (finish - duration < gate[:, None]).any():  # the window delays some step: step through the tiles
            finish = _windowed(duration, reads, window)
    return Pipeline(names, finish - duration, duration, tuple(float(stage_cycles[n]) for n in names),
                    float(sum(buffer_cycles[n] for n in names)), float(sum(dram_cycles[n] for n in names)),
                    window, buffer_words)


def _gate(finish: np.ndarray, window: int) -> np.ndarray:
    """Per tile ``k``, the latest finish of the steps of tiles ``<= k - window`` (0 for the first ``window``)."""
    done = np.maximum.accumulate(finish.max(axis=1))
    return np.concatenate([np.zeros(min(window, len(done))), done[:len(done) - window]])


def _windowed(duration: np.ndarray, reads: list[list[tuple[int, np.ndarray]]], window: int) -> np.ndarray:
    """Finishes when a step of tile ``k`` also waits for every step of tiles ``<= k - window``."""
    finish = np.zeros_like(duration)
    done = np.zeros(len(duration))  # done[k]: latest finish of tiles <= k
    for k in range(len(duration)):
        gate = done[k - window] if k >= window else 0.0
        for p, rd in enumerate(reads):
            start = max(finish[k - 1, p] if k else 0.0, gate, float(_ready(finish, rd, k)))
            finish[k, p] = start + duration[k, p]
        done[k] = max(done[k - 1] if k else 0.0, finish[k].max())
    return finish
