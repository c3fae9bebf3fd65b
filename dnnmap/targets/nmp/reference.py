"""NumPy fixed-point reference of the quantized network: the golden model the NMP simulator must match
bit-exactly. Whole tensors at once; accumulations by the project's layer reference
(:func:`dnnmap.targets.nmp.forward.window_sum`), requantization as docs/nmp.md defines it:

- convolution / FC: acc = bias + sum(x * w) (wide accumulator), y = sat(rshift_round(acc, shift));
- average pooling: y = sat(rshift_round(window_sum * round(2**15 / window), 15)) (same Q-point);
- max pooling: the window maximum (same Q-point);
- add: y = sat(rshift_round(a + b, shift)) (both inputs share a Q-point);
- concat: a copy (all inputs share the output's Q-point);
- then relu (max 0) or relu6 (clip to [0, min(round(6 * 2**frac), 2**(bits-1) - 1)]). rshift_round(v, s) = floor((v + 2**(s-1)) / 2**s) for s > 0, v * 2**-s otherwise.
"""

from __future__ import annotations

import numpy as np

from dnnmap.targets.nmp.forward import run, window_sum
from dnnmap.targets.nmp.layers import NmpLayer
from dnnmap.targets.nmp.quantize import AVG_RECIP_BITS, QuantNet
from dnnmap.workload.ir import Network, Operator


def requantize(acc: np.ndarray, shift: int, bits: int) -> np.ndarray:
    """Round half up by ``shift`` bits (left shift when negative), saturate to signed ``bits``."""
    acc = acc.astype(np.int64)
    scaled = (acc + (1 << (shift - 1))) >> shift if shift > 0 else acc * (1 << -shift)
    return np.clip(scaled, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)


def relu6_limit(frac: int, bits: int) -> int:
    """6.0 at Q-point ``frac``, saturated."""
    return min(round(6 * 2.0 ** frac), 2 ** (bits - 1) - 1)


def avg_reciprocal(ly: NmpLayer) -> int:
    return round(2 ** AVG_RECIP_BITS / (ly.kernel[0] * ly.kernel[1]))


def fixed_forward(network: Network, layers: tuple[NmpLayer, ...], q: QuantNet,
                  x_int: np.ndarray) -> dict[str, np.ndarray]:
    """Every tensor of the quantized network (int64 words) for the quantized input ``x_int``."""

    def layer(ly: NmpLayer, op: Operator, ins: list[np.ndarray]) -> np.ndarray:
        if ly.is_conv:
            acc = window_sum(ly, op, ins, q.weights[ly.name]) + q.biases[ly.name][:, None, None]
            y = requantize(acc, q.shift(ly), q.bits)
        elif ly.kind == "pool_avg":
            y = requantize(window_sum(ly, op, ins) * avg_reciprocal(ly), AVG_RECIP_BITS, q.bits)
        elif ly.kind in ("pool_max", "concat"):
            y = window_sum(ly, op, ins)
        else:
            y = requantize(window_sum(ly, op, ins), q.shift(ly), q.bits)
        if ly.activation == "relu6":
            return np.clip(y, 0, relu6_limit(q.frac[ly.name], q.bits))
        return np.maximum(y, 0) if ly.activation else y

    return run(network, layers, np.asarray(x_int, dtype=np.int64), layer)
