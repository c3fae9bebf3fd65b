"""The mapper registry and the one ranking: lookup, refusals, a new mapper by one registration, auto's delegation,
and the objective table and tie-break every mapper shares."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES, best_index, objective_value, rank, tie_break
from dnnmap.errors import DnnmapError, UnknownNameError
from dnnmap.search import registry
from dnnmap.search.mappers import SearchResult, exhaustive_search, random_search
from dnnmap.search.network import map_layer, search_network
from dnnmap.search.constraints import Constraints
from dnnmap.search.options import SearchOptions
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.workload import ops
from dnnmap.workload.ir import Layer, Network

EYERISS = load_arch("eyeriss")
SMALL = ops.conv2d("small", 2, 4, (4, 4), 1)  # ~5.5e4 mappings on Eyeriss: auto enumerates it


def test_the_builtin_list_is_what_the_search_packages_register() -> None:
    """registry.BUILTIN (read without imports by the CLI) names exactly the mappers the subpackages of
    dnnmap.search register, each from the package BUILTIN names (register() refuses a built-in name with another
    description or other options)."""
    import dnnmap.search as package

    for sub in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if sub.ispkg:
            importlib.import_module(sub.name)
    assert set(registry._MAPPERS) == set(registry.BUILTIN)
    for name, info in registry.BUILTIN.items():
        mapper = registry._MAPPERS[name]
        assert mapper.search.__module__.startswith(info.module + ".") or mapper.search.__module__ == info.module


def test_every_builtin_mapper_is_registered() -> None:
    assert set(registry.names()) == {"auto", "exhaustive", "random", "sunstone", "optimal", "tso", "marvel"}
    assert registry.names()[0] == "auto"
    assert registry.names(registry.takes_imperfect) == ("auto", "exhaustive", "optimal", "random", "sunstone")
    assert registry.names(registry.takes_tile_first) == ("auto", "sunstone")
    assert registry.names(registry.takes_placement) == ("auto", "exhaustive", "optimal", "random", "sunstone")
    assert registry.names(registry.takes_both_axes) == ("auto", "exhaustive", "optimal", "random", "sunstone")
    assert all(registry.get(n).name == n and registry.get(n).info.description for n in registry.names())


def test_unknown_mapper_and_objective_list_the_known_names() -> None:
    with pytest.raises(UnknownNameError, match="unknown mapper 'nope'; choose from auto, exhaustive, marvel"):
        map_layer(SMALL, EYERISS, "edp", "nope")
    with pytest.raises(UnknownNameError, match="unknown objective 'speed'; choose from latency, energy, edp, dram"):
        map_layer(SMALL, EYERISS, "speed", "auto")


@pytest.mark.parametrize("mapper", ["optimal", "tso", "marvel"])
def test_options_a_mapper_does_not_take_are_refused(mapper: str) -> None:
    if mapper != "optimal":
        with pytest.raises(DnnmapError, match=f"imperfect factorization applies to the auto, exhaustive, optimal, random, sunstone mappers, not to '{mapper}'"):
            map_layer(SMALL, EYERISS, "edp", mapper, SearchOptions(imperfect=0.1))
    with pytest.raises(DnnmapError, match=f"tile_first applies to the auto, sunstone mappers, not to '{mapper}'"):
        map_layer(SMALL, EYERISS, "edp", mapper, SearchOptions(tile_first=True))


def tiny_random(op, arch, objective, options, progress=None) -> SearchResult:  # noqa: ANN001
    """A new mapper: the random mapper with a fixed 100-sample budget and its own name."""
    return random_search(op, arch, objective, budget=100, seed=options.seed)


TINY_RANDOM = registry.Mapper(registry.MapperInfo("tiny-random", "100 random samples"), tiny_random)


def test_a_new_mapper_is_one_registration(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.names()  # the built-in mappers are discovered first
    monkeypatch.setattr(registry, "_MAPPERS", dict(registry._MAPPERS))  # undone after the test
    registry.register(TINY_RANDOM)
    assert "tiny-random" in registry.names()
    got = map_layer(SMALL, EYERISS, "energy", "tiny-random", SearchOptions(seed=3))
    want = random_search(SMALL, EYERISS, "energy", budget=100, seed=3)
    assert got.mapping == want.mapping and got.evaluated == 100
    a, b = (ops.conv2d(name, 2, 4, (4, 4), 1) for name in ("a", "b"))  # SMALL's shape twice
    net = Network("two", (Layer(a, ("x",), (1, 4, 4, 4)), Layer(b, ("a",), (1, 4, 4, 4))), (("x", (1, 2, 4, 4)),))
    result = search_network(net, EYERISS, "energy", "tiny-random", options=SearchOptions(seed=3))
    assert result.energy == 2 * float(want.cost.energy[0]) and result.layers[1].reused_from == "a"
    with pytest.raises(DnnmapError, match="not to 'tiny-random'"):
        map_layer(SMALL, EYERISS, "energy", "tiny-random", SearchOptions(imperfect=0.1))
    with pytest.raises(ValueError, match="'random' is taken"):
        registry.register(registry.Mapper(registry.MapperInfo("random", "another"), tiny_random))
    registry.register(registry.get("random"))  # registering the same mapper again is harmless


def test_auto_delegates_by_space_size() -> None:
    small = map_layer(SMALL, EYERISS, "edp", "auto")
    assert small.mapper == "exhaustive" and small.mapping == exhaustive_search(SMALL, EYERISS, "edp").mapping
    big = map_layer(SMALL, EYERISS, "edp", "auto", SearchOptions(exhaustive_limit=10))
    assert big.mapper == "sunstone" and big.mapping == sunstone_search(SMALL, EYERISS, "edp").mapping
    wide = Constraints().with_level("GLB", both_axes=True)  # widening only: still Sunstone's space
    got = map_layer(SMALL, EYERISS, "edp", "auto", SearchOptions(exhaustive_limit=10, placement=True, constraints=wide))
    assert got.mapper == "sunstone"
    assert got.mapping == sunstone_search(SMALL, EYERISS, "edp", placement=True, both_axes=("GLB",)).mapping
    narrowed = wide.with_level("GLB", spatial_dims=("K",))
    assert map_layer(SMALL, EYERISS, "edp", "auto", SearchOptions(exhaustive_limit=10, constraints=narrowed)).mapper \
        == "random"


def test_rank_is_objective_then_tie_break_then_enumeration_order() -> None:
    score = np.array([1.0, 1.0, 0.5, np.inf, 1.0])
    tie = np.array([2.0, 1.0, 3.0, 0.0, 1.0])
    assert rank(score, tie).tolist() == [2, 1, 4, 0, 3]
    assert best_index(score[[0, 1, 4]], tie[[0, 1, 4]]) == 1
    assert tie_break(np.array([5.0, 5.0]), np.array([2e3, 1e3])).tolist() == [5.0 + 2e-6, 5.0 + 1e-6]


def test_cost_batch_ranks_with_the_objective_table() -> None:
    exh = exhaustive_search(SMALL, EYERISS, "latency")
    cost = CostModel(SMALL, EYERISS).evaluate(MappingBatch.from_mappings(SMALL, EYERISS, [exh.mapping]))
    for name in OBJECTIVES:
        want = objective_value(name, float(cost.energy[0]), float(cost.cycles[0]), float(cost.dram_bytes[0]))
        assert cost.objective(name)[0] == want
    assert cost.best("edp") == (float(cost.energy[0] * cost.cycles[0]), 0)
    with pytest.raises(DnnmapError, match="'dram' needs DRAM bytes"):
        objective_value("dram", 1.0, 2.0)
