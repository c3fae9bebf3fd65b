"""Map-space constraints shrink the space exactly as they say (checked against the independent brute force).

The brute force (``brute_force.py``) enumerates the whole declared space as Mapping objects; this file reads
each constraint on a Mapping itself (:func:`satisfies`), so the filtered brute force is an independent
statement of the constrained space. The constrained exhaustive walk must evaluate exactly its candidates
(level 0's order aside: no count depends on it) and find its optimum; the sampler must draw only its members.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from brute_force import all_mappings
from dnnmap.arch.spec import parse_arch
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import DnnmapError, InputFileError, MappingError
from dnnmap.mapping.mapping import Mapping
from dnnmap.search.constraints import Constraints, LevelConstraints, load_constraints
from dnnmap.search.mappers import exhaustive_search, random_search
from dnnmap.search.marvel.dataflows import RS_LIKE
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator

ARCH = parse_arch({"name": "tiny", "clock_mhz": 100, "levels": [
    {"name": "RF", "capacity": 12, "read_energy": 1, "write_energy": 1},
    {"name": "GLB", "capacity": 64, "read_energy": 6, "write_energy": 6,
     "fanout": {"shape": [2, 2], "hop_energy": 2}},
    {"name": "DRAM", "read_energy": 200, "write_energy": 200}]})

LAYERS: dict[str, Operator] = {
    "pointwise": ops.pointwise("pw", 2, 4, (3, 1)),  # K4 C2 P3
    "matmul": ops.matmul("mm", 3, 4, 2),  # M3 K4 N2
}

CASES: dict[str, Constraints] = {
    "weight stationary": Constraints((
        ("GLB", LevelConstraints(spatial_dims=("K", "C"), axes=(("K", 0), ("C", 1)))),
        ("RF", LevelConstraints(keep=("weight",))))),
    "fixed factors": Constraints((("RF", LevelConstraints(temporal=(("K", 2),))),
                                  ("GLB", LevelConstraints(spatial=(("K", 2),))))),
    "tile and order": Constraints((("RF", LevelConstraints(tile=(("K", 2), ("P", 3), ("M", 3)))),
                                   ("GLB", LevelConstraints(order=("K", "P", "M", "N"))),
                                   ("DRAM", LevelConstraints(order=("N", "C", "K", "P", "M", "B"))))),
}


def _level_dims(m: Mapping, i: int) -> set[str]:
    return {d for d, _ in m.levels[i].temporal} | {d for d, _ in m.levels[i].spatial}


def satisfies(m: Mapping, op: Operator, c: Constraints) -> bool:
    """Does mapping ``m`` meet ``c`` (factors, tiles, spatial dims and axes, relative orders)? Bypass aside."""
    names = [lv.name for lv in ARCH.levels]
    for i, name in enumerate(names):
        lc, lv = c.level(name), m.levels[i]
        dims = [d for d in op.dim_names]
        if any(lv.t(d) != f for d, f in lc.temporal if d in dims) or any(lv.s(d) != f for d, f in lc.spatial if d in dims):
            return False
        if any(m.coverage(d, i) != t for d, t in lc.tile if d in dims):
            return False
        if lc.spatial_dims is not None and any(d not in lc.spatial_dims for d, _ in lv.spatial):
            return False
        axis = dict(lv.spatial_axis)
        if any(axis.get(d, 0) != a for d, a in lc.axes if lv.s(d) > 1):
            return False
        chain = [d for d in lc.order or () if lv.t(d) > 1]
        if [d for d in lv.order if d in chain] != chain:
            return False
    return True


def _key(m: Mapping) -> tuple:
    """A mapping without level 0's order (the exhaustive walk fixes it: no count depends on it)."""
    return tuple((lv.temporal, lv.spatial, lv.spatial_axis, lv.order if i else ()) for i, lv in enumerate(m.levels))


def _with_bypass(m: Mapping, op: Operator, c: Constraints) -> Mapping:
    levels = []
    for name, lv in zip((x.name for x in ARCH.levels), m.levels):
        keep = c.level(name).keep
        levels.append(lv if keep is None else replace(lv, keeps=tuple(t.name for t in op.tensors if t.role in keep)))
    return replace(m, levels=tuple(levels))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("layer", LAYERS)
def test_constrained_exhaustive_walks_exactly_the_filtered_brute_force(case: str, layer: str) -> None:
    op, c = LAYERS[layer], CASES[case]
    allowed = [_with_bypass(m, op, c) for m in all_mappings(op, ARCH) if satisfies(m, op, c)]
    assert 0 < len(allowed) < len(all_mappings(op, ARCH))  # the constraint binds and leaves something
    cost = CostModel(op, ARCH).evaluate(MappingBatch.from_mappings(op, ARCH, allowed))
    space = MapSpace(op, ARCH, c)
    for objective in ("edp", "latency", "energy"):
        found = exhaustive_search(op, ARCH, objective, space=space)
        assert found.evaluated == len({_key(m) for m in allowed})
        assert found.cost.objective(objective)[0] == pytest.approx(cost.objective(objective).min(), rel=1e-12)
        assert satisfies(found.mapping, op, c)


