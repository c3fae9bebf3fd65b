"""The optimal mapper over the space with per-tensor placement (``optimal_search(placement=True)``,
``--mapper optimal --placement``; docs/search.md "The optimal mapper with placement").

Soundness as for the declared space (``test_optimal_bounds.py``): every placement of every brute-force mapping
(``test_placement_space.placements`` over ``brute_force.all_mappings``, which share no code with the mapper) is
priced, and at every stage of the tree the mapping's ancestor node (levels below the stage folded into the tile,
the placements of the levels still open at the shared boundary) must be bounded at most the mapping's cost; the
certified optimum must equal the brute force's and the exhaustive mapper's with placement (itself checked against
the brute force in ``test_placement_space.py``), on random small layers and architectures for every objective.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.search.constraints import Constraints
from dnnmap.search.mappers import exhaustive_search
from dnnmap.search.network import map_layer
from dnnmap.search.optimal import OptimalResult, optimal_search
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.options import SearchOptions
from dnnmap.search.space import MapSpace
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_bounds import ancestors, random_arch, random_layer
from test_oracle import ARCHS, LAYERS
from test_placement_space import MINI_EYERISS, placements

PLACED = Constraints(placement=True)


def placed_ancestors(batch: MappingBatch, kind: str, j: int) -> Nodes:
    """:func:`ancestors` with the placements of the levels fixed at the stage (above ``j``, and ``j`` after its
    order stage); the open levels' tensors at the shared boundary."""
    node = ancestors(batch, kind, j)
    above = batch.above.copy()
    above[:, :j + (kind == "F")] = 0
    return Nodes(node.temporal, node.spatial, node.axes, node.order, above)


# the last few brute-force spaces (keyed by the layer's and architecture's objects, held with the space so their ids
# stay theirs, and the options): the tests that price one case in turn (its soundness, each rule taken out or
# inflated) enumerate it once; a handful only, as a space can take tens of MB
_SPACES: OrderedDict[tuple[int, int, bool, bool], tuple[Operator, ArchSpec, MappingBatch]] = OrderedDict()
KEPT_SPACES = 4


def placed_space(op: Operator, arch: ArchSpec, both: bool = False, placement: bool = True) -> MappingBatch:
    """Every mapping of the brute force (``both``: also both-axis splits), each with every placement
    (``placement``); one of the last :data:`KEPT_SPACES` asked for is not enumerated again (callers only read it)."""
    key = (id(op), id(arch), both, placement)
    if key not in _SPACES:
        _SPACES[key] = (op, arch, _enumerated_space(op, arch, both, placement))
        while len(_SPACES) > KEPT_SPACES:
            _SPACES.popitem(last=False)
    _SPACES.move_to_end(key)
    return _SPACES[key][2]


def _enumerated_space(op: Operator, arch: ArchSpec, both: bool, placement: bool) -> MappingBatch:
    """:func:`placed_space`, enumerated."""
    mappings = all_mappings(op, arch, both=both)
    if placement:
        mappings = [p for m in mappings for p in placements(m, op, arch)]
    batch = MappingBatch.from_mappings(op, arch, mappings)
    if placement and batch.above is None:  # no level has a loop to place below
        batch = MappingBatch(batch.temporal, batch.spatial, batch.order, batch.keeps, batch.layouts, batch.axes,
                             np.zeros((len(batch), len(arch.levels), len(op.tensors)), dtype=np.int64))
    return batch


def cases(n: int, seed: int, on_chip: int | None = None) -> list[tuple[ArchSpec, Operator]]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = random_arch(rng, len(out), on_chip), random_layer(rng, len(out))
        if len(all_mappings(op, arch)) <= 1_500 and \
                sum(len(placements(m, op, arch)) for m in all_mappings(op, arch)) <= 40_000:
            out.append((arch, op))
    return out


