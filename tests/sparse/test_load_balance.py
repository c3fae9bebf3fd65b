"""Load balancing of sparse tiles (RTML section 3.2.11): the sorted opposite-end pairing against a brute
force over every perfect matching, never worse than the original tiles, and the half-tile counts."""

from __future__ import annotations

import math

import numpy as np

from dnnmap.mapping.load_balance import balance, expected_overhead, imbalance, pair_halves, tile_halves, waves
from dnnmap.sim.sparse import uneven_pattern


def _matchings(items: list[int]):
    """Every perfect matching of ``items`` (an even count) as a list of pairs."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for k, partner in enumerate(rest):
        for tail in _matchings(rest[:k] + rest[k + 1:]):
            yield [(first, partner), *tail]


def test_sorted_pairing_is_the_optimal_matching() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = 2 * int(rng.integers(1, 5))  # up to 8 halves: 105 matchings
        work = rng.integers(0, 12, size=n)
        best = min(max(work[a] + work[b] for a, b in m) for m in _matchings(list(range(n))))
        pairs = pair_halves(work)
        assert sorted(pairs.ravel().tolist()) == list(range(n))  # every half used once
        assert work[pairs].sum(axis=1).max() == best


def test_balancing_never_makes_a_wave_slower() -> None:
    rng = np.random.default_rng(4)
    for _ in range(200):
        rows = int(rng.integers(1, 9))
        halves = rng.integers(0, 50, size=(int(rng.integers(1, 40)), 2))
        for scope in ("wave", "layer"):
            before, after = balance(halves, rows, scope)
            assert np.nansum(after) == np.nansum(before)  # the same work, redistributed
            if scope == "wave":
                assert np.isclose(imbalance(after).mean, imbalance(before).mean)
                assert (np.nanmax(after, axis=1) <= np.nanmax(before, axis=1)).all()


def test_tile_halves_count_the_mask() -> None:
    mask = np.zeros((4, 6), dtype=bool)
    mask[0, :] = True  # row 0: 6 non-zeros
    mask[3, 5] = True
    halves = tile_halves(mask, (4, 3), split_axis=0)  # two tiles of 4 x 3, halves rows 0-1 / 2-3
    assert halves.tolist() == [[3, 0], [3, 1]]
    assert tile_halves(mask, (3, 4), split_axis=1).tolist() == [[2, 2], [1, 1], [0, 0], [0, 1]]
    assert np.array_equal(waves(np.array([1, 2, 3]), 2), [[1, 2], [3, np.nan]], equal_nan=True)


def test_balancing_cuts_the_overhead_of_uneven_sparse_weights() -> None:
    """90%-sparse weights whose tiles have uneven densities: a real overhead before, a smaller one after."""
    mask = uneven_pattern((64, 64, 3, 3), (4, 16, 3, 3), 0.1, 3.0, np.random.default_rng(5))
    before, after = balance(tile_halves(mask, (4, 16, 3, 3), split_axis=1), rows=16)
    assert imbalance(before).overhead > 0.3
    assert imbalance(after).overhead < imbalance(before).overhead / 2


def test_expected_overhead_is_the_mean_overhead_of_random_waves() -> None:
    """expected_overhead(n, d, rows) is what imbalance() measures on many waves of rows tiles whose non-zero
    counts are Binomial(n, d) draws; one row or a dense tile has none."""
    rng = np.random.default_rng(3)
    for n, d, rows in ((9, 0.1, 16), (288, 0.1, 16), (32, 0.5, 4), (3, 0.25, 2), (4000, 0.05, 64)):
        measured = imbalance(waves(rng.binomial(n, d, size=20000 * rows), rows)).overhead
        assert math.isclose(expected_overhead(n, d, rows), measured, rel_tol=0.02), (n, d, rows)
    assert expected_overhead(100, 0.1, 1) == 0.0 == expected_overhead(100, 1.0, 8)
    assert expected_overhead(100, 0.1, 16) > expected_overhead(100, 0.1, 4) > expected_overhead(1000, 0.1, 4)
