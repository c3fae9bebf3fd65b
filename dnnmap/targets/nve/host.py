"""Host side of a run: pack pixels/coefficients into the input stream, unpack the output stream.

The frame is processed in strips of ``lanes`` output rows (the lanes are vertically
neighbouring outputs, NVE Fig. 6); the same program runs once per strip (init, loop,
final) with the strip's data [choice, docs/nve.md §Frame traversal]. A last partial
strip is padded with zero pixels and its surplus output rows are dropped. The host
(or the scatter-gather DMA, NVE §6.2.2) delivers words in exactly the order the enabled
``wr`` operations execute; pixel words hold 8 rows of one phase of one column
(little-endian, pixel i in bits 8i..8i+7), coefficient words 4 coefficients in MAC order.
"""

from __future__ import annotations

import numpy as np

from dnnmap.targets.nve.codegen import StreamLayout
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import CoeffWord, PixelWord


def strips(layer: ConvLayer, spec: NveSpec) -> int:
    return -(-layer.out_hw[0] // spec.lanes)


def chain_coefficients(layer: ConvLayer, out_map: int, weights: np.ndarray, bias: np.ndarray) -> list[int]:
    """Bias, then one weight per MAC in issue order: input, kernel column, phase, row (NVE §4.2)."""
    seq = [int(bias[out_map])]
    for m in layer.connections[out_map]:
        for s in range(layer.kernel[1]):
            for rows in layer.phases:
                seq.extend(int(weights[out_map, m, r, s]) for r in rows)
    return seq


def _pack(values: list[int], bits: int) -> int:
    mask = (1 << bits) - 1
    return sum((v & mask) << (bits * i) for i, v in enumerate(values))


class StripData:
    """Word source for one strip: padded pixels and the packed coefficient loads."""

    def __init__(self, layer: ConvLayer, stream: StreamLayout, pixels: np.ndarray, weights: np.ndarray,
                 bias: np.ndarray, strip: int, spec: NveSpec) -> None:
        self.layer, self.spec = layer, spec
        sv = layer.subsample[0]
        self.row0 = sv * spec.lanes * strip
        need = self.row0 + sv * spec.pixels_per_word * 3 + sv
        pad = max(0, need - pixels.shape[1])
        self.pixels = np.pad(pixels, ((0, 0), (0, pad), (0, 0))) if pad else pixels
        coeffs = {k: chain_coefficients(layer, k, weights, bias) for k in stream.out_maps}
        self.loads = [_pack(coeffs[k][first: first + n], spec.weight_bits) for k, first, n in stream.loads]
        self._rows: dict[tuple[int, int, int], np.ndarray] = {}

    def column_words(self, w: PixelWord) -> np.ndarray:
        """Word ``w.word`` of phase ``w.phase`` of input map ``w.in_map`` for every input column (uint64)."""
        key = (w.in_map, w.phase, w.word)
        if key not in self._rows:
            sv, ppw, bits = self.layer.subsample[0], self.spec.pixels_per_word, self.spec.pixel_bits
            lane = np.arange(ppw)
            rows = self.row0 + w.phase + sv * (ppw * w.word + lane)
            block = self.pixels[w.in_map, rows, :].astype(np.uint64) << (bits * lane).astype(np.uint64)[:, None]
            self._rows[key] = np.bitwise_or.reduce(block, axis=0)
        return self._rows[key]

    def word(self, w: PixelWord | CoeffWord) -> int:
        """An init-part word: a coefficient load, or a pixel word of absolute column ``w.col``."""
        if isinstance(w, CoeffWord):
            return self.loads[w.index]
        return int(self.column_words(w)[w.col])


def _loop_grid(stages: list[int], iterations: int, drain: int) -> np.ndarray:
    """enabled[k, c]: op c (of stage ``stages[c]``) works on an iteration in loop execution k."""
    j = np.arange(iterations + drain)[:, None] - np.array(stages, dtype=np.int64)[None, :]
    return (j >= 0) & (j < iterations)


def input_stream(layer: ConvLayer, stream: StreamLayout, data: StripData, iterations: int, drain: int
                 ) -> np.ndarray:
    """Words (uint64) in the order the program's enabled ``wr`` operations consume them."""
    init = np.array([data.word(w) for w in stream.init_words], dtype=np.uint64)
    enabled = _loop_grid([lw.stage for lw in stream.loop_writes], iterations, drain)
    grid = np.zeros(enabled.shape, dtype=np.uint64)
    sw = layer.subsample[1]
    for c, lw in enumerate(stream.loop_writes):
        k = np.flatnonzero(enabled[:, c])
        grid[k, c] = data.column_words(lw.word)[sw * (k - lw.stage) + lw.word.col]
    return np.concatenate([init, grid[enabled]])


def scatter_outputs(stream: StreamLayout, out_words: np.ndarray, iterations: int, drain: int, strip: int,
                    out: np.ndarray, spec: NveSpec) -> None:
    """Place the output words of one strip run into ``out`` (out_maps, P, Q); rows past P are dropped."""
    enabled = _loop_grid([a.stage for a in stream.loop_acts], iterations, drain)
    if len(out_words) != np.count_nonzero(enabled):
        raise ValueError(f"the engine produced {len(out_words)} output words; the stream layout expects "
                         f"{np.count_nonzero(enabled)}")
    grid = np.zeros(enabled.shape, dtype=np.uint64)
    grid[enabled] = out_words
    ppw, bits = spec.pixels_per_word, spec.pixel_bits
    lane = np.arange(ppw)
    shifts = (bits * lane).astype(np.uint64)[:, None]
    for c, a in enumerate(stream.loop_acts):
        k = np.flatnonzero(enabled[:, c])
        pixels = (grid[k, c][None, :] >> shifts) & np.uint64((1 << bits) - 1)  # (ppw, columns)
        rows = spec.lanes * strip + a.half * ppw + lane
        keep = rows < out.shape[1]
        out[a.out_map, rows[keep][:, None], (k - a.stage)[None, :]] = pixels[keep]
