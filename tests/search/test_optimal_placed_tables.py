"""B20's per-layer tables and per-call rows equal their plain forms (docs/search.md "Less fixed work per layer in the
start (session 20)").

:meth:`.bounds.LowerBound._fits_held` (one fit table per level and set of tensors, shared by B20's keys) equals
:class:`.Capacity`'s fit of the per-tensor covers (the held tensors at each box of the layer's lattice, the others at
one word), :meth:`.bounds.LowerBound._lattice_words` the lattice's words and sizes, and
:meth:`.bounds.LowerBound._rest_rows` (B33's rows of ``rest``, shared by every tensor of a call) its plain reading.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.space import touched_lower
from dnnmap.workload import zoo

LAYERS = [("eyeriss", "resnet18", "layer4.0.downsample.0"), ("eyeriss", "resnet18", "layer3.0.conv1")]


def _bound(arch_name: str, net: str, layer: str) -> LowerBound:
    """The widened space's bound of the layer (placement, both axes on every 2-D fan-out)."""
    arch = load_arch(arch_name)
    op = next(x.op for x in zoo.get(net).layers if x.name == layer)
    both = frozenset(m for m, lv in enumerate(arch.levels) if lv.fanout is not None and len(lv.fanout.shape) == 2)
    return LowerBound(op, arch, CostModel(op, arch), MappingBatch.default_keeps(op, arch), True, both)


@pytest.mark.parametrize("arch_name,net,layer", LAYERS)
def test_held_fits_and_lattice_words_equal_the_plain_covers(arch_name: str, net: str, layer: str) -> None:
    lb = _bound(arch_name, net, layer)
    tiles, _ = lb._layer_lattice()
    touched, size = lb._lattice_words()
    assert np.array_equal(touched, touched_lower(lb.op, tiles, contiguous=True))
    assert np.array_equal(size, tiles.prod(axis=1).astype(float))
    for level in range(lb.L):
        for k in range(1, lb.T + 1):
            for held in itertools.combinations(range(lb.T), k):
                covers_of = np.ones((len(tiles), lb.T, lb.op_dims), dtype=np.int64)
                covers_of[:, list(held)] = tiles[:, None, :]
                want = lb.fit.fits(level, covers_of)
                assert np.array_equal(lb._fits_held(level, frozenset(held)), want), (level, held)


@pytest.mark.parametrize("arch_name,net,layer", LAYERS)
def test_rest_rows_equal_their_plain_reading(arch_name: str, net: str, layer: str) -> None:
    lb = _bound(arch_name, net, layer)
    tiles, _ = lb._layer_lattice()
    rng = np.random.default_rng(7)
    cover = tiles[rng.integers(0, len(tiles), 400)]
    rest = np.minimum(tiles[rng.integers(0, len(tiles), 400)], cover)
    rest[::7, 0] += 1  # padded extents: no box of the lattice
    rest[::11] = cover[::11]
    got = lb._rest_rows(rest, cover)
    short = rest < cover
    rows = lb._lattice_rows(rest)
    assert (rows < 0).any() and (rows >= 0).any()
    assert np.array_equal(got.short, short)
    assert np.array_equal(got.valid, rows >= 0)
    assert np.array_equal(got.at, np.maximum(rows, 0))
    for t in range(lb.T):
        free = ~lb.indexes[t] & (lb.bounds > 1)
        assert np.array_equal(got.spare[t], short[:, free].any(axis=1)), t


def _level_nodes(arch_name: str, net: str, layer: str, n: int = 300) -> list[tuple[LowerBound, np.ndarray, int, tuple]]:
    """Random nodes of the layer at each factor stage ``F(j)`` whose loops above level ``j - 1`` are fixed (levels
    ``>= j`` from random divisor splits) and, per child level ``ch < j``, :meth:`.bounds.LowerBound._level_loops`'s
    facts of them: (bound, spatial, ch, loops)."""
    lb = _bound(arch_name, net, layer)
    rng = np.random.default_rng(11)
    tiles, _ = lb._layer_lattice()
    out = []
    for j in range(1, lb.L):
        temporal = np.ones((n, lb.L, lb.op_dims), dtype=np.int64)
        spatial = np.ones((n, lb.L, lb.op_dims), dtype=np.int64)
        left = lb.bounds[None, :].repeat(n, axis=0)
        for m in range(lb.L - 1, j - 1, -1):  # each fixed level takes a divisor of what is left, temporal or spatial
            for rows in (temporal, spatial):
                part = tiles[rng.integers(0, len(tiles), n)]
                part = np.where(left % part == 0, part, 1)
                rows[:, m] = part
                left = left // part
        temporal[:, 0] = left
        for ch in range(j):
            out.append((lb, spatial, ch, lb._level_loops(temporal, j, ch)))
    return out


@pytest.mark.parametrize("arch_name,net,layer", LAYERS + [("eyeriss", "resnet18", "layer1.0.conv1")])
def test_placed_words_of_many_keys_equal_key_by_key(arch_name: str, net: str, layer: str) -> None:
    """B20's words of all the keys ``(t, outer)`` of a level read together (:meth:`.bounds.LowerBound._placed_words`,
    as :meth:`.bounds.LowerBound._placed_refills` calls it) equal each key's words read alone on a fresh bound (its
    lazily filled tables cold), bit for bit; ``layer1.0.conv1`` (3x3) has a sliding-window input."""
    for lb, spatial, ch, loops in _level_nodes(arch_name, net, layer):
        kept = [u for u in range(lb.T) if lb.keeps[ch, u]]
        keys = [(t, frozenset(outer)) for t in kept for k in range(len(kept))
                for outer in itertools.combinations([u for u in kept if u != t], k)]
        together = lb._placed_words(spatial, ch, keys, *loops)
        alone = _bound(arch_name, net, layer)
        for key, row in zip(keys, together):
            assert np.array_equal(row, alone._placed_words(spatial, ch, [key], *loops)[0]), (ch, key)
