"""The compiled candidate sampler draws legal candidates of the declared space, reproducibly."""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import load_arch
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.workload import zoo


def _space() -> MapSpace:
    return MapSpace(zoo.get("resnet18").layer("layer1.0.conv1").op, load_arch("eyeriss"))


def test_samples_are_legal_candidates_of_the_space() -> None:
    space = _space()
    batch = CandidateSampler(space, seed=3).sample(5000)
    assert len(batch) == 5000
    L = len(space.arch.levels)
    bounds = np.array([space.op.bound(d) for d in space.op.dim_names])
    # every dimension's factors multiply to its bound (exact divisors)
    assert (batch.temporal.prod(axis=1) * batch.spatial.prod(axis=1) == bounds).all()
    # spatial factors fit each fan-out axis, one axis per dimension and level
    for slot in space.spatial_slots:
        on_axis = np.where(batch.axes[:, slot.level] == slot.axis, batch.spatial[:, slot.level], 1)
        assert (on_axis.prod(axis=1) <= slot.size).all()
    assert (batch.spatial[:, [i for i in range(L) if space.arch.levels[i].fanout is None]] == 1).all()
    # every level's order is a permutation of the dimensions
    assert (np.sort(batch.order, axis=2) == np.arange(len(bounds))).all()


def test_sampling_is_deterministic_per_seed_and_covers_orders() -> None:
    space = _space()
    a = CandidateSampler(space, seed=7).sample(2000)
    b = CandidateSampler(space, seed=7).sample(2000)
    c = CandidateSampler(space, seed=8).sample(2000)
    assert np.array_equal(a.temporal, b.temporal) and np.array_equal(a.order, b.order)
    assert not np.array_equal(a.temporal, c.temporal)
    # the first loop position of the DRAM level takes every dimension, roughly uniformly
    first = np.bincount(a.order[:, -1, 0], minlength=a.order.shape[2]) / len(a)
    assert np.allclose(first, 1 / a.order.shape[2], atol=0.04)
