"""The NMP simulator against the NumPy fixed-point reference, the float network and TSO's model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dnnmap.search.tso.machine import TsoMachine
from dnnmap.targets.nmp import FLOAT_TOLERANCE
from dnnmap.targets.nmp.compiler import NmpCompiled, compile_nmp, random_inputs
from dnnmap.targets.nmp.execution import execute
from dnnmap.targets.nmp.generate import LayerProgram
from dnnmap.targets.nmp.isa import FIELDS, FLAG_MULTICAST, Op
from dnnmap.targets.nmp.model_check import check_layer
from dnnmap.targets.nmp.quantize import to_fixed
from dnnmap.targets.nmp.layers import nmp_layers
from dnnmap.targets.nmp.params import random_params
from dnnmap.targets.nmp.reference import fixed_forward, relu6_limit
from dnnmap.targets.nmp.simulator import NmpExecutionError
from dnnmap.workload import zoo
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from nmp_networks import inception_block, mobile_block, tiny_resnet, weights


def _run(c: NmpCompiled, seed: int = 5):
    return execute(c, weights(c), random_inputs(c.network, 1, seed)[0])


@pytest.mark.parametrize("net", ["lenet", "resnet"])
def test_bit_exact_and_close_to_float_at_16_bits(net: str, request: pytest.FixtureRequest) -> None:
    c = request.getfixturevalue(net)
    for seed in (5, 6):
        r = _run(c, seed)
        assert r.bit_exact, r.mismatches
        assert r.float_error <= FLOAT_TOLERANCE[16]


def test_bit_exact_at_8_bits_on_both_networks() -> None:
    for c in (compile_nmp(zoo.get("lenet5"), bits=8), compile_nmp(tiny_resnet(), bits=8, batchnorm=True, seed=3)):
        r = _run(c)
        assert r.bit_exact, r.mismatches
        assert r.float_error <= FLOAT_TOLERANCE[8]
        assert c.machine.macs == 16 and c.machine.mb_bytes == (8192, 8192, 8192)


def test_depthwise_layers_are_bit_exact_and_counted_like_the_model() -> None:
    c = compile_nmp(mobile_block(), batchnorm=True)
    r = _run(c)
    assert r.bit_exact and r.float_error <= FLOAT_TOLERANCE[16]
    k = check_layer(c.schedules[1], r.stats[1], TsoMachine.from_arch(c.arch), c.machine)  # dw: 32 ch, 8 x 8
    assert c.layers[1].kind == "depthwise" and k.exact
    assert k.sim_mac_s == pytest.approx(k.model_value("mac"), rel=1e-12)


def test_concat_relu6_and_a_padded_max_pool_are_bit_exact() -> None:
    net = inception_block()
    params = random_params(nmp_layers(net), seed=2)
    stem = params["stem"]
    params["stem"] = replace(stem, weight=stem.weight * 6)  # drive relu6 into its clip
    c = compile_nmp(net, params=params)
    r = _run(c)
    assert r.bit_exact and r.float_error <= FLOAT_TOLERANCE[16]
    x = to_fixed(random_inputs(net, 1, 5)[0], c.quant.frac["input"], 16)
    stem_out = fixed_forward(c.network, c.layers, c.quant, x)["stem"]
    assert np.count_nonzero(stem_out == relu6_limit(c.quant.frac["stem"], 16)) > 0
    q = c.quant.frac
    assert q["left"] == q["right"] == q["cat"] == q["pool"]  # concat alignment, forward propagation


def _wide() -> Network:
    b = NetworkBuilder("wide", (1, 64, 18, 18))
    b.conv("conv", 64, 3)
    return b.build()


@pytest.mark.parametrize("p", ["KS", "KS&OFM", "OFM"])
@pytest.mark.parametrize("q", ["IS", "OS", "WS"])
def test_counts_equal_tso_model_on_an_evenly_split_layer(p: str, q: str) -> None:
    """64 x 18 x 18 -> 64 x 16 x 16: every slicing splits rows and filters evenly over TLEs and TLTs, so every
    transfer, byte and burst of the run equals TSO's per_tlt count and the MAC time equals Eq. 8."""
    c = compile_nmp(_wide(), slicing=p, dataflow=q, calibration=2)
    r = _run(c)
    assert r.bit_exact
    k = check_layer(c.schedules[0], r.stats[0], TsoMachine.from_arch(c.arch), c.machine)
    assert k.exact, (k.sim_transfers, k.model_value("transfers"), k.sim_bursts, k.model_value("bursts"))
    assert k.sim_mac_s == pytest.approx(k.model_value("mac"), rel=1e-12)
    assert k.sim_dram_s == pytest.approx(k.model_value("dram"), rel=1e-12)
    assert len(range(0, 64, c.schedules[0].TN)) > 1  # several n-tiles accumulate


