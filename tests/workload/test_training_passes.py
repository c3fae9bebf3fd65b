"""Training passes (dnnmap.workload.training): the derived operators' NumPy references are the true
gradients (chain rule on the forward nest, torch autograd), their outputs have no window axes, their
MACs equal the forward pass's, and they survive the network/mapping-file validation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from grad_support import backward_gradient, scatter_gradients

from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.mapping.io import operator_from_dict, operator_to_dict
from dnnmap.sim.reference import reference_output
from dnnmap.workload import ops, training, zoo
from dnnmap.workload.importers.netfile import dumps
from dnnmap.workload.ir import Network, Operator


def random_conv(rng: np.random.Generator) -> Operator:
    """A small conv2d / grouped / depthwise / pointwise layer with stride 1-3, dilation 1-2 and
    asymmetric (sometimes negative bottom/right) padding."""
    while True:
        style = rng.choice(["dense", "grouped", "depthwise", "pointwise"])
        groups = {"dense": 1, "pointwise": 1, "grouped": int(rng.integers(2, 4)), "depthwise": int(rng.integers(2, 5))}
        g = groups[str(style)]
        cin = g * (1 if style == "depthwise" else int(rng.integers(1, 4)))
        cout = cin if style == "depthwise" else g * int(rng.integers(1, 4))
        kernel = (1, 1) if style == "pointwise" else (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        stride = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        dilation = (1, 1) if style == "pointwise" else (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pads = tuple(int(rng.integers(-1 if i >= 2 else 0, 3)) for i in range(4))
        hw = (int(rng.integers(3, 10)), int(rng.integers(3, 10)))
        try:
            return ops.conv2d("conv", cin, cout, hw, kernel, stride, pads, dilation, g, batch=int(rng.integers(1, 3)))
        except ValueError:
            continue


def real_region_mask(op: Operator) -> np.ndarray:
    """Rows/columns of the padded input that are real input (not the padding border)."""
    pt, pl, _, _ = op.attr("padding")
    h, w = op.attr("in_hw")
    rows, cols = op.tensor_shape("I")[3:]
    mask = np.zeros((rows, cols), dtype=bool)
    mask[pt:pt + h, pl:pl + w] = True
    return mask


@pytest.mark.parametrize("seed", range(4))
def test_derived_passes_equal_the_chain_rule_on_the_forward_nest(seed: int) -> None:
    rng = np.random.default_rng(seed)
    strided = 0
    for _ in range(30):
        op = random_conv(rng)
        x, w, d_o = (rng.integers(-3, 4, op.tensor_shape(n)) for n in ("I", "W", "O"))
        want_di, want_dw = scatter_gradients(op, x, w, d_o)
        got_di = backward_gradient(op, d_o, w)
        mask = real_region_mask(op)
        assert np.array_equal(got_di[..., mask], want_di[..., mask]), op
        assert not got_di[..., ~mask].any()  # the padding border's gradient is never computed
        got_dw = reference_output(training.weight_update(op), {"I": x, "dO": d_o})
        assert np.array_equal(got_dw, want_dw), op
        strided += op.attr("stride") != (1, 1)
    assert strided >= 10


def test_fc_and_matmul_passes_equal_matrix_gradients() -> None:
    rng = np.random.default_rng(3)
    fc = ops.fully_connected("fc", 5, 3, batch=2)
    x, w, d_o = rng.integers(-3, 4, (2, 5)), rng.integers(-3, 4, (3, 5)), rng.integers(-3, 4, (2, 3))
    (bwd,) = training.backward_data(fc)
    as_ir = {"dO": d_o.reshape(fc.tensor_shape("O")), "W": w.reshape(fc.tensor_shape("W"))}
    assert np.array_equal(reference_output(bwd, as_ir).reshape(2, 5), d_o @ w)
    dw = reference_output(training.weight_update(fc), {"I": x.reshape(fc.tensor_shape("I")), "dO": as_ir["dO"]})
    assert np.array_equal(dw.reshape(3, 5), d_o.T @ x)
    mm = ops.matmul("mm", 3, 4, 5, batch=2)
    a, b, g = rng.integers(-3, 4, (2, 3, 4)), rng.integers(-3, 4, (4, 5)), rng.integers(-3, 4, (2, 3, 5))
    (mm_bwd,) = training.backward_data(mm)
    assert np.array_equal(reference_output(mm_bwd, {"dO": g, "W": b}), g @ b.T)
    assert np.array_equal(reference_output(training.weight_update(mm), {"I": a, "dO": g}),
                          np.einsum("bmk,bmn->kn", a, g))


def test_against_torch_autograd() -> None:
    torch = pytest.importorskip("torch")
    functional = pytest.importorskip("torch.nn.functional")
    rng = np.random.default_rng(7)
    for _ in range(25):
        op = random_conv(rng)
        n, g, k, c = (op.bound(d) for d in "NGKC")
        h, w_in = op.attr("in_hw")
        pt, pl, pb, pr = op.attr("padding")
        x = torch.tensor(rng.integers(-3, 4, (n, g * c, h, w_in)), dtype=torch.float64, requires_grad=True)
        weight = torch.tensor(rng.integers(-3, 4, (g * k, c, op.bound("R"), op.bound("S"))), dtype=torch.float64,
                              requires_grad=True)
        out = functional.conv2d(functional.pad(x, (pl, pr, pt, pb)), weight, stride=op.attr("stride"),
                                dilation=op.attr("dilation"), groups=g)
        assert tuple(out.shape) == (n, g * k, op.bound("P"), op.bound("Q"))
        d_o = rng.integers(-3, 4, tuple(out.shape))
        (out * torch.tensor(d_o, dtype=torch.float64)).sum().backward()
        w_ir = weight.detach().numpy().astype(np.int64).reshape(op.tensor_shape("W"))
        d_o_ir = d_o.reshape(op.tensor_shape("O"))
        grad = backward_gradient(op, d_o_ir, w_ir)  # padded coordinates; crop the border (and extend past
        rows, cols = grad.shape[3:]                 # the last window: rows no window reads get zero)
        full = np.zeros((n, g, c, max(rows, pt + h), max(cols, pl + w_in)), dtype=np.int64)
        full[..., :rows, :cols] = grad
        got_di = full[..., pt:pt + h, pl:pl + w_in].reshape(n, g * c, h, w_in)
        assert np.array_equal(got_di, x.grad.numpy().astype(np.int64)), op
        x_ir = functional.pad(x.detach(), (pl, pr, pt, pb)).numpy().astype(np.int64)[..., :rows, :cols]
        got_dw = reference_output(training.weight_update(op), {"I": x_ir.reshape(op.tensor_shape("I")),
                                                                "dO": d_o_ir})
        assert np.array_equal(got_dw.reshape(weight.shape), weight.grad.numpy().astype(np.int64)), op


def test_derived_outputs_have_no_window_axes_and_roles_follow_the_report() -> None:
    rng = np.random.default_rng(11)
    for _ in range(40):
        op = random_conv(rng)
        for derived in (*training.backward_data(op), training.weight_update(op)):
            assert all(a.terms == ((a.terms[0][0], 1),) for a in derived.output.axes), derived
        bwd = training.backward_data(op)[0]
        assert [(t.name, t.role) for t in bwd.tensors] == [("dO", "input"), ("W", "weight"), ("dI", "output")]
        wgt = training.weight_update(op)
        assert [(t.name, t.role) for t in wgt.tensors] == [("I", "input"), ("dO", "weight"), ("dW", "output")]
        assert wgt.macs == op.macs and wgt.dims == op.dims


@pytest.mark.parametrize("stride, kernel, padding, phases", [
    (1, 3, 1, 1), (2, 3, 1, 4), (2, 1, 0, 1), (3, 3, 0, 9), (2, 2, 0, 4), (1, 1, 0, 1)])
def test_backward_macs_equal_forward_macs_for_same_padding(stride: int, kernel: int, padding: int,
                                                           phases: int) -> None:
    op = ops.conv2d("c", 8, 16, (12, 12), kernel, stride, padding)
    bwd = training.backward_data(op)
    assert len(bwd) == phases
    assert sum(p.macs for p in bwd) == op.macs  # a zero-stuffed transposed conv: stride**2 times as many
    assert [p.name for p in bwd] == (["c.bwd"] if phases == 1 else
                                     [f"c.bwd.p{a}_{b}" for a in range(stride) for b in range(stride)])


def _axis_accounting(op: Operator, axis: int) -> tuple[int, int, int]:
    """(forward products landing on real input, backward products with an in-range dO, all backward
    products) along one spatial axis: the MAC counts factor over the two axes."""
    out, taps = (op.bound("P"), op.bound("R")) if axis == 0 else (op.bound("Q"), op.bound("S"))
    stride, dil = op.attr("stride")[axis], op.attr("dilation")[axis]
    lo = op.attr("padding")[axis]
    hi = min(op.tensor_shape("I")[3 + axis], lo + op.attr("in_hw")[axis])
    useful = sum(lo <= stride * p + dil * r < hi for p in range(out) for r in range(taps))
    rows = training.axis_phases(out, taps, stride, dil, lo, hi)
    in_range = sum(0 <= u + ph.grad_offset() < out for ph in rows for m in range(ph.rows) for u in
                   (m + ph.dil * j for j in range(ph.taps)))
    return useful, in_range, sum(ph.rows * ph.taps for ph in rows)


def test_backward_macs_are_the_useful_forward_products_plus_the_gradient_border() -> None:
    """Every forward product whose input element is real is computed once; the other backward
    products multiply dO's zero border (none multiplies a stuffed zero: there are none)."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        op = random_conv(rng)
        per_axis = [_axis_accounting(op, a) for a in (0, 1)]
        for useful, in_range, total in per_axis:
            assert useful == in_range <= total
        channels = op.bound("N") * op.bound("G") * op.bound("K") * op.bound("C")
        assert sum(p.macs for p in training.backward_data(op)) == channels * per_axis[0][2] * per_axis[1][2]


