"""Literal execution of a fused schedule: the proof that the fusion model is exact.

The executor runs a :class:`~dnnmap.fusion.tiling.TilePlan` the way HW-Flow-Fusion's
accelerator would (Sec. 4.1-4.2): bottom tiles left to right, top to bottom (Fig. 9); at each
tile every layer, top first, computes only its new multi-tile (Eq. 10-12) from what the on-chip
buffer holds. The buffer is explicit: one store per map holding only pixels that were produced
(or fetched) and that some later step still reads; a pixel leaves the store right after its last
reader. Reading a pixel that is not held is an error (the schedule would recompute or re-fetch).

It counts what the model predicts: MACs (Eq. 13, zero recomputation), words fetched from and
written to DRAM (Eq. 6), the buffer's side of those transfers (words filled from DRAM by role,
words drained to DRAM) and its on-chip traffic (words of computed blocks written, words of
windows read), and the peak number of words held (maps, resident weights, the bottom output
block), which must stay within Eq. 5 + the Eq. 8 reuse buffers. It also records, for every step
(a layer computing its block at a tile), the latest tile of each group layer whose pixels the step
read: :func:`replay_finish` replays the schedule on concurrent sub-arrays from those measured
dependencies, the check of :mod:`dnnmap.fusion.pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dnnmap.fusion.buffers import last_reads
from dnnmap.fusion.geometry import FusionError, LayerGeometry
from dnnmap.fusion.tile_ops import block_macs, compute_block, pad_value
from dnnmap.fusion.tiling import Interval, TilePlan

Box = tuple[Interval, Interval]


class MapStore:
    """The on-chip pixels of one map: values plus a mask of what is held."""

    def __init__(self, name: str, channels: int, hw: tuple[int, int], dtype: type = np.int64) -> None:
        self.name = name
        self.data = np.zeros((channels, *hw), dtype=dtype)
        self.held = np.zeros(hw, dtype=bool)

    @property
    def words(self) -> int:
        return int(self.held.sum()) * self.data.shape[0]

    def write(self, box: Box, values: np.ndarray) -> None:
        (y0, y1), (x0, x1) = box
        self.data[:, y0:y1, x0:x1] = values
        self.held[y0:y1, x0:x1] = True

    def read_window(self, start: tuple[int, int], shape: tuple[int, int], fill: int) -> np.ndarray:
        """The window of ``shape`` whose corner is ``start`` (may lie in the padding), padding filled."""
        out = np.full((self.data.shape[0], *shape), fill, dtype=self.data.dtype)
        (y0, x0), (h, w) = start, shape
        ys, xs = slice(max(y0, 0), min(y0 + h, self.held.shape[0])), slice(max(x0, 0), min(x0 + w, self.held.shape[1]))
        if ys.stop > ys.start and xs.stop > xs.start:
            if not self.held[ys, xs].all():
                raise FusionError(f"map {self.name!r}: window rows {ys.start}..{ys.stop} cols {xs.start}..{xs.stop} "
                                  "read pixels the buffer does not hold (they were evicted or never produced)")
            out[:, ys.start - y0:ys.stop - y0, xs.start - x0:xs.stop - x0] = self.data[:, ys, xs]
        return out

    def held_words(self, start: tuple[int, int], shape: tuple[int, int]) -> int:
        """Words of the window of ``shape`` at ``start`` that lie inside the map (padding is not read)."""
        (y0, x0), (h, w) = start, shape
        rows = min(y0 + h, self.held.shape[0]) - max(y0, 0)
        cols = min(x0 + w, self.held.shape[1]) - max(x0, 0)
        return self.data.shape[0] * max(rows, 0) * max(cols, 0)

    def evict(self, dead: np.ndarray) -> None:
        self.held &= ~dead


@dataclass
class ExecutionCounts:
    """What the literal run did."""

    macs: int = 0
    operations: int = 0
    dram_read_words: int = 0
    dram_write_words: int = 0
    peak_words: int = 0
    peak_map_words: dict[str, int] = field(default_factory=dict)
    buffer_fills: dict[str, int] = field(default_factory=lambda: {"input": 0, "weight": 0})  # from DRAM, by role
    buffer_drains: int = 0  # words the buffer sends to DRAM (group outputs)
    buffer_writes: int = 0  # words of computed blocks written into the buffer
    buffer_reads: int = 0  # held words the layers' windows read
    extra_operations: int = 0  # operations the schedule adds to the unfused layers' (online softmax rescaling)

    @property
    def dram_words(self) -> int:
        return self.dram_read_words + self.dram_write_words


@dataclass
class Step:
    """One layer computing its new block at bottom tile ``tile``; ``reads``: (group layer, latest tile of it read).
    Buffer words, for :func:`replay`: ``fetched`` (external inputs fetched for this tile when this is its first
    step), ``stored`` (the block it writes into a map store), ``transient`` (the largest output-channel chunk it
    sends to DRAM unstored, with the weight slice it streams), ``freed`` (held words whose last reader it is)."""

    tile: int
    layer: str
    reads: tuple[tuple[str, int], ...]
    fetched: int = 0
    stored: int = 0
    transient: int = 0
    freed: int = 0


@dataclass
class ExecutionResult:
    outputs: dict[str, np.ndarray]
    counts: ExecutionCounts
    steps: list[Step] = field(default_factory=list)


@dataclass(frozen=True)
class Replay:
    """The replayed schedule's last finish (cycles) and its peak buffer occupancy (words)."""

    finish: float
    peak_words: int


