"""Soundness of the optimal mapper's bounds for sliding-window inputs (docs/search.md, "Windowed inputs": B13 and the
instance words of B3) against the independent brute-force enumeration.

Random small convolutions, depthwise convolutions and poolings with strides 1-2 and windows 1-3 on random two- and
three-level architectures (the three halo-reuse rules, fan-outs, bypass, capacities as in
``test_optimal_bounds.random_arch``), with and without per-tensor placement: at every stage the bound of each mapping's
ancestor, and the tile bound, must not exceed the mapping's cost, for every objective, and the certified optimum must
equal the brute-force one. The new terms must bind on these cases (without them some bound is lower), and inflating
them by a few percent must exceed some mapping's cost (so the check would catch an inadmissible term).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal import bounds
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.space import touched_lower
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_bounds import ancestors, random_arch
from test_optimal_placement import assert_bounds_below, placed_ancestors, placed_space, assert_some_bound_exceeds
from test_placement_space import placements


def windowed_layer(rng: np.random.Generator, i: int, kinds: tuple[int, ...] = (0, 1, 2)) -> Operator:
    """A small convolution, depthwise convolution or pooling (``kinds``: 0, 1, 2) with a window of 1-3 and a stride of
    1-2 along one spatial axis (sometimes a 2x2 window over both)."""
    kind, stride, k, out = (int(x) for x in (kinds[rng.integers(0, len(kinds))], rng.integers(1, 3),
                                             rng.integers(1, 4), rng.integers(2, 5)))
    if rng.random() < 0.2:  # a window over both spatial axes
        hw, kernel, stride = (stride * (out - 1) + 2, 2 + stride - 1), (2, 2), (stride, 1)
    else:
        hw, kernel = (stride * (out - 1) + k, 1), (k, 1)
    channels = int(rng.integers(1, 3))
    if kind == 0:
        return ops.conv2d(f"c{i}", channels, int(rng.integers(1, 3)), hw, kernel, stride=stride)
    if kind == 1:
        return ops.depthwise(f"d{i}", channels, hw, kernel, stride=stride)
    return ops.pool(f"p{i}", channels, hw, kernel, stride=stride)


def windowed_cases(n: int, seed: int, on_chip: int | None = None, limit: int = 20_000,
                   placed_limit: int | None = None, kinds: tuple[int, ...] = (0, 1, 2)
                   ) -> list[tuple[ArchSpec, Operator]]:
    """``n`` (architecture, windowed layer of ``kinds``) pairs whose brute-force space has at most ``limit`` mappings
    (with ``placed_limit``: at most that many placed mappings)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = random_arch(rng, len(out), on_chip), windowed_layer(rng, len(out), kinds)
        maps = all_mappings(op, arch)
        if len(maps) > limit:
            continue
        if placed_limit is not None and sum(len(placements(m, op, arch)) for m in maps) > placed_limit:
            continue
        out.append((arch, op))
    return out


CASES = windowed_cases(16, seed=31, on_chip=2) + windowed_cases(8, seed=32)
PLACED_CASES = windowed_cases(6, seed=33, limit=1_500, placed_limit=30_000)
# depthwise layers (B14: the output's drains against its read-modify-write at the lanes, one unrolling for both)
DEPTHWISE_CASES = windowed_cases(10, seed=34, on_chip=2, kinds=(1,)) + windowed_cases(6, seed=35, kinds=(1,))


def _ids(cases: list[tuple[ArchSpec, Operator]]) -> list[str]:
    return [f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(cases)]


def check(arch: ArchSpec, op: Operator, placement: bool = False) -> None:
    """Every stage's bound (and tile bound) of every mapping's ancestor at most its cost, and the certified optimum
    the brute-force one, for every objective."""
    model = CostModel(op, arch)
    batch = placed_space(op, arch) if placement else MappingBatch.from_mappings(op, arch, all_mappings(op, arch))
    cost = model.evaluate(batch)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        ok = np.isfinite(truth)
        if not ok.any():
            continue
        bb = BranchAndBound(op, arch, objective, model, placement=placement)
        assert_bounds_below(bb, batch, truth, ok, placed_ancestors if placement else ancestors)
        found = optimal_search(op, arch, objective, incumbent=None, placement=placement)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth[ok].min(), rel=1e-9)


