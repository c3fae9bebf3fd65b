"""Writing mappings in Timeloop's map format and reading them back gives the same mapping."""

from __future__ import annotations

import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import Mapping
from dnnmap.mapping.timeloop_map import load_timeloop_mapping, save_timeloop_mapping
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.workload import zoo
from exercises import REFERENCE, exercise


def _same(a: Mapping, b: Mapping, op, arch) -> None:
    """Equal loops (factors, orders of the loops that iterate, fan-out axes) and bypass choices."""
    dims = op.dim_names
    for i, (x, y) in enumerate(zip(a.levels, b.levels)):
        assert [x.t(d) for d in dims] == [y.t(d) for d in dims]
        assert [x.s(d) for d in dims] == [y.s(d) for d in dims]
        moving = [d for d in x.full_order(dims) if x.t(d) > 1]
        assert moving == [d for d in y.full_order(dims) if y.t(d) > 1]
        axes_x, axes_y = dict(x.spatial_axis), dict(y.spatial_axis)
        assert {d: axes_x.get(d, 0) for d in dims if x.s(d) > 1} == {d: axes_y.get(d, 0) for d in dims if y.s(d) > 1}
        assert a.kept_tensors(i, op, arch) == b.kept_tensors(i, op, arch)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_exercise_mappings_round_trip(name: str, tmp_path) -> None:
    ex = exercise(name)
    path = tmp_path / "out.map.yaml"
    save_timeloop_mapping(path, ex.mapping, ex.op, ex.arch)
    _same(ex.mapping, load_timeloop_mapping([path], ex.op, ex.arch), ex.op, ex.arch)


def test_random_eyeriss_mappings_round_trip(tmp_path) -> None:
    """Sampled mappings of a zoo layer on the Eyeriss preset (2-D fan-out, bypass) survive the trip
    and cost the same."""
    arch = load_arch("eyeriss")
    op = zoo.get("alexnet").layers[2].op
    batch = CandidateSampler(MapSpace(op, arch), seed=0).sample(20)
    assert len(batch) > 0
    path = tmp_path / "m.map.yaml"
    model = CostModel(op, arch)
    for b in range(len(batch)):
        m = batch.mapping(b, op, arch)
        save_timeloop_mapping(path, m, op, arch)
        back = load_timeloop_mapping([path], op, arch)
        _same(m, back, op, arch)
        costs = [model.evaluate(MappingBatch.from_mappings(op, arch, [x])).energy[0] for x in (m, back)]
        assert costs[0] == costs[1]


def test_pass_through_level_is_not_written(tmp_path) -> None:
    ex = exercise("00-1level")
    path = tmp_path / "one.map.yaml"
    save_timeloop_mapping(path, ex.mapping, ex.op, ex.arch)
    assert "PassThrough" not in path.read_text()
