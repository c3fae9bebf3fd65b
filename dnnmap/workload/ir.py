"""Workload IR: operators as loop nests over named dimensions with affine tensor accesses.

An :class:`Operator` is a perfectly nested loop over named dimensions (``dims``) with
bounds, plus tensors whose axes are affine functions of those dimensions. A
convolution input row, for instance, is ``stride*P + dilation*R``; the coefficient
of each dimension is stored with the axis. Grouped and depthwise convolutions use a
``G`` dimension, so every tensor axis is either a single dimension or a
sliding-window sum; channel axes of grouped tensors are split into ``(G, C)`` axes,
which is the same row-major memory order as the flat ``g*C + c`` channel.

Input coordinates are *padded* coordinates: the input tensor's spatial extent is
``stride*(P-1) + dilation*(R-1) + 1`` and the padding border counts as data (the
convention of Timeloop and of the TSO tile equation, TSO Eq. 1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from dnnmap.workload.kinds import KINDS

Role = Literal["input", "weight", "output"]


@dataclass(frozen=True)
class Axis:
    """One tensor axis: ``sum(coef * dim)`` over ``terms``."""

    name: str
    terms: tuple[tuple[str, int], ...]

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.terms)

    def coef(self, dim: str) -> int:
        for d, c in self.terms:
            if d == dim:
                return c
        return 0

    def extent(self, sizes: dict[str, int]) -> int:
        """Extent of the axis for a box of ``sizes`` (interval hull, exact when the set is an interval)."""
        return sum(c * (sizes[d] - 1) for d, c in self.terms) + 1


@dataclass(frozen=True)
class Tensor:
    """A tensor accessed by an operator."""

    name: str
    role: Role
    axes: tuple[Axis, ...]

    @property
    def dims(self) -> frozenset[str]:
        return frozenset(d for a in self.axes for d in a.dims)

    def shape(self, bounds: dict[str, int]) -> tuple[int, ...]:
        return tuple(a.extent(bounds) for a in self.axes)

    def size(self, bounds: dict[str, int]) -> int:
        n = 1
        for e in self.shape(bounds):
            n *= e
        return n


@dataclass(frozen=True)
class Operator:
    """A loop-nest operator: named dims with bounds and affine tensor accesses.

    ``kind`` names a row of :data:`dnnmap.workload.kinds.KINDS` (conv2d, depthwise, pointwise, fc,
    matmul, einsum, pool_max, pool_avg, add, mul, identity, concat) or a training pass of one
    (``conv2d.bwd``); the cost model and simulator only use ``dims`` and ``tensors``.
    ``macs`` counts multiply-accumulates (0 for the kinds whose iterations are comparisons,
    additions or copies, counted by ``iterations``: pooling, element-wise, concat).
    ``connectivity`` optionally lists, per output channel, the input channels it reads
    (sparse connection tables of the NVE networks); the loop nest stays dense and
    ``macs`` counts only the connected pairs.
    """

    name: str
    kind: str
    dims: tuple[tuple[str, int], ...]
    tensors: tuple[Tensor, ...]
    attrs: tuple[tuple[str, object], ...] = ()
    connectivity: tuple[tuple[int, ...], ...] | None = None

    # ---- dimensions -------------------------------------------------------------
    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.dims)

    @property
    def bounds(self) -> dict[str, int]:
        return dict(self.dims)

    def bound(self, dim: str) -> int:
        return self.bounds[dim]

    @property
    def iterations(self) -> int:
        n = 1
        for _, b in self.dims:
            n *= b
        return n

    @property
    def macs(self) -> int:
        kind = KINDS.get(self.kind)
        if kind is not None and not kind.macs:
            return 0
        if self.connectivity is not None:
            b = self.bounds
            per_pair = self.iterations // (b.get("K", 1) * b.get("C", 1) * b.get("G", 1))
            return per_pair * sum(len(c) for c in self.connectivity)
        return self.iterations

    @property
    def operations(self) -> int:
        """Operations the layer executes: its MACs, else its iterations times its kind's operations per
        iteration (a comparison, addition or copy: 1; softmax: 5, ... docs/ir.md "Transformer kinds")."""
        kind = KINDS.get(self.kind)
        return self.macs or self.iterations * (kind.ops if kind is not None else 1)

    def attr(self, key: str, default: object = None) -> object:
        return dict(self.attrs).get(key, default)

    # ---- tensors ----------------------------------------------------------------
    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(f"operator {self.name!r} has no tensor {name!r}")

    @property
    def output(self) -> Tensor:
        return next(t for t in self.tensors if t.role == "output")

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.role != "output")

    @property
    def reduction_dims(self) -> tuple[str, ...]:
        out = self.output.dims
        return tuple(d for d in self.dim_names if d not in out)

    def tensor_shape(self, name: str) -> tuple[int, ...]:
        return self.tensor(name).shape(self.bounds)

    def __post_init__(self) -> None:
        names = self.dim_names
        if len(set(names)) != len(names):
            raise ValueError(f"operator {self.name!r}: duplicate dimension names {names}")
        for d, b in self.dims:
            if not isinstance(b, int) or b < 1:
                raise ValueError(f"operator {self.name!r}: dimension {d} must be a positive integer, got {b!r}")
        for t in self.tensors:
            for a in t.axes:
                for d, c in a.terms:
                    if d not in names:
                        raise ValueError(f"operator {self.name!r}: tensor {t.name} uses unknown dimension {d}")
                    if c < 1:
                        raise ValueError(f"operator {self.name!r}: tensor {t.name} coefficient of {d} must be >= 1")
        if sum(1 for t in self.tensors if t.role == "output") != 1:
            raise ValueError(f"operator {self.name!r}: exactly one output tensor is required")


@dataclass(frozen=True)
class Layer:
    """A node of a network: an operator plus the names of the layers (or graph inputs) it reads."""

    op: Operator
    inputs: tuple[str, ...]
    output_shape: tuple[int, ...]  # logical (unpadded) NCHW or (N, features) shape of the result
    fused: tuple[str, ...] = ()  # element-wise activations folded onto this layer's output (relu, clip, ...)

    @property
    def name(self) -> str:
        return self.op.name


@dataclass(frozen=True)
class Phase:
    """The inference phase of a transformer network: ``prefill`` (``tokens`` tokens attend to one another) or
    ``decode`` (``tokens`` new tokens attend to a KV cache of ``cached`` tokens and to themselves)."""

    name: str
    tokens: int
    cached: int = 0

    def __str__(self) -> str:
        if self.name == "decode":
            return f"decode, {self.tokens} new token{'s' * (self.tokens != 1)}, KV cache {self.cached} tokens"
        return f"{self.name}, {self.tokens} tokens"


@dataclass(frozen=True)
class Network:
    """A DAG of layers in topological order. ``inputs`` maps graph input names to shapes; ``phase``: the
    inference phase of a transformer (None for other networks)."""

    name: str
    layers: tuple[Layer, ...]
    inputs: tuple[tuple[str, tuple[int, ...]], ...]
    source: str = "zoo"
    notes: tuple[str, ...] = field(default=())
    phase: Phase | None = None

    def __post_init__(self) -> None:
        seen = {n for n, _ in self.inputs}
        for layer in self.layers:
            if layer.name in seen:
                raise ValueError(f"network {self.name!r}: duplicate layer name {layer.name!r}")
            for src in layer.inputs:
                if src not in seen:
                    raise ValueError(
                        f"network {self.name!r}: layer {layer.name!r} reads {src!r}, which is not defined before it"
                    )
            seen.add(layer.name)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    @property
    def operators(self) -> tuple[Operator, ...]:
        return tuple(layer.op for layer in self.layers)

    @property
    def macs(self) -> int:
        return sum(layer.op.macs for layer in self.layers)

    def count(self, *kinds: str) -> int:
        return sum(1 for layer in self.layers if layer.op.kind in kinds)

    def edges(self) -> list[tuple[str, str]]:
        return [(src, layer.name) for layer in self.layers for src in layer.inputs]

    def consumers(self, name: str) -> list[str]:
        return [layer.name for layer in self.layers if name in layer.inputs]

    def to_networkx(self):  # noqa: ANN201 - networkx is an optional view
        import networkx as nx

        g = nx.DiGraph()
        for n, shape in self.inputs:
            g.add_node(n, shape=shape, kind="input")
        for layer in self.layers:
            g.add_node(layer.name, shape=layer.output_shape, kind=layer.op.kind)
            for src in layer.inputs:
                g.add_edge(src, layer.name)
        return g