def replay(steps: list[Step], duration: dict[tuple[int, str], float], window: int | None = None,
           resident: int = 0) -> Replay:
    """Event replay of the executed steps with one sub-array per layer: a step starts when its sub-array is
    free, every pixel it read has been written (the finish of the step that wrote it) and, with ``window``
    tiles in flight, every step of tiles ``<= tile - window`` has finished. ``duration[(tile, layer)]`` is the
    step's cycles. The executor's order lists a step after all it read, after its sub-array's previous step
    and after every earlier tile, so one pass in that order is the event simulation.

    Occupancy: a step's fetched inputs, stored block and transient chunk are held from its start, its freed
    words and transient chunk leave at its finish; ``resident`` words (weights) are held throughout."""
    finish: dict[tuple[int, str], float] = {}
    free: dict[str, float] = {}
    done: list[float] = []  # done[t]: the latest finish of the steps of tiles <= t
    events: dict[float, int] = {}
    for s in steps:
        while len(done) <= s.tile:
            done.append(done[-1] if done else 0.0)
        gate = done[s.tile - window] if window is not None and s.tile >= window else 0.0
        start = max([free.get(s.layer, 0.0), gate] + [finish[(t, m)] for m, t in s.reads])
        end = finish[(s.tile, s.layer)] = free[s.layer] = start + duration[(s.tile, s.layer)]
        done[s.tile] = max(done[s.tile], end)
        events[start] = events.get(start, 0) + s.fetched + s.stored + s.transient
        events[end] = events.get(end, 0) - s.freed - s.transient
    level = np.cumsum([events[t] for t in sorted(events)])
    return Replay(max(finish.values(), default=0.0), resident + int(level.max(initial=0)))


def replay_finish(steps: list[Step], duration: dict[tuple[int, str], float]) -> float:
    """The last finish of :func:`replay` without a window."""
    return replay(steps, duration).finish


