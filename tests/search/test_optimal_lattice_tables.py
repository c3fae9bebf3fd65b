"""The open fan-out's per-budget tables read without a pass over the unrolling table per budget (docs/search.md "The
widened space: less fixed work per layer").

The lanes' joint least (:meth:`.bounds.LowerBound._joint_least`, B3/B4 with B14's drains) and B23's copies front
(:meth:`.bounds.LowerBound._copies_front`) read each budget's first legal unrolling off the layer's divisor lattice
(:meth:`.bounds.LowerBound._least_legal`); here they equal a direct enumeration of each budget's legal rows of the
table, for every budget dividing the layer's bounds and for padded budgets (not dividing them). B11's fronts filled
for many limits at once (:meth:`.bounds.LowerBound._fill_copies`) equal the limits' own enumeration.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.space import divisors
from dnnmap.workload import zoo
from dnnmap.workload.ir import Operator
from test_optimal_wide_tpu import CASES, _ids, reference_front

LAYERS = [(arch, name) for arch in ("eyeriss", "tpu_like") for name in ("layer4.0.downsample.0",)]


def _bound(arch: ArchSpec, op: Operator) -> tuple[LowerBound, int]:
    """The widened space's bound of ``op`` (placement, both axes on every 2-D fan-out) and its one fan-out level."""
    both = frozenset(m for m, lv in enumerate(arch.levels) if lv.fanout is not None and len(lv.fanout.shape) == 2)
    lb = LowerBound(op, arch, CostModel(op, arch), MappingBatch.default_keeps(op, arch), True, both)
    return lb, next(m for m, lv in enumerate(arch.levels) if lv.fanout is not None)


def _budgets(op: Operator) -> np.ndarray:
    """Every box dividing the layer's bounds, and one padded budget per dimension (its bound plus one)."""
    bounds = [op.bound(d) for d in op.dim_names]
    return np.array(list(itertools.product(*[divisors(b) for b in bounds]))
                    + [[b + 1 if k == d else b for k, b in enumerate(bounds)] for d in range(len(bounds))])


@pytest.mark.parametrize("arch_name,layer", LAYERS)
def test_joint_least_and_copies_front_equal_the_legal_rows(arch_name: str, layer: str) -> None:
    arch = load_arch(arch_name)
    op = next(x.op for x in zoo.get("resnet18").layers if x.name == layer)
    lb, m = _bound(arch, op)
    budgets = _budgets(op)
    for drains in (False, True):
        energy = lb._joint_table(m, drains)[1]
        legal = lb._joint_legal(m, budgets, drains)
        assert legal.any(axis=1).all()  # the unrolling of no factor is always legal
        got = lb._joint_least(m, budgets, drains)
        for i, row in enumerate(legal):
            rows = np.nonzero(row)[0]
            want = max(0.0, energy[:, rows[0]].sum() - energy[:, rows].min(axis=1).sum()) if len(energy) >= 2 else 0.0
            assert got[i] == pytest.approx(want, rel=1e-12, abs=1e-9), budgets[i]
    table, energy, _, _ = lb._joint_table(m)
    copies = table[:, lb.reduction].prod(axis=1).astype(float)
    cs, got = lb._copies_front(m, budgets)
    assert cs.tolist() == sorted(set(copies.tolist()))
    sums = energy.sum(axis=0)
    for i, row in enumerate(lb._joint_legal(m, budgets)):
        rows = np.nonzero(row)[0]
        mins = energy[:, rows].min(axis=1).sum()
        for k, c in enumerate(cs):
            with_c = rows[copies[rows] == c]
            want = max(0.0, sums[with_c].min() - mins) if len(with_c) else np.inf
            assert got[i, k] == pytest.approx(want, rel=1e-12, abs=1e-9), (budgets[i], c)


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_copies_fronts_filled_together_equal_the_limits_own_enumeration(arch: ArchSpec, op: Operator) -> None:
    lb, m = _bound(arch, op)
    budgets = _budgets(op)
    lb._fill_copies(budgets, m)  # every limits at once, then read from the cache
    for limits in map(tuple, budgets.tolist()):
        got = lb._copies_cache[(limits, m)]
        assert {tuple(r) for r in got.astype(int).tolist()} == reference_front(lb, limits, m), limits
