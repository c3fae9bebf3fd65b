"""Run compiled programs on the ISS with random operands and check them against the NumPy reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.targets.nve.codegen import StreamLayout
from dnnmap.targets.nve.host import StripData, input_stream, scatter_outputs, strips
from dnnmap.targets.nve.iss import RunStats, StreamConfig, load_program, run_batch
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.program import NveProgram
from dnnmap.targets.nve.reference import conv_reference, random_operands
from dnnmap.targets.nve.spec import NveSpec


@dataclass(frozen=True)
class LayerSim:
    name: str
    out_hw: tuple[int, int]  # simulated (possibly reduced) frame
    programs: int
    stats: RunStats
    mismatches: int  # output pixels that differ from the reference
    outputs: int

    @property
    def bit_exact(self) -> bool:
        return self.mismatches == 0

    def macs_per_instruction(self, lanes: int) -> float:
        return self.stats.macs_per_instruction(lanes)


Operands = tuple[np.ndarray, np.ndarray, np.ndarray]  # pixels (in, H, W), weights (out, in, kh, kw), bias (out,)


def simulate_layer(layer: ConvLayer, programs: list[tuple[NveProgram, StreamLayout]], spec: NveSpec,
                   seed: int = 0, config: StreamConfig = StreamConfig(), operands: Operands | None = None
                   ) -> LayerSim:
    """Run every program of ``layer`` over every strip (the strips in lockstep, :func:`run_batch`); compare all
    output maps with the reference.

    ``operands`` (pixels, weights, bias) default to :func:`random_operands` drawn with ``seed``.
    """
    pixels, weights, bias = random_operands(layer, np.random.default_rng(seed)) if operands is None else operands
    _, expected = conv_reference(layer, pixels, weights, bias, spec)
    got = np.zeros_like(expected)
    written = np.zeros(expected.shape, dtype=bool)
    total = RunStats(0, 0, 0, 0, 0)
    cols = layer.out_hw[1]
    runs = strips(layer, spec)
    for program, stream in programs:
        loaded = load_program(program.with_iterations(cols))
        drain = loaded.settings.drain
        data = [StripData(layer, stream, pixels, weights, bias, t, spec) for t in range(runs)]
        out_words, stats = run_batch(loaded, np.stack([input_stream(layer, stream, d, cols, drain) for d in data]),
                                     spec, config)
        for t in range(runs):
            scatter_outputs(stream, out_words[t], cols, drain, t, got, spec)
        total = total + stats.times(runs)
        written[list(stream.out_maps)] = True
    mismatches = int(np.count_nonzero((got != expected) | ~written))
    return LayerSim(layer.name, layer.out_hw, len(programs), total, mismatches, expected.size)
