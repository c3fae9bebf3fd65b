"""NumPy reference of the NVE arithmetic: the golden model the ISS output must match bit-exactly.

q = b + Σ_inputs Σ_{r,s} w[r,s] · p[sv·y + r, sw·x + s] (NVE Eq. 2.1) with 8-bit
unsigned pixels, 16-bit signed weights and bias, wrapped to the 32-bit accumulator;
then the activation LUT (NVE §3.1 ②, Eq. 2.2): the 10-bit index is the accumulator
arithmetically shifted right by ``act_shift`` and saturated to [-512, 511] [choice,
docs/nve.md §Activation]; the LUT holds an 8-bit sigmoid.
"""

from __future__ import annotations

import numpy as np

from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.spec import NveSpec


def activation_lut(spec: NveSpec) -> np.ndarray:
    """The 1024-entry (10-bit index) LUT: round(255 * sigmoid((i - 512) / act_lut_scale))."""
    half = spec.act_lut_entries // 2
    x = (np.arange(spec.act_lut_entries) - half) / spec.act_lut_scale
    return np.round(255.0 / (1.0 + np.exp(-x))).astype(np.uint8)


def wrap_acc(values: np.ndarray, spec: NveSpec) -> np.ndarray:
    """Two's-complement wrap to the accumulator width."""
    m = 1 << spec.acc_bits
    return ((values.astype(np.int64) + (m >> 1)) % m) - (m >> 1)


def activate(acc: np.ndarray, spec: NveSpec, lut: np.ndarray | None = None) -> np.ndarray:
    """LUT activation of wrapped accumulator values."""
    table = activation_lut(spec) if lut is None else lut
    half = spec.act_lut_entries // 2
    idx = np.clip(np.right_shift(acc.astype(np.int64), spec.act_shift), -half, half - 1) + half
    return table[idx]


def random_operands(layer: ConvLayer, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random 8-bit pixels (in_maps, H, W), 16-bit weights (out, in, kh, kw; 0 where unconnected), biases.

    Each output map draws its weights from a random width of 1-16 bits, so that some maps'
    accumulators fall inside the activation LUT's range (and index its entries) while
    others saturate or wrap: full-range weights alone would saturate almost every output.
    """
    h, w = layer.in_hw
    pixels = rng.integers(0, 256, size=(layer.in_maps, h, w), dtype=np.uint8)
    kh, kw = layer.kernel
    half = (1 << (rng.integers(1, 17, size=layer.out_maps) - 1))[:, None, None, None]  # weights in [-half, half)
    weights = rng.integers(-half, half, size=(layer.out_maps, layer.in_maps, kh, kw))
    mask = np.zeros((layer.out_maps, layer.in_maps), dtype=bool)
    for k, conn in enumerate(layer.connections):
        mask[k, list(conn)] = True
    weights = np.where(mask[:, :, None, None], weights, 0).astype(np.int16)
    bias = rng.integers(-(1 << 15), 1 << 15, size=layer.out_maps, dtype=np.int64).astype(np.int16)
    return pixels, weights, bias


def conv_reference(layer: ConvLayer, pixels: np.ndarray, weights: np.ndarray, bias: np.ndarray,
                   spec: NveSpec) -> tuple[np.ndarray, np.ndarray]:
    """(accumulators int64 (out, P, Q) wrapped to acc_bits, activated uint8 outputs (out, P, Q))."""
    (p, q), (kh, kw), (sv, sw) = layer.out_hw, layer.kernel, layer.subsample
    acc = np.zeros((layer.out_maps, p, q), dtype=np.int64)
    acc += bias.astype(np.int64)[:, None, None]
    x = pixels.astype(np.int64)
    for k, conn in enumerate(layer.connections):
        for m in conn:
            for r in range(kh):
                for s in range(kw):
                    window = x[m, r: r + sv * (p - 1) + 1: sv, s: s + sw * (q - 1) + 1: sw]
                    acc[k] += int(weights[k, m, r, s]) * window
    acc = wrap_acc(acc, spec)
    return acc, activate(acc, spec)