@pytest.mark.parametrize("case", CASES)
def test_every_sampled_mapping_satisfies_the_constraints(case: str) -> None:
    op, c = LAYERS["pointwise"], CASES[case]
    space = MapSpace(op, ARCH, c)
    batch = CandidateSampler(space, seed=4).sample(300)
    assert len(batch) == 300
    assert all(satisfies(batch.mapping(b, op, ARCH), op, c) for b in range(len(batch)))
    assert (batch.keeps == space.keeps).all()
    if c.level("RF").keep is not None:  # the RF keeps weights only
        assert [bool(k) for k in batch.keeps[0]] == [t.role == "weight" for t in op.tensors]
    found = random_search(op, ARCH, "edp", budget=500, seed=2, space=space)
    assert satisfies(found.mapping, op, c)


def test_no_constraints_is_the_declared_space() -> None:
    op = LAYERS["matmul"]
    plain, empty = MapSpace(op, ARCH), MapSpace(op, ARCH, Constraints())
    assert all((a == b).all() for a, b in zip(plain.tables(), empty.tables()))
    assert exhaustive_search(op, ARCH, "edp").evaluated == len({_key(m) for m in all_mappings(op, ARCH)})


def test_a_relative_order_is_sampled_uniformly_over_the_orders_that_keep_it() -> None:
    op = LAYERS["matmul"]
    c = Constraints((("DRAM", LevelConstraints(order=("K", "M"))),))
    batch = CandidateSampler(MapSpace(op, ARCH, c), seed=9).sample(4000)
    dims = op.dim_names
    k, m = dims.index("K"), dims.index("M")
    pos = np.argsort(batch.order[:, 2], axis=1)  # position of each dimension in the DRAM order
    assert (pos[:, k] < pos[:, m]).all()
    # 4 loops with K before M: 12 orders, each about 1/12 of the draws
    _, counts = np.unique(batch.order[:, 2], axis=0, return_counts=True)
    assert len(counts) == 12 and counts.min() > 0.6 * 4000 / 12


def test_an_unsatisfiable_constraint_names_the_layer_and_dimension() -> None:
    c = Constraints((("GLB", LevelConstraints(spatial=(("K", 3),))),), name="odd")
    with pytest.raises(MappingError, match="'mm'.*dimension K = 4.*odd"):
        MapSpace(LAYERS["matmul"], ARCH, c).tables()


def test_a_marvel_baseline_is_a_constraints_value() -> None:
    p1 = parse_arch({"name": "p", "clock_mhz": 100, "levels": [
        {"name": "L1", "capacity": 64, "read_energy": 1, "write_energy": 1},
        {"name": "L2", "capacity": 1024, "read_energy": 6, "write_energy": 6, "fanout": {"shape": [8]}},
        {"name": "DRAM", "read_energy": 200, "write_energy": 200}]})
    op = ops.conv2d("c", 2, 4, 4, 3)
    c = RS_LIKE.constraints(op, p1)
    assert c.level("L2").spatial_dims == ("P", "R")  # Marvel's Q (output rows) is the IR P
    found = exhaustive_search(op, p1, "latency", space=MapSpace(op, p1, c), max_space=1e7)
    assert {d for lv in found.mapping.levels for d, _ in lv.spatial} <= {"P", "R"}


# ---- the YAML form --------------------------------------------------------------------
def test_yaml_constraints_parse(tmp_path) -> None:
    f = tmp_path / "ws.yaml"
    f.write_text("name: ws\nlevels:\n  GLB:\n    spatial_dims: [K, C]\n    axes: {K: 0, C: 1}\n"
                 "  RF:\n    keep: [weight]\n    temporal: {K: 2}\n    order: [K, C]\n")
    c = load_constraints(f)
    assert c == replace(CASES["weight stationary"], name="ws", source=str(f)).with_level(
        "RF", keep=("weight",), temporal=(("K", 2),), order=("K", "C"))
    c.check(ARCH, tuple(LAYERS.values()))


