"""The optimal mapper over the space with both-axis unrolling (``optimal_search(both_axes=...)``, a constraints
file's ``both_axes: true`` with ``--mapper optimal``; docs/search.md "The optimal mapper with placement").

Soundness as for the declared space and placement (``test_optimal_bounds.py``, ``test_optimal_placement.py``):
every mapping of the brute force with dimensions over both axes of every 2-D fan-out (``brute_force.all_mappings``
with ``both``, which shares no code with the mapper), with and without every placement, is priced, and at every
stage of the tree the mapping's ancestor node must be bounded at most the mapping's cost; the certified optimum
must equal the brute force's and the exhaustive mapper's with ``both_axes`` (and placement), on random small
layers and architectures whose both-axis space is strictly larger than the one-axis one, for every objective.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import ArchSpec
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.mapping.mapping import BOTH_AXES
from dnnmap.search.constraints import Constraints, LevelConstraints, load_constraints
from dnnmap.search.mappers import exhaustive_search
from dnnmap.search.network import map_layer
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import largest_unrolling
from dnnmap.search.sunstone.unroll import both_axes_unrollings
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.options import SearchOptions
from dnnmap.search.space import MapSpace
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_both_axes import ARRAY_4X3
from test_optimal_bounds import ancestors, random_arch, random_layer
from test_optimal_placement import assert_bounds_below, placed_ancestors, placed_space
from test_placement_space import placements


def two_d_levels(arch: ArchSpec) -> list[str]:
    return [lv.name for lv in arch.levels if lv.fanout is not None and len(lv.fanout.shape) == 2]


def both_space(op: Operator, arch: ArchSpec, placement: bool) -> MappingBatch:
    return placed_space(op, arch, both=True, placement=placement)


def cases(n: int, seed: int, on_chip: int | None = None) -> list[tuple[ArchSpec, Operator]]:
    """Random cases with a 2-D fan-out where some mapping splits a dimension over both of its axes."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = random_arch(rng, len(out), on_chip), random_layer(rng, len(out))
        if not two_d_levels(arch):
            continue
        both = all_mappings(op, arch, both=True)
        if len(both) == len(all_mappings(op, arch)) or len(both) > 1_500:
            continue
        if sum(len(placements(m, op, arch)) for m in both) <= 30_000:
            out.append((arch, op))
    return out


CASES = cases(6, seed=31) + cases(6, seed=32, on_chip=2)


@pytest.mark.parametrize("placement", [False, True], ids=["shared", "placed"])
@pytest.mark.parametrize("arch,op", CASES, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(CASES)])
def test_both_axes_bound_never_exceeds_any_completion_and_optimum_is_brute_force(arch: ArchSpec, op: Operator,
                                                                                 placement: bool) -> None:
    model = CostModel(op, arch)
    batch = both_space(op, arch, placement)
    assert (batch.axes == BOTH_AXES).any()
    levels = two_d_levels(arch)
    names = [lv.name for lv in arch.levels]
    both = frozenset(names.index(name) for name in levels)
    space = MapSpace(op, arch, Constraints(tuple((name, LevelConstraints(both_axes=True)) for name in levels),
                                           placement=placement))
    cost = model.evaluate(batch)
    node = placed_ancestors if placement else ancestors
    for objective in OBJECTIVES:
        truth = cost.objective(objective)  # inf where invalid
        if not np.isfinite(truth).any():
            with pytest.raises(DnnmapError):
                optimal_search(op, arch, objective, placement=placement, both_axes=levels)
            continue
        ok = np.isfinite(truth)
        assert_bounds_below(BranchAndBound(op, arch, objective, model, placement=placement, both_axes=both), batch,
                            truth, ok, node)
        found = optimal_search(op, arch, objective, incumbent=None, placement=placement, both_axes=levels)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)
        exhaustive = exhaustive_search(op, arch, objective, space=space)
        assert exhaustive.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)


