"""Operator kinds: one table of what each ``Operator.kind`` is, and one view of a layer's convolution geometry.

The cost model and the simulator read only an operator's loop nest; the kind says which layer the
nest is, and every part that treats kinds differently (validation, MAC counting, the reference
simulator's combine rule, training passes, the TSO and Marvel mappers, fusion, the NMP and NVE
targets) asks this table instead of keeping its own list. A method that supports fewer kinds
derives its subset from the table's properties (or names it with :func:`subset`, which checks the
names against the table) and says why beside it. docs/ir.md "Operator kinds" shows the table and
how to add a kind.

:class:`ConvGeometry` reads batch, channels, groups, map sizes, kernel, stride, padding and dilation
out of a convolution-shaped operator (convolutions, FC, pooling, element-wise, concat) once, with
the defaults of the kinds that lack a field (no kernel: 1 x 1; no stride attribute: 1; ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from dnnmap.errors import DnnmapError

if TYPE_CHECKING:
    from dnnmap.workload.ir import Operator

CombineRule = Literal["product", "sum", "max"]

CONV_DIMS = ("N", "G", "K", "C", "P", "Q", "R", "S")
_POOL_DIMS = ("N", "G", "P", "Q", "R", "S")
_MAP_DIMS = ("N", "G", "P", "Q")
_CONV_ATTRS = ("stride", "padding", "dilation", "groups", "in_hw", "in_channels", "out_channels")


@dataclass(frozen=True)
class OperatorKind:
    """One row of the kind table: the properties every consumer of ``Operator.kind`` reads."""

    name: str
    constructor: str  # the function of dnnmap.workload.ops that builds it (kinds it builds alike are one family)
    dims: tuple[str, ...] | None  # loop dimensions of the constructed form (None: any, e.g. einsum)
    attrs: tuple[str, ...]  # attributes the constructor records (validation rebuilds the layer from them)
    weights: bool | None  # reads a weight tensor (None: may or may not)
    macs: bool  # iterations are multiply-accumulates (False: comparisons, additions or copies; macs = 0)
    conv: bool  # a convolution (output channels K from input channels C, weights G x K x C x R x S; FC too)
    channelwise: bool  # output channel g reads input channel g only (G is the channel)
    inputs: int | None  # graph inputs a layer reads (None: one or more)
    combine: CombineRule  # how the operands of one iteration combine (the reference simulator)
    trainable: bool  # backward and weight-update passes are derived (dnnmap.workload.training)
    ops: int = 1  # operations per iteration: 1 for a MAC, comparison, addition or copy; for the transformer
    # kinds the elementary operations (transcendentals count one) per element, docs/ir.md "Transformer kinds"


_K = OperatorKind
_POOL_ATTRS = ("stride", "padding", "in_hw", "kernel")
# name  constructor  dims  attrs  weights  macs  conv  channelwise  inputs  combine  trainable
KINDS: dict[str, OperatorKind] = {k.name: k for k in (
    _K("conv2d", "conv2d", CONV_DIMS, _CONV_ATTRS, True, True, True, False, 1, "product", True),
    _K("pointwise", "conv2d", CONV_DIMS, _CONV_ATTRS, True, True, True, False, 1, "product", True),  # 1x1, groups 1
    _K("depthwise", "conv2d", CONV_DIMS, _CONV_ATTRS, True, True, True, True, 1, "product", True),  # G = channels
    _K("fc", "fully_connected", CONV_DIMS, _CONV_ATTRS, True, True, True, False, 1, "product", True),  # 1x1 map
    _K("matmul", "matmul", ("B", "M", "N", "K"), ("in_features", "out_features"), True, True, False, False, 1,
       "product", True),
    _K("einsum", "einsum", None, ("expr",), None, True, False, False, None, "product", False),
    _K("pool_max", "pool", _POOL_DIMS, _POOL_ATTRS, False, False, False, True, 1, "max", False),
    _K("pool_avg", "pool", _POOL_DIMS, _POOL_ATTRS, False, False, False, True, 1, "sum", False),  # window sum
    _K("add", "eltwise", _MAP_DIMS, (), False, False, False, True, None, "sum", False),
    _K("mul", "eltwise", _MAP_DIMS, (), False, False, False, True, None, "product", False),
    _K("identity", "eltwise", _MAP_DIMS, (), False, False, False, True, 1, "sum", False),
    _K("concat", "concat", _MAP_DIMS, (), False, False, False, True, None, "sum", False),  # a copy
    # transformer kinds over (N batch, G heads, P tokens, Q the row: features or keys), docs/ir.md; the simulator
    # proves their data movement (one input word per output word, row weights), the NumPy forward pass their values
    _K("softmax", "vector", _MAP_DIMS, (), False, False, False, True, 1, "sum", False, 5),  # over Q
    _K("layernorm", "vector", _MAP_DIMS, (), True, False, False, True, 1, "product", False, 7),  # gamma [Q]
    _K("rmsnorm", "vector", _MAP_DIMS, (), True, False, False, True, 1, "product", False, 4),  # gamma [Q]
    _K("gelu", "vector", _MAP_DIMS, (), False, False, False, True, 1, "sum", False, 5),
    _K("silu", "vector", _MAP_DIMS, (), False, False, False, True, 1, "sum", False, 3),
    _K("swiglu", "vector", _MAP_DIMS, (), False, False, False, True, 2, "product", False, 4),  # silu(gate) * up
    _K("rotary", "rotary", _MAP_DIMS, (), True, False, False, True, 1, "product", False, 3),  # rot [P, Q]
)}
CONSTRUCTOR_ATTRS = frozenset(a for k in KINDS.values() for a in k.attrs)


def kind_of(op: Operator) -> OperatorKind | None:
    """The table row of ``op``'s kind (None for kinds outside the table, e.g. training passes ``conv2d.bwd``)."""
    return KINDS.get(op.kind)


