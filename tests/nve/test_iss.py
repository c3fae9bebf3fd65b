"""ISS runs of generated programs, checked bit-exactly against the NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.targets.nve import CompileResult, reference, run_compiled
from dnnmap.targets.nve.codegen import StreamLayout
from dnnmap.targets.nve.compiler import CompiledLayer, build_program, compile_layer
from dnnmap.targets.nve.host import StripData, input_stream
from dnnmap.targets.nve.iss import IssError, StreamConfig, act_lut, run_batch, run_program
from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.metrics import program_run
from dnnmap.targets.nve.program import (
    ActOpcode, Instruction, IregOpcode, MemField, MemOpcode, NveProgram, OpField, Settings, WregOpcode,
)
from dnnmap.targets.nve.reference import activation_lut, activate
from dnnmap.targets.nve.simulation import Operands, simulate_layer
from dnnmap.targets.nve.spec import NveSpec


def _compiled(cl: CompiledLayer) -> list[tuple[NveProgram, StreamLayout]]:
    return [(cp.program, cp.stream) for cp in cl.programs]


def _programs(layer: ConvLayer, spec: NveSpec, level: int) -> list[tuple[NveProgram, StreamLayout]]:
    return _compiled(compile_layer(layer, spec, level))


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


def test_lockstep_batch_equals_separate_runs(filter3x3: ConvLayer, spec: NveSpec) -> None:
    """run_batch steps the strips in lockstep; each run's outputs and the stats equal a run of its own."""
    cp = build_program(filter3x3, (0,), spec, 2)
    prog = cp.program.with_iterations(filter3x3.out_hw[1])
    pixels, weights, bias = reference.random_operands(filter3x3, np.random.default_rng(5))
    streams = np.stack([input_stream(filter3x3, cp.stream,
                                     StripData(filter3x3, cp.stream, pixels, weights, bias, t, spec),
                                     filter3x3.out_hw[1], prog.settings.drain) for t in range(2)])
    stalls = []
    for config in (StreamConfig(input_words_per_cycle=0.3),
                   StreamConfig(output_words_per_cycle=0.05, output_fifo_depth=1)):
        batch, stats = run_batch(prog, streams, spec, config)
        for t in range(2):
            alone, alone_stats = run_program(prog, streams[t], spec, config)
            assert np.array_equal(batch[t], alone) and stats == alone_stats
        stalls.append((stats.input_stalls, stats.output_stalls))
    assert not np.array_equal(batch[0], batch[1])
    assert stalls[0][0] > 0 and stalls[1][1] > 0


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


@pytest.mark.parametrize(("instruction", "modes", "message"), [
    (Instruction(wreg=OpField(WregOpcode.SET)), (), "no data on port A"),
    (Instruction(ireg=OpField(IregOpcode.SETSH)), (), "no data on port B"),
    (Instruction(act=OpField(ActOpcode.ACT)), (), "before any set rb"),
    (Instruction(mema=MemField(MemOpcode.RD, 4096)), (), "outside the local buffer"),
    (Instruction(memb=MemField(MemOpcode.WR, 3)), (), "MEMB supports only rd"),
    (Instruction(mema=MemField(MemOpcode.WR, 3)), (), "input stream exhausted"),
    (Instruction(mema=MemField(MemOpcode.RD, 3, 0, 2)), ((3, 1),), "AGU mode 2"),
])
def test_ill_formed_programs_raise(instruction: Instruction, modes: tuple, message: str, spec: NveSpec) -> None:
    prog = NveProgram((instruction,), Settings(0, 0, 1, 0, modes))
    with pytest.raises(IssError, match=message):
        run_program(prog, [], spec)


def test_unconsumed_input_and_too_wide_specs_raise(spec: NveSpec) -> None:
    prog = NveProgram((Instruction(),), Settings(0, 0, 1, 0, ()))
    with pytest.raises(IssError, match="consumed 0 of 2 input words"):
        run_program(prog, [1, 2], spec)
    for wide in (NveSpec(acc_bits=64), NveSpec(act_shift=64)):
        with pytest.raises(IssError, match="accumulators up to 62 bits"):
            run_program(prog, [], wide)


def test_activation_lut_indexing(spec: NveSpec) -> None:
    lut = activation_lut(spec)
    assert lut.shape == (1024,) and lut[0] == 0 and lut[-1] == 255 and lut[512] == 128
    acc = np.array([-(1 << 31), -1, 0, 255, 256, 1 << 30])
    idx = np.clip(acc >> spec.act_shift, -512, 511) + 512
    assert list(activate(acc, spec)) == list(lut[idx])
    assert list(idx) == [0, 511, 512, 512, 513, 1023]


@pytest.mark.parametrize(("entries", "scale"), [(1024, 64.0), (1024, 1.0), (1024, 300.0), (256, 17.3)])
def test_iss_lut_equals_the_forward_sigmoid(entries: int, scale: float) -> None:
    """The ISS's step-table LUT and the reference's forward evaluation are the same function."""
    spec = NveSpec(act_lut_entries=entries, act_lut_scale=scale)
    assert np.array_equal(act_lut(entries, scale, spec.pixel_bits), activation_lut(spec))


