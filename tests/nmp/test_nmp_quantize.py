"""Batch-norm folding and Q-point selection (calibration, forward propagation, Add alignment)."""

from __future__ import annotations

import numpy as np

from dnnmap.targets.nmp.compiler import CALIBRATION_SEED, NmpCompiled, random_inputs
from dnnmap.targets.nmp.forward import float_forward
from dnnmap.targets.nmp.params import folded
from dnnmap.targets.nmp.quantize import calibrate, frac_for


def test_folded_batchnorm_computes_the_same_network(resnet: NmpCompiled) -> None:
    assert all(p.bn is not None for name, p in resnet.params.items() if name != "fc")
    x = random_inputs(resnet.network, 1, 11)[0]
    with_bn = float_forward(resnet.network, resnet.layers, resnet.params, x)
    fold = float_forward(resnet.network, resnet.layers, folded(resnet.params), x)
    for name, value in with_bn.items():
        np.testing.assert_allclose(fold[name], value, rtol=1e-9, atol=1e-9)


def test_frac_is_the_largest_that_does_not_saturate() -> None:
    for peak in (0.003, 0.7, 1.0, 3.9, 100.0):
        for bits in (8, 16):
            f = frac_for(peak, bits)
            assert peak * 2.0 ** f <= 2 ** (bits - 1) - 1 < peak * 2.0 ** (f + 1)


def test_probed_tensors_fit_their_qpoints_and_unprobed_ones_inherit(lenet: NmpCompiled) -> None:
    q = lenet.quant
    cal = random_inputs(lenet.network, 16, CALIBRATION_SEED)
    peaks = calibrate(lenet.network, lenet.layers, folded(lenet.params), cal)
    for name, peak in peaks.items():  # LeNet has no Add: every probed tensor keeps its own Q-point
        assert q.frac[name] == frac_for(peak, q.bits)
    assert q.frac["pool1"] == q.frac["conv1"] and q.frac["pool2"] == q.frac["conv2"]  # forward propagation


def test_add_inputs_share_the_smallest_frac(resnet: NmpCompiled) -> None:
    q = resnet.quant
    peaks = calibrate(resnet.network, resnet.layers, folded(resnet.params),
                      random_inputs(resnet.network, 16, CALIBRATION_SEED))
    for a, b in (("stem", "b1_conv2"), ("b2_proj", "b2_conv2")):
        assert q.frac[a] == q.frac[b] == min(frac_for(peaks[a], q.bits), frac_for(peaks[b], q.bits))
    assert q.frac["gap"] == q.frac["b2_add"]