@pytest.mark.parametrize("arch,op", CASES, ids=_ids(CASES))
def test_windowed_bound_never_exceeds_any_completion(arch: ArchSpec, op: Operator) -> None:
    check(arch, op)


@pytest.mark.parametrize("arch,op", DEPTHWISE_CASES, ids=_ids(DEPTHWISE_CASES))
def test_depthwise_bound_never_exceeds_any_completion(arch: ArchSpec, op: Operator) -> None:
    check(arch, op)


@pytest.mark.parametrize("arch,op", PLACED_CASES, ids=_ids(PLACED_CASES))
def test_windowed_bound_with_placement_never_exceeds_any_completion(arch: ArchSpec, op: Operator) -> None:
    check(arch, op, placement=True)


def stage_bounds(arch: ArchSpec, op: Operator) -> list[np.ndarray]:
    """Every objective's bound of every brute-force mapping's ancestor at every stage, and its tile bound; the
    mappings' costs last."""
    model = CostModel(op, arch)
    batch = MappingBatch.from_mappings(op, arch, all_mappings(op, arch))
    cost = model.evaluate(batch)
    out = []
    for objective in OBJECTIVES:
        bb = BranchAndBound(op, arch, objective, model)
        for stage, (kind, j) in enumerate(bb.stages[:-1]):
            out.append((bb._bound(ancestors(batch, kind, j), stage), cost.objective(objective)))
            if kind == "F" and 1 <= j < bb.L - 1:
                tiles = batch.temporal[:, :j].prod(axis=1) * batch.spatial[:, :j].prod(axis=1)
                out.append((bb.tile_bound(ancestors(batch, "O", j + 1), tiles, j), cost.objective(objective)))
    return out


def _old_instance_words(self: LowerBound, spatial: np.ndarray, level: int, t: int) -> np.ndarray:
    """B3's instance words before: the largest single term per axis."""
    return touched_lower(self.op, self._cover(spatial, level))[:, t]


def _plain_order_safe(self: LowerBound, temporal: np.ndarray, j: int) -> np.ndarray:
    """B2 before: only where no non-trivial level-``j`` loop moves a window axis of the tensor."""
    return ~((temporal[:, j] > 1)[:, None, :] & self.window[None, :, :]).any(axis=2)


def _inflated_drain(self: LowerBound, m: int) -> tuple[int, float, float] | None:
    """B14's output pair with its energies per word x 1.03."""
    found = ORIGINAL_DRAIN(self, m)
    return None if found is None else (found[0], 1.03 * found[1], 1.03 * found[2])


ORIGINAL_STEPS = bounds._step_words
ORIGINAL_INSTANCE_WORDS = LowerBound._instance_words
ORIGINAL_DRAIN = LowerBound._drain_pair
BIND = CASES[:12] + DEPTHWISE_CASES


