"""Cores left idle by a slicing (fewer channels, filters or rows than cores) get no operations, every
program the compiler writes simulates, and the compiler refuses to write one with an empty operation."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.search.tso.slicing import DATAFLOWS, SLICINGS
from dnnmap.targets.nmp import generate
from dnnmap.targets.nmp.compiler import NmpCompiled, compile_nmp, random_inputs
from dnnmap.targets.nmp.execution import execute
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.importers import save_network
from nmp_networks import random_network, weights

SEEDS = range(8)
COMPUTE = frozenset({"nmp_conv2d", "nmp_pool", "nmp_veop"})
runner = CliRunner()


def _idle_cores(c: NmpCompiled) -> int:
    """Core programs of all layers that compute nothing; asserts each of them is barriers only (no load)."""
    idle = 0
    for prog in c.programs:
        for ops in prog.cores:
            if not COMPUTE.intersection(op.name for op in ops):
                assert {op.name for op in ops} == {"nmp_barrier"}, (prog.layer, ops)
                idle += 1
    return idle


def test_random_networks_cover_channels_around_the_core_counts_and_every_layer_kind() -> None:
    """Guards the test below against a generator that drifted away from the cases it is meant to hit."""
    nets = [random_network(seed) for seed in SEEDS]
    channels = {ly.output_shape[1] for net in nets for ly in net.layers}
    assert min(channels) < 4 and 8 in channels and max(channels) > 8
    kinds = {ly.op.kind for net in nets for ly in net.layers}
    assert kinds >= {"conv2d", "pointwise", "depthwise", "pool_max", "pool_avg", "add", "concat", "fc"}, kinds


@pytest.mark.parametrize("seed", SEEDS)
def test_random_small_networks_are_bit_exact_under_every_slicing(seed: int) -> None:
    """The best schedule and each TLE slicing (dataflows rotating with the seed) simulate bit-exact."""
    net = random_network(seed)
    x = random_inputs(net, 1, seed)[0]
    idle = 0
    for p, q in [(None, None)] + [(p, DATAFLOWS[(seed + i) % len(DATAFLOWS)]) for i, p in enumerate(SLICINGS)]:
        c = compile_nmp(net, slicing=p, dataflow=q, calibration=2, seed=seed)
        r = execute(c, weights(c), x)
        assert r.bit_exact, (p, q, r.mismatches)
        idle += _idle_cores(c)
    assert idle > 0  # every network leaves some core idle under some slicing


def _reproducer(tmp_path: Path) -> Path:
    """A 6-channel 3x3 convolution then a 3x3 depthwise layer on an 8 x 8 input: TLTs 6 and 7 of a TLE idle."""
    b = NetworkBuilder("dw6", (1, 3, 8, 8))
    b.conv("c1", 6, 3, padding=1)
    b.depthwise("dw", 3, padding=1)
    return save_network(b.build(), tmp_path / "net.yaml")


def test_depthwise_with_fewer_channels_than_tlts_compiles_and_simulates(tmp_path: Path) -> None:
    out = tmp_path / "o"
    result = runner.invoke(app, ["compile", str(_reproducer(tmp_path)), "--target", "nmp", "-o", str(out)])
    assert result.exit_code == 0, result.output
    listing = (out / "listing.txt").read_text()
    assert " 0 x 4 B" not in listing
    dw = listing[listing.index("layer dw "):]
    tlt6 = dw[dw.index("-- TLE 0 TLT 6:"):dw.index("-- TLE 0 TLT 7:")]
    assert "1 ops" in tlt6 and "nmp_barrier" in tlt6
    result = runner.invoke(app, ["simulate", str(out)])
    assert result.exit_code == 0, result.output
    assert "all 2 layer outputs bit-exact" in result.stdout


def test_a_program_with_an_empty_operation_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the idle-core rule broken, the idle TLTs 6 and 7 of each TLE load 0 biases (the convolution's
    and the depthwise layer's): the compiler's own check stops it before anything is written."""
    monkeypatch.setattr(generate, "is_empty", lambda r: False)
    out = tmp_path / "o"
    result = runner.invoke(app, ["compile", str(_reproducer(tmp_path)), "--target", "nmp", "-o", str(out)])
    assert isinstance(result.exception, AssertionError), result.output
    assert "layer 'c1' TLE 0 TLT 6 op 0: count < 1 in 'nmp_load " in str(result.exception)
    assert not out.exists()
