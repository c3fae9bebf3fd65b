"""MAESTRO-style directives: print -> parse gives the same mapping and the same CostModel result."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import MappingError
from dnnmap.mapping.dataflow_directives import format_directives, parse_directives
from dnnmap.mapping.io import save_mapping
from dnnmap.search.marvel.dataflows import BASELINES
from dnnmap.search.marvel.mapper import marvel_search
from dnnmap.search.marvel.onchip import MarvelOptions
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.constraints import Constraints
from dnnmap.search.space import MapSpace
from dnnmap.workload.ops import conv2d, depthwise, fully_connected

P1 = load_arch("marvel_platform1")


def _canonical(m, op):
    """The mapping up to what changes no count: factor-1 loops and their places in the orders."""
    levels = []
    for lm in m.levels:
        temporal = tuple(sorted((d, f) for d, f in lm.temporal if f > 1))
        spatial = tuple(sorted((d, f) for d, f in lm.spatial if f > 1))
        axes = tuple(sorted((d, a) for d, a in lm.spatial_axis if lm.s(d) > 1 and a))
        order = tuple(d for d in lm.full_order(op.dim_names) if lm.t(d) > 1)
        levels.append((temporal, spatial, axes, order, lm.keeps))
    return tuple(levels), m.layouts, m.notes


def _round_trip(mappings, op, arch):
    back = [parse_directives(format_directives(m, op, arch), op, arch) for m in mappings]
    for m, b in zip(mappings, back):
        assert _canonical(b, op) == _canonical(m, op)
    model = CostModel(op, arch)
    a = model.evaluate(MappingBatch.from_mappings(op, arch, list(mappings)))
    b = model.evaluate(MappingBatch.from_mappings(op, arch, back))
    assert np.array_equal(a.valid, b.valid) and np.array_equal(a.energy, b.energy)
    assert np.array_equal(a.cycles, b.cycles) and np.array_equal(a.dram_bytes, b.dram_bytes)


@pytest.mark.parametrize("op", [conv2d("c", 8, 16, 12, 3), depthwise("dw", 32, 12, 3), fully_connected("fc", 256, 64)],
                         ids=lambda o: o.name)
def test_baseline_dataflows_round_trip(op):
    found = [marvel_search(op, P1, "latency", MarvelOptions(parallel=df)).mapping for df in (None, *BASELINES)]
    _round_trip(found, op, P1)
    text = format_directives(found[3], op, P1)  # ShiDianNao-like: output rows and columns across PEs
    if op.name == "c":
        assert "SpatialMap" in text and "Cluster(" in text and "Y'" in text and "X'" in text


@pytest.mark.parametrize("arch_name,waste", [("marvel_platform1", None), ("eyeriss", None), ("eyeriss", 0.25)])
def test_random_mappings_round_trip(arch_name, waste):
    arch = load_arch(arch_name)
    op = conv2d("r", 6, 10, 9, 3, stride=2)
    batch = CandidateSampler(MapSpace(op, arch, Constraints(waste=waste)), seed=3).sample(150)
    mappings = [batch.mapping(i, op, arch) for i in range(len(batch))]
    if waste is not None:
        assert any(m.total(d) > b for m in mappings for d, b in op.dims)  # padded edge tiles are covered
    _round_trip(mappings, op, arch)


def test_a_two_dimensional_fanout_prints_one_marker_per_axis():
    arch = load_arch("eyeriss")
    op = conv2d("r", 6, 10, 9, 3)
    batch = CandidateSampler(MapSpace(op, arch), seed=5).sample(200)
    def axes_used(m):
        return {dict(lm.spatial_axis).get(d, 0) for lm in m.levels for d, f in lm.spatial if f > 1}

    both = [m for m in (batch.mapping(i, op, arch) for i in range(len(batch))) if len(axes_used(m)) == 2]
    assert both
    text = format_directives(both[0], op, arch)
    assert "axis 0" in text and "axis 1" in text


def test_bad_directives_are_refused_with_the_line():
    op = conv2d("c", 4, 8, 6, 3)
    text = format_directives(marvel_search(op, P1, "latency").mapping, op, P1)
    with pytest.raises(MappingError, match="unknown dimension 'Z'"):
        parse_directives(text.replace("TemporalMap(1,1) R;", "TemporalMap(1,1) Z;"), op, P1)
    with pytest.raises(MappingError, match="dimensions .* are not those of layer"):
        parse_directives(text.replace("K: 8", "K: 9"), op, P1)
    with pytest.raises(MappingError, match="unknown level"):
        parse_directives(text.replace("// level L1", "// level L7"), op, P1)
    with pytest.raises(MappingError, match="innermost map of R"):
        parse_directives(text.replace("TemporalMap(1,1) R;", "TemporalMap(3,3) R;"), op, P1)


def test_show_dataflow_prints_the_directives(tmp_path):
    op = conv2d("c", 8, 16, 10, 3)
    m = marvel_search(op, P1, "latency").mapping
    path = tmp_path / "m.yaml"
    save_mapping(path, m, [lv.name for lv in P1.levels], op)
    out = subprocess.run([sys.executable, "-m", "dnnmap.cli.main", "show", str(path), "--arch", "marvel_platform1",
                          "--dataflow"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert _canonical(parse_directives(out.stdout, op, P1), op)[0] == _canonical(m, op)[0]
