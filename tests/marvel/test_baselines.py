"""Baseline dataflows, symmetry and prologue/epilogue switches as constraints on Marvel's on-chip space."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import validate_mapping
from dnnmap.studies.marvel.compare import MARVEL, compare_layer, compare_operators, uniform_dataflow
from dnnmap.search.marvel.dataflows import BASELINES, DLA_LIKE, RS_LIKE, SHIDIANNAO_LIKE, ir_dim
from dnnmap.search.marvel.baseline import maximal
from dnnmap.search.marvel.mapper import marvel_search, marvel_search_objectives
from dnnmap.search.marvel.offchip import offchip_search
from dnnmap.arch.variants import buffered_view
from dnnmap.search.marvel.onchip import MarvelOptions, OnchipSpace
from dnnmap.studies.marvel.table3 import row, table3_op
from dnnmap.sim import verify
from dnnmap.workload.ops import conv2d, depthwise, fully_connected

P1 = load_arch("marvel_platform1")


def _surviving(op, options):
    off = offchip_search(op, P1, options.db_settings())
    space = OnchipSpace(op, P1, off, options)
    fac = space.decode(np.arange(space.size))
    return space, fac[space.prune(fac, 0.0)]


def test_marvel_letters_name_the_ir_dimensions():
    conv, dw = conv2d("c", 8, 16, 12, 3), depthwise("d", 32, 12, 3)
    assert [ir_dim(conv, x) for x in "KCQP"] == ["K", "C", "P", "Q"]  # Marvel Q = height = IR P
    assert ir_dim(dw, "C") == "G" and dw.bound(ir_dim(dw, "K")) == 1


@pytest.mark.parametrize("df", BASELINES, ids=lambda d: d.name)
def test_a_baseline_splits_only_its_loops_and_marvel_is_never_worse(df):
    op = conv2d("c", 8, 16, 12, 3)
    space, fac = _surviving(op, MarvelOptions(parallel=df))
    allowed = [op.dim_names.index(d) for d in df.ir_dims(op)]
    spatial = fac[:, :, space.L:].prod(axis=2)
    assert len(fac) and (np.delete(spatial, allowed, axis=1) == 1).all()
    assert (spatial[:, allowed] > 1).any()  # the constraint still lets its loops be parallel
    base = marvel_search(op, P1, "latency", MarvelOptions(parallel=df))
    marvel = marvel_search(op, P1, "latency")
    used = {d for lv in base.mapping.levels for d, f in lv.spatial if f > 1}
    assert used <= df.ir_dims(op)
    assert marvel.cost.cycles[0] <= base.cost.cycles[0]  # Marvel's space contains every baseline's


def test_baselines_are_poor_where_the_paper_says():
    # QP and QR on FC (P = Q = 1); KC on L2, a depthwise layer whose level-3 tile holds 1-2 channels
    # (Marvel Sec. 4.2: "KC on L2 [is tiny] because [its tiles] along the parallel dimensions are small")
    fc, dw = fully_connected("fc", 256, 128), table3_op(row("L2"))
    for op, df in ((fc, SHIDIANNAO_LIKE), (fc, RS_LIKE), (dw, DLA_LIKE)):
        base = marvel_search(op, P1, "latency", MarvelOptions(parallel=df))
        assert base.utilization_relaxed or base.cost.cycles[0] > 2 * marvel_search(op, P1, "latency").cost.cycles[0]


def test_symmetry_pairs_cost_the_same_and_pruning_keeps_the_optimum():
    op = conv2d("sym", 4, 8, 8, 3)  # 6x6 output, 3x3 filter: the level-3 tile is the whole plane
    opts = MarvelOptions(symmetry=False)
    off = offchip_search(op, P1, opts.db_settings())
    space = OnchipSpace(op, P1, off, replace(opts, symmetry=True))
    assert space.mirror is not None
    fac = space.decode(np.arange(space.size))
    fac = fac[OnchipSpace(op, P1, off, opts).prune(fac, 0.1)]
    model = CostModel(op, buffered_view(P1, 2))
    # brute force: every surviving candidate and its mirror (factors and orders mirrored) price identically
    for batch in space.batches(fac[:400]):
        mirror = space.mirror
        mirrored = replace(batch, temporal=batch.temporal[:, :, mirror], spatial=batch.spatial[:, :, mirror],
                           order=mirror[batch.order], axes=batch.axes[:, :, mirror])
        a, b = model.evaluate(batch), model.evaluate(mirrored)
        assert np.array_equal(a.valid, b.valid)
        assert np.allclose(a.energy[a.valid], b.energy[b.valid]) and np.allclose(a.cycles[a.valid], b.cycles[b.valid])
    for objective in ("latency", "energy"):
        on = marvel_search(op, P1, objective, replace(opts, symmetry=True))
        off_ = marvel_search(op, P1, objective, opts)
        assert on.cost.objective(objective)[0] == pytest.approx(off_.cost.objective(objective)[0])
        assert on.evaluated < off_.evaluated


def test_symmetry_is_off_where_the_problem_is_not_symmetric():
    assert OnchipSpace(*(lambda op: (op, P1, offchip_search(op, P1), MarvelOptions()))(
        conv2d("rect", 4, 8, (8, 10), 3))).mirror is None
    op = conv2d("sym", 4, 8, 8, 3)
    assert OnchipSpace(op, P1, offchip_search(op, P1), MarvelOptions(parallel=RS_LIKE)).mirror is None  # Q,R only


def test_prologue_epilogue_tiles_cover_the_layer_and_never_lose():
    op = depthwise("odd", 13, 15, 3)  # 13 channels, 13x13 outputs: no divisor fills 168 PEs
    exact = marvel_search(op, P1, "latency")
    padded = marvel_search(op, P1, "latency", MarvelOptions(divisor_only=False, prologue_padding=0.25))
    validate_mapping(padded.mapping, op, P1)
    assert padded.cost.cycles[0] < 0.6 * exact.cost.cycles[0]  # measured 269.75 vs 507 cycles
    assert any(padded.mapping.total(d) > b for d, b in op.dims)  # some edge tile is clipped
    assert all(padded.mapping.total(d) <= 1.25 * b for d, b in op.dims)
    assert verify(op, P1, padded.mapping).ok  # the clipped nest computes the layer exactly (simulator vs NumPy)


def test_comparison_and_uniform_dataflow_on_small_layers():
    ops = [conv2d("a", 8, 16, 10, 3), depthwise("b", 32, 12, 3)]
    c = compare_layer(ops[0], P1)
    assert all(c.speedup(b.name) >= 1 and c.energy_gain(b.name) >= 1 - 1e-12 for b in BASELINES)
    assert c.throughput(MARVEL) <= c.roofline.throughput * (1 + 1e-9)
    net = compare_operators("n", [replace(op, name=op.name + str(i)) for i, op in enumerate(ops * 2)], P1)
    assert net.cycles(MARVEL) == pytest.approx(2 * sum(x.cycles[MARVEL] for _, x in net.layers[:2]))
    st = uniform_dataflow(ops, P1, dataflows=BASELINES)
    assert (st.relative <= 1 + 1e-12).all() and st.best == BASELINES[int(np.argmax(st.geomean))].name


@pytest.mark.parametrize("df", BASELINES, ids=lambda d: d.name)
@pytest.mark.parametrize("layer", ["L2", "L5", "L8", "L15"])
def test_a_full_strength_baseline_is_legal_keeps_its_schedule_and_beats_its_fixed_schedule(df, layer):
    op = table3_op(row(layer))
    full = marvel_search_objectives(op, P1, ("latency", "energy"), MarvelOptions(parallel=df))
    fixed = marvel_search_objectives(op, P1, ("latency", "energy"), MarvelOptions(parallel=df, published_pe_tile=True))
    for objective, attr in (("latency", "cycles"), ("energy", "energy")):
        m = full[objective].mapping
        validate_mapping(m, op, P1)
        assert full[objective].cost.valid[0]
        assert getattr(full[objective].cost, attr)[0] <= getattr(fixed[objective].cost, attr)[0]
        # the schedule the dataflow fixes: parallel loops, the level-2 order, the PE share
        used = {d for lv in m.levels for d, f in lv.spatial if f > 1}
        assert used <= df.ir_dims(op)
        l2 = [d for d in m.levels[1].full_order(op.dim_names) if m.levels[1].t(d) > 1]
        chain = [ir_dim(op, x) for x in df.order]
        assert l2 == [d for d in chain if d in l2]
        for letter in df.whole_in_pe:
            assert m.levels[0].t(ir_dim(op, letter)) == op.bound(ir_dim(op, letter))
        for letter in df.one_in_pe + df.whole_across_pes:
            assert m.levels[0].t(ir_dim(op, letter)) == 1
        for letter in df.whole_across_pes:
            assert m.levels[1].s(ir_dim(op, letter)) == op.bound(ir_dim(op, letter))
    # the published PE tile on Marvel's level-3 tile
    pe = df.published_pe_tile(op, dict(zip(op.dim_names, fixed["latency"].offchip.tile)))
    assert all(fixed["latency"].mapping.levels[0].t(d) == f for d, f in pe.items())
    assert fixed["latency"].offchip.tile == marvel_search(op, P1, "latency").offchip.tile


def test_a_baseline_picks_its_own_level3_tile_where_marvels_starves_it():
    # L8 on platform 1: Marvel's level-3 tile has 6 output rows, so row-parallel RS-like used 18 PEs on it
    op = table3_op(row("L8"))
    marvel = marvel_search(op, P1, "latency")
    rs = marvel_search(op, P1, "latency", MarvelOptions(parallel=RS_LIKE))
    on_marvels = marvel_search(op, P1, "latency", MarvelOptions(parallel=RS_LIKE, published_pe_tile=True))
    assert rs.offchip.tile != marvel.offchip.tile
    assert rs.cost.cycles[0] * 4 < on_marvels.cost.cycles[0]
    assert rs.cost.utilization[0] > 0.9


def test_maximal_tiles_are_the_feasible_tiles_that_cannot_grow():
    cands = [np.array([1, 2, 4]), np.array([1, 3])]
    feasible = np.array([[1, 1], [2, 1], [4, 1], [1, 3], [2, 3]])
    assert maximal(feasible, cands).tolist() == [False, False, True, False, True]
