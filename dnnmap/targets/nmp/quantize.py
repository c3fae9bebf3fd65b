"""Per-tensor fixed-point Q-points from calibration runs (TSO Section V, "Quantization").

A value v of a tensor with ``frac`` fractional bits is stored as round(v * 2**frac) in a signed
``bits``-bit word (8 or 16). The steps, as the paper lists them:

1. *Probes and calibration*: the float network (batch norm already folded) runs on a set of
   calibration inputs; the network input, every convolution/FC output and every add output are
   probed for their largest magnitude. A probed tensor gets the largest ``frac`` with
   max|v| * 2**frac <= 2**(bits-1) - 1.
2. *Forward propagation*: ops without probes (max and average pooling, concat) give their output the
   Q-point of their input.
3. *Backward alignment*: the inputs of an Add or a Concat must share one Q-point (a Concat's output
   too), so they and everything tied to them by step 2 take the smallest ``frac`` among
   them (the one with the most integer bits: nothing overflows). Steps 2 and 3 are equalities between
   tensors; they are solved together as groups (union-find), each group taking the smallest ``frac``
   of its probed members, which is the fixpoint of repeating the forward and backward passes.

Weights get one Q-point per layer from their largest magnitude, biases are kept at the accumulator's
scale frac(input) + frac(weight) in 32 bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.errors import InputFileError
from dnnmap.targets.nmp.forward import float_forward
from dnnmap.targets.nmp.layers import NmpLayer
from dnnmap.targets.nmp.params import ConvParams
from dnnmap.workload.ir import Network

BITS_CHOICES = (8, 16)
BIAS_BITS = 32
AVG_RECIP_BITS = 15  # average pooling multiplies the window sum by round(2**15 / window) (docs/nmp.md)
FRAC_RANGE = (-16, 30)  # Q-points the shift fields can express


def frac_for(max_abs: float, bits: int) -> int:
    """The largest fractional bit count with max_abs * 2**frac <= 2**(bits-1) - 1."""
    if max_abs <= 0:
        return bits - 1
    f = int(np.floor(np.log2((2 ** (bits - 1) - 1) / max_abs)))
    return int(np.clip(f, *FRAC_RANGE))


def to_fixed(x: np.ndarray, frac: int, bits: int) -> np.ndarray:
    """round(x * 2**frac) saturated to a signed ``bits``-bit word, as int64."""
    lim = 2 ** (bits - 1)
    return np.clip(np.round(np.asarray(x, dtype=np.float64) * 2.0 ** frac), -lim, lim - 1).astype(np.int64)


@dataclass(frozen=True)
class QuantNet:
    """The quantized network: Q-point per tensor, integer weights and biases per convolution."""

    bits: int
    frac: dict[str, int]  # tensor (network input or layer output) -> fractional bits
    w_frac: dict[str, int]
    weights: dict[str, np.ndarray]  # int64, M x N x Kh x Kw
    biases: dict[str, np.ndarray]  # int64 at frac(input) + frac(weight)

    def shift(self, ly: NmpLayer) -> int:
        """Right shift from the layer's accumulator to its output Q-point (negative: left shift)."""
        f_in = self.frac[ly.inputs[0]]
        acc = f_in + self.w_frac[ly.name] if ly.is_conv else f_in
        return acc - self.frac[ly.name]


class _Groups:
    """Union-find over tensor names."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, a: str) -> str:
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def calibrate(network: Network, layers: tuple[NmpLayer, ...], params: dict[str, ConvParams],
              inputs: list[np.ndarray]) -> dict[str, float]:
    """Largest magnitude of every probed tensor over the calibration inputs (step 1)."""
    probed = {network.inputs[0][0]} | {ly.name for ly in layers if ly.is_conv or ly.kind == "add"}
    peak = dict.fromkeys(probed, 0.0)
    for x in inputs:
        values = float_forward(network, layers, params, x)
        for name in probed:
            peak[name] = max(peak[name], float(np.max(np.abs(values[name]))))
    return peak


def choose_qpoints(network: Network, layers: tuple[NmpLayer, ...], peak: dict[str, float], bits: int) -> dict[str, int]:
    """Steps 1-3: Q-points of every tensor from the probed peaks, forward propagation and Add alignment."""
    groups = _Groups()
    for name in [network.inputs[0][0], *(ly.name for ly in layers)]:
        groups.find(name)
    for ly in layers:
        if ly.kind in ("pool_max", "pool_avg", "concat"):  # step 2: no probe, the input's Q-point
            groups.union(ly.name, ly.inputs[0])
        if ly.kind in ("add", "concat"):  # step 3: the inputs share one Q-point
            for other in ly.inputs[1:]:
                groups.union(other, ly.inputs[0])
    best: dict[str, int] = {}
    for name, value in peak.items():
        root = groups.find(name)
        best[root] = min(best.get(root, FRAC_RANGE[1]), frac_for(value, bits))
    return {name: best[groups.find(name)] for name in groups.parent}


def quantize(network: Network, layers: tuple[NmpLayer, ...], params: dict[str, ConvParams],
             calibration: list[np.ndarray], bits: int) -> QuantNet:
    """The quantized network for folded ``params`` calibrated on ``calibration`` inputs."""
    if bits not in BITS_CHOICES:
        raise InputFileError(f"fixed-point width must be one of {', '.join(map(str, BITS_CHOICES))} bits, got {bits}")
    frac = choose_qpoints(network, layers, calibrate(network, layers, params, calibration), bits)
    w_frac = {ly.name: frac_for(float(np.max(np.abs(params[ly.name].weight))), bits) for ly in layers if ly.is_conv}
    return with_qpoints(layers, params, frac, w_frac, bits)


def with_qpoints(layers: tuple[NmpLayer, ...], params: dict[str, ConvParams], frac: dict[str, int],
                 w_frac: dict[str, int], bits: int) -> QuantNet:
    """The quantized network for folded ``params`` at given Q-points (integer weights and biases)."""
    weights, biases = {}, {}
    for ly in layers:
        if ly.is_conv:
            p = params[ly.name]
            weights[ly.name] = to_fixed(p.weight, w_frac[ly.name], bits)
            biases[ly.name] = to_fixed(p.bias, frac[ly.inputs[0]] + w_frac[ly.name], BIAS_BITS)
    return QuantNet(bits, frac, w_frac, weights, biases)