def _lut_sweep() -> tuple[ConvLayer, Operands]:
    """A 1x1 layer whose accumulators hit every LUT index, negative non-multiples of 256 and both saturations.

    Map 0: acc = 256·p0 - 1024·p1 - 1 (indices -1021..2 before saturation, floor-shifted);
    map 1: acc = 256·p0 + 1024·p1 + 255 (indices 0..1023); p0 = position mod 4, p1 = position div 4.
    """
    layer = ConvLayer("lut", 2, ((0, 1), (0, 1)), (1, 1), (1, 1), (32, 32))
    position = np.arange(32 * 32).reshape(32, 32)
    pixels = np.stack([position % 4, position // 4]).astype(np.uint8)
    weights = np.array([[256, -1024], [256, 1024]], dtype=np.int16).reshape(2, 2, 1, 1)
    return layer, (pixels, weights, np.array([-1, 255], dtype=np.int16))


def _wrap_sweep() -> tuple[ConvLayer, Operands]:
    """288 maximal weights over pixels 200 + 5·column + noise: sums from 2.0e9 (output column 0) to 2.3e9
    (column 5), the right half past 2^31 (wrapped to negative)."""
    layer = ConvLayer("wrap", 8, (tuple(range(8)),), (6, 6), (1, 1), (20, 6))
    noise = np.random.default_rng(1).integers(0, 4, size=(8, *layer.in_hw))
    pixels = (200 + 5 * np.arange(layer.in_hw[1]) + noise).astype(np.uint8)
    weights = np.full((1, 8, 6, 6), 32767, dtype=np.int16)
    return layer, (pixels, weights, np.array([32767], dtype=np.int16))


def _mismatches(spec: NveSpec) -> list[int]:
    counts = []
    for layer, operands in (_lut_sweep(), _wrap_sweep()):
        sim = simulate_layer(layer, _programs(layer, spec, 2), spec, operands=operands)
        counts.append(sim.mismatches)
    return counts


def test_activation_sweeps_are_bit_exact(spec: NveSpec) -> None:
    """Every LUT entry, both saturations, the floor shift and 32-bit wrap agree between ISS and reference."""
    layer, operands = _lut_sweep()
    acc, _ = reference.conv_reference(layer, *operands, spec)
    index = np.right_shift(acc, spec.act_shift)
    assert index.min() < -512 and index.max() > 511 and set(range(-512, 512)) <= set(index.ravel().tolist())
    layer, operands = _wrap_sweep()
    acc, _ = reference.conv_reference(layer, *operands, spec)
    assert (acc < 0).any() and (acc > 0).any()  # wrapped and unwrapped results
    assert _mismatches(spec) == [0, 0]


def _truncating_activate(acc: np.ndarray, spec: NveSpec, lut: np.ndarray | None = None) -> np.ndarray:
    half = spec.act_lut_entries // 2
    index = np.fix(acc / (1 << spec.act_shift)).astype(np.int64)
    return reference.activation_lut(spec)[np.clip(index, -half, half - 1) + half]


def _with_entry(index: int, value: int):
    original = reference.activation_lut
    return lambda spec: np.concatenate([original(spec)[:index], [value], original(spec)[index + 1:]]).astype(np.uint8)


@pytest.mark.parametrize(("name", "mutant"), [
    ("activation_lut", _with_entry(0, 1)),  # first entry (negative saturation)
    ("activation_lut", _with_entry(1023, 254)),  # last entry (positive saturation)
    ("activation_lut", _with_entry(700, 0)),  # one entry inside the range
    ("activate", lambda acc, spec, lut=None: activate(acc + (1 << spec.act_shift), spec, lut)),  # index off by one
    ("activate", _truncating_activate),  # division rounding toward zero instead of the arithmetic shift
    ("wrap_acc", lambda values, spec: values.astype(np.int64)),  # no 32-bit wrap
])
def test_a_wrong_reference_is_caught(name: str, mutant, spec: NveSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ISS does not share the reference's activation code: a fault in the reference shows as mismatches."""
    monkeypatch.setattr(reference, name, mutant)
    assert sum(_mismatches(spec)) > 0


def test_every_face_layer_bit_exact(face: CompileResult) -> None:
    sim = run_compiled(face.out_dir, rows=20, cols=5)
    assert [s.name for s in sim.layers] == ["L1", "L2", "L3", "L4"]
    assert sim.bit_exact, sim.summary()
    assert all(s.stats.mac_ops > 0 for s in sim.layers)


def test_every_speed_layer_bit_exact(speed: list[CompiledLayer], spec: NveSpec) -> None:
    """Every program of every layer on a reduced frame (18 rows = a full and a partial strip, 3 columns)."""
    for cl in speed:
        sim = simulate_layer(cl.layer.with_out_hw(18, 3), _compiled(cl), spec)
        assert sim.bit_exact, f"{cl.layer.name}: {sim.mismatches} of {sim.outputs} outputs differ"
        assert sim.stats.mac_ops > 0
    assert [cl.layer.name for cl in speed] == ["L1", "L2", "L3", "L4"] and len(speed[2].programs) == 80
