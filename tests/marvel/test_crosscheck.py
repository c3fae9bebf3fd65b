"""DB blocks beside the core's exact DRAM bursts: the bounds crosscheck.py proves, on Table 3 and random cases."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.studies.marvel.crosscheck import crosscheck, offchip_mapping
from dnnmap.search.marvel.db_model import DbSettings, db_tables
from dnnmap.search.marvel.offchip import OffchipResult, offchip_search
from dnnmap.search.marvel.order import dmc_gradient, level3_order
from dnnmap.studies.marvel.roofline import touched_words
from dnnmap.studies.marvel.table3 import TABLE3, table3_op
from dnnmap.search.marvel.view import layout_space
from dnnmap.workload.ops import conv2d, depthwise, pointwise

ARCH = load_arch("marvel_platform1")


def _arch(burst: int):
    """Platform 1 with another DRAM block size and an unbounded L2 (any tile is a legal core mapping)."""
    dram = ARCH.dram.model_copy(update={"transfer": ARCH.dram.transfer.model_copy(update={"burst_bytes": burst})})
    l2 = ARCH.levels[1].model_copy(update={"capacity": None})
    return ARCH.model_copy(update={"levels": (ARCH.levels[0], l2, dram)})


@pytest.mark.parametrize("r", TABLE3, ids=lambda r: r.id)
def test_table3_tiles_core_bursts_lie_between_compulsory_and_db(r):
    op = table3_op(r, stride=False)  # unit-coefficient windows: what DB sees under stride="ignore"
    res = offchip_search(op, ARCH, DbSettings.table3())
    c = crosscheck(res, ARCH)
    assert c.compulsory <= c.core_bursts <= c.db_blocks
    for t, words in c.core_words.items():  # the same inequality word by word, tensor by tensor
        assert words <= c.db_words[t]


def _random_result(rng: np.random.Generator, op, arch, settings: DbSettings) -> OffchipResult:
    """A random divisor tile, layout and DRAM order of ``op`` (not the optimum: the bound holds for any)."""
    space = layout_space(op)
    tile = np.array([rng.choice([t for t in range(1, b + 1) if b % t == 0]) for _, b in op.dims], dtype=np.int64)
    choice = space.choices[int(rng.integers(len(space.choices)))]
    tables = db_tables(op, arch, space, tile[None], settings)
    blocks = int(tables.numerators(space)[0, space.choices.index(choice)])
    order = list(level3_order(op, tile, dmc_gradient(op, arch, space, choice, tile, settings)))
    rng.shuffle(order)
    return OffchipResult(op, space, settings, tuple(int(x) for x in tile), choice, blocks, tuple(order), (), 1, 1,
                         np.zeros((0, 2)))


def test_random_stride1_tiles_layouts_and_orders_respect_the_bounds():
    rng = np.random.default_rng(11)
    makers = [lambda: conv2d("c", int(rng.integers(1, 9)), int(rng.integers(1, 9)),
                             (int(rng.integers(3, 13)), int(rng.integers(3, 13))), int(rng.integers(1, 4))),
              lambda: depthwise("d", int(rng.integers(1, 9)), int(rng.integers(3, 13)), int(rng.integers(1, 4))),
              lambda: pointwise("p", int(rng.integers(1, 17)), int(rng.integers(1, 17)), int(rng.integers(1, 13)))]
    settings = DbSettings(stride="real", full_dims=())  # stride 1: real = unit geometry
    tight = 0
    for i in range(150):
        arch = _arch(int(rng.choice([2, 4, 8, 64])))
        op = makers[i % 3]()
        res = _random_result(rng, op, arch, settings)
        c = crosscheck(res, arch)
        assert c.compulsory <= c.core_bursts <= c.db_blocks, (op.name, op.dims, res.tile, res.layout, res.order)
        tight += c.core_bursts == c.db_blocks
    assert tight < 150  # the upper bound is not an identity


def test_strided_windows_break_the_upper_bound():
    # stride 2, 1x1, input innermost along the strided axis: the core moves one-word runs, DB one span
    op = pointwise("s", 2, 2, 16, stride=2)
    space = layout_space(op)
    arch = _arch(64)
    settings = DbSettings(stride="ignore", full_dims=())
    tile = np.array([b for _, b in op.dims], dtype=np.int64)  # one tile: the whole layer
    choice = space.index_of("K/X/P")
    blocks = int(db_tables(op, arch, space, tile[None], settings).numerators(space)[0, space.choices.index(choice)])
    res = OffchipResult(op, space, settings, tuple(int(x) for x in tile), choice, blocks, (), (), 1, 1,
                        np.zeros((0, 2)))
    c = crosscheck(res, arch)
    assert c.core_bursts > c.db_blocks
    assert touched_words(op, "I") == 2 * 8 * 8  # only the rows and columns the stride visits


def test_offchip_mapping_holds_the_tile_below_dram_in_the_derived_order():
    r = TABLE3[7]  # L8
    op = table3_op(r)
    res = offchip_search(op, ARCH, DbSettings.table3())
    m = offchip_mapping(res, ARCH)
    assert m.levels[-1].order == res.order
    assert all(m.coverage(d, 1) == res.tile_of(d) for d in op.dim_names)
    assert dict(m.layouts)["I"][-1] == "W"  # K/X/K: Marvel's X (input width) is the IR W axis, innermost