def assert_bounds_below(bb: BranchAndBound, batch: MappingBatch, truth: np.ndarray, ok: np.ndarray,
                        node: Callable[[MappingBatch, str, int], Nodes]) -> None:
    """At every stage of ``bb`` the bound of each mapping's ancestor (``node``), and at the factor stages the tile
    bound, is at most the mapping's own cost (``truth``, where ``ok``)."""
    op, arch = bb.op, bb.arch
    for stage, (kind, j) in enumerate(bb.stages[:-1]):
        lb = bb._bound(node(batch, kind, j), stage)
        bad = np.nonzero(ok & (lb > truth * (1 + 1e-9)))[0]
        assert len(bad) == 0, (bb.objective, kind, j, batch.mapping(int(bad[0]), op, arch), lb[bad[0]],
                               truth[bad[0]])
        if kind == "F" and 1 <= j < bb.L - 1:  # the tile bound
            tiles = batch.temporal[:, :j].prod(axis=1) * batch.spatial[:, :j].prod(axis=1)
            lb = bb.tile_bound(node(batch, "O", j + 1), tiles, j)
            bad = np.nonzero(ok & (lb > truth * (1 + 1e-9)))[0]
            assert len(bad) == 0, (bb.objective, "tile", j, batch.mapping(int(bad[0]), op, arch), lb[bad[0]],
                                   truth[bad[0]])

def certified_over(op: Operator, arch: ArchSpec, batch: MappingBatch, space: MapSpace,
                   node: Callable[[MappingBatch, str, int], Nodes] | None, bb_options: dict[str, object],
                   search_options: dict[str, object]) -> Iterator[tuple[str, OptimalResult]]:
    """Per objective, over every mapping of ``batch`` (a space enumerated independently): each ancestor bound of
    ``BranchAndBound(..., **bb_options)`` is at most the mapping's cost (``node`` None: the caller checks the bounds
    of these mappings), ``optimal_search(..., **search_options)``
    proves the brute-force optimum, and the exhaustive mapper over ``space`` finds it too; where no mapping is valid
    the optimal mapper refuses the layer. Yields each objective's proven result for further checks."""
    model = CostModel(op, arch)
    cost = model.evaluate(batch)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)  # inf where invalid
        if not np.isfinite(truth).any():
            with pytest.raises(DnnmapError):
                optimal_search(op, arch, objective, **search_options)
            continue
        if node is not None:
            assert_bounds_below(BranchAndBound(op, arch, objective, model, **bb_options), batch, truth,
                                np.isfinite(truth), node)
        found = optimal_search(op, arch, objective, incumbent=None, **search_options)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)
        exhaustive = exhaustive_search(op, arch, objective, space=space)
        assert exhaustive.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)
        yield objective, found


CASES = cases(10, seed=21) + cases(8, seed=22, on_chip=2)


# slow: the odd-numbered cases; the even-numbered ones (five of the first draw, four of the on-chip one) keep the soundness
# and the optimum covered in the default run (the rules that need a tight register file bind on TINY below, not here)
@pytest.mark.parametrize("arch,op", [pytest.param(a, op, id=f"{a.name}-{op.name}-{k}", marks=[pytest.mark.slow] * (k % 2))
                                     for k, (a, op) in enumerate(CASES)])
def test_placed_bound_never_exceeds_any_completion_and_optimum_is_brute_force(arch: ArchSpec, op: Operator) -> None:
    for _ in certified_over(op, arch, placed_space(op, arch), MapSpace(op, arch, PLACED), placed_ancestors,
                            {"placement": True}, {"placement": True}):
        pass


@pytest.mark.parametrize("arch_name, layer_name", [("two_level_1d", "pointwise"), ("three_level_1d", "matmul"),
                                                   ("three_level_2d", "pointwise")])