@pytest.mark.parametrize(("text", "message"), [
    ("levels:\n  GLB:\n    axes: {K: x}\n", "field 'levels.GLB.axes.K'"),
    ("levels:\n  RF:\n    keep: [weights]\n", "field 'levels.RF.keep\\[0\\]'"),
    ("levels:\n  RF:\n    bypass: [input]\n", "field 'levels.RF.bypass'"),
    ("level:\n  RF: {}\n", "field 'level'"),
])
def test_yaml_constraints_refuse_bad_fields(tmp_path, text: str, message: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(InputFileError, match=f"{f}.*{message}"):
        load_constraints(f)


@pytest.mark.parametrize(("text", "message"), [
    ("levels:\n  PE:\n    keep: [weight]\n", "'levels.PE'.*no level 'PE'"),
    ("levels:\n  RF:\n    spatial_dims: [K]\n", "'levels.RF'.*no fan-out"),
    ("levels:\n  GLB:\n    axes: {K: 2}\n", "'levels.GLB.axes.K'.*axis 2"),
    ("levels:\n  DRAM:\n    keep: [weight]\n", "'levels.DRAM.keep'.*backing store"),
    ("levels:\n  RF:\n    temporal: {X: 2}\n", "'levels.RF'.*dimension.*X.*no selected layer"),
    ("levels:\n  RF:\n    order: [K, K]\n", "'levels.RF.order'.*twice"),
])
def test_constraints_that_do_not_fit_the_architecture_are_refused(tmp_path, text: str, message: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(DnnmapError, match=f"constraints file {f}: field {message}"):
        load_constraints(f).check(ARCH, tuple(LAYERS.values()))


# ---- dnnmap map --constraints ---------------------------------------------------------
def test_map_command_walks_the_constrained_space_and_refuses_other_mappers(tmp_path) -> None:
    f = tmp_path / "ws.yaml"
    f.write_text("levels:\n  GLB:\n    spatial_dims: [K, C]\n    axes: {K: 0, C: 1}\n  RF:\n    keep: [weight]\n")
    out = tmp_path / "out.json"
    args = ["map", "resnet18", "--arch", "eyeriss", "--layers", "layer1.0.conv1", "--budget", "500"]
    res = CliRunner().invoke(app, [*args, "--mapper", "random", "--constraints", str(f), "--json", str(out)])
    assert res.exit_code == 0, res.output
    layer = json.loads(out.read_text())["layers"][0]
    levels = layer["mapping"]["levels"]
    assert layer["mapper"] == "random" and levels["RF"]["keeps"] == ["W"]
    assert set(levels["GLB"]["spatial"]) <= {"K", "C"} and levels["GLB"]["spatial"]
    assert all(levels["GLB"].get("spatial_axis", {}).get(d, 0) == a for d, a in (("K", 0), ("C", 1))
               if d in levels["GLB"]["spatial"])
    res = CliRunner().invoke(app, [*args, "--mapper", "sunstone", "--constraints", str(f)])
    assert res.exit_code == 2 and "--constraints applies to the auto, exhaustive, random mappers" in res.output
    f.write_text("levels:\n  PE: {}\n")
    res = CliRunner().invoke(app, [*args, "--mapper", "random", "--constraints", str(f)])
    assert res.exit_code == 2 and f"constraints file {f}: field 'levels.PE'" in res.output


def _random_constraints(rng: np.random.Generator) -> Constraints:
    """A constraints value with each field of each level set (or left whole) at random, often only widening."""
    levels = []
    for name in ("GLB", "RF"):
        if rng.random() < 0.3:
            continue
        narrow = rng.random() < 0.5  # half the levels only widen (both_axes) or constrain nothing
        pick = (lambda: narrow and rng.random() < 0.3)  # noqa: E731 - one draw per field
        levels.append((name, LevelConstraints(
            temporal=(("K", 2),) if pick() else (), spatial=(("C", 2),) if pick() else (),
            tile=(("P", 3),) if pick() else (), spatial_dims=("K",) if pick() else None,
            axes=(("K", 0),) if pick() else (), order=("C", "K") if pick() else None,
            keep=("W", "O") if pick() else None, both_axes=bool(rng.random() < 0.5))))
    layouts = (("I", ("C", "P")),) if rng.random() < 0.15 else ()
    return Constraints(tuple(levels), layouts=layouts, placement=bool(rng.random() < 0.5))


def test_narrowing_fields_one_rule_for_the_mapper_check_auto_and_the_optimal_space() -> None:
    """On random constraints values, the mapper check (a constraint Sunstone does not take: what makes ``auto``
    sample instead of running Sunstone) and the optimal mapper's space (``OptimalSpace.of``, naming the field)
    agree with each other and with the rule stated independently: nothing but placement and both_axes set."""
    from dnnmap.search import registry
    from dnnmap.search.bounds import OptimalSpace
    from dnnmap.search.options import SearchOptions

    sunstone = registry.get("sunstone").info
    rng = np.random.default_rng(28)
    seen = {True: 0, False: 0}
    for _ in range(300):
        c = _random_constraints(rng)
        only_widens = replace(c, placement=False, levels=tuple(
            (n, replace(lc, both_axes=False)) for n, lc in c.levels if replace(lc, both_axes=False) != LevelConstraints()
        )) == Constraints()
        narrowing = c.narrowing_fields()
        assert (not narrowing) == only_widens
        refused = [key for key, _ in registry.refused_options(sunstone, SearchOptions(constraints=c))]
        assert ("constraints" in refused) == bool(narrowing)
        if narrowing:
            said = f"field '{narrowing[0]}': the optimal mapper" if narrowing[0] != "layouts" else "DRAM layouts"
            with pytest.raises(DnnmapError, match=f"^constraints: {said}"):
                OptimalSpace.of(c)
        else:
            space = OptimalSpace.of(c)
            assert space.placement == c.placement and set(space.both_axes) == {n for n, lc in c.levels if lc.both_axes}
        seen[bool(narrowing)] += 1
    assert min(seen.values()) > 50  # both outcomes drawn often
