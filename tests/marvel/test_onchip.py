"""Marvel's on-chip step: the switches are constraints on the core map space, and the walk is exhaustive on it."""

from __future__ import annotations


import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.model import CostModel
from dnnmap.errors import DnnmapError
from dnnmap.search.marvel.mapper import marvel_search
from dnnmap.search.marvel.offchip import offchip_search
from dnnmap.arch.variants import buffered_view
from dnnmap.search.marvel.onchip import MarvelOptions, OnchipSpace, onchip_search
from dnnmap.search.network import map_layer
from dnnmap.workload.ops import conv2d, depthwise, eltwise

P1 = load_arch("marvel_platform1")


def _space(op, options=MarvelOptions()):
    off = offchip_search(op, P1, options.db_settings())
    return off, OnchipSpace(op, P1, off, options)


def test_dram_factors_order_and_layouts_are_the_offchip_result():
    op = conv2d("c", 32, 64, 30, 3)
    res = marvel_search(op, P1, "latency")
    off = res.offchip
    m = res.mapping
    assert tuple(m.levels[-1].t(d) for d in op.dim_names) == tuple(b // t for (_, b), t in zip(op.dims, off.tile))
    assert m.levels[-1].order == off.order
    assert m.layouts == off.space.core_layouts(off.choice)
    # R, S unrolled: no temporal loop over them between L1 and DRAM
    assert all(m.levels[0].t(d) * m.levels[1].s(d) == op.bound(d) and m.levels[1].t(d) == 1 for d in ("R", "S"))


def test_every_candidate_respects_the_switches():
    op = conv2d("c", 16, 32, 16, 3)
    opts = MarvelOptions(max_parallel_loops=2, min_utilization=0.1)
    off, space = _space(op, opts)
    idx = np.arange(space.size)
    fac = space.decode(idx)[space.prune(space.decode(idx), opts.min_utilization)]
    spatial = fac[:, :, space.L:]
    assert len(fac) and ((spatial > 1).any(axis=2).sum(axis=1) <= 2).all()
    assert (spatial.prod(axis=(1, 2)) >= 0.1 * 168).all() and (spatial.prod(axis=(1, 2)) <= 168).all()
    # the on-chip factors multiply to the level-3 tile
    onchip = np.delete(fac, space.L - 1, axis=2).prod(axis=2)
    assert (onchip == np.array(off.tile)).all()


def test_walk_equals_brute_force_over_the_constrained_space():
    # an independent enumeration of the same constrained space (no pruning code shared) finds the same optimum
    op = conv2d("c", 4, 8, 6, 3)
    opts = MarvelOptions()
    off, space = _space(op, opts)
    res = onchip_search(op, P1, off, "edp", opts)
    model = CostModel(op, buffered_view(P1, 2))
    best = np.inf
    idx = np.arange(space.size)
    fac = space.decode(idx)
    fac = fac[space.prune(fac, opts.min_utilization)]
    for batch in space.batches(fac):
        cost = model.evaluate(batch)
        best = min(best, float(np.where(cost.valid, cost.edp, np.inf).min()))
    assert res.cost.edp[0] == pytest.approx(best)
    assert not res.sampled


def test_l1_is_double_buffered():
    op = conv2d("c", 16, 16, 10, 3)
    res = marvel_search(op, P1, "energy")
    words = res.cost.tile_words[0, 0].sum()
    assert 2 * words <= P1.levels[0].capacity


def test_utilization_bound_is_relaxed_only_when_out_of_reach():
    tiny = eltwise("a", 2, 2)  # 8 iterations: 0.1 x 168 PEs is out of reach
    assert marvel_search(tiny, P1, "latency").utilization_relaxed
    assert not marvel_search(depthwise("d", 64, 16, 3), P1, "latency").utilization_relaxed


def test_more_parallel_loops_never_hurt_the_optimum():
    op = conv2d("c", 8, 16, 12, 3)
    one = marvel_search(op, P1, "latency", MarvelOptions(max_parallel_loops=1))
    three = marvel_search(op, P1, "latency", MarvelOptions(max_parallel_loops=3))
    assert three.cost.cycles[0] <= one.cost.cycles[0]


def test_unsupported_switches_are_refused_clearly():
    with pytest.raises(DnnmapError, match="prologue_padding"):
        MarvelOptions(divisor_only=False, prologue_padding=0)
    with pytest.raises(DnnmapError, match="min_utilization"):
        MarvelOptions(min_utilization=2)


def test_registered_as_a_mapper():
    r = map_layer(conv2d("c", 8, 8, 8, 3), P1, "edp", "marvel")
    assert r.mapper == "marvel" and r.cost.valid[0] and r.mapping.notes[0].startswith("marvel off-chip")
