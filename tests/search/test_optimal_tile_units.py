"""B47 (docs/search.md, "B47: each child of a tile at its own unrolling"): the children of ``F(1)``'s tiles inherit B45's
value at the tile for their own unrolling of the array (:meth:`.search.BranchAndBound._by_unrolling`), and B39 holds
for EDP as each order's energy times the node's latency bound (:meth:`.search.BranchAndBound._shared_order`).

Against the independent brute force (the cases of ``test_optimal_unrolled_tile``: small register files under a 2x2
array and random variants): each placed mapping's B47 value (its tile bound's node and tile, at its own unrolling) is at
most its cost for energy and EDP, with and without both axes; it raises some child above its tile's bound; x 1.03 it
exceeds some mapping's cost; a search with it proves the brute force's optimum with fewer nodes. B39's EDP bound and
each order's EDP value are at most every mapping's EDP, it raises some EDP bound, and x 1.03 it is caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal import search as search_module
from dnnmap.search.optimal.search import BranchAndBound, optimal_search
from dnnmap.workload.ir import Operator
from test_optimal_placement import _wide, placed_ancestors, placed_space
from test_optimal_shared_order import assert_below, assert_floors_raised, assert_some_floor_exceeds, floors
from test_optimal_unrolled_tile import BYPASS, CASES, POINTWISE, RANDOM, SPILLED, STRIDED, _ids

OBJECTIVES = ("energy", "edp")


def unit_bounds(arch: ArchSpec, op: Operator, objective: str, both: bool = False, scale: float = 1.0
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each placed brute-force mapping's B47 value: B45 at its ``F(1)`` tile bound's node and tile for its own
    unrolling of the array, -inf where B45 left the tile out; that tile bound; the mapping's cost) in ``objective``
    (``both``: with both-axis unrolling; ``scale``: B47's values times it)."""
    batch = placed_space(op, arch, both=both)
    model = CostModel(op, arch)
    truth = model.evaluate(batch).objective(objective)
    bb = BranchAndBound(op, arch, objective, model, placement=True, both_axes=_wide(arch, both))
    found: list[tuple[np.ndarray, np.ndarray]] = []
    tile_lb = bb.tile_bound(placed_ancestors(batch, "O", 2), batch.temporal[:, 0] * batch.spatial[:, 0], 1,
                            units=found)
    units = search_module._unit_table(len(truth), found)
    assert units is not None
    slot, values = units
    unit = bb.unrolled_tile.rows_of(batch.spatial[:, 1])
    assert (unit >= 0).all()
    value = np.where(slot >= 0, scale * values[np.maximum(slot, 0), unit], -np.inf)
    return value, tile_lb, truth


@pytest.mark.parametrize("arch,op", CASES + RANDOM, ids=_ids(CASES + RANDOM))
def test_unit_bounds_never_exceed_any_completion(arch: ArchSpec, op: Operator) -> None:
    """B47's value of every placed mapping is at most its energy and EDP (with both axes on the 2-D arrays too)."""
    assert_unit_bounds_below(arch, op)


def assert_unit_bounds_below(arch: ArchSpec, op: Operator) -> None:
    """B47's value of every placed mapping is at most its energy and EDP (with both axes on the 2-D arrays too)."""
    for both in (False, True) if _wide(arch, True) else (False,):
        for objective in OBJECTIVES:
            value, _, truth = unit_bounds(arch, op, objective, both)
            ok = np.isfinite(truth)
            bad = np.nonzero(ok & (value > truth * (1 + 1e-9)))[0]
            assert not len(bad), (objective, both, value[bad[0]], truth[bad[0]])


def test_unit_bounds_bind() -> None:
    """B47 raises some mapping's inherited bound above its tile's bound (the least over the unrollings), finitely, for
    both objectives."""
    for objective in OBJECTIVES:
        assert any((np.isfinite(value) & (value > tile_lb * (1 + 1e-9))).any()
                   for arch, op in (BYPASS, POINTWISE, STRIDED)
                   for value, tile_lb, _ in [unit_bounds(arch, op, objective)])