@pytest.fixture(scope="module")
def with_rule() -> Callable[[int], list[tuple[np.ndarray, np.ndarray]]]:
    """The bounds of case ``k`` of :data:`BIND` with every term as shipped, each computed once for the five terms'
    tests below; a test asks for its cases before it swaps in its own variants (``monkeypatch``)."""
    shipped: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

    def bounds_of(k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if k not in shipped:
            shipped[k] = stage_bounds(*BIND[k])
        return shipped[k]
    return bounds_of


# each term's (inadmissible) variants, and the cases of BIND where taking the term out lowers some bound and its
# inflation is caught (measured over all of BIND): the default run checks the term there, ``-m slow`` on all of BIND
TERMS = [("B13 window steps", bounds,
          ("_step_words", lambda op, tiles, t, halo: np.zeros((len(tiles), len(op.dim_names)))),
          ("_step_words", lambda op, tiles, t, halo: 1.03 * ORIGINAL_STEPS(op, tiles, t, halo)), [9]),
         ("B3 instance words", LowerBound, ("_instance_words", _old_instance_words),
          ("_instance_words", lambda self, spatial, level, t: 1.03 * ORIGINAL_INSTANCE_WORDS(self, spatial, level, t)),
          [0]),
         ("B2 one window loop", LowerBound, ("order_safe", _plain_order_safe),
          ("order_safe", lambda self, temporal, j: np.ones((len(temporal), self.T), dtype=bool)), [15]),
         ("B13 every event", LowerBound, ("_every_event", lambda self, tiles, t: np.broadcast_to(self.disjoint[t], tiles.shape)),
          ("_every_event", lambda self, tiles, t: np.broadcast_to(self.indexes[t], tiles.shape)), [9]),
         ("B14 output drains", LowerBound, ("_drain_pair", lambda self, m: None), ("_drain_pair", _inflated_drain), [6])]


@pytest.mark.parametrize("target, off, inflated, cases", [
    *(pytest.param(target, off, inflated, cases, id=name) for name, target, off, inflated, cases in TERMS),
    *(pytest.param(target, off, inflated, range(len(BIND)), id=f"{name} on all cases", marks=pytest.mark.slow)
      for name, target, off, inflated, _ in TERMS)])  # slow: the default case of each term above keeps it covered
def test_windowed_terms_bind_and_their_inflation_is_caught(monkeypatch: pytest.MonkeyPatch,
                                                           with_rule: Callable[[int], list[tuple[np.ndarray, np.ndarray]]],
                                                           target: object, off: tuple[str, Callable],
                                                           inflated: tuple[str, Callable], cases: list[int]) -> None:
    """Each new term raises some finite bound of the brute-force ancestors on these cases (and never lowers one), so
    the soundness check above covers it; the term inflated by 3% puts some bound above a mapping's cost (the check
    would catch an inadmissible version). For B2, the inadmissible version is B2 on every window tensor (several of
    its loops at level ``j``, or halos kept only across the innermost loop); for B13's share of the events, every
    event of a window loop counted (its wraps included) whatever the other terms of the window."""
    shipped = [b for k in cases for b in with_rule(k)]  # before the variants go in
    monkeypatch.setattr(target, *off)
    without = [b for k in cases for b in stage_bounds(*BIND[k])]
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(shipped, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(shipped, without))
    monkeypatch.setattr(target, *inflated)
    mutated = (b for k in cases for b in stage_bounds(*BIND[k]))  # lazily: stops at the first case caught
    assert_some_bound_exceeds(mutated)


def test_window_steps_of_a_pooling_tile() -> None:
    """B13's words per step on a hand-derived case: a 3x1 pooling window of stride 2, a tile of 2 output rows and the
    whole window covers input rows 0-4 (5 words, ``span`` 5). A step of the output-row loop shifts them by at least
    2 x 2 = 4 rows (at most 1 shared: 4 new), a step of the window loop by at least 3 (at most 2 shared: 3 new), a
    channel step is disjoint (5 new); without halo reuse every step refills the 5 words."""
    op = ops.pool("p", 2, (7, 1), (3, 1), stride=2)  # G2 P3 R3
    dims = op.dim_names
    tile = np.array([[{"G": 1, "P": 2, "R": 3}.get(d, 1) for d in dims]])
    t = next(j for j, x in enumerate(op.tensors) if x.role == "input")
    steps = bounds._step_words(op, tile, t, halo=True)[0]
    assert [steps[dims.index(d)] for d in "GPR"] == [5, 4, 3]
    assert [bounds._step_words(op, tile, t, halo=False)[0][dims.index(d)] for d in "GPR"] == [5, 5, 5]
