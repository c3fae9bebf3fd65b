"""P2's placements (docs/search.md "P2, the placements worth searching"; :func:`.placement.least_placements`): for
every row, the kept placement vectors are exactly those a direct enumeration finds, one vector at a time, from each
tensor's footprint below its first ``n`` non-trivial loops (written here without the kernel's groups, sets or
boxes), in the same order (rows ascending, each row's vectors in lexicographic order)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.search.optimal.placement import least_placements
from dnnmap.search.space import touched_lower
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator

LAYERS = [ops.conv2d("conv", 4, 6, 6, 3, stride=2), ops.conv2d("grouped", 4, 4, 5, 3, groups=2),
          ops.matmul("mm", 6, 4, 8)]


def footprint(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, t: int, n: int) -> float:
    """Words of tensor ``t``'s tile below the first ``n`` non-trivial loops of ``order``: the tile below times the
    trips of the loops after them."""
    loops = [int(d) for d in order if trips[d] > 1]
    cover = base.copy()
    for d in loops[n:]:
        cover[d] *= trips[d]
    return float(touched_lower(op, cover[None], contiguous=True)[0, t])


def direct(op: Operator, trips: np.ndarray, order: np.ndarray, base: np.ndarray, placeable: np.ndarray,
           monotone: np.ndarray, capacity: tuple[np.ndarray, np.ndarray] | None) -> list[tuple[int, tuple[int, ...]]]:
    """The kept (row, vector) pairs, vector by vector: fitting, and no tensor P1 holds for can go one loop higher
    with the level still fitting."""
    kept = []
    for r in range(len(trips)):
        k = int((trips[r] > 1).sum())

        def fits(vector: tuple[int, ...]) -> bool:
            if capacity is None:
                return True
            part, sizes = capacity
            words = [footprint(op, trips[r], order[r], base[r], t, n) for t, n in enumerate(vector)]
            return all(sum(words[t] * part[t, p] for t in range(len(words))) <= sizes[p] for p in range(len(sizes)))

        for vector in itertools.product(*[range(k + 1) if p else [0] for p in placeable]):
            higher = [vector[:t] + (vector[t] - 1,) + vector[t + 1:] for t in range(len(vector))
                      if placeable[t] and monotone[t] and vector[t] > 0]
            if fits(vector) and not any(fits(h) for h in higher):
                kept.append((r, vector))
    return kept


def random_rows(op: Operator, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` rows of (trips, order, base): a few nodes (trips and tile below), each with several random orders."""
    D = len(op.dim_names)
    bounds = np.array([op.bound(d) for d in op.dim_names])
    trips, order, base = [], [], []
    while len(trips) < n:
        node_trips = np.where(rng.random(D) < 0.6, np.minimum(bounds, rng.integers(1, 4, D)), 1)
        node_base = np.maximum(1, rng.integers(1, 4, D) * (bounds > 1))
        for _ in range(int(rng.integers(1, 5))):
            trips.append(node_trips)
            base.append(node_base)
            order.append(rng.permutation(D))
    return np.array(trips[:n]), np.array(order[:n]), np.array(base[:n])


CAPACITIES = {  # partition weights (T, R), scaled per case: per role, shared, shared by two (one tensor in none), none
    "roles": np.eye(3),
    "shared": np.ones((3, 1)),
    "pair": np.array([[1.0], [0.0], [1.0]]),
    "unbounded": None,
}


@pytest.mark.parametrize("layer", LAYERS, ids=lambda op: op.name)
@pytest.mark.parametrize("kind", list(CAPACITIES))
def test_least_placements_are_the_direct_enumeration(layer: Operator, kind: str) -> None:
    rng = np.random.default_rng(sum(map(ord, layer.name + kind)))
    cases = 0
    for _ in range(12):
        trips, order, base = random_rows(layer, rng, 16)
        placeable = rng.random(3) < 0.8
        monotone = rng.random(3) < 0.7
        capacity = None
        if CAPACITIES[kind] is not None:
            part = CAPACITIES[kind] * rng.choice([1.0, 0.5, 2.0], size=CAPACITIES[kind].shape)
            whole = np.array([[footprint(layer, trips[r], order[r], base[r], t, 0) for t in range(3)]
                              for r in range(len(trips))])
            sizes = (whole @ part).max(axis=0) * rng.uniform(0.05, 0.8, part.shape[1])  # some fit, some do not
            capacity = (part, sizes)
        rows, above = least_placements(layer, trips, order, base, placeable, monotone, capacity)
        got = [(int(r), tuple(int(x) for x in a)) for r, a in zip(rows, above)]
        assert got == direct(layer, trips, order, base, placeable, monotone, capacity)
        cases += len(got)
    assert cases > 0