def test_optimal_with_placement_equals_the_exhaustive_mapper(arch_name: str, layer_name: str) -> None:
    op, arch = LAYERS[layer_name], ARCHS[arch_name]
    for objective in OBJECTIVES:
        expected = exhaustive_search(op, arch, objective, space=MapSpace(op, arch, PLACED)).cost.objective(objective)[0]
        found = optimal_search(op, arch, objective, placement=True)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(expected, rel=1e-12)


def test_the_scaled_down_eyeriss_example_is_found_through_the_options() -> None:
    """The 2x2 Eyeriss of ``test_placement_space.py``: the proven placed optimum is the exhaustive one and
    strictly below the shared-boundary optimum; ``map_layer`` passes ``--placement`` to the mapper."""
    op = ops.pointwise("pw", 8, 4, (2, 1))
    placed = map_layer(op, MINI_EYERISS, "energy", "optimal", SearchOptions(placement=True, budget_seconds=None))
    shared = map_layer(op, MINI_EYERISS, "energy", "optimal", SearchOptions(budget_seconds=None))
    expected = exhaustive_search(op, MINI_EYERISS, "energy", space=MapSpace(op, MINI_EYERISS, PLACED))
    assert placed.cost.energy[0] == expected.cost.energy[0] < shared.cost.energy[0]
    assert placed.mapper == "optimal (proven)" and placed.mapping.placed


def tiny_rf_arch(capacity: dict[str, int]) -> ArchSpec:
    """A register file of a few words per role under a 2-wide global buffer, where B10 (nested refills) binds."""
    return parse_arch({"name": "tiny_rf", "clock_mhz": 100, "levels": [
        {"name": "RF", "capacity": capacity, "keeps": ["input", "weight", "output"], "read_energy": 1.0,
         "write_energy": 1.0},
        {"name": "GLB", "capacity": 24, "read_energy": 6.0, "write_energy": 6.0, "fanout": {"shape": [2], "hop_energy": 0.0}},
        {"name": "DRAM", "read_energy": 200.0, "write_energy": 200.0}]})


def _wide(arch: ArchSpec, both: bool) -> frozenset[int]:
    """The levels whose 2-D fan-out may split a dimension over both axes (``both``)."""
    return frozenset(i for i, lv in enumerate(arch.levels) if both and lv.fanout and len(lv.fanout.shape) == 2)


def placed_searches(arch: ArchSpec, op: Operator, both: bool = False
                    ) -> Iterator[tuple[BranchAndBound, MappingBatch, np.ndarray]]:
    """For every objective: the placed search (``both``: with both-axis unrolling), every placed brute-force mapping
    and their costs in that objective."""
    batch = placed_space(op, arch, both=both)
    model = CostModel(op, arch)
    cost = model.evaluate(batch)
    for objective in OBJECTIVES:
        yield (BranchAndBound(op, arch, objective, model, placement=True, both_axes=_wide(arch, both)), batch,
               cost.objective(objective))


def stage_bounds(arch: ArchSpec, op: Operator, both: bool = False, tiles_only: bool = False
                 ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(bound, cost) of every placed brute-force mapping's ancestor at every stage and of its tile bound (its tile of
    level ``j - 1`` under its ancestor that fixed the levels above ``j``), for every objective (``both``: in the space
    with both-axis unrolling too; ``tiles_only``: the tile bounds alone)."""
    out = []
    for bb, batch, truth in placed_searches(arch, op, both):
        for stage, (kind, j) in enumerate(bb.stages[:-1]):
            if not tiles_only:
                out.append((bb._bound(placed_ancestors(batch, kind, j), stage), truth))
            if kind == "F" and 1 <= j < bb.L - 1:
                tiles = batch.temporal[:, :j].prod(axis=1) * batch.spatial[:, :j].prod(axis=1)
                out.append((bb.tile_bound(placed_ancestors(batch, "O", j + 1), tiles, j), truth))
    return out


def assert_raises_some_bound(with_rule: list[tuple[np.ndarray, np.ndarray]],
                             without: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """A rule never lowers a bound and raises some finite one (so the soundness check covers it)."""
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(with_rule, without))
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(with_rule, without))


def assert_rule_binds(monkeypatch: pytest.MonkeyPatch, cases: list[tuple[ArchSpec, Operator]], method: str,
                      off: Callable[..., object]) -> None:
    """The bound method ``method`` of :class:`LowerBound` replaced by ``off`` (the rule taken out) lowers some finite
    :func:`stage_bounds` of ``cases`` and raises none."""
    full = [b for arch, op in cases for b in stage_bounds(arch, op)]
    monkeypatch.setattr(LowerBound, method, off)
    assert_raises_some_bound(full, [b for arch, op in cases for b in stage_bounds(arch, op)])


def assert_some_bound_exceeds(mutated: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """Some bound of a deliberately broken rule is above a mapping's cost (so the soundness check can fail)."""
    assert any((np.isfinite(truth) & (lb > truth * (1 + 1e-9))).any() for lb, truth in mutated)


