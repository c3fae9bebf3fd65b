"""Marvel's names for a layer's tensors and the innermost-dimension layout choices (Marvel Sec. 3.1, Sec. 4.1).

Marvel writes W[K][C][R][S], I[C][Y][X], O[K][Q][P] with P/X the width and Q/Y the height
(Marvel Fig. 2); the IR writes I[N, G, C, H, W], W[G, K, C, R, S], O[N, G, K, P, Q] with IR P/Q
the output rows/columns (docs/ir.md). So Marvel X = IR ``W``, Y = IR ``H``, Marvel P = IR ``Q``,
Marvel Q = IR ``P``. A depthwise layer (Marvel Fig. 2(d)) has one filter per channel: its
channel loop is the IR ``G`` and Marvel's output channel axis "K" is that channel too.

Only the innermost storage dimension changes the distinct-block cost, so Marvel keeps 4 x 3 x 3
= 36 layouts (Sec. 4.1): innermost of W in {K, C, R, S}, of I in {C, X, Y}, of O in {K, P, Q}.
Layers that are not convolutions (pooling, element-wise, concat, matmul, einsum) get the same
rule over their own axes: each tensor's innermost axis is one of its non-trivial axes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dnnmap.workload.ir import Operator
from dnnmap.workload.kinds import kind_of


@dataclass(frozen=True)
class TensorLayouts:
    """Innermost-axis choices of one tensor: Marvel's label and the IR axis for each."""

    tensor: str
    labels: tuple[str, ...]
    axes: tuple[str, ...]


@dataclass(frozen=True)
class LayoutSpace:
    """Every combination of one innermost axis per tensor (36 for a convolution)."""

    op: Operator
    tensors: tuple[TensorLayouts, ...]

    @property
    def choices(self) -> list[tuple[int, ...]]:
        """Layouts as index tuples (one index per tensor of ``tensors``), first tensor outermost."""
        return list(itertools.product(*(range(len(t.axes)) for t in self.tensors)))

    def label(self, choice: tuple[int, ...]) -> str:
        """``K/X/P``: the innermost dimension of each tensor in Marvel's W/I/O order."""
        return "/".join(t.labels[i] for t, i in zip(self.tensors, choice))

    def index_of(self, labels: str) -> tuple[int, ...]:
        """The choice whose label is ``labels`` (e.g. ``"C/X/P"``); ValueError naming the options."""
        parts = labels.split("/")
        if len(parts) != len(self.tensors):
            raise ValueError(f"layout {labels!r}: expected {len(self.tensors)} innermost dimensions "
                             f"({'/'.join(t.tensor for t in self.tensors)})")
        out = []
        for t, p in zip(self.tensors, parts):
            if p not in t.labels:
                raise ValueError(f"layout {labels!r}: {t.tensor} has no dimension {p!r}; choose from {t.labels}")
            out.append(t.labels.index(p))
        return tuple(out)

    def core_layouts(self, choice: tuple[int, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The core mapping's DRAM layouts (axis names outermost first): the chosen axis innermost, the
        other axes in the tensor's own order (the DB model does not see their order)."""
        out = []
        for t, i in zip(self.tensors, choice):
            axes = [a.name for a in self.op.tensor(t.tensor).axes]
            inner = t.axes[i]
            out.append((t.tensor, tuple(a for a in axes if a != inner) + (inner,)))
        return tuple(out)


def marvel_names(op: Operator) -> dict[str, dict[str, str]] | None:
    """Per tensor, Marvel letter -> IR axis, for the convolution kinds Marvel models; else None."""
    b, kind = op.bounds, kind_of(op)
    if kind is None or not kind.conv or not {"K", "C", "P", "Q", "R", "S"} <= set(b):
        return None
    g = b.get("G", 1)
    depthwise = g > 1 and b["K"] == 1 and b["C"] == 1
    if g > 1 and not depthwise:
        return None  # grouped convolution: not one of Marvel's layer types; generic axes
    ch_w, ch_o = ("G", "G") if depthwise else ("C", "K")
    names = {"W": {"K": "K", "C": ch_w, "R": "R", "S": "S"},
             "I": {"C": ch_w, "X": "W", "Y": "H"},
             "O": {"K": ch_o, "P": "Q", "Q": "P"}}
    if {t.name for t in op.tensors} != set(names):
        return None
    return names


def layout_space(op: Operator) -> LayoutSpace:
    """Marvel's 36 layouts for a convolution; otherwise each tensor's non-trivial axes (all if none is)."""
    names = marvel_names(op)
    if names is not None:
        return LayoutSpace(op, tuple(TensorLayouts(t, tuple(m), tuple(m.values())) for t, m in names.items()))
    bounds = op.bounds
    tensors = []
    for t in op.tensors:
        axes = tuple(a.name for a in t.axes if a.extent(bounds) > 1) or (t.axes[-1].name,)
        tensors.append(TensorLayouts(t.name, axes, axes))
    return LayoutSpace(op, tuple(tensors))