def names(**props: object) -> frozenset[str]:
    """The kinds whose properties equal ``props``, e.g. ``names(conv=True)``."""
    unknown = set(props) - set(OperatorKind.__dataclass_fields__)
    if unknown:
        raise TypeError(f"no kind property {sorted(unknown)}")
    return frozenset(k.name for k in KINDS.values() if all(getattr(k, p) == v for p, v in props.items()))


def subset(*kinds: str) -> frozenset[str]:
    """``kinds`` as a set, checked against the table (a method's own restriction, named with its reason)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown operator kind(s) {unknown}; kinds: {', '.join(KINDS)}")
    return frozenset(kinds)


def _pair(value: object, default: tuple[int, ...]) -> tuple[int, ...]:
    return default if value is None else tuple(int(v) for v in value)  # type: ignore[union-attr]


@dataclass(frozen=True)
class ConvGeometry:
    """A convolution-shaped layer (convolution, FC, pooling, element-wise, concat) in one set of words.

    Channels per group are 1 for kinds without K or C (pooling, element-wise: ``groups`` is the channel
    count); the kernel is 1 x 1 without R and S; stride and dilation are 1 and padding 0 without the
    attributes; ``in_hw`` is the ``in_hw`` attribute (unpadded input), else the padded extent the outputs read.
    """

    batch: int  # N
    groups: int  # G (the channels of a channelwise layer)
    out_per_group: int  # K
    in_per_group: int  # C
    out_hw: tuple[int, int]  # P, Q
    kernel: tuple[int, int]  # R, S
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]
    in_hw: tuple[int, int]

    @property
    def in_channels(self) -> int:
        return self.groups * self.in_per_group

    @property
    def out_channels(self) -> int:
        return self.groups * self.out_per_group

    @staticmethod
    def of(op: Operator) -> ConvGeometry:
        """The geometry of ``op``; DnnmapError naming the layer when its loop nest is not convolution-shaped
        (dimensions other than N, G, K, C, P, Q, R, S, or no output rows and columns P, Q)."""
        b = op.bounds
        if not {"P", "Q"} <= set(b) or not set(b) <= set(CONV_DIMS):
            raise DnnmapError(f"layer {op.name!r} ({op.kind}): dimensions {', '.join(b)} are not a convolution's "
                              f"({', '.join(CONV_DIMS)}, with P and Q)")
        kernel = (b.get("R", 1), b.get("S", 1))
        stride = _pair(op.attr("stride"), (1, 1))
        dilation = _pair(op.attr("dilation"), (1, 1))
        out_hw = (b["P"], b["Q"])
        padded = tuple((o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out_hw, stride, dilation, kernel))
        return ConvGeometry(batch=b.get("N", 1), groups=b.get("G", 1), out_per_group=b.get("K", 1),
                            in_per_group=b.get("C", 1), out_hw=out_hw, kernel=kernel, stride=stride,  # type: ignore
                            padding=_pair(op.attr("padding"), (0, 0, 0, 0)), dilation=dilation,  # type: ignore
                            in_hw=_pair(op.attr("in_hw"), padded))  # type: ignore[arg-type]
