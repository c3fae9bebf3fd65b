"""Mappers: factorization tables, random never beats exhaustive and is deterministic, best mappings round-trip, errors."""

from __future__ import annotations

import pytest

from dnnmap.arch.spec import parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import MappingError
from dnnmap.search.mappers import exhaustive_search, random_search
from dnnmap.search.space import ordered_factorizations
from dnnmap.workload import ops

TINY = parse_arch({
    "name": "tiny", "clock_mhz": 100, "word_bits": 8,
    "levels": [
        {"name": "RF", "capacity": 6, "read_energy": 1, "write_energy": 1},
        {"name": "GLB", "capacity": 64, "read_energy": 6, "write_energy": 6,
         "fanout": {"shape": [4], "multicast": True, "reduction": True, "hop_energy": 2}},
        {"name": "DRAM", "read_energy": 200, "write_energy": 200,
         "transfer": {"model": "burst", "bandwidth_gbps": 0.4, "burst_bytes": 8, "cas_ns": 5}},
    ],
})


def test_ordered_factorizations() -> None:
    rows = ordered_factorizations(12, 3)
    assert len(rows) == 18 and (rows.prod(axis=1) == 12).all()
    assert len({tuple(r) for r in rows}) == len(rows)


def test_random_never_beats_exhaustive_and_is_deterministic() -> None:
    op = ops.conv2d("t", 2, 2, (4, 2), (3, 1), padding=(1, 0))
    exh = exhaustive_search(op, TINY, "edp")
    for seed in range(3):
        r = random_search(op, TINY, "edp", budget=3000, seed=seed)
        assert r.cost.edp[0] >= exh.cost.edp[0] - 1e-6
    a = random_search(op, TINY, "edp", budget=2000, seed=5)
    b = random_search(op, TINY, "edp", budget=2000, seed=5)
    assert a.mapping == b.mapping and a.evaluated == b.evaluated == 2000


def test_best_mapping_round_trips_through_batch() -> None:
    op = ops.conv2d("t", 2, 4, (4, 4), 3, padding=1)
    r = random_search(op, TINY, "energy", budget=1000, seed=1)
    again = CostModel(op, TINY).evaluate(MappingBatch.from_mappings(op, TINY, [r.mapping]))
    assert again.energy[0] == pytest.approx(r.cost.energy[0])
    assert again.valid[0]


def test_nothing_fits_names_level_and_tensor() -> None:
    small = TINY.model_copy(update={"levels": (TINY.levels[0].model_copy(update={"capacity": 2}), *TINY.levels[1:])})
    op = ops.conv2d("big", 2, 2, 4, 3)
    with pytest.raises(MappingError, match=r"level RF .*I \(input\)"):
        random_search(op, small, "edp", budget=200)