@pytest.mark.parametrize("net", ["lenet", "resnet"])
def test_uneven_splits_stay_under_the_model(net: str, request: pytest.FixtureRequest) -> None:
    """Where TLEs or TLTs get unequal shares the model prices every one at the largest share (docs/nmp.md):
    the run moves at most that; total MAC work is the model's exactly."""
    c = request.getfixturevalue(net)
    r = _run(c)
    tso = TsoMachine.from_arch(c.arch)
    exact = []
    for ly, s, st in zip(c.layers, c.schedules, r.stats, strict=True):
        k = check_layer(s, st, tso, c.machine)
        assert k.sim_transfers <= k.model_value("transfers") and k.sim_bytes <= k.model_value("dram_bytes")
        assert k.sim_mac_mean_s == pytest.approx(k.model_value("mac"), rel=1e-12)
        even = s.layer.R % s.slice.row_split == 0 and (s.layer.M // s.slice.filter_split) % c.machine.tlt == 0
        same_layout = c.memory.tensor(ly.name).shape == ly.out_shape and (
            ly.kind == "fc" or all(c.memory.tensor(x).shape[1:] == ly.padded_hw for x in ly.inputs))
        if even and same_layout:
            assert k.exact, ly.name
            exact.append(ly.name)
    assert exact  # some layers are checked exactly


def _fields(op: Op) -> dict[str, int]:
    return dict(zip(FIELDS[op.name], op.fields, strict=True))


def _mutated(c: NmpCompiled, layer: int, pick, change) -> NmpCompiled:
    """``c`` with the first op satisfying ``pick`` (in core order) of one layer replaced by ``change(op)``."""
    prog = c.programs[layer]
    for ci, ops in enumerate(prog.cores):
        for oi, op in enumerate(ops):
            if pick(op):
                cores = list(prog.cores)
                cores[ci] = ops[:oi] + (change(op),) + ops[oi + 1:]
                programs = list(c.programs)
                programs[layer] = LayerProgram(prog.layer, tuple(cores))
                return replace(c, programs=tuple(programs))
    raise AssertionError("no op to mutate")


def test_a_unicast_in_place_of_a_multicast_is_caught(lenet: NmpCompiled) -> None:
    bad = _mutated(lenet, 2, lambda op: op.flags & FLAG_MULTICAST, lambda op: replace(op, flags=0))
    r = _run(bad)
    assert r.mismatches[2] > 0 and not any(r.mismatches[:2])


def test_a_wrong_shift_or_address_is_caught(resnet: NmpCompiled) -> None:
    shift = _mutated(resnet, 1, lambda op: op.name == "nmp_conv2d",
                     lambda op: Op.make(op.name, op.flags, **{**_fields(op), "shift": op.shift + 1}))
    assert _run(shift).mismatches[1] > 0
    addr = _mutated(resnet, 3, lambda op: op.name == "nmp_load3d",
                    lambda op: Op.make(op.name, op.flags, **{**_fields(op), "addr": op.addr + 2}))
    assert _run(addr).mismatches[3] > 0


def test_a_broken_reference_is_caught(resnet: NmpCompiled) -> None:
    w = dict(resnet.quant.weights)
    w["b1_conv1"] = w["b1_conv1"].copy()
    w["b1_conv1"][0, 0, 1, 1] += 1
    r = execute(resnet, weights(resnet), random_inputs(resnet.network, 1, 5)[0], replace(resnet.quant, weights=w))
    assert r.mismatches[1] > 0 and r.mismatches[0] == 0


@pytest.mark.parametrize(("pick", "change", "message"), [
    (lambda op: op.name == "nmp_load3d", lambda op: Op.make(op.name, op.flags, **{**_fields(op), "d0": 300}),
     "scratchpad overflow"),
    (lambda op: op.name == "nmp_store3d", lambda op: Op.make(op.name, op.flags, **{**_fields(op), "addr": 0x4a80}),
     "read-only weights"),
    (lambda op: op.name == "nmp_load3d", lambda op: Op.make(op.name, op.flags, **{**_fields(op), "addr": 1 << 30}),
     "beyond the"),
    (lambda op: op.name == "nmp_barrier" and op.scope == 0, lambda op: Op.make("nmp_activation", count=0, mode=0, hi=0),
     "deadlock"),
])
def test_illegal_programs_stop_with_a_message(lenet: NmpCompiled, pick, change, message: str) -> None:
    with pytest.raises(NmpExecutionError, match=message):
        _run(_mutated(lenet, 2, pick, change))


def test_outputs_depend_on_the_input_and_do_not_saturate(lenet: NmpCompiled) -> None:
    """Guards the bit-exact tests against a vacuous pass (constant or clipped outputs)."""
    outs = []
    for seed in (1, 2):
        c = lenet
        x = random_inputs(c.network, 1, seed)[0]
        y = fixed_forward(c.network, c.layers, c.quant, to_fixed(x, c.quant.frac["input"], 16))["fc3"]
        outs.append(y)
    assert not np.array_equal(*outs)
    assert 2 ** 8 < np.max(np.abs(outs[0])) < 2 ** 15 - 1
