"""Derivative-based level-3 loop order (Marvel Sec. 3.1, after Sarkar 1997).

At the optimal tile and layout, ``dDMC/dT_x = (dSum(DB)/dT_x - Sum(DB)/T_x) / prod(T)`` with the
block ceiling treated as continuous (``ceil(s/B) -> s/B`` inside the derivative, Sarkar's relaxation):
the most negative slope marks the loop whose growth saves the most blocks, i.e. the tensors it
does not index are reused across it, so it goes innermost; the other loops follow by slope.
Only loops that step more than once at level 3 are ordered (the others never advance).
"""

from __future__ import annotations

import math

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.marvel.db_model import DbSettings, _axis_terms, axis_count, axis_span, block_bytes
from dnnmap.search.marvel.view import LayoutSpace
from dnnmap.workload.ir import Axis, Operator


def _count_gradient(axis: Axis, tile: np.ndarray, dims: tuple[str, ...], unit: bool) -> np.ndarray:
    """(D,) derivative of an axis' distinct-index count (db_model.axis_count) by each tile extent."""
    grad = np.zeros(len(dims))
    terms = _axis_terms(axis, dims, unit)
    if len(terms) == 1:
        grad[terms[0][0]] = 1.0
    elif len(terms) == 2 and terms[1][1] % terms[0][1] == 0:
        (d1, c1), (d2, c2) = terms
        m, n1, n2 = c2 // c1, tile[d1], tile[d2]
        if n1 >= m:
            grad[d1] += 1.0
            grad[d2] += m
        else:
            grad[d1] += n2
            grad[d2] += n1
    else:
        for d, c in terms:
            grad[d] += c
    return grad


def dmc_gradient(op: Operator, arch: ArchSpec, space: LayoutSpace, choice: tuple[int, ...],
                 tile: np.ndarray, settings: DbSettings) -> np.ndarray:
    """(D,) partial derivatives of the DMC at ``tile`` under layout ``choice`` (Marvel Sec. 3.1)."""
    dims = op.dim_names
    unit = settings.stride == "ignore"
    block = block_bytes(arch, settings)
    row = tile.reshape(1, -1)
    total, d_total = 0.0, np.zeros(len(dims))
    for tl, i in zip(space.tensors, choice):
        tensor = op.tensor(tl.tensor)
        w = settings.output_weight if tensor.role == "output" else 1
        elem = arch.bytes_of(tensor.role)
        counts = {a.name: float(axis_count(a, row, dims, unit)[0]) for a in tensor.axes}
        inner = next(a for a in tensor.axes if a.name == tl.axes[i])
        rows = math.prod(c for n, c in counts.items() if n != inner.name)
        span = float(axis_span(inner, row, dims, unit)[0])
        blocks = rows * math.ceil(span * elem / block)
        total += w * blocks
        for a in tensor.axes:
            if a.name == inner.name:  # d/dT of (span * elem / B) * rows: the relaxed ceiling
                coef = np.array([inner.coef(d) if not unit else float(d in inner.dims) for d in dims])
                d_total += w * coef * elem / block * rows
            else:
                d_total += w * blocks / counts[a.name] * _count_gradient(a, tile, dims, unit)
    iters = float(np.prod(tile))
    return (d_total - total / tile) / iters


def level3_order(op: Operator, tile: np.ndarray, gradient: np.ndarray) -> tuple[str, ...]:
    """DRAM loops that step (trip > 1), outermost first: largest slope outermost, most negative innermost."""
    dims = op.dim_names
    trips = [math.ceil(op.bound(d) / int(tile[k])) for k, d in enumerate(dims)]
    stepping = [k for k in range(len(dims)) if trips[k] > 1]
    stepping.sort(key=lambda k: (-gradient[k], k))
    return tuple(dims[k] for k in stepping)
