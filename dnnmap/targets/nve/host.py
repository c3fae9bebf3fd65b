"""Host side of a run: pack pixels/coefficients into the input stream, unpack the output stream.

The frame is processed in strips of ``lanes`` output rows (the lanes are vertically
neighbouring outputs, NVE Fig. 6); the same program runs once per strip (init, loop,
final) with the strip's data [choice, docs/nve.md §Frame traversal]. A last partial
strip is padded with zero pixels and its surplus output rows are dropped. The host
(or the scatter-gather DMA, NVE §2.8) delivers words in exactly the order the enabled
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

    def word(self, w: PixelWord | CoeffWord, column: int | None = None) -> int:
        if isinstance(w, CoeffWord):
            return self.loads[w.index]
        sv, ppw = self.layer.subsample[0], self.spec.pixels_per_word
        rows = self.row0 + w.phase + sv * (ppw * w.word + np.arange(ppw))
        col = w.col if column is None else column
        return _pack([int(v) for v in self.pixels[w.in_map, rows, col]], self.spec.pixel_bits)


def input_stream(layer: ConvLayer, stream: StreamLayout, data: StripData, iterations: int, drain: int) -> list[int]:
    """Words in the order the program's enabled ``wr`` operations consume them."""
    words = [data.word(w) for w in stream.init_words]
    sw = layer.subsample[1]
    for k in range(iterations + drain):
        for lw in stream.loop_writes:
            j = k - lw.stage
            if 0 <= j < iterations:
                words.append(data.word(lw.word, sw * j + lw.word.col))
    return words


def scatter_outputs(stream: StreamLayout, out_words: list[int], iterations: int, drain: int, strip: int,
                    out: np.ndarray, spec: NveSpec) -> None:
    """Place the output words of one strip run into ``out`` (out_maps, P, Q); rows past P are dropped."""
    ppw = spec.pixels_per_word
    it = iter(out_words)
    p = out.shape[1]
    for k in range(iterations + drain):
        for a in stream.loop_acts:
            j = k - a.stage
            if 0 <= j < iterations:
                word = next(it)
                for i in range(ppw):
                    row = spec.lanes * strip + a.half * ppw + i
                    if row < p:
                        out[a.out_map, row, j] = (word >> (spec.pixel_bits * i)) & ((1 << spec.pixel_bits) - 1)
    if next(it, None) is not None:
        raise ValueError("the engine produced more output words than the stream layout expects")
