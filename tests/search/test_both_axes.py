"""Both-axis unrolling in the map space (``both_axes`` per level): a dimension split over both axes of a 2-D
fan-out. The space with it is a superset of the declared space; the exhaustive and random mappers walk it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnnmap.arch.spec import parse_arch
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.mapping.mapping import BOTH_AXES, validate_mapping
from dnnmap.search.constraints import Constraints, LevelConstraints, load_constraints
from dnnmap.search.mappers import exhaustive_search, random_search
from dnnmap.search.space import MapSpace
from dnnmap.workload import ops
from test_oracle import ARCHS, LAYERS

ARRAY_4X3 = parse_arch({"name": "array4x3", "clock_mhz": 100, "levels": [
    {"name": "Buf", "capacity": 64, "read_energy": 2, "write_energy": 2, "fanout": {"shape": [4, 3], "hop_energy": 1}},
    {"name": "DRAM", "read_energy": 200, "write_energy": 200}]})


def _both(*levels: str) -> Constraints:
    return Constraints(tuple((name, LevelConstraints(both_axes=True)) for name in levels))


@pytest.mark.parametrize("objective", ["latency", "edp"])
def test_k12_on_a_4x3_array_needs_both_axes(objective: str) -> None:
    """A 1x1 convolution with K = 12 and nothing else to parallelize: one axis holds at most K4 (3 cycles);
    over both axes K12 fills the 12 lanes (1 cycle)."""
    op = ops.pointwise("k12", 1, 12, (1, 1))
    one = exhaustive_search(op, ARRAY_4X3, objective)
    both = exhaustive_search(op, ARRAY_4X3, objective, space=MapSpace(op, ARRAY_4X3, _both("Buf")))
    assert one.cost.cycles[0] == 3 and both.cost.cycles[0] == 1
    assert both.cost.objective(objective)[0] < one.cost.objective(objective)[0]
    validate_mapping(both.mapping, op, ARRAY_4X3)
    assert both.mapping.levels[0].spatial == (("K", 12),) and both.mapping.levels[0].spatial_axis == (("K", BOTH_AXES),)
    sampled = random_search(op, ARRAY_4X3, objective, budget=500, space=MapSpace(op, ARRAY_4X3, _both("Buf")))
    assert sampled.cost.cycles[0] == 1


@pytest.mark.parametrize("arch_name", ["two_level_2d", "three_level_2d"])
def test_the_space_with_both_axes_is_a_superset(arch_name: str) -> None:
    """On the oracle's 2-D architectures every layer's optimum with both axes is at most the declared
    space's, for every objective, and the walk evaluates more candidates (those splitting a dimension)."""
    arch = ARCHS[arch_name]
    level = next(lv.name for lv in arch.levels if lv.fanout is not None and len(lv.fanout.shape) == 2)
    for op in LAYERS.values():
        for objective in OBJECTIVES:
            one = exhaustive_search(op, arch, objective)
            both = exhaustive_search(op, arch, objective, space=MapSpace(op, arch, _both(level)))
            assert both.cost.objective(objective)[0] <= one.cost.objective(objective)[0] * (1 + 1e-12)
            assert both.evaluated >= one.evaluated


def test_constraints_file_field_and_its_refusal(tmp_path: Path) -> None:
    good = tmp_path / "both.yaml"
    good.write_text("levels:\n  Buf:\n    both_axes: true\n")
    c = load_constraints(good)
    assert c.level("Buf").both_axes and not c.empty
    c.check(ARRAY_4X3)
    one_d = ARCHS["two_level_1d"]
    with pytest.raises(DnnmapError, match=r"field 'levels\.Buf\.both_axes': level Buf has no 2-D fan-out"):
        c.check(one_d)
