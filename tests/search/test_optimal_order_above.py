"""B44 (docs/search.md, "B44: B39 under the loops above the level"): B39's one order of a level for its children's
refills and its own placed tensors' refetches (:func:`.shared_order.shared_orders`) also at the factor-stage nodes with
non-trivial loops above the level, level 0's included, a placed tensor's term left out where such a loop moves a
sliding-window axis of it.

Against the independent brute force: every placed mapping's ancestor at each factor stage below the top (level 0's
too) and its order's own value at its order node are at most its energy (random cases, whose factor stages have the
levels above's loops over them, and small register files); taking B44 out (B39 on the nodes without loops above the
level only, as before it) lowers some finite bound and raises none; B44's increments x 1.03 are caught.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.optimal import search as search_module
from dnnmap.workload.ir import Operator
from test_optimal_placed_rf import CASES as RF_CASES
from test_optimal_placement import CASES, cases
from test_optimal_shared_order import assert_below, assert_some_floor_exceeds
from test_optimal_shared_order import floors as shared_floors

ORIGINAL = search_module.shared_orders
RANDOM = CASES + cases(8, seed=44) + cases(6, seed=45, on_chip=2)


def floors(arch: ArchSpec, op: Operator, both: bool = False) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """B39's floors (:func:`test_optimal_shared_order.floors`) at every factor stage below the top, level 0's
    included."""
    return shared_floors(arch, op, both, lowest=0)


def _above(temporal: np.ndarray, j: int) -> np.ndarray:
    """(n,) whether a node has a non-trivial loop above level ``j`` (where B44 extends B39)."""
    return (temporal[:, j + 1:] > 1).any(axis=(1, 2))


def _scaled(scale: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., list]:
    """:func:`.shared_order.shared_orders` with each group's increments passed through ``scale(added, above)``."""
    def shared_orders(*args: object) -> list:
        temporal, j = args[1], args[-1]
        return [(group, scale(added, _above(temporal[group], j))) for group, added in ORIGINAL(*args)]
    return shared_orders


def _without_b44(added: np.ndarray, above: np.ndarray) -> np.ndarray:
    """B39 as before B44: no increment at a node with a loop above the level."""
    return np.where(above[:, None], 0.0, added)


@pytest.mark.parametrize("arch,op", [pytest.param(a, op, id=f"{a.name}-{op.name}-{k}",
                                                  marks=[pytest.mark.slow] * (k % 2))
                                     for k, (a, op) in enumerate(RANDOM)])
def test_order_above_never_exceeds_any_placed_completion(arch: ArchSpec, op: Operator) -> None:
    assert_below(floors(arch, op))


@pytest.mark.parametrize("arch,op", RF_CASES, ids=[f"{a.name}-{op.name}" for a, op in RF_CASES])
def test_order_above_on_small_register_files(arch: ArchSpec, op: Operator) -> None:
    """Where the capacity decides each order's placements (both-axis unrolling too on the 2x2 array)."""
    for both in (False, True) if arch.levels[1].fanout is not None else (False,):
        assert_below(floors(arch, op, both))


def _all_floors() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`floors` of the small register files and of the random matmuls, where B44 raises bounds."""
    return [f for a, op in RF_CASES + [(a, op) for a, op in RANDOM if op.name.startswith("m")] for f in floors(a, op)]


def test_order_above_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking B44 out never raises a factor-stage bound or an order's value and lowers some finite bound."""
    with_rule = _all_floors()
    monkeypatch.setattr(search_module, "shared_orders", _scaled(_without_b44))
    without = _all_floors()
    for (a, fa, _), (b, fb, _) in zip(with_rule, without):
        assert (b <= a * (1 + 1e-12)).all() and (np.nan_to_num(fb, neginf=0) <= np.nan_to_num(fa, neginf=0)
                                                  * (1 + 1e-12) + 1e-9).all()
    assert any((np.isfinite(a) & (a > b * (1 + 1e-6))).any() for (a, _, _), (b, _, _) in zip(with_rule, without))


def test_order_above_inflation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: B44's increments (at the nodes with loops above the level) x 1.03 put some bound or order
    value above a mapping's energy."""
    monkeypatch.setattr(search_module, "shared_orders",
                        _scaled(lambda added, above: np.where(above[:, None], 1.03 * added, added)))
    assert_some_floor_exceeds(_all_floors())
