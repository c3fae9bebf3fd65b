"""Whole-frame figures of a compiled layer, counted from the programs (NVE §6.3.2, §7.2 metrics).

HW utilization = MACs per instruction: every executed vector ``mac`` counts ``lanes``
MACs (``set rb`` does not), divided by all executed instructions - init, every loop
execution including the predicated prologue/epilogue ones, and the final part - of
every program over all strips of the frame (whole-layer counting, docs/nve.md §7). Data
transfer counts every word the host streams in (pixels and coefficients) and every output
word, in bytes. The ISS executes exactly these counts cycle by cycle: the Table 5
benchmark and tests/nve/test_reproduction.py check it over full frames.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.targets.nve.compiler import CompiledLayer, CompiledProgram
from dnnmap.targets.nve.host import strips as strip_count
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import CoeffWord


@dataclass(frozen=True)
class LayerFigures:
    instructions: int  # executed
    mac_ops: int  # vector mac operations executed
    input_bytes: int  # pixel + coefficient words streamed in
    coefficient_bytes: int
    output_bytes: int
    programs: int
    program_sizes: tuple[int, ...]

    def utilization(self, lanes: int) -> float:
        return lanes * self.mac_ops / self.instructions

    @property
    def transfer_bytes(self) -> int:
        return self.input_bytes + self.output_bytes


def program_run(cp: CompiledProgram, iterations: int) -> tuple[int, int, int, int, int]:
    """(instructions, mac ops, input words, coefficient words, output words) of one strip run."""
    s = cp.program.settings
    loop_len = s.loop_end - s.loop_start + 1
    instructions = s.loop_start + (iterations + s.drain) * loop_len + (cp.program.size - s.loop_end - 1)
    macs = iterations * cp.loop.macs_per_iteration
    coeff = sum(1 for w in cp.stream.init_words if isinstance(w, CoeffWord))
    inputs = len(cp.stream.init_words) + iterations * len(cp.stream.loop_writes)
    outputs = iterations * len(cp.stream.loop_acts)
    return instructions, macs, inputs, coeff, outputs


def layer_figures(cl: CompiledLayer, spec: NveSpec) -> LayerFigures:
    layer = cl.layer
    strips = strip_count(layer, spec) * layer.batch
    word_bytes = spec.word_bits // 8
    totals = [0, 0, 0, 0, 0]
    for cp in cl.programs:
        for i, v in enumerate(program_run(cp, layer.out_hw[1])):
            totals[i] += v * strips
    inst, macs, inputs, coeff, outputs = totals
    return LayerFigures(inst, macs, inputs * word_bytes, coeff * word_bytes, outputs * word_bytes,
                        len(cl.programs), tuple(cp.program.size for cp in cl.programs))
