"""Reuse inference per tensor and loop dimension from the IR's affine accesses (RTML Sec. 3.2.2, Table 1).

A dimension is, for one tensor,

* ``INDEX``: it alone selects one of the tensor's axes (a step along it touches new elements);
* ``PARTIAL``: it is one term of a compound (sliding-window) axis such as ``p + r``, so
  consecutive iterations overlap (partial reuse);
* ``FULL``: it does not appear in any axis, so iterating it touches the same elements.

The report restricts partial reuse to axes that are sums of several dimensions ("arithmetic
combinations of multiple problem dimensions"), which is exactly how the IR writes every
window access (``stride*P + dilation*R``); the general algebraic analysis it mentions
(Wolf & Lam) is not needed for these operators.

A term over a dimension of bound 1 never moves its axis, so it does not make the axis a window
(the cost model drops such terms alike, docs/cost-model.md): a stride-2 1x1 convolution reads
``I[2p + r]`` with ``R = 1``, and ``P`` *indexes* ``I`` (consecutive steps touch disjoint rows).
Counting ``P`` as partial reuse there put orders into the trie whose input "reuse" along ``P``
does not exist.
"""

from __future__ import annotations

from enum import Enum

from dnnmap.workload.ir import Operator, Tensor


class ReuseKind(str, Enum):
    INDEX = "index"
    FULL = "full"
    PARTIAL = "partial"


def tensor_reuse(tensor: Tensor, dim: str, bounds: dict[str, int]) -> ReuseKind:
    """Reuse class of ``dim`` for ``tensor`` (RTML Table 1's three columns); terms over other
    dimensions of bound 1 do not count (they never move the axis)."""
    for axis in tensor.axes:
        if dim in axis.dims:
            moving = [d for d in axis.dims if d == dim or bounds[d] > 1]
            return ReuseKind.PARTIAL if len(moving) > 1 else ReuseKind.INDEX
    return ReuseKind.FULL


def reuse_table(op: Operator) -> dict[str, dict[str, ReuseKind]]:
    """``{tensor name: {dim: kind}}`` for every tensor and loop dimension of ``op`` (its bounds applied)."""
    bounds = op.bounds
    return {t.name: {d: tensor_reuse(t, d, bounds) for d in op.dim_names} for t in op.tensors}


def table1_rows(op: Operator) -> dict[str, tuple[set[str], set[str], set[str]]]:
    """Per tensor the (indexed-by, full-reuse, partial-reuse) dimension sets, as RTML Table 1 lists them:
    a partial-reuse dimension also indexes the tensor."""
    rows = {}
    for name, kinds in reuse_table(op).items():
        partial = {d for d, k in kinds.items() if k is ReuseKind.PARTIAL}
        index = {d for d, k in kinds.items() if k is ReuseKind.INDEX} | partial
        rows[name] = (index, {d for d, k in kinds.items() if k is ReuseKind.FULL}, partial)
    return rows