class FusedExecutor:
    """Runs ``plan`` on the given external inputs and weights (int64), counting buffer, DRAM and MACs."""

    def __init__(self, plan: TilePlan, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> None:
        self.plan, self.group = plan, plan.group
        self.inputs, self.weights = inputs, weights
        self.stores = {m: MapStore(m, info.channels, info.hw) for m, info in self.group.maps.items()
                       if self.group.consumers(m)}
        self.outputs = {m: np.zeros((info.channels, *info.hw), dtype=np.int64)
                        for m, info in self.group.maps.items() if m in self.group.outputs}
        self.last = last_reads(plan)
        self.counts = ExecutionCounts(peak_map_words={m: 0 for m in self.stores})
        self.resident_weights = 0
        self.bands: dict[str, tuple[int, np.ndarray]] = {}  # banded layer -> (first slice held, slices)
        self.writer = {g.name: np.full(g.out_hw, -1, dtype=np.int64) for g in self.group.layers}
        self.steps: list[Step] = []
        self.fetched = 0  # words fetched for the current tile, charged to its first step

    def run(self) -> ExecutionResult:
        self._load_resident_weights()
        for k, (i, j) in enumerate(self.plan.tiles()):
            if j == 0:
                self._fetch_bands(i)
            self._fetch_inputs(i, j, k)
            for p, layer in enumerate(self.group.layers):
                ran = self._run_layer(layer, i, j, k)
                freed = self._evict(k * len(self.group) + p)
                if freed and not ran:
                    raise FusionError(f"layer {layer.name!r} is the last reader of {freed} words at tile {k} but "
                                      "computes nothing there")
                if ran:
                    self.steps[-1].freed = freed
        return ExecutionResult(self.outputs, self.counts, self.steps)

    # ---- steps -------------------------------------------------------------------
    def _load_resident_weights(self) -> None:
        """All weights stay on chip for the whole run, except a bottom layer that tiles T_of (G5)."""
        streamed = self._streams_bottom_weights()
        for layer in self.group.layers:
            if layer.has_weights and not layer.banded and not (streamed and layer is self.group.bottom):
                self.resident_weights += layer.weight_words
        self.counts.dram_read_words += self.resident_weights
        self.counts.buffer_fills["weight"] += self.resident_weights

    def _fetch_bands(self, i: int) -> None:
        """At the start of tile row ``i``, each banded layer (attention's K/V) drops the previous row's weight
        slices and fetches the slices its rows read; they stay while every tile of the row runs."""
        for layer in self.group.layers:
            if layer.banded:
                slices = layer.slices(self.plan.rows.new(layer.name, i))
                held = self.weights[layer.name][slices.start:slices.stop]
                self.bands[layer.name] = (slices.start, held)
                self.counts.dram_read_words += held.size
                self.counts.buffer_fills["weight"] += held.size
        self._observe(0)

    def _band_weights(self, layer: LayerGeometry, rows: Interval) -> np.ndarray:
        """The held weight slice of every output row in ``rows``, ``(rows, out, in)``."""
        first, held = self.bands[layer.name]
        index = np.arange(*rows) // layer.rows_per_slice - first
        if index.min() < 0 or index.max() >= len(held):
            raise FusionError(f"layer {layer.name!r}: rows {rows[0]}..{rows[1]} read weight slices the buffer "
                              "does not hold")
        return held[index]

    def _streams_bottom_weights(self) -> bool:
        return self.plan.out_channel_tile < self.group.bottom.out_channels

    def _fetch_inputs(self, i: int, j: int, k: int) -> None:
        """Fetch the new multi-tile of every external input map (each word once, G6)."""
        for m in self.group.external_inputs:
            box = self.plan.new_box(m, i, j)
            (y0, y1), (x0, x1) = box
            if y1 > y0 and x1 > x0:
                self.stores[m].write(box, self.inputs[m][:, y0:y1, x0:x1])
                words = self.stores[m].data.shape[0] * (y1 - y0) * (x1 - x0)
                self.counts.dram_read_words += words
                self.counts.buffer_fills["input"] += words
                self.fetched += words
        self._observe(0)
        self.fetched -= self._evict(k * len(self.group) - 1)  # pixels of an input no layer reads leave at once

    def _run_layer(self, layer: LayerGeometry, i: int, j: int, k: int) -> bool:
        """Compute ``layer``'s new block at tile ``k``; False when the tile gives it nothing to compute."""
        box = self.plan.new_box(layer.name, i, j)
        (y0, y1), (x0, x1) = box
        if y1 <= y0 or x1 <= x0:
            return False
        windows = [self._window(layer, src, box) for src in layer.inputs]
        latest = ((src, self._latest_writer(layer, src, box)) for src in layer.inputs if src in self.writer)
        stored = layer.out_channels * (y1 - y0) * (x1 - x0) if layer.name in self.stores else 0
        step = Step(k, layer.name, tuple((src, t) for src, t in latest if t >= 0), self.fetched, stored)
        self.steps.append(step)
        self.fetched = 0
        self.writer[layer.name][y0:y1, x0:x1] = k
        chunk = self.plan.out_channel_tile if layer is self.group.bottom else layer.out_channels
        for c0 in range(0, layer.out_channels, chunk):
            transient = self._run_chunk(layer, box, windows, c0, min(c0 + chunk, layer.out_channels))
            step.transient = max(step.transient, transient)
        return True

    def _run_chunk(self, layer: LayerGeometry, box: Box, windows: list[np.ndarray], c0: int, c1: int) -> int:
        """Compute one output-channel chunk of the block; returns the words it holds only while it runs."""
        (y0, y1), (x0, x1) = box
        shape = (y1 - y0, x1 - x0)
        streamed = 0
        weights = self.weights.get(layer.name)
        if layer.banded:
            weights = self._band_weights(layer, (y0, y1))
        elif weights is not None:
            weights = weights[c0:c1]
            if layer is self.group.bottom and self._streams_bottom_weights():
                streamed = weights.size
                self.counts.dram_read_words += streamed
                self.counts.buffer_fills["weight"] += streamed
        block = compute_block(layer, windows, weights, shape)
        self.counts.buffer_writes += block.size
        self.counts.macs += block_macs(layer, c1 - c0, shape)
        self.counts.operations += self._operations(layer, c1 - c0, shape)
        if layer.name in self.stores:
            self.stores[layer.name].data[c0:c1, y0:y1, x0:x1] = block
            if c1 == layer.out_channels:
                self.stores[layer.name].held[y0:y1, x0:x1] = True
        written = 0
        if layer.name in self.outputs:
            self.outputs[layer.name][c0:c1, y0:y1, x0:x1] = block
            self.counts.dram_write_words += block.size
            self.counts.buffer_drains += block.size
            written = 0 if layer.name in self.stores else block.size
        self._observe(streamed + written)
        return streamed + written

    def _window(self, layer: LayerGeometry, src: str, box: Box) -> np.ndarray:
        (y0, y1), (x0, x1) = box
        wy, wx = layer.windows
        start = (wy.start(y0), wx.start(x0))
        shape = (wy.stride * (y1 - y0 - 1) + wy.kernel, wx.stride * (x1 - x0 - 1) + wx.kernel)
        window = self.stores[src].read_window(start, shape, pad_value(layer))
        self.counts.buffer_reads += self.stores[src].held_words(start, shape)
        return window

    def _latest_writer(self, layer: LayerGeometry, src: str, box: Box) -> int:
        """The latest tile at which ``src``'s producer wrote a pixel of ``layer``'s window over ``box``."""
        (y0, y1), (x0, x1) = box
        wy, wx = layer.windows
        rows, cols = slice(max(wy.start(y0), 0), max(wy.reach(y1), 0)), slice(max(wx.start(x0), 0), max(wx.reach(x1), 0))
        return int(self.writer[src][rows, cols].max(initial=-1))

    @staticmethod
    def _operations(layer: LayerGeometry, channels: int, shape: tuple[int, int]) -> int:
        """Loop iterations of the block (for an add: one per output word and input)."""
        ky, kx = (w.kernel for w in layer.windows)
        per_pixel = layer.in_channels * ky * kx if layer.has_macs else ky * kx
        return channels * per_pixel * shape[0] * shape[1]

    def _observe(self, transient: int) -> None:
        """Record the buffer occupancy: held map pixels, resident weights and the block in flight."""
        held = 0
        for m, store in self.stores.items():
            words = store.words
            self.counts.peak_map_words[m] = max(self.counts.peak_map_words[m], words)
            held += words
        held += sum(band.size for _, band in self.bands.values())
        self.counts.peak_words = max(self.counts.peak_words, held + self.resident_weights + transient)

    def _evict(self, step: int) -> int:
        """Drop the pixels whose last reader is ``step`` or earlier; returns the words dropped."""
        before = sum(store.words for store in self.stores.values())
        for m, store in self.stores.items():
            store.evict(self.last[m] <= step)
        return before - sum(store.words for store in self.stores.values())
