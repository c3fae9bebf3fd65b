"""The convolution tuple TSO works on (Section IV, notation of Eqs. 1-9), read from a core :class:`Operator`.

TSO describes a convolution by N input channels of H x L, M filters of N x K x K, stride S and an
R x C output. The paper covers standard convolutions only; the other layer kinds are mapped onto
the same tuple (docs/tso.md, "Layers the paper leaves out"):

- ``pointwise`` and ``fc``: a convolution with K = 1 (FC: a 1x1 map, H = L = R = C = 1);
- ``depthwise``, pooling, ``add`` and ``concat``: *channelwise* layers, where output channel m
  reads input channel m only. N is 1, the IN tile's depth is the channel tile T_M, and pooling,
  add and concat have no W tile (add reads ``n_inputs`` IN tiles);
- grouped convolutions that are not depthwise: ``groups`` sequential convolutions of per-group shape.

Heights and widths are in the IR's padded coordinates (TSO Eq. 1: H = (R - 1) S + K).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import MappingError
from dnnmap.workload.ir import Operator
from dnnmap.workload.kinds import KINDS, ConvGeometry

# TSO's tuple covers convolutions and the channelwise layers of the CNNs it schedules (depthwise, pooling,
# residual add, concat); element-wise mul and identity are not modelled, nor matmul and einsum, nor the
# transformer kinds of several operations per element (softmax, norms, ...: TSO's time is one per iteration).
TSO_KINDS = frozenset(k.name for k in KINDS.values() if (k.conv or k.channelwise) and k.ops == 1) - {"mul", "identity"}


@dataclass(frozen=True)
class TsoLayer:
    """One layer in TSO's notation. For channelwise layers ``N == 1`` and ``M`` is the channel count."""

    name: str
    kind: str
    N: int  # input channels (per group)
    M: int  # filters (output channels per group); channels of a channelwise layer
    R: int  # output rows
    C: int  # output columns
    Kh: int
    Kw: int
    Sh: int = 1
    Sw: int = 1
    Dh: int = 1
    Dw: int = 1
    groups: int = 1  # sequential repetitions (grouped, non-depthwise convolutions)
    channelwise: bool = False
    weights: bool = True
    n_inputs: int = 1  # IN tensors read per output element (add: 2 or more)

    @property
    def H(self) -> int:
        """Padded IFM rows, TSO Eq. 1 with T_R = R."""
        return (self.R - 1) * self.Sh + self.Dh * (self.Kh - 1) + 1

    @property
    def L(self) -> int:
        """Padded IFM columns, TSO Eq. 1 with T_C = C."""
        return (self.C - 1) * self.Sw + self.Dw * (self.Kw - 1) + 1

    @property
    def macs(self) -> int:
        """Multiply-accumulates (window operations for pooling, additions for add, copies for concat)."""
        return self.groups * self.M * self.N * self.R * self.C * self.Kh * self.Kw * max(1, self.n_inputs - 1)


def tso_layer(op: Operator) -> TsoLayer:
    """The TSO tuple of ``op``; raises :class:`MappingError` for kinds TSO cannot schedule (einsum, matmul)."""
    if op.kind not in TSO_KINDS:
        raise MappingError(f"layer {op.name!r}: the TSO mapper handles convolution, pointwise, FC, depthwise, "
                           f"pooling, add and concat layers, not {op.kind!r}; use --mapper auto for it")
    g = ConvGeometry.of(op)
    if g.batch != 1:
        raise MappingError(f"layer {op.name!r}: the TSO mapper schedules batch 1 only (N = {g.batch}); "
                           "map each image separately or use another mapper")
    kind = KINDS[op.kind]
    common = dict(name=op.name, kind=op.kind, R=g.out_hw[0], C=g.out_hw[1], Kh=g.kernel[0], Kw=g.kernel[1],
                  Sh=g.stride[0], Sw=g.stride[1], Dh=g.dilation[0], Dw=g.dilation[1])
    if not kind.channelwise:
        return TsoLayer(N=g.in_per_group, M=g.out_per_group, groups=g.groups, **common)
    n_inputs = sum(t.role == "input" for t in op.tensors)  # add reads several maps
    return TsoLayer(N=1, M=g.groups, channelwise=True, weights=bool(kind.weights), n_inputs=n_inputs, **common)
