"""The operator-kind table agrees with the constructors, ConvGeometry reads the IR right, and validation
refuses a layer whose kind does not match its loop nest (naming the layer, exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.sim.reference import combine_rule
from dnnmap.workload import ops, zoo
from dnnmap.workload.importers import load_network
from dnnmap.workload.importers.netfile import dumps
from dnnmap.workload.ir import Operator
from dnnmap.workload.kinds import KINDS, ConvGeometry, names, subset

BUILT: dict[str, Operator] = {
    "conv2d": ops.conv2d("c", 4, 6, (9, 7), 3, 2, 1, 1, 2),
    "pointwise": ops.pointwise("p", 4, 6, 5),
    "depthwise": ops.depthwise("d", 4, 8, 3, padding=1),
    "fc": ops.fully_connected("f", 10, 3),
    "matmul": ops.matmul("m", 3, 4, 5, batch=2),
    "einsum": ops.einsum("e", "ik,kj->ij", {"i": 2, "k": 3, "j": 4}),
    "pool_max": ops.pool("x", 4, 8, 2),
    "pool_avg": ops.pool("a", 4, 8, 3, 2, 1, "avg"),
    "add": ops.eltwise("s", 4, 5),
    "mul": ops.eltwise("u", 4, 5, kind="mul"),
    "identity": ops.eltwise("i", 4, 5, n_inputs=1, kind="identity"),
    "concat": ops.concat("k", 4, 5),
    **{k: ops.vector(k, k, 3, 5, 2) for k in ("softmax", "layernorm", "rmsnorm", "gelu", "silu", "swiglu")},
    "rotary": ops.rotary("r", 3, 2, 4),
}


def test_every_row_has_a_constructed_example() -> None:
    assert set(BUILT) == set(KINDS)


@pytest.mark.parametrize("name", list(KINDS))
def test_table_row_matches_its_constructor(name: str) -> None:
    kind, op = KINDS[name], BUILT[name]
    assert op.kind == name
    if kind.dims is not None:
        assert set(op.dim_names) == set(kind.dims)
    assert all(op.attr(a) is not None for a in kind.attrs)
    has_weights = any(t.role == "weight" for t in op.tensors)
    assert kind.weights is None or kind.weights == has_weights
    assert (op.macs > 0) == kind.macs
    assert combine_rule(op) == kind.combine
    if kind.inputs is not None:
        assert sum(t.role == "input" for t in op.tensors) == kind.inputs


def test_property_queries_and_named_subsets() -> None:
    assert names(conv=True) == {"conv2d", "pointwise", "depthwise", "fc"}
    assert names(macs=False) == {"pool_max", "pool_avg", "add", "mul", "identity", "concat", "softmax", "layernorm",
                                 "rmsnorm", "gelu", "silu", "swiglu", "rotary"}
    with pytest.raises(TypeError, match="no kind property"):
        names(colour="red")
    with pytest.raises(ValueError, match="unknown operator kind"):
        subset("conv2d", "attention")


def test_conv_geometry_reads_the_constructor_arguments() -> None:
    g = ConvGeometry.of(ops.conv2d("c", 8, 6, (11, 9), (3, 2), (2, 1), (1, 0, 2, 1), (2, 1), groups=2, batch=3))
    assert (g.batch, g.groups, g.in_per_group, g.out_per_group) == (3, 2, 4, 3)
    assert (g.in_channels, g.out_channels, g.kernel, g.stride, g.dilation) == (8, 6, (3, 2), (2, 1), (2, 1))
    assert (g.padding, g.in_hw, g.out_hw) == ((1, 0, 2, 1), (11, 9), (5, 9))  # (11 + 3 - 2*2 - 1) // 2 + 1 rows
    pool = ConvGeometry.of(BUILT["pool_avg"])  # channels are the groups; no dilation attribute
    assert (pool.groups, pool.in_channels, pool.kernel, pool.stride, pool.dilation) == (4, 4, (3, 3), (2, 2), (1, 1))
    add = ConvGeometry.of(BUILT["add"])  # no window, no attributes: 1x1 kernel, stride 1, input = output map
    assert (add.kernel, add.stride, add.padding, add.in_hw, add.out_hw) == ((1, 1), (1, 1), (0, 0, 0, 0), (5, 5),
                                                                             (5, 5))
    with pytest.raises(DnnmapError, match="'m' .*not a convolution"):
        ConvGeometry.of(BUILT["matmul"])


def _relabelled(tmp_path: Path, old: str, new: str) -> Path:
    doc = yaml.safe_load(dumps(zoo.get("lenet5")))
    next(layer for layer in doc["layers"] if layer["kind"] == old)["kind"] = new
    path = tmp_path / "net.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("old, new, message", [
    ("conv2d", "matmul", r"layers\[0\] \(conv1, matmul\): kind 'matmul' has dimensions B, M, N, K, this layer has "
                         r"N, G, K, C, P, Q, R, S"),
    ("pool_avg", "add", r"layers\[1\] \(pool1, add\): kind 'add' has dimensions N, G, P, Q, this layer has "
                        r"N, G, P, Q, R, S"),
])
def test_kind_that_does_not_match_the_loop_nest_is_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = _relabelled(tmp_path, old, new)
    with pytest.raises(InputFileError, match=message):
        load_network(path)


def test_relabelled_conv_through_the_cli_exits_2(tmp_path: Path) -> None:
    path = _relabelled(tmp_path, "conv2d", "matmul")
    run = subprocess.run([sys.executable, "-m", "dnnmap.cli.main", "map", str(path)], capture_output=True, text=True)
    assert run.returncode == 2
    assert "error:" in run.stderr and "conv1" in run.stderr and "Traceback" not in run.stderr
