"""Plain NumPy reference computation of any IR operator from its affine description.

What one iteration of the loop nest does depends only on the operator kind (its
*combine rule*):

- ``product`` (conv2d, depthwise, pointwise, fc, matmul, einsum, mul, ...): the output
  word accumulates the product of the input words;
- ``sum`` (add, pool_avg, concat, identity): the output word accumulates the sum of the
  input words. ``pool_avg`` is left undivided (the sum of the window): the division by
  the window size is a per-output scaling that no loop nest or buffer is involved in,
  and leaving it out keeps integer results exact. concat/identity touch every output
  word once, so accumulating from zero is a copy;
- ``max`` (pool_max): the output word is the maximum of the input words.

``reference_output`` loops in Python only over the *window* dimensions (the filter
offsets ``R``/``S`` of a sliding-window axis such as ``stride*P + dilation*R``, and for
non-product kinds every reduction dimension); for each window offset every tensor is a
strided slice and the remaining dimensions are contracted with ``np.einsum``. Sparse ``connectivity`` is not
applied: the loop nest is dense, so unconnected pairs are expressed by zero weights.
"""

from __future__ import annotations

import itertools

import numpy as np

from dnnmap.workload.ir import Operator, Tensor
from dnnmap.workload.kinds import CombineRule, kind_of


def combine_rule(op: Operator) -> CombineRule:
    """How the inputs of one iteration combine into the output word (see the module docstring): the kind
    table's rule; a product for kinds outside it (training passes, which multiply like their forward kind)."""
    kind = kind_of(op)
    return "product" if kind is None else kind.combine


def random_tensors(op: Operator, rng: np.random.Generator, low: int = -3, high: int = 3) -> dict[str, np.ndarray]:
    """Random int64 input tensors of ``op`` with values in ``[low, high]`` (small, so sums stay exact)."""
    return {t.name: rng.integers(low, high + 1, size=op.tensor_shape(t.name), dtype=np.int64) for t in op.inputs}


def initial_output(op: Operator, dtype: np.dtype) -> np.ndarray:
    """The output before any iteration: zeros, or the smallest value of ``dtype`` for ``max``."""
    shape = op.tensor_shape(op.output.name)
    if combine_rule(op) != "max":
        return np.zeros(shape, dtype=dtype)
    lowest = np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf
    return np.full(shape, lowest, dtype=dtype)


def _window_dims(op: Operator) -> tuple[str, ...]:
    """Dims to loop over so that every remaining tensor axis is a plain strided slice of one dim.

    A sliding-window axis such as ``stride*P + dilation*R`` keeps one dim free (an output
    dim when it has one, so ``P`` stays a strided slice) and fixes the others (``R``).
    """
    out_dims = op.output.dims
    window: set[str] = set()
    out_uses: dict[str, int] = {}
    for axis in op.output.axes:
        for d, coef in axis.terms:
            out_uses[d] = out_uses.get(d, 0) + 1
            if coef != 1 or len(axis.terms) > 1:
                window.add(d)
    window.update(d for d, n in out_uses.items() if n > 1)
    if combine_rule(op) != "product":
        window.update(op.reduction_dims)
    for t in op.inputs:
        for axis in t.axes:
            free = sorted((d for d in axis.dims if d not in window), key=lambda d: d not in out_dims)
            window.update(free[1:])
    return tuple(d for d in op.dim_names if d in window)


def _slice(tensor: Tensor, fixed: dict[str, int], bounds: dict[str, int],
           letters: dict[str, str]) -> tuple[tuple[int | slice, ...], str]:
    """Basic index of the part of ``tensor`` touched for the window offsets ``fixed``, and its einsum subscripts."""
    index: list[int | slice] = []
    subscripts = ""
    for axis in tensor.axes:
        offset = sum(coef * fixed[d] for d, coef in axis.terms if d in fixed)
        free = [(d, coef) for d, coef in axis.terms if d not in fixed]
        if not free:
            index.append(offset)
            continue
        (d, coef), = free  # at most one free dim per axis (see _window_dims)
        index.append(slice(offset, offset + coef * (bounds[d] - 1) + 1, coef))
        subscripts += letters[d]
    return tuple(index), subscripts


def reference_output(op: Operator, tensors: dict[str, np.ndarray]) -> np.ndarray:
    """The output tensor of ``op`` (shape ``op.tensor_shape(output)``) for the given input tensors."""
    bounds = op.bounds
    rule = combine_rule(op)
    for t in op.inputs:
        if tensors[t.name].shape != op.tensor_shape(t.name):
            raise ValueError(f"tensor {t.name}: shape {tensors[t.name].shape}, operator {op.name!r} "
                             f"expects {op.tensor_shape(t.name)}")
    window = _window_dims(op)
    letters = {d: chr(ord("a") + k) for k, d in enumerate(d for d in op.dim_names if d not in window)}
    out = initial_output(op, np.result_type(*(tensors[t.name] for t in op.inputs)))
    for offsets in itertools.product(*(range(bounds[d]) for d in window)):
        fixed = dict(zip(window, offsets))
        target, out_sub = _slice(op.output, fixed, bounds, letters)
        views = []
        for t in op.inputs:
            index, subscripts = _slice(t, fixed, bounds, letters)
            views.append((tensors[t.name][index], subscripts))
        if rule == "product":
            value = np.einsum(",".join(s for _, s in views) + "->" + out_sub, *(v for v, _ in views))
        else:
            aligned = [_align(v, s, out_sub) for v, s in views]
            value = aligned[0]
            for other in aligned[1:]:
                value = np.maximum(value, other) if rule == "max" else value + other
        if rule == "max":
            out[target] = np.maximum(out[target], value)
        else:
            out[target] += value
    return out


def _align(view: np.ndarray, subscripts: str, out_sub: str) -> np.ndarray:
    """``view`` rearranged to the output's dimension order, size-1 axes where it lacks an output dim."""
    present = "".join(c for c in out_sub if c in subscripts)
    arranged = np.einsum(f"{subscripts}->{present}", view)
    return arranged.reshape([arranged.shape[present.index(c)] if c in present else 1 for c in out_sub])
