"""Unrolling tables read off a larger table equal the enumerated ones.

The optimal mapper's factor stage (:class:`dnnmap.search.optimal.expand.FactorSplits`) takes the unrollings of each
quotient from the cached table of the layer's bounds (:func:`split_unrollings`, :func:`.unroll.dividing_rows`)
instead of enumerating a table per quotient (:func:`legal_unrollings` and :func:`both_axes_unrollings`). Its rows
must be the enumerated table's, in its order, axes included (the search's node order and tie-breaks follow them):
checked here against the uncached enumeration on thousands of random (limits, larger limits, fan-out) triples,
1-D and 2-D fan-outs, both axes or not, all rows or one per factor vector.
"""

from __future__ import annotations

import math

import numpy as np

from dnnmap.search.optimal.expand import distinct_unrollings, split_unrollings
from dnnmap.search.sunstone.unroll import both_axes_unrollings, legal_unrollings

PRIMES = np.array([2, 2, 2, 3, 3, 5, 7, 11, 13])


def random_bound(rng: np.random.Generator) -> int:
    """A product of up to four small primes (1 in about a fifth of the draws)."""
    return int(np.prod(rng.choice(PRIMES, size=int(rng.integers(0, 5)))))


def random_divisor(rng: np.random.Generator, n: int) -> int:
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    return int(divisors[rng.integers(len(divisors))])


def enumerated(limits: tuple[int, ...], shape: tuple[int, ...], both: bool, distinct: bool) -> tuple:
    """The table as enumerated for ``limits`` itself (no cache)."""
    if distinct:
        return distinct_unrollings.__wrapped__(limits, shape, both)
    return (both_axes_unrollings if both else legal_unrollings).__wrapped__(limits, shape)


def test_tables_read_off_a_larger_table_equal_the_enumerated_ones() -> None:
    rng = np.random.default_rng(28)
    checked = 0
    for _ in range(200):
        dims = int(rng.integers(1, 7))
        shape = tuple(int(s) for s in rng.integers(2, 15, size=int(rng.integers(1, 3))))
        both = len(shape) == 2 and bool(rng.integers(2))
        within = tuple(random_bound(rng) for _ in range(dims))
        if math.prod(within) > 20000:  # keeps the larger table (and the test) small
            continue
        for _ in range(20):
            limits = tuple(random_divisor(rng, n) for n in within)
            distinct = bool(rng.integers(2))
            got = split_unrollings(limits, within, shape, both, distinct)
            want = enumerated(limits, shape, both, distinct)
            for g, w in zip(got, want):
                assert g.shape == w.shape and np.array_equal(g, w), (limits, within, shape, both, distinct)
                assert not g.flags.writeable  # shared by every caller
            checked += 1
    assert checked >= 2000
