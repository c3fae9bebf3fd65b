"""The NumPy reference operator against independent naive loops and np.einsum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.sim.reference import random_tensors, reference_output
from dnnmap.workload import ops


def naive_conv2d(inp: np.ndarray, wgt: np.ndarray, stride: tuple[int, int], dilation: tuple[int, int],
                 out_hw: tuple[int, int]) -> np.ndarray:
    """Seven nested Python loops over padded input ``inp[n, g, c, h, w]`` and ``wgt[g, k, c, r, s]``."""
    n_, g_, c_, _, _ = inp.shape
    _, k_, _, r_, s_ = wgt.shape
    out = np.zeros((n_, g_, k_, *out_hw), dtype=np.int64)
    for n, g, k, c, p, q, r, s in itertools.product(range(n_), range(g_), range(k_), range(c_), range(out_hw[0]),
                                                    range(out_hw[1]), range(r_), range(s_)):
        out[n, g, k, p, q] += inp[n, g, c, stride[0] * p + dilation[0] * r, stride[1] * q + dilation[1] * s] \
            * wgt[g, k, c, r, s]
    return out


@pytest.mark.parametrize("cin, cout, hw, kernel, stride, padding, dilation, groups, batch", [
    (2, 3, (5, 6), 3, 1, 1, 1, 1, 1),
    (4, 6, (6, 5), (3, 2), (2, 1), (1, 0), 1, 2, 2),
    (3, 3, (7, 7), 3, 2, 2, 2, 3, 1),  # depthwise, strided, dilated
    (2, 4, (4, 4), 1, 2, 0, 1, 1, 1),  # strided pointwise
])
def test_conv2d_matches_naive_loops(cin, cout, hw, kernel, stride, padding, dilation, groups, batch) -> None:
    op = ops.conv2d("c", cin, cout, hw, kernel, stride, padding, dilation, groups, batch)
    tensors = random_tensors(op, np.random.default_rng(0))
    b = op.bounds
    sh, sw = op.attr("stride")
    dh, dw = op.attr("dilation")
    expected = naive_conv2d(tensors["I"], tensors["W"], (sh, sw), (dh, dw), (b["P"], b["Q"]))
    np.testing.assert_array_equal(reference_output(op, tensors), expected)


def test_matmul_and_mttkrp_match_einsum() -> None:
    rng = np.random.default_rng(1)
    mm = ops.matmul("mm", 5, 7, 3, batch=2)
    t = random_tensors(mm, rng)
    np.testing.assert_array_equal(reference_output(mm, t), np.einsum("bmk,kn->bmn", t["I"], t["W"]))
    mttkrp = ops.einsum("m", "ikl,kj,lj->ij", {"i": 3, "k": 4, "l": 5, "j": 2})
    t = random_tensors(mttkrp, rng)
    np.testing.assert_array_equal(reference_output(mttkrp, t), np.einsum("ikl,kj,lj->ij", t["T0"], t["T1"], t["T2"]))


@pytest.mark.parametrize("mode", ["max", "avg"])
def test_pooling_matches_naive_windows(mode: str) -> None:
    op = ops.pool("p", 2, (7, 6), 3, stride=2, padding=1, mode=mode)
    tensors = random_tensors(op, np.random.default_rng(2))
    inp = tensors["I"]
    b = op.bounds
    expected = np.zeros((1, 2, b["P"], b["Q"]), dtype=np.int64)
    for g, p, q in itertools.product(range(2), range(b["P"]), range(b["Q"])):
        window = inp[0, g, 2 * p:2 * p + 3, 2 * q:2 * q + 3]
        expected[0, g, p, q] = window.max() if mode == "max" else window.sum()  # avg is left undivided
    np.testing.assert_array_equal(reference_output(op, tensors), expected)


def test_add_and_concat_are_sums_and_copies() -> None:
    rng = np.random.default_rng(3)
    add = ops.eltwise("a", 3, (4, 2), n_inputs=3)
    t = random_tensors(add, rng)
    np.testing.assert_array_equal(reference_output(add, t), t["I"] + t["I1"] + t["I2"])
    cat = ops.concat("c", 3, (2, 2))
    t = random_tensors(cat, rng)
    np.testing.assert_array_equal(reference_output(cat, t), t["I"])


def test_wrong_tensor_shape_is_rejected() -> None:
    op = ops.matmul("mm", 2, 2, 2)
    with pytest.raises(ValueError, match="tensor W"):
        reference_output(op, {"I": np.zeros((1, 2, 2), np.int64), "W": np.zeros((3, 2), np.int64)})
