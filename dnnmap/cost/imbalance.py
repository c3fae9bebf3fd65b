"""Load-imbalance overhead of zero-skipping MAC lanes under unstructured sparsity (RTML section 3.2.11;
docs/sparse.md section 5).

Lanes walk only their effectual lane-steps and wait for the slowest lane at every event of ``p_S``, the
innermost level keeping the sparse operand ``S`` (docs/sparse.md section 2, the reference simulator's
timing). In one event a lane walks ``n`` element positions of ``S`` (its tile: the temporal factors of
``S``'s dimensions at levels up to ``p_S``), each reused equally often by the other loops, so its work is
the non-zero count of its tile times that reuse. Lanes whose tiles differ are those split by a spatial
factor on a dimension of ``S``: ``k`` of them per event. With the non-zeros independent at density ``d``
an event costs the expected largest of ``k`` Binomial(``n``, ``d``) draws, and the compute cycles grow
by :func:`dnnmap.mapping.load_balance.expected_overhead` over the perfectly balanced ones.
"""

from __future__ import annotations

import numpy as np

from dnnmap.arch.sparsity import SparseOperand
from dnnmap.cost.batch import MappingBatch
from dnnmap.mapping.load_balance import expected_overhead
from dnnmap.workload.ir import Operator


def imbalance_factor(op: Operator, sparse: SparseOperand, batch: MappingBatch) -> np.ndarray:
    """(B,) factor >= 1 on the compute cycles of each mapping of ``batch``: 1 + the expected overhead of
    ``k`` lanes with distinct tiles of ``n`` positions of ``S`` per event of ``p_S`` (module docstring).
    A tile's positions are the extents of ``S``'s axes under the lane's factors (a sliding-window axis
    counts its footprint)."""
    dims = op.dim_names
    tensor = op.tensors[sparse.index]
    top = int(np.flatnonzero(batch.keeps[:, sparse.index])[0])  # p_S
    per_event = np.prod(batch.temporal[:, : top + 1], axis=1)  # (B, D) temporal factors up to p_S
    positions = np.ones(len(batch), dtype=np.int64)
    for axis in tensor.axes:
        positions *= 1 + sum(c * (per_event[:, dims.index(d)] - 1) for d, c in axis.terms)
    used = [dims.index(d) for d in tensor.dims]
    rows = np.prod(np.prod(batch.spatial, axis=1)[:, used], axis=1)  # lanes with distinct tiles of S
    pairs, inverse = np.unique(np.stack([positions, rows], axis=1), axis=0, return_inverse=True)
    factors = np.array([1.0 + expected_overhead(int(n), sparse.density, int(k)) for n, k in pairs])
    return factors[inverse.reshape(-1)]
