"""The optimal mapper in the widened space (per-tensor placement and both-axis unrolling) on ``tpu_like``'s shape: two
register files (weights, and the output's partial sums above them) under a buffer with a 2-D fan-out (docs/search.md,
"The widened space on tpu_like").

On small random architectures of that shape (``test_optimal_tpu_bounds.two_register_arch``) every placement of every
brute-force mapping with both-axis splits is priced: at every stage each mapping's ancestor's bound and the tile bound
are at most its cost for every objective, and the search proves the brute-force optimum. B11 at the tile bound reads
the fan-out's per-tensor copies off one table per level (:meth:`.bounds.LowerBound._pareto_copies`); its Pareto fronts
equal an independent enumeration over the limits' own legal unrollings (limits dividing the layer's bounds and, the
padded extents' case, not dividing them), and the soundness check reaches that table with limits below the bounds.
B6's largest unrolling of a budget is read off the same table (:meth:`.bounds.LowerBound._largest`) and equals
:func:`.bounds.largest_unrolling`'s search.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import LowerBound, largest_unrolling
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.space import divisors
from dnnmap.search.sunstone.unroll import legal_table
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_placement import assert_bounds_below, placed_ancestors, placed_space
from test_optimal_placed_rf import _wide, stage_bounds
from test_optimal_tpu_bounds import small_layer, two_register_arch
from test_placement_space import placements


def cases(n: int, seed: int, layer: Callable[[np.random.Generator, int], Operator] = small_layer
          ) -> list[tuple[ArchSpec, Operator]]:
    """Two-register-file architectures and small layers (``layer``'s draws) whose placed space with both-axis splits
    stays small."""
    rng = np.random.default_rng(seed)
    out: list[tuple[ArchSpec, Operator]] = []
    i = 0
    while len(out) < n:
        arch, op = two_register_arch(rng, i), layer(rng, i)
        i += 1
        mappings = all_mappings(op, arch, both=True)
        if 30 <= len(mappings) <= 1_500 and sum(len(placements(m, op, arch)) for m in mappings) <= 25_000:
            out.append((arch, op))
    return out


CASES = cases(4, seed=83)


def _ids(cases: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(cases)]


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_wide_tpu_bounds_never_exceed_any_completion_and_the_optimum_is_proven(arch: ArchSpec, op: Operator) -> None:
    """Every objective: every stage's ancestor bound and the tile bound at most the mapping's cost; the search from no
    incumbent proves the brute-force optimum."""
    model = CostModel(op, arch)
    batch = placed_space(op, arch, both=True)
    cost = model.evaluate(batch)
    wide = _wide(arch, True)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        ok = np.isfinite(truth)
        assert ok.any()
        assert_bounds_below(BranchAndBound(op, arch, objective, model, placement=True, both_axes=wide), batch, truth,
                            ok, placed_ancestors)
        found = optimal_search(op, arch, objective, placement=True,
                               both_axes=[arch.levels[m].name for m in wide])
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth[ok].min(), rel=1e-9)


def reference_front(lb: LowerBound, limits: tuple[int, ...], m: int) -> set[tuple[int, ...]]:
    """The Pareto-largest per-tensor copy products over the legal unrollings of ``limits`` themselves, by a literal
    pairwise comparison."""
    fac = legal_table(m in lb.both_axes)(limits, tuple(lb.arch.levels[m].fanout.shape))[0]
    prods = {tuple(int(np.prod([f for f, i in zip(row, lb.indexes[t]) if not i])) for t in range(lb.T))
             for row in fac.tolist()}
    return {p for p in prods if not any(q != p and all(a >= b for a, b in zip(q, p)) for q in prods)}


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_copies_front_equals_the_limits_own_enumeration(arch: ArchSpec, op: Operator) -> None:
    """Every limits dividing the layer's bounds (one table per level), and limits beyond them (padded extents: the
    limits' own table), one axis per dimension and both axes."""
    model = CostModel(op, arch)
    keeps = MappingBatch.default_keeps(op, arch)
    m = next(i for i, lv in enumerate(arch.levels) if lv.fanout is not None)
    bounds = [op.bound(d) for d in op.dim_names]
    for both in (frozenset(), frozenset([m])):
        lb = LowerBound(op, arch, model, keeps, True, both)
        dividing = list(itertools.product(*[divisors(b) for b in bounds]))
        beyond = [tuple(b + 1 if k == d else b for k, b in enumerate(bounds)) for d in range(len(bounds))]
        for limits in dividing + beyond:
            got = lb._pareto_copies(limits, m)
            assert len({tuple(r) for r in got.astype(int).tolist()}) == len(got)
            assert {tuple(r) for r in got.astype(int).tolist()} == reference_front(lb, limits, m), limits


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_largest_unrolling_off_the_table_equals_the_search(arch: ArchSpec, op: Operator) -> None:
    """B6's largest unrolling of each budget (:meth:`.bounds.LowerBound._largest`, read off the level's table where the
    budget divides the layer's bounds) equals :func:`.bounds.largest_unrolling`'s own search, padded budgets too."""
    model = CostModel(op, arch)
    keeps = MappingBatch.default_keeps(op, arch)
    m = next(i for i, lv in enumerate(arch.levels) if lv.fanout is not None)
    shape = tuple(arch.levels[m].fanout.shape)
    bounds = [op.bound(d) for d in op.dim_names]
    budgets = np.array(list(itertools.product(*[divisors(b) for b in bounds]))
                       + [[b + 1 if k == d else b for k, b in enumerate(bounds)] for d in range(len(bounds))])
    for both in (frozenset(), frozenset([m])):
        got = LowerBound(op, arch, model, keeps, True, both)._largest(budgets, m)
        assert got.tolist() == [largest_unrolling(tuple(r), shape, bool(both)) for r in budgets.tolist()]


def test_the_bounds_read_the_layer_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The soundness check above reaches B11's table of the layer's bounds (the one read for every limits dividing
    them) at the tile bound, with limits below the layer's bounds, on every case."""
    original, seen = LowerBound._pareto_copies, []

    def spy(self: LowerBound, limits: tuple[int, ...], m: int) -> np.ndarray:
        seen.append(tuple(self.bounds.tolist()) != limits)
        return original(self, limits, m)

    monkeypatch.setattr(LowerBound, "_pareto_copies", spy)
    for arch, op in CASES:
        seen.clear()
        stage_bounds(arch, op, both=True)
        assert any(seen)
