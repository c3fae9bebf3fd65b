"""ISS runs of generated programs, checked bit-exactly against the NumPy reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dnnmap.targets.nve import compile_network, run_compiled
from dnnmap.targets.nve.compiler import build_program, compile_layer
from dnnmap.targets.nve.iss import IssError, StreamConfig, run_program
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.metrics import program_run
from dnnmap.targets.nve.program import Instruction, MemField, MemOpcode, NveProgram
from dnnmap.targets.nve.reference import activation_lut, activate
from dnnmap.targets.nve.simulation import simulate_layer
from dnnmap.targets.nve.spec import NveSpec


def _programs(layer: ConvLayer, spec: NveSpec, level: int) -> list:
    return [(cp.program, cp.stream) for cp in compile_layer(layer, spec, level).programs]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_3x3_filter_bit_exact_at_every_level(filter3x3: ConvLayer, spec: NveSpec, level: int) -> None:
    sim = simulate_layer(filter3x3, _programs(filter3x3, spec, level), spec, seed=level)
    assert sim.outputs == 20 * 6 and sim.bit_exact


@pytest.mark.parametrize(("kernel", "sub"), [
    ((2, 3), (2, 1)),  # subsample 2 with one row per phase: no set-shift word
    ((8, 8), (1, 1)),  # the tallest kernel one phase serves (ri[16-22])
    ((5, 3), (2, 2)),  # odd kernel at subsample 2: phases of 3 and 2 rows
    ((1, 1), (2, 1)),
])
def test_other_geometries_bit_exact(kernel: tuple[int, int], sub: tuple[int, int], spec: NveSpec) -> None:
    layer = ConvLayer("g", 3, ((0, 2), (1,)), kernel, sub, (17, 5))
    for level in (0, 3):
        assert simulate_layer(layer, _programs(layer, spec, level), spec).bit_exact


def test_iss_counts_match_the_whole_frame_formula(filter3x3: ConvLayer, spec: NveSpec) -> None:
    cp = build_program(filter3x3, (0,), spec, 2)
    sim = simulate_layer(filter3x3, [(cp.program, cp.stream)], spec)
    inst, macs, *_ = program_run(cp, filter3x3.out_hw[1])
    assert sim.stats.issued == 2 * inst and sim.stats.mac_ops == 2 * macs  # two strips
    assert sim.stats.cycles == sim.stats.issued


def test_stalls_do_not_change_results(filter3x3: ConvLayer, spec: NveSpec) -> None:
    progs = _programs(filter3x3, spec, 2)
    slow_in = simulate_layer(filter3x3, progs, spec, config=StreamConfig(input_words_per_cycle=0.2))
    slow_out = simulate_layer(filter3x3, progs, spec,
                              config=StreamConfig(output_words_per_cycle=0.05, output_fifo_depth=1))
    fast = simulate_layer(filter3x3, progs, spec)
    assert slow_in.bit_exact and slow_out.bit_exact
    assert slow_in.stats.input_stalls > 0 and slow_out.stats.output_stalls > 0
    assert slow_in.stats.issued == fast.stats.issued == slow_out.stats.issued
    assert slow_in.stats.cycles == fast.stats.cycles + slow_in.stats.input_stalls


def test_a_wrong_address_is_caught(filter3x3: ConvLayer, spec: NveSpec) -> None:
    """A program that computes wrong numbers fails the check, however good its utilization."""
    cp = build_program(filter3x3, (0,), spec, 2)
    s = cp.program.settings
    insts = list(cp.program.instructions)
    i = next(k for k in range(s.loop_start, s.loop_end + 1) if insts[k].mema.opcode == MemOpcode.RD
             and insts[k].mema.mode == 1)
    m = insts[i].mema
    insts[i] = Instruction(MemField(m.opcode, m.offset, (m.update + 3) % 9, m.mode, m.stage, m.tail), insts[i].memb,
                           insts[i].wreg, insts[i].ireg, insts[i].vmac, insts[i].act)
    sim = simulate_layer(filter3x3, [(NveProgram(tuple(insts), s), cp.stream)], spec)
    assert not sim.bit_exact and sim.mismatches > 0


def test_register_load_without_port_data_is_an_error(spec: NveSpec) -> None:
    from dnnmap.targets.nve.program import OpField, Settings, WregOpcode
    prog = NveProgram((Instruction(wreg=OpField(WregOpcode.SET)),), Settings(0, 0, 1, 0, ()))
    with pytest.raises(IssError, match="port A"):
        run_program(prog, [], spec)


def test_activation_lut_indexing(spec: NveSpec) -> None:
    lut = activation_lut(spec)
    assert lut.shape == (1024,) and lut[0] == 0 and lut[-1] == 255 and lut[512] == 128
    acc = np.array([-(1 << 31), -1, 0, 255, 256, 1 << 30])
    idx = np.clip(acc >> spec.act_shift, -512, 511) + 512
    assert list(activate(acc, spec)) == list(lut[idx])
    assert list(idx) == [0, 511, 512, 512, 513, 1023]


@pytest.fixture(scope="module")
def face_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nve") / "face"
    compile_network("nve_face", out)
    return out


def test_every_face_layer_bit_exact(face_out: Path) -> None:
    sim = run_compiled(face_out, rows=20, cols=5)
    assert [s.name for s in sim.layers] == ["L1", "L2", "L3", "L4"]
    assert sim.bit_exact, sim.summary()
    assert all(s.stats.mac_ops > 0 for s in sim.layers)


def test_every_speed_layer_bit_exact(tmp_path: Path) -> None:
    out = tmp_path / "speed"
    compile_network("nve_speed", out)
    sim = run_compiled(out, rows=18, cols=3)
    assert [s.name for s in sim.layers] == ["L1", "L2", "L3", "L4"]
    assert sim.bit_exact, sim.summary()
    assert sim.layers[2].programs == 80