@pytest.mark.parametrize("model", ["resnet18", "mobilenetv2", "vgg16"])
def test_network_training_macs_equal_forward(model: str) -> None:
    net = zoo.get(model)
    train = training.training_network(net, training.PASSES)
    forward = sum(layer.op.macs for layer in net.layers if training.is_trainable(layer.op))
    for which in ("backward", "weight-update"):
        assert sum(layer.op.macs for layer in train.layers if layer.op.attr("pass") == which) == forward


def test_training_network_layers_names_and_inputs() -> None:
    net = zoo.get("resnet18")
    train = training.training_network(net, ("forward", "backward", "weight-update"))
    names = [layer.name for layer in train.layers]
    assert names[:7] == ["conv1", "conv1.bwd.p0_0", "conv1.bwd.p0_1", "conv1.bwd.p1_0", "conv1.bwd.p1_1",
                         "conv1.wgt", "maxpool"]
    assert train.layer("conv1.wgt").inputs == ("input", "conv1.dO")
    assert train.layer("fc.wgt").output_shape == (1000, 512)
    only = training.training_network(net, ("weight-update",))
    assert all(name.endswith(".wgt") for name in (layer.name for layer in only.layers))
    assert only.layer("conv1.wgt").inputs == ("conv1.I", "conv1.dO")
    assert training.training_network(net, ("forward",)) is net
    pools = Network("pools", (net.layer("maxpool"),), (("conv1", (1, 64, 112, 112)),))
    with pytest.raises(DnnmapError, match="no convolution, FC or matmul"):
        training.training_network(pools, ("backward",))


