"""The optimal mapper's shared counts give what they replace, row by row (docs/search.md "ResNet-50 on tpu_like:
less work per bound call and per layer"): the tensors' words of boxes (:func:`dnnmap.search.space.touched_lower`, the
one-term axes as one product per tensor), the rows' keys (:func:`dnnmap.search.space.unique_rows`) and B9's Pareto
tiles (:func:`dnnmap.search.optimal.bounds._pareto`, a tile dropped where any tile ranked before it divides it)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.search.optimal.bounds import _pareto
from dnnmap.search.space import touched_lower, unique_rows
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator

OPS = [ops.conv2d("c", 4, 6, 9, 3, stride=2), ops.conv2d("d", 3, 5, 8, (3, 2), dilation=2),
       ops.depthwise("w", 4, 7, 3), ops.pool("p", 2, (7, 1), (3, 1), stride=2), ops.matmul("m", 6, 4, 5),
       ops.einsum("e", "ab,bc->ac", {"a": 3, "b": 4, "c": 5})]


def _count(op: Operator, row: np.ndarray, contiguous: bool) -> np.ndarray:
    """(T,) each tensor's words as the product over its axes: contiguous ranges, every distinct value of the axis
    enumerated; otherwise its largest term's count."""
    out = np.ones(len(op.tensors))
    for t, tensor in enumerate(op.tensors):
        for axis in tensor.axes:
            ranges = [range(int(row[op.dim_names.index(d)])) for d, _ in axis.terms]
            if contiguous:
                coefs = [c for _, c in axis.terms]
                out[t] *= len({sum(c * i for c, i in zip(coefs, idx)) for idx in itertools.product(*ranges)})
            else:
                out[t] *= max(len(r) for r in ranges)
    return out


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("contiguous", [True, False])
def test_touched_lower_counts_every_axis(op: Operator, contiguous: bool) -> None:
    rng = np.random.default_rng(len(op.name))
    bounds = np.array([op.bound(d) for d in op.dim_names])
    cover = rng.integers(1, bounds + 1, size=(40, len(bounds)))
    got = touched_lower(op, cover, contiguous)
    assert got.shape == (40, len(op.tensors))
    assert np.array_equal(got, np.array([_count(op, row, contiguous) for row in cover]))


def test_unique_rows_is_numpys() -> None:
    rng = np.random.default_rng(3)
    for n, k, top in [(0, 3, 5), (1, 1, 1), (50, 4, 3), (200, 7, 40), (30, 3, 2**40)]:
        a = rng.integers(0, top, size=(n, k))
        keys, inverse = unique_rows(a)
        want, want_inverse = np.unique(a, axis=0, return_inverse=True)
        assert np.array_equal(keys, want) and np.array_equal(inverse, want_inverse.reshape(-1))


def _walk(tiles: np.ndarray, ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """By ascending ratio (ties in order), each tile kept unless a kept one divides it."""
    kept: list[int] = []
    for k in np.argsort(ratio, kind="stable").tolist():
        if not any((tiles[k] % tiles[i] == 0).all() for i in kept):
            kept.append(k)
    return tiles[kept], ratio[kept]


def test_pareto_keeps_what_the_walk_keeps() -> None:
    rng = np.random.default_rng(5)
    for _ in range(150):
        m, D = int(rng.integers(0, 700)), int(rng.integers(1, 6))  # past one block of 256
        tiles = rng.choice([1, 2, 3, 4, 6, 8, 12], size=(m, D))
        ratio = rng.integers(0, 4, m) / 4.0  # ties included
        got, want = _pareto(tiles, ratio), _walk(tiles, ratio)
        assert got[0].shape == want[0].shape and np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
