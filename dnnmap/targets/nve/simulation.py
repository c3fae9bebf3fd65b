"""Run compiled programs on the ISS with random operands and check them against the NumPy reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.targets.nve.codegen import StreamLayout
from dnnmap.targets.nve.host import StripData, input_stream, scatter_outputs, strips
from dnnmap.targets.nve.iss import RunStats, StreamConfig, load_program, run_program
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
    """Run every program of ``layer`` over every strip; compare all output maps with the reference.

    ``operands`` (pixels, weights, bias) default to :func:`random_operands` drawn with ``seed``.
    """
    pixels, weights, bias = random_operands(layer, np.random.default_rng(seed)) if operands is None else operands
    _, expected = conv_reference(layer, pixels, weights, bias, spec)
    got = np.zeros_like(expected)
    written = np.zeros(expected.shape, dtype=bool)
    total = RunStats(0, 0, 0, 0, 0)
    cols = layer.out_hw[1]
    for program, stream in programs:
        loaded = load_program(program.with_iterations(cols))
        drain = loaded.settings.drain
        for t in range(strips(layer, spec)):
            data = StripData(layer, stream, pixels, weights, bias, t, spec)
            out_words, stats = run_program(loaded, input_stream(layer, stream, data, cols, drain), spec, config)
            scatter_outputs(stream, out_words, cols, drain, t, got, spec)
            total = total + stats
        written[list(stream.out_maps)] = True
    mismatches = int(np.count_nonzero((got != expected) | ~written))
    return LayerSim(layer.name, layer.out_hw, len(programs), total, mismatches, expected.size)
