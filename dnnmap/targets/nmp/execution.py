"""Running compiled NMP programs on real inputs and checking them (what ``dnnmap simulate`` does).

The input is quantized with the network input's Q-point and written, with the weights segment, into a
fresh DRAM image; the simulator runs every layer; each layer's output is read back from its DRAM region
and compared with the NumPy fixed-point reference (bit-exact) and, for the network output, with the float
network (relative error, docs/nmp.md "Tolerance"). The simulator's bursts and time are set beside TSO's
estimate of the same schedule (:mod:`model_check`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.targets.nmp.compiler import NmpCompiled
from dnnmap.targets.nmp.forward import float_forward
from dnnmap.targets.nmp.layout import MemoryMap, Region
from dnnmap.targets.nmp.quantize import QuantNet, to_fixed
from dnnmap.targets.nmp.reference import fixed_forward
from dnnmap.targets.nmp.simulator import LayerStats, NmpSimulator


@dataclass(frozen=True)
class NmpRun:
    """Outcome of one input: per layer the simulator's statistics and how many words differ from the reference."""

    stats: tuple[LayerStats, ...]
    mismatches: tuple[int, ...]  # per layer, words differing from the fixed-point reference
    outputs: tuple[int, ...]  # per layer, words compared
    float_error: float  # max |dequantized - float| / max |float| of the network output

    @property
    def bit_exact(self) -> bool:
        return not any(self.mismatches)


def read_region(dram: np.ndarray, reg: Region, shape: tuple[int, int, int]) -> np.ndarray:
    """The C x H x W tensor stored (inside its border) in ``reg``."""
    raw = dram[reg.addr:reg.end].view(f"<i{reg.elem_bytes}").astype(np.int64).reshape(reg.shape)
    t, lft = reg.border
    return raw[:, t:t + shape[1], lft:lft + shape[2]]


def dram_image(mm: MemoryMap, weights: bytes, input_region: Region, x_int: np.ndarray) -> np.ndarray:
    """A DRAM image holding the weights segment and the quantized input (zero elsewhere, borders included)."""
    dram = np.zeros(mm.size, dtype=np.uint8)
    dram[mm.weights_base:] = np.frombuffer(weights, dtype=np.uint8)
    buf = np.zeros(input_region.shape, dtype=f"<i{input_region.elem_bytes}")
    t, lft = input_region.border
    buf[:, t:t + x_int.shape[1], lft:lft + x_int.shape[2]] = x_int
    dram[input_region.addr:input_region.end] = buf.view(np.uint8).ravel()
    return dram


def execute(c: NmpCompiled, weights: bytes, x: np.ndarray, reference: QuantNet | None = None) -> NmpRun:
    """Run the programs of ``c`` on the float input ``x`` (C x H x W) and check every layer's output.
    ``reference``: the quantized network the reference uses (default: ``c.quant``)."""
    q = reference or c.quant
    in_name = c.network.inputs[0][0]
    x_int = to_fixed(x, c.quant.frac[in_name], c.quant.bits)
    dram = dram_image(c.memory, weights, c.memory.tensor(in_name), x_int)
    sim = NmpSimulator(c.machine, dram, c.memory.weights_base)
    stats = tuple(sim.run_layer(p) for p in c.programs)
    golden = fixed_forward(c.network, c.layers, q, to_fixed(x, q.frac[in_name], q.bits))
    mismatches, outputs = [], []
    for ly in c.layers:
        got = read_region(dram, c.memory.tensor(ly.name), ly.out_shape)
        want = golden[ly.name].reshape(ly.out_shape)
        mismatches.append(int(np.count_nonzero(got != want)))
        outputs.append(want.size)
    last = c.layers[-1]
    y = read_region(dram, c.memory.tensor(last.name), last.out_shape) * 2.0 ** -c.quant.frac[last.name]
    f = float_forward(c.network, c.layers, c.params, x)[last.name].reshape(last.out_shape)
    err = float(np.max(np.abs(y - f)) / max(float(np.max(np.abs(f))), 1e-30))
    return NmpRun(stats, tuple(mismatches), tuple(outputs), err)
