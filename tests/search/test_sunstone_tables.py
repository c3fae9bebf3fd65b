"""The Sunstone walk's lattice look-ups and tile trees against their plain forms (docs/search.md, "Less fixed work per
layer in the start (session 20)"): the faster forms give the same values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.search.space import divisors
from dnnmap.search.sunstone.placement import free_placement, row_keys
from dnnmap.search.sunstone.tiles import (Capacity, TileTree, divisor_lattice, lattice_index, maximal_mask,
                                          maximal_union)
from dnnmap.workload import zoo


def test_lattice_index_is_each_tiles_row_and_none_off_the_lattice() -> None:
    """Every tile of a residual's divisor lattice gets its row there; a batch with a tile off the lattice (a value that
    divides no bound, or exceeds it) gets None."""
    rng = np.random.default_rng(2)
    for _ in range(200):
        residual = tuple(int(x) for x in rng.choice([1, 2, 3, 6, 7, 12, 16, 56], size=int(rng.integers(1, 6))))
        lattice = divisor_lattice(residual)
        rows = rng.integers(0, len(lattice), size=int(rng.integers(0, 30)))
        assert np.array_equal(lattice_index(residual, lattice[rows]), rows)
        off = lattice[rng.integers(0, len(lattice), size=4)].copy()
        d = int(rng.integers(0, len(residual)))
        off[int(rng.integers(0, 4)), d] = next(x for x in itertools.count(2) if residual[d] % x)
        assert lattice_index(residual, off) is None


def eyeriss_trees(each_way: bool) -> list[TileTree]:
    """Tile trees of ResNet-18 ``layer4.0.downsample.0`` on Eyeriss at both on-chip levels, unplaced and under random
    loop orders (the placed walk's), over a few inner coverages."""
    op, arch = zoo.get("resnet18").layer("layer4.0.downsample.0").op, load_arch("eyeriss")
    capacity = Capacity(op, arch, MappingBatch.default_keeps(op, arch))
    residual = tuple(op.bound(d) for d in op.dim_names)
    rng = np.random.default_rng(4)
    trees = []
    for level in (0, 1):
        for order in [None] + [rng.permutation(len(residual)) for _ in range(3)]:
            inner = np.ones(len(residual), dtype=np.int64)
            trees.append(TileTree(capacity, level, inner, residual, order, each_way))
    return trees


def sub_boxes(residual: tuple[int, ...], rng: np.random.Generator, count: int) -> list[tuple[int, ...]]:
    """Random divisor sub-boxes of ``residual``."""
    return [tuple(int(rng.choice(divisors(n))) for n in residual) for _ in range(count)]


@pytest.mark.parametrize("each_way", [False, True])
def test_maximal_tiles_of_boxes_are_those_of_each_box_alone(each_way: bool) -> None:
    """The maximal tiles of many divisor sub-boxes found together (:meth:`TileTree.maximal_many`, narrowed dimension by
    dimension where the tile need fit only some way) are those :func:`maximal_mask` / :func:`maximal_union` find on each
    box's own lattice and fits, and so are the fitting counts."""
    rng = np.random.default_rng(6)
    for tree in eyeriss_trees(each_way):
        boxes = sub_boxes(tree.residual, rng, 12)
        found = tree.maximal_many(boxes, [None] * len(boxes))
        for box, (tiles, fitting) in zip(boxes, found):
            lattice, fits, _ = tree.lattice_fits(box)
            keep = maximal_union(box, fits) if each_way else maximal_mask(box, fits.any(axis=0))
            assert np.array_equal(tiles, lattice[keep]) and fitting == int(fits.any(axis=0).sum())


def test_tree_fits_row_zero_is_the_shared_fit() -> None:
    """A tree's fits of a divisor sub-lattice, row 0 (what the walk's re-grown tiles read), are the shared fits the
    capacity counts tile by tile."""
    rng = np.random.default_rng(8)
    for tree in eyeriss_trees(False):
        for box in sub_boxes(tree.residual, rng, 6):
            lattice, fits, _ = tree.lattice_fits(box)
            assert np.array_equal(fits[0], tree.capacity.fits(tree.level, lattice * tree.inner[None, :]))


def test_placed_lattice_indices_are_the_free_placements() -> None:
    """The lattice's tiles at each tensor's free placement, indexed without the per-tensor factors, are the ones
    :func:`free_placement` gives."""
    for tree in eyeriss_trees(False):
        if tree.order is None:
            continue
        lattice = divisor_lattice(tree.residual)
        above, index = tree.capacity._free_index(tree.order, tree.residual)
        want_above, inside = free_placement(tree.capacity.relevant, tree.order, lattice)
        assert np.array_equal(above, want_above)
        for t in range(inside.shape[1]):
            assert np.array_equal(lattice[index[:, t]], inside[:, t])


def test_row_keys_weights_drawn_once_are_the_seeds() -> None:
    """Row hashes with the weights drawn once per (seed, width) are those of a fresh draw."""
    rng = np.random.default_rng(0)
    for seed in range(4):
        for width in (3, 8):
            fields = rng.integers(0, 1000, size=(5, width))
            weights = np.random.default_rng(seed).integers(1, 2**62, size=width, dtype=np.int64)
            assert np.array_equal(row_keys(fields, seed), fields @ weights)
            assert np.array_equal(row_keys(fields, seed), fields @ weights)
