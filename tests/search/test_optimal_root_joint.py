"""B21 (docs/search.md, "The root's order with the output's reloads and the window's disjoint refills (B21)"): B18's
pairs priced at the root's factor stage with each order's own reloads (:meth:`.bounds.LowerBound._reload_growth`) and
a sliding-window tensor's pair taken into B18's order by its disjoint refills
(:meth:`.bounds.LowerBound._disjoint_refills`), against the independent brute force.

On small brute-force cases of the widened space (per-tensor placement, both-axis unrolling, both, and both axes in the
shared-boundary space, where B18 and so B21 apply too), on windowed layers, and on cases whose backing store has a
fan-out (the growth's parent side and the accumulate reads that do not grow): at every stage each mapping's ancestor's
bound, and the tile bound, is at most the mapping's cost for every objective; each part of B21 raises some finite
root-stage bound where it is taken out; each part x 1.03 puts some root-stage bound above a mapping's cost (so the
checks would catch an inadmissible version).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_both_axes import CASES as BOTH
from test_optimal_bounds import ancestors, random_arch, random_layer
from test_optimal_placement import (CASES as PLACED, assert_bounds_below, placed_ancestors,
                                    placed_space, assert_some_bound_exceeds)
from test_optimal_windowed_bounds import windowed_cases

GROWTH = LowerBound._reload_growth
DISJOINT = LowerBound._disjoint_refills


def top_fan_cases(n: int, seed: int) -> list[tuple[ArchSpec, Operator]]:
    """Random cases of :func:`random_arch` whose backing store has a 1-D fan-out (with or without multicast and
    reduction): B21's pairs then cross a fan-out, and without reduction their parent's accumulate reads are not 0."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        spec = random_arch(rng, len(out)).model_dump(mode="json")
        spec["levels"][-1]["fanout"] = {"shape": [int(rng.integers(2, 4))], "multicast": bool(rng.random() < 0.5),
                                        "reduction": bool(rng.random() < 0.5),
                                        "hop_energy": float(rng.integers(0, 3))}
        arch, op = parse_arch(spec), random_layer(rng, len(out))
        if len(all_mappings(op, arch)) <= 300:
            out.append((arch, op))
    return out


# (arch, op, placement, both axes): cases where B21 raises root-stage bounds (found by taking it out on the cases of
# test_optimal_placement and test_optimal_both_axes), the last of the shared ones where its growth x 1.03 is caught;
# then backing stores with a fan-out: one without reduction where B21 lowers B18's bound (its accumulate reads, which
# B18 scaled with the refills), one with and one without reduction where it raises it
SPACES = [(True, False), (True, True)]
CASES = ([(*PLACED[10], *s) for s in SPACES] + [(*BOTH[k], True, True) for k in (6, 9)]
         + [(*BOTH[k], False, True) for k in (2, 8, 11)]
         + [(*c, True, False) for c in top_fan_cases(4, seed=41)[3:] + top_fan_cases(4, seed=45)[1::2]])
# windowed layers where the window's disjoint refills raise root-stage bounds and their x 1.03 is caught (found on
# random windowed cases of test_optimal_windowed_bounds' generator)
WINDOWED = ([(*windowed_cases(2, seed=63, limit=600)[1], False, True),
             (*windowed_cases(61, seed=63, limit=600)[60], True, False)]
            + [(*windowed_cases(32, seed=66, limit=600, on_chip=2)[31], *s) for s in ((False, True), (True, False))])
CASES += WINDOWED


def _ids() -> list[str]:
    return [f"{a.name}-{op.name}-{k}-{'placed' if p else 'shared'}{'-both' if b else ''}"
            for k, (a, op, p, b) in enumerate(CASES)]


def _wide(arch: ArchSpec, both: bool) -> frozenset[int]:
    return frozenset(i for i, lv in enumerate(arch.levels) if both and lv.fanout and len(lv.fanout.shape) == 2)


def root_bounds(arch: ArchSpec, op: Operator, placement: bool, both: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """(bound, cost) of every brute-force mapping's ancestor at the root's factor stage, for every objective."""
    model = CostModel(op, arch)
    batch = placed_space(op, arch, both=both, placement=placement)
    cost = model.evaluate(batch)
    out = []
    for objective in OBJECTIVES:
        bb = BranchAndBound(op, arch, objective, model, placement=placement, both_axes=_wide(arch, both))
        node = (placed_ancestors if placement else ancestors)(batch, "F", bb.L - 1)
        out.append((bb._bound(node, 0), cost.objective(objective)))
    return out


@pytest.mark.parametrize("arch,op,placement,both", CASES, ids=_ids())
def test_bounds_with_b21_never_exceed_any_completion(arch: ArchSpec, op: Operator, placement: bool,
                                                     both: bool) -> None:
    """Every objective, every stage and the tile bound."""
    model = CostModel(op, arch)
    batch = placed_space(op, arch, both=both, placement=placement)
    cost = model.evaluate(batch)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        bb = BranchAndBound(op, arch, objective, model, placement=placement, both_axes=_wide(arch, both))
        assert_bounds_below(bb, batch, truth, np.isfinite(truth), placed_ancestors if placement else ancestors)


def _no_growth(self: LowerBound, c: dict[str, np.ndarray], pr: object) -> np.ndarray:
    return np.zeros(len(c["fills"]))


def _no_disjoint(self: LowerBound, pr: object, spatial: np.ndarray, fixed_from: int, sweeps: np.ndarray,
                 refills: np.ndarray, tile: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(len(tile)), np.zeros(len(tile))


def _inflated_disjoint(self: LowerBound, *args: object) -> tuple[np.ndarray, np.ndarray]:
    energy, words = DISJOINT(self, *args)
    return 1.03 * energy, words


@pytest.mark.parametrize("name, off, inflated, cases", [
    ("_reload_growth", _no_growth, lambda self, c, pr: 1.03 * GROWTH(self, c, pr),
     [c for c in CASES if c[0].levels[-1].fanout is None and c not in WINDOWED]),
    ("_disjoint_refills", _no_disjoint, _inflated_disjoint, WINDOWED)], ids=["reloads", "window"])
def test_each_part_binds_and_its_inflation_is_caught(monkeypatch: pytest.MonkeyPatch, name: str, off: Callable,
                                                     inflated: Callable, cases: list[tuple]) -> None:
    """Without the part some finite root-stage bound is lower and none is higher (on these cases, whose backing store
    has no fan-out: the growth is never negative there); with it x 1.03 some bound exceeds a mapping's cost."""
    with_rule = [b for arch, op, p, both in cases for b in root_bounds(arch, op, p, both)]
    monkeypatch.setattr(LowerBound, name, off)
    without = [b for arch, op, p, both in cases for b in root_bounds(arch, op, p, both)]
    assert any((np.isfinite(a) & (a > b * (1 + 1e-9))).any() for (a, _), (b, _) in zip(with_rule, without))
    assert all((a >= b * (1 - 1e-12)).all() for (a, _), (b, _) in zip(with_rule, without))
    monkeypatch.setattr(LowerBound, name, inflated)
    mutated = [b for arch, op, p, both in cases for b in root_bounds(arch, op, p, both)]
    assert_some_bound_exceeds(mutated)
