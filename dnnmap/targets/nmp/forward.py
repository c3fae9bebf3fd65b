"""Whole-network forward passes in NumPy: the float network and the layer-at-a-time walk both references use.

The window accumulations (convolution, pooling sums and maxima, element-wise sums) are the project's
NumPy layer reference, :func:`dnnmap.sim.reference.reference_output`, on zero-padded inputs (the IR's
padded coordinates). The float pass applies each convolution's bias and its *unfolded* batch norm,
so comparing it with the quantized network (built from the folded parameters) also checks the fold.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dnnmap.sim.reference import reference_output
from dnnmap.targets.nmp.layers import NmpLayer
from dnnmap.targets.nmp.params import ConvParams
from dnnmap.workload.ir import Network, Operator

LayerFn = Callable[[NmpLayer, Operator, list[np.ndarray]], np.ndarray]


def pad_map(x: np.ndarray, ly: NmpLayer) -> np.ndarray:
    """``x`` (C x H x W) zero-padded to the layer's padded input extent."""
    pt, pl, _, _ = ly.padding
    hp, wp = ly.padded_hw
    out = np.zeros((x.shape[0], hp, wp), dtype=x.dtype)
    h, w = min(x.shape[1], hp - pt), min(x.shape[2], wp - pl)
    out[:, pt:pt + h, pl:pl + w] = x[:, :h, :w]
    return out


def window_sum(ly: NmpLayer, op: Operator, ins: list[np.ndarray], weight: np.ndarray | None = None) -> np.ndarray:
    """The layer's accumulation (M x R x C) by the project's layer reference: convolution sums of products,
    pooling window sums or maxima, element-wise sums; ``ins`` are C x H x W maps as produced."""
    if ly.is_conv:
        x = ins[0].reshape(ly.in_features, 1, 1) if ly.kind == "fc" else pad_map(ins[0], ly)
        tensors = {"I": x.reshape(op.tensor_shape("I")), "W": weight.reshape(op.tensor_shape("W"))}
    elif ly.kind == "add":
        tensors = {t.name: a.reshape(op.tensor_shape(t.name)) for t, a in zip(op.inputs, ins, strict=True)}
    else:  # pooling; concat: a copy of the stacked inputs
        x = np.concatenate(ins) if ly.kind == "concat" else ins[0]
        tensors = {"I": pad_map(x, ly).reshape(op.tensor_shape("I"))}
    return reference_output(op, tensors).reshape(ly.out_shape)


def run(network: Network, layers: tuple[NmpLayer, ...], x: np.ndarray, fn: LayerFn) -> dict[str, np.ndarray]:
    """Every tensor of the network (input and layer outputs, C x H x W) for input ``x``."""
    values = {network.inputs[0][0]: x}
    for layer, ly in zip(network.layers, layers, strict=True):
        values[ly.name] = fn(ly, layer.op, [values[s] for s in ly.inputs])
    return values


def float_forward(network: Network, layers: tuple[NmpLayer, ...], params: dict[str, ConvParams],
                  x: np.ndarray) -> dict[str, np.ndarray]:
    """The float network (float64): conv + bias + batch norm + relu, pools, adds."""

    def layer(ly: NmpLayer, op: Operator, ins: list[np.ndarray]) -> np.ndarray:
        if ly.is_conv:
            p = params[ly.name]
            y = window_sum(ly, op, ins, p.weight) + p.bias[:, None, None]
            if p.bn is not None:
                y = p.bn.apply(y)
        else:
            y = window_sum(ly, op, ins)
            if ly.kind == "pool_avg":
                y = y / (ly.kernel[0] * ly.kernel[1])
        return np.clip(y, 0.0, 6.0 if ly.activation == "relu6" else None) if ly.activation else y

    return run(network, layers, np.asarray(x, dtype=np.float64), layer)