def test_unit_bounds_inflation_is_caught() -> None:
    """The check can fail: B47's values x 1.03 exceed some mapping's cost."""
    for objective in OBJECTIVES:
        assert any((np.isfinite(truth) & (value > truth * (1 + 1e-9))).any()
                   for arch, op in (BYPASS, STRIDED)
                   for value, _, truth in [unit_bounds(arch, op, objective, scale=1.03)])


def test_search_with_unit_bounds_keeps_the_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """The placed search with B47 proves the brute force's least energy and EDP, bounding fewer nodes than without
    it on some case."""
    fewer = False
    for arch, op in (BYPASS, STRIDED, SPILLED):
        cost = CostModel(op, arch).evaluate(placed_space(op, arch))
        for objective in OBJECTIVES:
            with monkeypatch.context() as patch:
                patch.setattr(search_module, "_unit_table", lambda n, found: None)
                without = optimal_search(op, arch, objective, placement=True)
            found = optimal_search(op, arch, objective, placement=True)
            for result in (found, without):
                assert result.certificate.proven
                assert result.certificate.incumbent == pytest.approx(cost.objective(objective).min(), rel=1e-9)
            assert found.certificate.nodes <= without.certificate.nodes
            fewer |= found.certificate.nodes < without.certificate.nodes
    assert fewer


def test_shared_order_edp_never_exceeds_any_completion() -> None:
    """B39 for EDP: every factor-stage ancestor's bound and every order's own value at most the mapping's EDP."""
    for arch, op in (BYPASS, POINTWISE, STRIDED, SPILLED):
        assert_below(floors(arch, op, objective="edp"))


def test_shared_order_edp_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """B39 raises some finite EDP bound of a factor stage (and never lowers one)."""
    with_rule = [f for arch, op in (BYPASS, POINTWISE, SPILLED) for f in floors(arch, op, objective="edp")]
    monkeypatch.setattr(BranchAndBound, "_shared_order", lambda self, *args: args[-2])
    without = [f for arch, op in (BYPASS, POINTWISE, SPILLED) for f in floors(arch, op, objective="edp")]
    assert_floors_raised(with_rule, without)


def test_shared_order_edp_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: B39's increments x 1.03 put some EDP bound above a mapping's EDP."""
    original = search_module.shared_orders
    monkeypatch.setattr(search_module, "shared_orders",
                        lambda *args: [(group, 1.03 * added) for group, added in original(*args)])
    found = [f for arch, op in (BYPASS, POINTWISE, STRIDED, SPILLED) for f in floors(arch, op, objective="edp")]
    assert_some_floor_exceeds(found)


def test_own_unrolling_is_its_column() -> None:
    """B45 at each row's own unrolling (an ``F(1)`` node's, one row at a time too) is the per-unrolling table's value
    in that unrolling's column."""
    arch, op = POINTWISE
    batch = placed_space(op, arch)
    model = CostModel(op, arch)
    for objective in OBJECTIVES:
        bb = BranchAndBound(op, arch, objective, model, placement=True)
        nodes = placed_ancestors(batch, "O", 2)
        cost = model.evaluate(bb._batch(nodes))
        tiles = batch.temporal[:, 0] * batch.spatial[:, 0]
        args = (cost, nodes.temporal, nodes.spatial, nodes.order, tiles, objective)
        table = bb.unrolled_tile.per_unrolling(*args)
        column = table[np.arange(len(tiles)), bb.unrolled_tile.rows_of(batch.spatial[:, 1])]
        own = bb.unrolled_tile.per_unrolling(*args, batch.spatial[:, 1])
        assert own.shape == (len(tiles), 1)
        np.testing.assert_allclose(own[:, 0], column, rtol=1e-12)
        one = search_module._cost_rows(cost, np.array([0]))
        single = bb.unrolled_tile.compute(one, nodes.temporal[:1], nodes.spatial[:1], nodes.order[:1], tiles[:1],
                                          objective, batch.spatial[:1, 1])
        np.testing.assert_allclose(single, column[:1], rtol=1e-12)
