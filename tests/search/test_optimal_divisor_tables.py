"""The divisor-lattice tables the bounds build once per layer (docs/search.md "B22", "B31"): the least over each box's
divisors (:func:`.bounds._divisor_min`) and the lattice places of the boxes ``budget / factor``
(:func:`.bounds._lattice_places`), against direct enumeration."""

import itertools

import numpy as np
import pytest

from dnnmap.search.optimal.bounds import _divisor_min, _lattice_places
from dnnmap.search.space import divisors


@pytest.mark.parametrize("bounds", [(12, 1, 18), (8, 9), (7, 30, 4), (1,), (64, 3)])
def test_divisor_min_is_the_least_over_the_divisors(bounds: tuple[int, ...]) -> None:
    values = [np.array(divisors(n)) for n in bounds]
    grid = np.random.default_rng(sum(bounds)).random(tuple(len(v) for v in values))
    grid[grid < 0.1] = np.inf
    out = _divisor_min(grid, values)
    for at in itertools.product(*(range(len(v)) for v in values)):
        below = [[i for i, w in enumerate(v.tolist()) if v[k] % w == 0] for v, k in zip(values, at)]
        assert out[at] == min(grid[idx] for idx in itertools.product(*below))


def test_lattice_places_of_the_quotients() -> None:
    values = np.array(divisors(36))
    budgets, factors = np.array([36, 12, 7, 1]), np.array([1, 2, 3, 5, 36])
    places = _lattice_places(budgets, factors, values)
    for i, b in enumerate(budgets.tolist()):
        for j, f in enumerate(factors.tolist()):
            expected = values.tolist().index(b // f) if b % f == 0 and b // f in values.tolist() else -1
            assert places[i, j] == expected
