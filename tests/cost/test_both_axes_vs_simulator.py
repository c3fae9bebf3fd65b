"""Both-axis unrolling (a dimension split over both axes of a 2-D fan-out, ``spatial_axis: 2``) as the map
space samples it with ``both_axes``: the model's counts equal the reference simulator's on random cases."""

from __future__ import annotations

import numpy as np

from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import BOTH_AXES, validate_mapping
from dnnmap.search.constraints import Constraints, LevelConstraints
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.sim import simulate
from model_checks import assert_counts_equal
from random_cases import random_arch, random_op


def _both_axes_cases(seed: int, n: int) -> list:
    """``n`` (op, arch, mapping) triples, each mapping splitting some dimension over both axes of a 2-D
    fan-out (drawn from the space with ``both_axes`` on every 2-D fan-out)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        op, arch = random_op(rng), random_arch(rng)
        two_d = [lv.name for lv in arch.levels if lv.fanout is not None and len(lv.fanout.shape) == 2
                 and min(lv.fanout.shape) >= 2]
        if not two_d:
            continue
        space = MapSpace(op, arch, Constraints(tuple((name, LevelConstraints(both_axes=True)) for name in two_d)))
        batch = CandidateSampler(space, int(rng.integers(1 << 30))).sample(200)
        rows = np.nonzero((batch.axes == BOTH_AXES).any(axis=(1, 2)))[0]
        if len(rows):
            out.append((op, arch, batch.mapping(int(rows[0]), op, arch)))
    return out


def test_counts_hops_and_cycles_exact_with_both_axis_unrolling() -> None:
    for op, arch, m in _both_axes_cases(2801, 80):
        validate_mapping(m, op, arch)
        assert any(a == BOTH_AXES for lm in m.levels for _, a in lm.spatial_axis)
        cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
        sim = simulate(op, arch, m, compute=False)
        assert_counts_equal(cost, sim, op, arch, m)
