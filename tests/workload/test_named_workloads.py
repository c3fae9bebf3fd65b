"""Named einsum workloads (dnnmap.workload.named) and the command line of the training passes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnmap.api import map_network, resolve_network
from dnnmap.cli.main import app
from dnnmap.errors import DnnmapError
from dnnmap.sim.reference import random_tensors, reference_output
from dnnmap.workload.importers.netfile import save_network
from dnnmap.workload.named import is_named_workload, parse_workload

runner = CliRunner()


def test_mttkrp_and_ttmc_compute_their_kernels() -> None:
    rng = np.random.default_rng(0)
    for spec, expr in (("mttkrp:I=3,J=4,K=5,L=2", "ikl,kj,lj->ij"), ("ttmc:i=2,j=3,k=4,r=2,s=3", "ijk,jr,ks->irs")):
        net = parse_workload(spec)
        (layer,) = net.layers
        op = layer.op
        assert op.kind == "einsum" and op.attr("expr") == expr
        assert [t.name for t in op.tensors] == ["B", "C", "D", "A"] and op.output.name == "A"
        assert [t.role for t in op.tensors] == ["input", "weight", "weight", "output"]
        tensors = random_tensors(op, rng)
        assert np.array_equal(reference_output(op, tensors), np.einsum(expr, *(tensors[n] for n in "BCD")))
        assert layer.output_shape == op.tensor_shape("A") and net.inputs == (("B", op.tensor_shape("B")),)
    assert parse_workload("mttkrp:I=64,J=32,K=64,L=64").macs == 64 * 32 * 64 * 64


def test_generic_einsum_spec() -> None:
    net = parse_workload('einsum:"ik, kj -> ij":i=2,k=3,j=4')
    op = net.layers[0].op
    assert op.bounds == {"I": 2, "K": 3, "J": 4} and [t.name for t in op.tensors] == ["T0", "T1", "O"]
    assert net.name == "einsum(I=2,K=3,J=4)"


@pytest.mark.parametrize("spec, fragment", [
    ("mttkrp:I=64,J=32,K=64", "missing sizes for L"),
    ("mttkrp:I=4,J=3,K=4,L=2,Z=3", "unknown indices Z"),
    ("mttkrp:I=0,J=1,K=1,L=1", "must be an integer from 1"),
    ("mttkrp:I=x,J=1,K=1,L=1", "must be an integer from 1"),
    ("mttkrp:I=1,i=2,J=1,K=1,L=1", "given twice"),
    ("mttkrp:IJ=2", "one-letter index name"),
    ("ttmc:I=2", "missing sizes for J, K, R, S"),
    ("einsum:i=3", "expected einsum:EXPR:SIZES"),
    ("einsum:ab-c:a=1", "cannot parse the contraction"),
    ("einsum:ii->i:i=3", "diagonal"),
    ("einsum:ik->iz:i=2,k=2,z=2", "appear in no operand"),
    ("mttkrp:I=2000000,J=1,K=1,L=1", "from 1 to"),
])
def test_bad_specs_are_refused_with_the_reason(spec: str, fragment: str) -> None:
    with pytest.raises(DnnmapError, match=fragment):
        parse_workload(spec)


def test_resolution_order() -> None:
    assert is_named_workload("mttkrp:I=1") and is_named_workload("TTMC:I=1") and not is_named_workload("resnet18")
    assert resolve_network("mttkrp:I=2,J=2,K=2,L=2").layers[0].op.kind == "einsum"
    with pytest.raises(DnnmapError, match="--input-shape applies to model files only"):
        resolve_network("mttkrp:I=2,J=2,K=2,L=2", {"B": (2, 2, 2)})


def test_network_file_route(tmp_path: Path) -> None:
    """The same workload written as a dnnmap network file maps to the same result."""
    path = save_network(parse_workload("mttkrp:I=8,J=4,K=8,L=4"), tmp_path / "mttkrp.yaml")
    from_file = map_network(path, "eyeriss", mapper="sunstone")
    named = map_network("mttkrp:I=8,J=4,K=8,L=4", "eyeriss", mapper="sunstone")
    assert from_file.energy == named.energy and from_file.layers[0].macs == 8 * 4 * 8 * 4


def run(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_maps_training_passes(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = run("map", "lenet5", "--pass", "all", "--mapper", "sunstone", "--json", out)
    assert result.exit_code == 0, result.output
    layers = [row["name"] for row in json.loads(out.read_text())["layers"]]
    assert {"conv1", "conv1.bwd", "conv1.wgt", "fc3", "fc3.bwd", "fc3.wgt"} <= set(layers)
    result = run("map", "lenet5", "--pass", "weight-update", "--mapper", "sunstone", "--json", out)
    assert result.exit_code == 0, result.output
    assert all(row["name"].endswith(".wgt") for row in json.loads(out.read_text())["layers"])


@pytest.mark.parametrize("passes, layers, expected", [
    ("all", "conv2,fc1", ["conv2", "conv2.bwd", "conv2.wgt", "fc1", "fc1.bwd", "fc1.wgt"]),
    ("backward", "conv2", ["conv2.bwd"]),                   # no forward conv2: the name stands for its passes
    ("all", "fc1.wgt,pool1", ["fc1.wgt", "pool1"]),         # a derived name alone; pooling has no derived pass
])
def test_layers_selects_the_training_passes_of_each_named_layer(tmp_path: Path, passes: str, layers: str,
                                                                expected: list[str]) -> None:
    out = tmp_path / "run.json"
    result = run("map", "lenet5", "--pass", passes, "--layers", layers, "--mapper", "sunstone", "--json", out)
    assert result.exit_code == 0, result.output
    assert [row["name"] for row in json.loads(out.read_text())["layers"]] == expected


def test_cli_maps_named_workloads() -> None:
    result = run("map", "mttkrp:I=16,J=8,K=16,L=8", "--mapper", "sunstone")
    assert result.exit_code == 0, result.output
    assert "mttkrp" in result.stdout and "einsum" in result.stdout


@pytest.mark.parametrize("args, fragment", [
    (("map", "lenet5", "--pass", "backwards"), "unknown training pass 'backwards'"),
    (("map", "lenet5", "--pass", "backward", "--fuse", "temporal"), "--fuse applies to the forward pass only"),
    (("map", "mttkrp:I=16,J=8"), "missing sizes for K, L"),
    (("map", "mttkrp:I=4,J=4,K=4,L=4", "--pass", "backward"), "no convolution, FC or matmul layer"),
    (("map", "lenet5", "--pass", "all", "--layers", "conv9"), "has no layer(s) ['conv9']"),
])
def test_cli_errors(args: tuple[str, ...], fragment: str) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and fragment in result.stderr, result.stderr