def test_unrollings_are_the_spaces_and_the_largest_is_their_maximum() -> None:
    """:func:`both_axes_unrollings` gives the labelled factor vectors the exhaustive mapper's slot tables allow,
    and :func:`largest_unrolling` with ``both`` their largest product (K12 fills a 4x3 array only over both)."""
    fac, ax = both_axes_unrollings((12,), (4, 3))
    assert sorted(zip(fac[:, 0].tolist(), ax[:, 0].tolist())) == [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0),
                                                                  (4, 2), (6, 2), (12, 2)]
    assert largest_unrolling((12,), (4, 3)) == 4 and largest_unrolling((12,), (4, 3), both=True) == 12
    rng = np.random.default_rng(5)
    for _ in range(30):
        limits = tuple(int(x) for x in rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 64], size=3))
        shape = (int(rng.integers(2, 9)), int(rng.integers(2, 9)))
        fac, ax = both_axes_unrollings(limits, shape)
        assert largest_unrolling(limits, shape, both=True) == fac.prod(axis=1).max()
        one = {tuple(r) for r in np.concatenate([fac, ax], axis=1)[(ax != BOTH_AXES).all(axis=1)].tolist()}
        assert largest_unrolling(limits, shape) == max(np.prod(r[:3]) for r in one)


def test_the_4x3_array_is_proven_through_a_constraints_file(tmp_path: Path) -> None:
    """``map_layer`` with a constraints file holding only ``both_axes`` runs the optimal mapper over the wider
    space (K12 over both axes: 1 cycle, against 3 on one axis); other constraints are still refused."""
    op = ops.pointwise("k12", 1, 12, (1, 1))
    path = tmp_path / "both.yaml"
    path.write_text("levels:\n  Buf:\n    both_axes: true\n")
    both = map_layer(op, ARRAY_4X3, "latency", "optimal", SearchOptions(constraints=load_constraints(path),
                                                                        budget_seconds=None))
    one = map_layer(op, ARRAY_4X3, "latency", "optimal", SearchOptions(budget_seconds=None))
    assert both.mapper == "optimal (proven)" and both.cost.cycles[0] == 1 < one.cost.cycles[0] == 3
    assert both.mapping.levels[0].spatial_axis == (("K", BOTH_AXES),)
    path.write_text("levels:\n  Buf:\n    both_axes: true\n    spatial_dims: [K]\n")
    with pytest.raises(DnnmapError, match="a map-space constraint applies to the"):
        map_layer(op, ARRAY_4X3, "latency", "optimal", SearchOptions(constraints=load_constraints(path)))
    path.write_text("levels:\n  Buf:\n    both_axes: true\n")
    with pytest.raises(DnnmapError, match=r"both-axis unrolling \(both_axes\) applies to the"):
        map_layer(op, ARRAY_4X3, "latency", "marvel", SearchOptions(constraints=load_constraints(path)))


def test_map_command_takes_a_placement_and_both_axes_file_for_optimal(tmp_path: Path) -> None:
    """``dnnmap map --mapper optimal --constraints F`` with F holding only ``placement`` and ``both_axes`` runs;
    the mappers that take neither refuse the file naming those that do (Sunstone takes it:
    ``test_sunstone_both_axes.py``)."""
    f = tmp_path / "wide.yaml"
    f.write_text("placement: true\nlevels:\n  GLB:\n    both_axes: true\n")
    out = tmp_path / "out.json"
    args = ["map", "resnet18", "--arch", "eyeriss", "--layers", "layer4.1.conv2", "--objective", "energy",
            "--constraints", str(f)]
    res = CliRunner().invoke(app, [*args, "--mapper", "optimal", "--budget-seconds", "3", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["layers"][0]["mapper"].startswith("optimal")
    res = CliRunner().invoke(app, [*args, "--mapper", "tso"])
    assert res.exit_code == 2 and "error: placement in --constraints applies to the auto, exhaustive, optimal, random" \
        in res.output
    f.write_text("levels:\n  GLB:\n    both_axes: true\n")
    res = CliRunner().invoke(app, [*args, "--mapper", "tso"])
    assert res.exit_code == 2 and "error: both_axes in --constraints applies to the auto, exhaustive, optimal, random, " \
        "sunstone mappers" in res.output
