"""Sunstone never says "no legal mapping" when the declared space has one.

Random small layers on random architectures (the generators of the optimal mapper's soundness test:
capacities partitioned or not, bypass, 1-D and 2-D fan-outs of 2-3 that often divide no dimension),
with the innermost level shrunk to a one- or two-word register in about half the cases and a third
on-chip level in some: wherever the exhaustive mapper finds a legal mapping, Sunstone returns one
(its pruning, maximal unrollings and maximal tiles, used to leave none where a small register forces
the fan-out below it to stay idle, or where a level that bypasses a tensor let its tile outgrow a
level higher up); where the exhaustive mapper finds none, Sunstone says so too.
"""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.errors import MappingError
from dnnmap.search.mappers import SearchResult, exhaustive_search
from dnnmap.search.sunstone.mapper import sunstone_search
from test_optimal_bounds import random_arch, random_layer


def with_register(arch: ArchSpec, words: int) -> ArchSpec:
    """``arch`` with its innermost level holding ``words`` words (per role where it is partitioned)."""
    spec = arch.model_dump(exclude_none=True)
    lv = spec["levels"][0]
    lv["capacity"] = {r: words for r in lv["capacity"]} if isinstance(lv["capacity"], dict) else words
    return parse_arch(spec)


def legal(search, *args) -> SearchResult | None:  # noqa: ANN001
    try:
        found = search(*args)
    except MappingError:
        return None
    assert bool(found.cost.valid[0])
    return found


def test_sunstone_finds_a_legal_mapping_whenever_the_exhaustive_mapper_does() -> None:
    rng = np.random.default_rng(24)
    mapped = both_none = 0
    for i in range(60):
        arch = random_arch(rng, i, on_chip=int(rng.integers(1, 4)))
        if rng.random() < 0.5:
            arch = with_register(arch, int(rng.integers(1, 3)))
        op = random_layer(rng, i)
        exhaustive = legal(exhaustive_search, op, arch, "energy")
        sunstone = legal(sunstone_search, op, arch, "energy")
        assert (sunstone is None) == (exhaustive is None), (arch.name, op.name, op.dims)
        mapped += exhaustive is not None
        both_none += exhaustive is None
    assert mapped >= 30 and both_none >= 1  # both outcomes are exercised
