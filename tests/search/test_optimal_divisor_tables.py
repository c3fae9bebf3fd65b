"""The divisor-lattice tables the bounds build once per layer (docs/search.md "B22", "B31", "Less fixed work per layer in
the start (session 20)"): the least over each box's divisors (:func:`.bounds._divisor_min`), the lattice places of the
boxes ``budget / factor`` (:func:`.bounds._lattice_places`) and B6's largest unrolling per box, against direct
enumeration."""

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.bounds import LowerBound, _dividing, _divisor_min, _lattice_places, largest_unrolling
from dnnmap.search.space import divisors
from dnnmap.workload import zoo


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


def _divisor_min_numpy(grid: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    """The NumPy form :func:`.bounds._divisor_min` replaced (its compiled pass, :func:`.bounds._min_along`): per
    dimension, per prime and exponent, the divisors of that exponent take the least of their own and their quotient's."""
    grid = grid.copy()
    for d, vals in enumerate(values):
        along = np.moveaxis(grid, d, 0)
        by_prime: dict[int, list[int]] = {}
        for i, v in enumerate(vals.tolist()):
            for p in {p for p in range(2, v + 1) if v % p == 0 and all(p % q for q in range(2, p))}:
                by_prime.setdefault(p, []).append(i)
        for p in sorted(by_prime):
            exponent = {i: next(e for e in range(64) if int(vals[i]) % p ** (e + 1)) for i in by_prime[p]}
            for e in range(1, max(exponent.values()) + 1):
                into = [i for i in by_prime[p] if exponent[i] == e]
                source = [vals.tolist().index(int(vals[i]) // p) for i in into]
                along[into] = np.minimum(along[into], along[source])
    return grid


@pytest.mark.parametrize("seed", range(12))
def test_compiled_divisor_min_matches_numpy(seed: int) -> None:
    """The compiled pass gives the NumPy form's values, bit for bit, on random grids of random lattices: floats with inf
    and NaN, and integers (the least legal ranks' grids)."""
    rng = np.random.default_rng(seed)
    bounds = tuple(int(x) for x in rng.choice([1, 2, 3, 4, 6, 7, 8, 12, 16, 18, 30, 36, 64, 96], rng.integers(1, 5)))
    values = [np.array(divisors(n)) for n in bounds]
    shape = tuple(len(v) for v in values)
    if seed % 3 == 2:
        grid = rng.integers(0, 50, shape)
    else:
        grid = rng.random(shape)
        grid[grid < 0.1] = np.inf
        grid[grid > 0.97] = np.nan
    got, want = _divisor_min(grid, values), _divisor_min_numpy(grid, values)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("net,layer", [("resnet18", "layer4.0.downsample.0"), ("resnet50", "layer1.0.conv3")])
def test_largest_unrolling_read_off_the_lattice_is_the_tables_largest(net: str, layer: str) -> None:
    """B6's largest legal unrolling of a budget dividing the layer's bounds (:meth:`LowerBound._largest_of`, read off
    :meth:`LowerBound._most_lanes`' lattice) is the largest product of the table's rows dividing the budget (the pass
    over the table it replaced) and the budget's own search (:func:`.bounds.largest_unrolling`), on Eyeriss's array
    with both axes."""
    op, arch = zoo.get(net).layer(layer).op, load_arch("eyeriss")
    bound = LowerBound(op, arch, CostModel(op, arch), MappingBatch.default_keeps(op, arch), True, frozenset([1]))
    rng = np.random.default_rng(3)
    budgets = np.array([[int(rng.choice(divisors(int(b)))) for b in bound.bounds] for _ in range(64)], dtype=np.int64)
    table, _, _, _, divides = bound._copies_table(1, tuple(int(x) for x in bound.bounds))
    legal = _dividing(table, divides, budgets, bound.bounds)
    expected = np.where(legal, table.prod(axis=1)[None, :], 1).max(axis=1)
    assert np.array_equal(bound._largest_of(budgets, 1), expected.astype(float))
    shape = tuple(arch.levels[1].fanout.shape)
    assert all(largest_unrolling(tuple(int(x) for x in b), shape, True) == e for b, e in zip(budgets[:8], expected[:8]))