@pytest.mark.parametrize("value, want", [
    ("all", ("forward", "backward", "weight-update")), ("forward", ("forward",)),
    ("weight-update,backward", ("backward", "weight-update")), ("bwd", ("backward",)), (None, ("forward",))])
def test_parse_passes(value, want) -> None:
    assert training.parse_passes(value) == want


@pytest.mark.parametrize("value", ["", "backwards", "forward,x"])
def test_parse_passes_refuses(value: str) -> None:
    with pytest.raises(DnnmapError, match="training pass"):
        training.parse_passes(value)


def test_untrainable_layers_are_refused() -> None:
    with pytest.raises(DnnmapError, match="training passes are derived for"):
        training.backward_data(ops.pool("p", 2, 4, 2))


def test_derived_operators_round_trip_through_mapping_files_and_tampering_is_caught() -> None:
    op = ops.conv2d("c", 4, 6, (9, 9), 3, 2, 1, 1, 2)
    for derived in (*training.backward_data(op), training.weight_update(op)):
        assert operator_from_dict(operator_to_dict(derived)) == derived
    phase = training.backward_data(op)[1]
    wrong = dataclasses.replace(phase, dims=tuple((d, b + (d == "R")) for d, b in phase.dims))
    with pytest.raises(InputFileError, match="differ"):
        operator_from_dict(operator_to_dict(wrong))
    attrs = tuple((k, (5, 5) if k == "phase" else v) for k, v in phase.attrs)
    with pytest.raises(InputFileError, match="not a phase"):
        operator_from_dict(operator_to_dict(dataclasses.replace(phase, attrs=attrs)))


def test_training_network_round_trips_through_a_network_file(tmp_path) -> None:
    from dnnmap.workload.importers import load_network

    train = training.training_network(zoo.get("lenet5"), training.PASSES)
    path = tmp_path / "train.yaml"
    path.write_text(dumps(train))
    assert load_network(path).layers == train.layers
