"""``dnnmap compile NET --target nmp``: fold, calibrate and quantize, schedule every layer with TSO, generate
the per-core programs, the memory map and the packed weights (TSO Section V; docs/nmp.md).

Steps: float parameters (given or random with a seed) -> batch-norm folding -> calibration on
``calibration`` random inputs and Q-points (:mod:`quantize`) -> TSO's schedule per layer on the NMP
(Algorithms 1-4, the architecture's constants) -> memory map -> programs (:mod:`generate`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.errors import MappingError
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.search import TsoSchedule, tso_layer_search
from dnnmap.targets.nmp.generate import LayerProgram, generate_layer
from dnnmap.targets.nmp.layers import NmpLayer, nmp_layers
from dnnmap.targets.nmp.layout import MemoryMap, memory_map
from dnnmap.arch.variants import arch_for_bits
from dnnmap.targets.nmp.machine import nmp_machine
from dnnmap.targets.nmp.params import ConvParams, folded, random_params
from dnnmap.targets.nmp.quantize import BITS_CHOICES, QuantNet, quantize
from dnnmap.targets.nmp.simulator import NmpMachine
from dnnmap.workload.ir import Network

CALIBRATION_SEED = 1_000_003  # calibration inputs are drawn apart from the seeds `simulate` uses


@dataclass(frozen=True)
class NmpCompiled:
    """Everything the compiler produces for one network (written by :mod:`artifacts`)."""

    network: Network
    arch: ArchSpec  # the NMP at the compiled word width (:func:`arch_for_bits`)
    layers: tuple[NmpLayer, ...]
    params: dict[str, ConvParams]  # float, batch norm not folded
    quant: QuantNet
    machine: NmpMachine
    memory: MemoryMap
    schedules: tuple[TsoSchedule, ...]
    programs: tuple[LayerProgram, ...]

    @property
    def ops(self) -> int:
        return sum(len(c) for p in self.programs for c in p.cores)


def random_inputs(network: Network, count: int, seed: int) -> list[np.ndarray]:
    """``count`` image-like inputs (uniform in [0, 1)) of the network's input shape, C x H x W."""
    shape = network.inputs[0][1]
    chw = tuple(shape[-3:]) if len(shape) >= 4 else (shape[-1], 1, 1)
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.0, 1.0, size=chw) for _ in range(count)]


def weights_image(mm: MemoryMap, q: QuantNet, layers: tuple[NmpLayer, ...]) -> bytes:
    """The weights segment of DRAM (the ``weights.bin`` file): weights then biases per convolution."""
    image = np.zeros(mm.size - mm.weights_base, dtype=np.uint8)
    for ly in layers:
        if not ly.is_conv:
            continue
        for reg, values in ((mm.weights(ly.name), q.weights[ly.name]), (mm.bias(ly.name), q.biases[ly.name])):
            raw = np.ascontiguousarray(values.astype(f"<i{reg.elem_bytes}")).view(np.uint8).ravel()
            start = reg.addr - mm.weights_base
            image[start:start + len(raw)] = raw
    return image.tobytes()


def compile_nmp(network: Network, arch: ArchSpec | None = None, bits: int = 16,
                params: dict[str, ConvParams] | None = None, seed: int = 0, calibration: int = 16,
                batchnorm: bool = False, options: TsoOptions = TsoOptions(), slicing: str | None = None,
                dataflow: str | None = None) -> NmpCompiled:
    """Compile ``network`` for the NMP (module docstring). ``params`` default: random with ``seed``
    (``batchnorm``: with a batch norm after each convolution, folded before quantization). ``slicing`` /
    ``dataflow`` fix TSO's p / q for every layer (Table I's fixed baselines) instead of the best."""
    if bits not in BITS_CHOICES:
        raise MappingError(f"fixed-point width must be one of {', '.join(map(str, BITS_CHOICES))} bits, got {bits}")
    layers = nmp_layers(network)
    base = arch or load_arch("nmp")
    on = arch_for_bits(base, bits)
    machine = nmp_machine(on)
    params = params if params is not None else random_params(layers, seed, batchnorm)
    quant = quantize(network, layers, folded(params), random_inputs(network, calibration, CALIBRATION_SEED), bits)
    tso = TsoMachine.from_arch(on)
    opts = replace(options, dram="burst" if on.dram.transfer.model == "burst" else "volume")
    try:
        schedules = tuple(tso_layer_search(tso_layer(layer.op), tso, opts).best_with(slicing, dataflow)
                          for layer in network.layers)
    except ValueError as e:  # a fixed slicing / dataflow with no feasible tiling on some layer
        raise MappingError(str(e)) from e
    mm = memory_map(network, layers, machine.elem_bytes, machine.burst_bytes)
    programs = tuple(generate_layer(ly, s, mm, quant, machine.tle, machine.tlt)
                     for ly, s in zip(layers, schedules, strict=True))
    return NmpCompiled(network, on, layers, params, quant, machine, mm, schedules, programs)
