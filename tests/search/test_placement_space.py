"""Per-tensor placement in the map space (``Constraints(placement=True)``, ``--placement``): the exhaustive and
random mappers also choose, for every level and tensor it keeps, how many of the level's non-trivial loops lie
above the tensor's tile (docs/cost-model.md section 1b). Checked against an independent brute force that
applies every placement to every mapping of ``brute_force.all_mappings`` and prices them one at a time."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import DnnmapError
from dnnmap.mapping.mapping import Mapping, validate_mapping
from dnnmap.search.constraints import Constraints, LevelConstraints, load_constraints
from dnnmap.search.mappers import exhaustive_search, random_search
from dnnmap.search.options import SearchOptions
from dnnmap.search.registry import check_options
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.sim import sim_metrics, simulate
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_oracle import ARCHS, LAYERS

PLACED = Constraints(placement=True)

# Eyeriss scaled down (docs/cost-model.md 1b): per-role register files under a 2x2 array, hop energy 0
MINI_EYERISS = parse_arch({"name": "mini_eyeriss", "clock_mhz": 200, "levels": [
    {"name": "RF", "capacity": {"input": 2, "weight": 16, "output": 4}, "read_energy": 1, "write_energy": 1},
    {"name": "GLB", "capacity": 64, "read_energy": 6, "write_energy": 6, "keeps": ["input", "output"],
     "fanout": {"shape": [2, 2], "hop_energy": 0}},
    {"name": "DRAM", "read_energy": 200, "write_energy": 200}]})


def placements(m: Mapping, op: Operator, arch: ArchSpec) -> list[Mapping]:
    """``m`` with every placement: each tensor a non-backing level keeps below 0..n of its n loops."""
    per_level = []
    for i, lm in enumerate(m.levels):
        kept = m.kept_tensors(i, op, arch) if i < len(m.levels) - 1 else ()
        choices = itertools.product(*[range(len(lm.temporal) + 1) for _ in kept])
        per_level.append([replace(lm, loops_above=tuple((t, n) for t, n in zip(kept, ns) if n)) for ns in choices])
    return [replace(m, levels=tuple(levels)) for levels in itertools.product(*per_level)]


def brute_force_optimum(op: Operator, arch: ArchSpec, objective: str) -> float:
    """The best objective over every placement of every brute-force mapping, each validated and priced alone."""
    model, best = CostModel(op, arch), np.inf
    for m in all_mappings(op, arch):
        for placed in placements(m, op, arch):
            validate_mapping(placed, op, arch)
            cost = model.evaluate(MappingBatch.from_mappings(op, arch, [placed]))
            best = min(best, float(cost.objective(objective)[0]))
    return best


CASES = [("two_level_1d", "pointwise"), ("three_level_1d", "matmul"), ("three_level_2d", "pointwise")]


@pytest.mark.parametrize("arch_name, layer_name", CASES)
def test_exhaustive_with_placement_equals_the_brute_force(arch_name: str, layer_name: str) -> None:
    op, arch = LAYERS[layer_name], ARCHS[arch_name]
    for objective in ("energy", "edp"):
        shared = exhaustive_search(op, arch, objective)
        placed = exhaustive_search(op, arch, objective, space=MapSpace(op, arch, PLACED))
        expected = brute_force_optimum(op, arch, objective)
        assert placed.cost.objective(objective)[0] == pytest.approx(expected, rel=1e-12)
        assert placed.cost.objective(objective)[0] <= shared.cost.objective(objective)[0]
        validate_mapping(placed.mapping, op, arch)


def test_placement_is_strictly_better_on_the_scaled_down_eyeriss_example() -> None:
    """The docs' 1x1 example in small: the register file holds 2 input words, so a shared boundary cannot keep a
    C loop there; with the input tile below the C loop it can (1 input word), and the reduction stays in the PE."""
    op = ops.pointwise("pw", 8, 4, (2, 1))
    shared = exhaustive_search(op, MINI_EYERISS, "energy")
    placed = exhaustive_search(op, MINI_EYERISS, "energy", space=MapSpace(op, MINI_EYERISS, PLACED))
    assert placed.cost.energy[0] < shared.cost.energy[0]
    assert placed.mapping.placed and placed.mapping.levels[0].above("I") > 0
    assert placed.cost.tile_words[0, 0, 0] == 1  # one input word in the register file


@pytest.mark.parametrize("arch, op", [(MINI_EYERISS, ops.pointwise("pw", 8, 4, (2, 1))),
                                      (ARCHS["three_level_1d"], LAYERS["pointwise"]),
                                      (ARCHS["two_level_2d"], LAYERS["depthwise"])])
def test_model_equals_the_simulator_on_the_mappings_it_returns(arch: ArchSpec, op: Operator) -> None:
    for objective in ("energy", "latency"):
        best = exhaustive_search(op, arch, objective, space=MapSpace(op, arch, PLACED))
        sim = simulate(op, arch, best.mapping)
        assert sim.output_matches
        metrics = sim_metrics(sim, op, arch, best.mapping)
        assert best.cost.energy[0] == pytest.approx(metrics.energy, rel=1e-12)
        assert best.cost.cycles[0] == pytest.approx(metrics.cycles, rel=1e-12)
        for li, lv in enumerate(arch.levels):
            for ti, t in enumerate(op.tensors):
                got = sim.count(lv.name, t.name)
                assert [best.cost.counts[k][0, li, ti] for k in ("reads", "fills", "updates", "drains")] \
                    == [got.reads, got.fills, got.updates, got.drains], (lv.name, t.name)


def test_random_samples_placements_and_is_off_by_default() -> None:
    """Every sampled placement is legal and each value 0..k is drawn; without the option no placement array is
    passed (the kernel's default path); random never beats the exhaustive optimum of the same space."""
    op, arch = LAYERS["matmul"], ARCHS["three_level_1d"]
    batch = CandidateSampler(MapSpace(op, arch, PLACED), seed=5).sample(2000)
    assert batch.above is not None
    loops = (batch.temporal > 1).sum(axis=2)  # (B, L)
    assert (batch.above <= loops[:, :, None]).all() and (batch.above[:, -1] == 0).all()
    assert (batch.above[:, :, ~batch.keeps.any(axis=0)] == 0).all()
    assert set(batch.above[:, 0].ravel().tolist()) == set(range(loops[:, 0].max() + 1))
    for b in range(0, 2000, 97):
        validate_mapping(batch.mapping(b, op, arch), op, arch)
    plain = CandidateSampler(MapSpace(op, arch), seed=5).sample(2000)
    assert plain.above is None
    sampled = random_search(op, arch, "energy", budget=3000, space=MapSpace(op, arch, PLACED))
    exact = exhaustive_search(op, arch, "energy", space=MapSpace(op, arch, PLACED))
    assert sampled.cost.energy[0] >= exact.cost.energy[0]


def test_the_option_in_files_and_its_refusals(tmp_path: Path) -> None:
    path = tmp_path / "placed.yaml"
    path.write_text("name: placed\nplacement: true\n")
    assert load_constraints(path).placement and not load_constraints(path).empty
    assert SearchOptions(placement=True).space_constraints().placement
    with pytest.raises(DnnmapError, match="exhaustive"):
        check_options("tso", SearchOptions(placement=True))
    check_options("random", SearchOptions(placement=True))
    check_options("optimal", SearchOptions(placement=True))
    with pytest.raises(DnnmapError, match="map-space constraint applies"):  # the optimal mapper takes placement, no other constraint
        check_options("optimal", SearchOptions(placement=True, constraints=Constraints(levels=(("GLB", LevelConstraints(
            spatial_dims=("K",))),))))


def test_map_command_places_tensors_and_refuses_other_mappers(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = ["map", "resnet18", "--arch", "eyeriss", "--layers", "layer1.0.conv1", "--budget", "3000", "--placement"]
    res = CliRunner().invoke(app, [*args, "--mapper", "random", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["layers"][0]["mapper"] == "random"
    res = CliRunner().invoke(app, [*args, "--mapper", "tso"])
    assert res.exit_code == 2 and "error: --placement applies to the auto, exhaustive, optimal, random, sunstone" in res.output
    res = CliRunner().invoke(app, ["map", "resnet18", "--placement", "--fuse", "temporal"])
    assert res.exit_code == 2 and "error: --placement does not apply with --fuse" in res.output