TINY = (tiny_rf_arch({"input": 3, "weight": 1, "output": 1}), ops.matmul("m", 3, 4, 2))


@pytest.fixture(scope="module")
def tiny_bounds() -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`stage_bounds` of :data:`TINY` with every rule on (computed before any test takes one out), shared by
    the tests below."""
    return stage_bounds(*TINY)


def test_nested_refills_bind_and_never_exceed_any_completion(monkeypatch: pytest.MonkeyPatch,
                                                             tiny_bounds: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """B10 and B20 (nested and own-tile refills, :meth:`LowerBound._placed_refills`) on a tiny register file (3 input
    words, 1 weight, 1 output): the bounds with them pass the soundness check, and without them some ancestor's bound
    is lower where it fits (so the check covers them; the random cases above are too roomy for them to bind)."""
    arch, op = TINY
    for bound, truth in tiny_bounds:  # the soundness check of the random cases above, on the bounds computed once
        assert not (np.isfinite(truth) & (bound > truth * (1 + 1e-9))).any(), "a bound above a placed mapping's cost"
    for _ in certified_over(op, arch, placed_space(op, arch), MapSpace(op, arch, PLACED), None, {}, {"placement": True}):
        pass
    monkeypatch.setattr(LowerBound, "_placed_refills", lambda self, entries, spatial, *a: (
        np.zeros(len(spatial)), np.zeros((1, len(spatial))), np.zeros((1, len(spatial)))))
    assert_raises_some_bound(tiny_bounds, stage_bounds(arch, op))


def _largest_copies_alone(self: LowerBound, limits: tuple[int, ...], m: int) -> np.ndarray:
    """Each tensor's largest copies on its own (the unrolling not shared between the tensors)."""
    return ORIGINAL_PARETO(self, limits, m).max(axis=0, keepdims=True)


ORIGINAL_PARETO = LowerBound._pareto_copies


@pytest.mark.parametrize("method, replacement", [
    ("_box", lambda self, *args: None),  # no box known: B11 off
    ("_level_trips", lambda self, *args: None),  # no outermost-loop factor
    ("_pareto_copies", _largest_copies_alone)])  # each tensor's copies at the tile bound on their own
def test_whole_box_refills_bind(monkeypatch: pytest.MonkeyPatch, tiny_bounds: list[tuple[np.ndarray, np.ndarray]],
                                method: str, replacement: Callable) -> None:
    """B11 (docs/search.md "B11, whole-box refills") on the tiny register file, whose soundness and optimum the
    test above checks with every rule on: each of its three parts - a tensor that cannot hold its box refilled
    whole at every event (over the sets the level can hold together), times the level's outermost loop where it
    does not index the tensor, and at the tile bound the fan-out's copies taken jointly over the tensors - raises
    some ancestor's bound where it is taken out, so the check covers it."""
    monkeypatch.setattr(LowerBound, method, replacement)
    assert_raises_some_bound(tiny_bounds, stage_bounds(*TINY))
