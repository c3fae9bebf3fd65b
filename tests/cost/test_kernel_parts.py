"""The parts of the compiled cost kernel (dnnmap/cost/kernel.py, docs/cost-model.md section 5), each on a
small hand-built input, against values derived by hand in the comments (the whole kernel is checked against
the simulator in test_model_vs_simulator*.py)."""

from __future__ import annotations

import numpy as np

from dnnmap.cost import kernel as k

# dimension indices of the hand-built operators
K_, C_ = 0, 1  # tests with an output O[k] reduced over c
P_, R_ = 0, 1  # tests with a 1-D convolution input I[p + r]


def _nest(tf: list[list[int]], sf: list[list[int]], order: list[list[int]]) -> dict:
    """Runs nest_structure on one mapping (B = 1) and returns its tables."""
    tf_a = np.array([tf], dtype=np.int64)
    L, D = tf_a.shape[1:]
    cover = np.zeros((L + 1, D), np.int64)
    level_nest = np.zeros((L + 1, 3), np.int64)
    spatial = np.zeros((L * D, 2), np.int64)
    loops = np.zeros((L * D + 1, 4), np.int64)
    steps, n_spatial, n_loops, lanes = k.nest_structure(tf_a, np.array([sf], dtype=np.int64),
                                                        np.array([order], dtype=np.int64), 0, cover, level_nest,
                                                        spatial, loops)
    return dict(steps=steps, n_spatial=n_spatial, n_loops=n_loops, lanes=lanes, cover=cover, level_nest=level_nest,
                spatial=spatial[:n_spatial], loops=loops[:n_loops + 1])


def test_nest_structure_of_a_two_level_mapping() -> None:
    # level 0: K temporal 2, C split 3 ways over the MAC lanes; level 1 (DRAM): C temporal 4, K split 2 ways
    nest = _nest(tf=[[2, 1], [1, 4]], sf=[[1, 3], [2, 1]], order=[[K_, C_], [K_, C_]])
    # coverage: one lane 1 x 1; level 0: K 2 (temporal), C 3 (its lanes); level 1: K 2 * 2, C 3 * 4
    assert nest["cover"].tolist() == [[1, 1], [2, 3], [4, 12]]
    assert nest["steps"] == 2 * 4  # temporal steps: the temporal factors' product
    assert nest["spatial"].tolist() == [[0, C_], [1, K_]]
    # instances: DRAM 1, level 0 one per DRAM fan-out branch (2); lanes: 2 instances x 3 lanes each
    assert nest["level_nest"][:2, k.LN_INST].tolist() == [2, 1]
    assert nest["level_nest"][:2, k.LN_SPATIAL].tolist() == [3, 2]
    assert nest["lanes"] == 6
    # loops with trip > 1, innermost first: level 0's K (stride 1), then DRAM's C, whose stride is 3: one step
    # of it moves past the 3 C values the lanes cover; outer products 2 * 4, 4, and 1 past the last loop
    assert nest["n_loops"] == 2
    assert nest["loops"].tolist() == [[K_, 2, 1, 8], [C_, 4, 3, 4], [0, 0, 0, 1]]
    # level 0's loops start at 0, DRAM's at 1, the end at 2
    assert nest["level_nest"][:, k.LN_FIRST_LOOP].tolist() == [0, 1, 2]


def test_placed_tile_of_a_tensor_below_its_levels_outer_loop() -> None:
    # level 0: K 2 then C 3 (order K, C: K outermost), C 2 more over the lanes; level 1 (DRAM): K 5
    nest = _nest(tf=[[2, 3], [5, 1]], sf=[[1, 2], [1, 1]], order=[[K_, C_], [K_, C_]])
    tile_cover = np.zeros((1, 2), np.int64)
    above = np.zeros((1, 2, 1), np.int64)
    # nothing placed: the level's own coverage (K 2, C 6) and its events from DRAM's first loop
    assert k.placed_tile(above, 0, 0, 0, nest["level_nest"], nest["loops"], nest["cover"], tile_cover) == 0
    # below K (the outermost loop): the tile leaves K's 2 out, and its events start at K's loop (index 1)
    above[0, 0, 0] = 1
    assert k.placed_tile(above, 0, 0, 0, nest["level_nest"], nest["loops"], nest["cover"], tile_cover) == 1
    assert tile_cover.tolist() == [[1, 6]] and nest["loops"][1, k.LP_DIM] == K_
    # more than the level's loops: all of them (the tile is what the lanes cover)
    above[0, 0, 0] = 7
    assert k.placed_tile(above, 0, 0, 0, nest["level_nest"], nest["loops"], nest["cover"], tile_cover) == 2
    assert tile_cover.tolist() == [[1, 2]]


def _window_tables(coef_p: int = 1) -> tuple[np.ndarray, ...]:
    """One tensor, one axis ``coef_p * p + r`` (a 1-D convolution input): ax_nterm, ax_terms, tensor_axes,
    dim_rel, dim_terms."""
    ax_nterm = np.array([[2]], dtype=np.int64)
    terms = sorted([(P_, coef_p), (R_, 1)], key=lambda dc: dc[1])
    ax_terms = np.array([[terms]], dtype=np.int64)
    tensor_axes = np.array([[1, 1, 0]], dtype=np.int64)  # one axis, one window axis: axis 0
    dim_rel = np.array([[[k.REL_WINDOW, 1], [k.REL_WINDOW, 1]]], dtype=np.int64)
    dim_terms = np.array([[[[0, coef_p]], [[0, 1]]]], dtype=np.int64)
    return ax_nterm, ax_terms, tensor_axes, dim_rel, dim_terms


def _pair(t: int = 0, c: int = 0, p: int = 1, mcast: bool = True, reduce: bool = True, identical: bool = False,
          output: bool = False, lanes: bool = False, rmw: bool = True, halo: int = 1) -> np.ndarray:
    row = np.zeros((1, k.PAIR_COLUMNS), dtype=np.int64)
    row[0, [k.PR_TENSOR, k.PR_CHILD, k.PR_PARENT]] = t, c, p
    row[0, k.PR_MCAST], row[0, k.PR_REDUCE], row[0, k.PR_IDENTICAL] = mcast, reduce, mcast and identical
    row[0, k.PR_OUTPUT], row[0, k.PR_LANES], row[0, k.PR_RMW], row[0, k.PR_HALO] = output, lanes, rmw, halo
    return row


def _grid_of(sf_level1: list[int], tf_level0: list[int], coef_p: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """pair_grid of the pair (level 0, level 1) of the window tensor, fan-out ``sf_level1`` at level 1."""
    _, _, _, dim_rel, dim_terms = _window_tables(coef_p)
    nest = _nest(tf=[tf_level0, [1, 1]], sf=[[1, 1], sf_level1], order=[[P_, R_], [P_, R_]])
    grid = np.zeros((1, 8, 2), np.int64)
    grid_n = np.zeros((1, 2), np.int64)
    spatial = np.zeros((4, 2), np.int64)
    spatial[:nest["n_spatial"]] = nest["spatial"]
    k.pair_grid(_pair(), 0, np.array([[[1, 1], sf_level1]], dtype=np.int64), 0, spatial, nest["n_spatial"],
                nest["cover"], dim_rel, dim_terms, 1, grid, grid_n)
    return grid, grid_n


def test_grid_offsets_of_a_two_dimensional_fan_out() -> None:
    # a 4 x 3 fan-out over (p, r) above level 0, whose tile covers p in 0..1 (temporal 2): the instance at
    # (i, j) starts at p = 2 i, r = j, so its tile of the axis p + r is offset by 2 i + j
    grid, grid_n = _grid_of(sf_level1=[4, 3], tf_level0=[2, 1])
    # progressions (coefficient, count), ascending: r's {0, 1, 2}, p's {0, 2, 4, 6}
    assert grid_n[0].tolist() == [2, 12]
    assert grid[0, :2].tolist() == [[1, 3], [2, 4]]
    # {0, 1, 2} + {0, 2, 4, 6} = {0, ..., 8}: 9 distinct offsets for 12 instances (a progression: closed form)
    ax_nterm = _window_tables()[0]
    scratch = np.zeros((1, 4), np.uint64)
    work = np.zeros((2, 4), np.uint64)
    assert k.grid_offsets(grid, grid_n, ax_nterm, 0, 1, scratch, work, 64) == 9


def test_grid_offsets_that_need_a_bitmap() -> None:
    # axis 2p + r, a 3 x 2 fan-out over (p, r) above one-element tiles: offsets {0, 2, 4} + {0, 1}
    # = {0, 1, 2, 3, 4, 5}: 6 (closed form: a progression of step 1)
    grid, grid_n = _grid_of(sf_level1=[3, 2], tf_level0=[1, 1], coef_p=2)
    assert grid[0, :2].tolist() == [[1, 2], [2, 3]]
    ax_nterm = _window_tables(2)[0]
    scratch = np.zeros((1, 4), np.uint64)
    work = np.zeros((2, 4), np.uint64)
    assert k.grid_offsets(grid, grid_n, ax_nterm, 0, 1, scratch, work, 64) == 6
    # {0, 2, 4} + {0, 3} = {0, 2, 3, 4, 5, 7}: neither a progression nor disjoint copies - counted on a bitmap
    grid[0, 0] = [2, 3]
    grid[0, 1] = [3, 2]
    assert k.grid_offsets(grid, grid_n, ax_nterm, 0, 1, scratch, work, 64) == 6
    assert k.bm_popcount(scratch, 0) == 6


def _walk(tf: list[list[int]], sf: list[list[int]], halo: int = 1, coef_p: int = 1) -> tuple:
    """tile_sets and event_walk of the pair (level 0, level 1) of the window tensor; returns
    (tile_sets' products, axis_sets row, event_walk's totals)."""
    ax_nterm, ax_terms, tensor_axes, dim_rel, dim_terms = _window_tables(coef_p)
    nest = _nest(tf=tf, sf=sf, order=[[P_, R_], [P_, R_]])
    L, D = 2, 2
    spatial = np.zeros((L * D, 2), np.int64)
    spatial[:nest["n_spatial"]] = nest["spatial"]
    loops = np.zeros((L * D + 1, 4), np.int64)
    loops[:nest["n_loops"] + 1] = nest["loops"]
    grid = np.zeros((1, 8, 2), np.int64)
    grid_n = np.zeros((1, 2), np.int64)
    pairs = _pair(halo=halo)
    k.pair_grid(pairs, 0, np.array([sf], dtype=np.int64), 0, spatial, nest["n_spatial"], nest["cover"], dim_rel,
                dim_terms, 1, grid, grid_n)
    axis_sets = np.zeros((1, 10), np.int64)
    sets = np.zeros((5, 1, 4), np.uint64)
    work = np.zeros((2, 4), np.uint64)
    sizes = np.array([[64]], dtype=np.int64)
    layout = np.zeros((1, 1), dtype=np.int64)
    totals = k.tile_sets(0, 1, 1, nest["cover"], ax_nterm, ax_terms, grid, grid_n, axis_sets, sets, work, 64, False)
    walk = k.event_walk(pairs, 0, 1, loops, nest["level_nest"][1, k.LN_FIRST_LOOP], nest["n_loops"], tensor_axes,
                        dim_rel, ax_nterm, ax_terms, nest["cover"], grid, grid_n, axis_sets, sets, work,
                        np.zeros(D, np.int64), 64, totals, 0.0, 0.0, sizes, layout, 2.0, 8.0)
    return totals, axis_sets[0].copy(), walk


def test_sliding_window_tile_keeps_its_halo() -> None:
    # input p + r, child tile p in 0..3, r in 0..2 = words {0..5}; the parent's P loop (trip 2, stride 4)
    # moves it to {4..9}: 2 words stay, 4 are filled; in all 6 + 4 = 10, every input word once
    totals, axis, walk = _walk(tf=[[4, 3], [2, 1]], sf=[[1, 1], [1, 1]])
    assert totals == (6, 6, 1, 1)  # prod(A), prod(U) (one instance), and over single-dim axes (none)
    assert axis[[k.AS_TILE, k.AS_SPAN, k.AS_CLOSED, k.AS_STEP, k.AS_COUNT]].tolist() == [6, 6, 1, 1, 6]
    assert axis[[k.AS_DELTA, k.AS_OVERLAP, k.AS_NEW]].tolist() == [4, 2, 4]  # the last event's move
    assert walk == (10.0, 10.0, 0.0, 0.0)


def test_sliding_window_without_halo_reuse_refills_whole() -> None:
    # the same move with halo_reuse false (mode 0): the changed tile is filled whole, 6 + 6
    _, _, walk = _walk(tf=[[4, 3], [2, 1]], sf=[[1, 1], [1, 1]], halo=0)
    assert walk[:2] == (12.0, 12.0)


def test_union_of_two_instances_per_event() -> None:
    # two child instances along p (fan-out 2 at the parent), each with tile {0..5} + 4 i: the union over
    # them is {0..9} (10 words); the parent's P loop (trip 2) moves every tile by 8 >= its span 6, so each
    # instance refills its 6 words and the parent sends the new union {8..17}, 10 words: 6 + 6 per instance,
    # 10 + 10 per parent instance (the 2-word halo {8, 9} between the two events is sent again)
    totals, axis, walk = _walk(tf=[[4, 3], [2, 1]], sf=[[1, 1], [2, 1]])
    assert totals[:2] == (6, 10)
    assert axis[k.AS_UNION] == 10
    assert walk[:2] == (12.0, 20.0)


def test_strided_window_step_misses_the_progression() -> None:
    # input 2p + r, child tile p in 0..2, one tap: words {0, 2, 4} (a progression of step 2, span 5); the
    # parent's R loop (trip 2) moves it by 1 to {1, 3, 5}: 1 < span, but the step 2 does not divide it - no
    # overlap, 3 + 3 words
    _, axis, walk = _walk(tf=[[3, 1], [1, 2]], sf=[[1, 1], [1, 1]], coef_p=2)
    assert axis[[k.AS_STEP, k.AS_COUNT, k.AS_SPAN]].tolist() == [2, 3, 5]
    assert axis[[k.AS_DELTA, k.AS_OVERLAP, k.AS_NEW]].tolist() == [1, 0, 3]
    assert walk[:2] == (6.0, 6.0)


def test_single_dimension_axis_refills_from_the_first_loop_on_it() -> None:
    # output O[k], K = 8: child tile k in 0..3 (4 words), loops above it innermost first: K trip 2, C trip 3
    # (C does not index O). The K loop and every loop outside it refill the whole tile: 2 * 3 - 1 events of
    # 4 words after the first tile: 4 + 5 * 4 = 24 words per instance
    ax_nterm = np.array([[1]], dtype=np.int64)
    ax_terms = np.array([[[[K_, 1]]]], dtype=np.int64)
    tensor_axes = np.array([[1, 0, 0]], dtype=np.int64)
    dim_rel = np.array([[[k.REL_SINGLE, 1], [0, 0]]], dtype=np.int64)
    nest = _nest(tf=[[4, 1], [2, 3]], sf=[[1, 1], [1, 1]], order=[[K_, C_], [C_, K_]])
    first = nest["level_nest"][1, k.LN_FIRST_LOOP]  # the loops above the child: after level 0's own K loop
    assert first == 1 and nest["loops"][1:3, :2].tolist() == [[K_, 2], [C_, 3]]
    axis_sets = np.zeros((1, 10), np.int64)
    sets = np.zeros((5, 1, 4), np.uint64)
    work = np.zeros((2, 4), np.uint64)
    grid_n = np.array([[0, 1]], dtype=np.int64)
    grid = np.zeros((1, 8, 2), np.int64)
    totals = k.tile_sets(0, 1, 1, nest["cover"], ax_nterm, ax_terms, grid, grid_n, axis_sets, sets, work, 64, False)
    assert totals == (4, 4, 4, 4)
    walk = k.event_walk(_pair(output=True), 0, 1, nest["loops"], first, nest["n_loops"], tensor_axes, dim_rel, ax_nterm,
                        ax_terms, nest["cover"], grid, grid_n, axis_sets, sets, work, np.zeros(2, np.int64), 64,
                        totals, 0.0, 0.0, np.array([[8]]), np.zeros((1, 1), np.int64), 2.0, 8.0)
    assert walk[:2] == (24.0, 24.0)
    # its counts (one instance, no fan-out): 24 drains; the 2nd and 3rd C iterations reload both K tiles,
    # 24 - 8 first touches = 16 fills and parent reads; 24 updates, none reading at the parent: a word's
    # first drain (its copy entered the child at zero) is the parent copy's first touch, and the later ones
    # come from reloaded copies, which carry the whole partial sum and overwrite
    counts = np.zeros((1, 5, 2, 1))
    hops = k.pair_counts(_pair(output=True), 0, 0, 24.0, 24.0, 1, 1, 0.0, 8.0, 1.0, 1.0, counts)
    assert counts[0, [k.DRAINS, k.FILLS], 0, 0].tolist() == [24, 16]
    assert counts[0, [k.UPDATES, k.READS, k.ACC_READS], 1, 0].tolist() == [24, 16, 0]
    assert hops == 24 + 16


def test_final_outputs_need_every_reduction_inside_the_loops_that_move_the_tile() -> None:
    # O[k] reduced over c (C does not index O); (drains final, updates final) of the pair (level 0, DRAM)
    dim_rel = np.array([[[k.REL_SINGLE | k.REL_DIM, 1], [0, 0]]], dtype=np.int64)

    def final(tf: list[list[int]], order: list[list[int]], rep_c: float = 1.0, rep_p: float = 1.0,
              **pair: bool) -> tuple[bool, bool]:
        nest = _nest(tf=tf, sf=[[1, 1], [1, 1]], order=order)
        c = -1 if pair.get("lanes") else 0
        first = nest["level_nest"][c + 1, k.LN_FIRST_LOOP]
        return k.final_outputs(_pair(output=True, c=c, **pair), 0, first, nest["n_loops"], nest["loops"], dim_rel,
                               rep_c, rep_p)

    # above the child, innermost first: C 3 then K 2 - each K tile is complete before it moves: final
    assert final([[4, 1], [2, 3]], [[K_, C_], [K_, C_]]) == (True, True)
    # K 2 then C 3: the tiles come back for every C (a partial-sum spill): partial
    assert final([[4, 1], [2, 3]], [[K_, C_], [C_, K_]]) == (False, False)
    # only C above (the child keeps its whole output through the reduction): final
    assert final([[8, 1], [1, 3]], [[K_, C_], [K_, C_]]) == (True, True)
    # MAC lanes write every step: any reduction loop makes their writes partial; none: final
    assert final([[4, 1], [2, 3]], [[K_, C_], [K_, C_]], lanes=True) == (False, False)
    assert final([[4, 1], [2, 1]], [[K_, C_], [K_, C_]], lanes=True) == (True, True)
    # copies over a spatially split reduction: merged by a reducing network, the updates are final, the
    # drains not; unmerged, neither; copies left above the parent: neither
    assert final([[8, 1], [1, 1]], [[K_, C_], [K_, C_]], rep_c=2.0) == (False, True)
    assert final([[8, 1], [1, 1]], [[K_, C_], [K_, C_]], rep_c=2.0, reduce=False) == (False, False)
    assert final([[8, 1], [1, 1]], [[K_, C_], [K_, C_]], rep_c=2.0, rep_p=2.0) == (False, False)


def _input_counts(**rule) -> tuple[np.ndarray, float]:
    # 4 child instances under one parent, each filled 10 words in all; the union over them 25 words;
    # 2 distinct child tiles (identical rule)
    counts = np.zeros((1, 5, 2, 1))
    hops = k.pair_counts(_pair(**rule), 0, 0, 10.0, 25.0, 4, 1, 2.0, 0.0, 1.0, 1.0, counts)
    return counts, hops


def test_pair_counts_of_an_input_under_each_multicast_rule() -> None:
    counts, hops = _input_counts(mcast=True)
    assert counts[0, k.FILLS, 0, 0] == 40 and hops == 40  # 4 x 10 words enter the children and cross the fan-out
    assert counts[0, k.READS, 1, 0] == 25  # union: the parent reads a word several children need once
    counts, _ = _input_counts(mcast=False)
    assert counts[0, k.READS, 1, 0] == 40  # no multicast: every child's fills
    counts, _ = _input_counts(mcast=True, identical=True)
    assert counts[0, k.READS, 1, 0] == 20  # identical: one read per distinct tile, 2 x 10
    assert counts[0, k.FILLS, 0, 0] == 40


def test_pair_counts_of_a_spatially_reduced_output() -> None:
    # O[k], K = 4, reduction over C = 2 split over two child instances: each child holds all 4 outputs once
    # (tile 4 words, no events), so 2 copies per word at the children (rep_c = 2), one at the parent
    def run(**rule: bool) -> tuple[np.ndarray, float]:
        counts = np.zeros((1, 5, 2, 1))
        hops = k.pair_counts(_pair(output=True, **rule), 0, 0, 4.0, 4.0, 2, 1, 0.0, 4.0, 2.0, 1.0, counts)
        return counts, hops

    counts, hops = run(reduce=True)
    # each child drains its 4 partial sums (8), none reloaded (copies enter at zero): 0 fills
    assert counts[0, [k.DRAINS, k.FILLS], 0, 0].tolist() == [8, 0]
    # reduced in the network: 4 updates, each the parent word's first touch: no read-modify-write reads, no reloads
    assert counts[0, [k.UPDATES, k.ACC_READS, k.READS], 1, 0].tolist() == [4, 0, 0]
    assert hops == 8
    counts, _ = run(reduce=False)
    # not reduced: 8 updates; the second arrival at each word accumulates onto the first: 4 reads
    assert counts[0, [k.UPDATES, k.ACC_READS, k.READS], 1, 0].tolist() == [8, 4, 0]
    counts, _ = run(reduce=False, rmw=False)
    assert counts[0, k.ACC_READS, 1, 0] == 0  # accumulating in place


def test_lane_counts() -> None:
    # 6 lanes, 8 steps, one parent instance; the lanes touch 2 distinct words of an input per step
    counts = np.zeros((1, 5, 1, 1))
    assert k.lane_counts(_pair(c=-1, p=0, lanes=True), 0, 0, 8, 6, 1, 2, 0.0, 1.0, counts) == 48
    assert counts[0, k.READS, 0, 0] == 16  # multicast: 2 per step
    counts[:] = 0
    k.lane_counts(_pair(c=-1, p=0, lanes=True, mcast=False), 0, 0, 8, 6, 1, 2, 0.0, 1.0, counts)
    assert counts[0, k.READS, 0, 0] == 48  # one per lane and step
    # output: 3 distinct words per step (3 outputs, each reduced over 2 lanes), 12 output words in the nest
    # each touched once per copy at the parent: 8 x 3 = 24 reduced updates, 24 - 12 accumulate
    counts[:] = 0
    k.lane_counts(_pair(c=-1, p=0, lanes=True, output=True), 0, 0, 8, 6, 1, 3, 12.0, 1.0, counts)
    assert counts[0, [k.UPDATES, k.ACC_READS], 0, 0].tolist() == [24, 12]


def test_capacity_energy_bandwidth_latency() -> None:
    # two levels (buffer, DRAM), two tensors; buffer capacity 10 words in one partition
    tile_words = np.array([[[4.0, 5.0], [0.0, 0.0]]])
    level_tensor = np.zeros((2, 2, 4))
    level_tensor[..., k.CAP_WEIGHT] = 1.0
    level_tensor[0, :, k.READ_E], level_tensor[0, :, k.FILL_E], level_tensor[0, :, k.UPDATE_E] = 1.0, 2.0, 3.0
    level_tensor[1, :, k.READ_E] = 10.0
    cap_part = np.zeros((2, 2), np.int64)
    cap = np.array([[10.0, -1.0], [-1.0, -1.0]])
    excess = np.zeros((1, 2))
    assert k.capacity_excess(0, tile_words, level_tensor, cap_part, cap, np.zeros(2), excess)
    assert excess[0, 0] == -1  # 9 words in 10
    level_tensor[0, 1, k.CAP_WEIGHT] = 2.0  # tensor 1 counted in 2 units per word (bits of a wider word)
    assert not k.capacity_excess(0, tile_words, level_tensor, cap_part, cap, np.zeros(2), excess)
    assert excess[0, 0] == 4  # 4 + 10 in 10
    counts = np.zeros((1, 5, 2, 2))
    counts[0, k.READS, 0, 0] = 100  # buffer: 100 reads, 20 fills, 5 updates, 5 drains, 3 accumulate reads
    counts[0, k.FILLS, 0, 0] = 20
    counts[0, k.UPDATES, 0, 1] = 5
    counts[0, k.DRAINS, 0, 1] = 5
    counts[0, k.ACC_READS, 0, 1] = 3
    counts[0, k.READS, 1, 0] = 20  # DRAM: 20 reads, 5 updates
    counts[0, k.UPDATES, 1, 1] = 5
    hop = np.array([[7.0, 0.0]])
    level_params = np.zeros((2, 7))
    level_params[0, k.P_HOP_E] = 0.5
    level_params[0, k.P_BANDWIDTH] = 4.0  # buffer: 4 words/cycle shared, 2 reads/cycle, 2 instances
    level_params[0, k.P_READ_BW] = 2.0
    scalars = np.zeros(k.SCALAR_COLUMNS)
    scalars[k.S_OPS], scalars[k.S_MAC_ENERGY] = 50, 0.1
    breakdown = np.zeros((1, 4))
    # tensor 1 is the output, no level moves final values of it (2 = L: none)
    total = k.energy(0, counts, hop, level_tensor, level_params, scalars, breakdown, 1, 2, 2, 0.5)
    # buffer: (100 + 5 + 3) x 1 + 20 x 2 + 5 x 3 = 163; DRAM 20 x 10 = 200; hops 7 x 0.5; MACs 50 x 0.1
    assert breakdown[0].tolist() == [163, 200, 3.5, 5]
    assert total == 163 + 200 + 3.5 + 5
    # the buffer's output drains carry final values at half the bits: (100 + 5 x 0.5 + 3) + 40 + 15 = 160.5;
    # its updates too: 5 x 3 x 0.5 = 7.5 instead of 15
    k.energy(0, counts, hop, level_tensor, level_params, scalars, breakdown, 1, 0, 2, 0.5)
    assert breakdown[0, 0] == 160.5
    k.energy(0, counts, hop, level_tensor, level_params, scalars, breakdown, 1, 0, 0, 0.5)
    assert breakdown[0, 0] == 153
    level_nest = np.array([[2, 1, 0], [1, 1, 0], [0, 0, 0]])
    level_cycles = np.zeros((1, 2))
    k.bandwidth_cycles(0, counts, level_params, level_nest, level_cycles)
    # buffer: 108 reads + 25 writes over 2 instances: max(133 / 4, 108 / 2) / 2 = 27; DRAM: unlimited
    assert level_cycles[0].tolist() == [27, 0]
    tensor_params = np.array([[2.0, 0, 0, 1, 1], [4.0, 0, 1, 1, 0.5]])  # the output's final words: half the bits
    assert k.dram_bytes(0, counts, tensor_params, 1, 1) == 20 * 2 + 5 * 4 * 0.5  # DRAM's updates are final
    nbytes = k.dram_bytes(0, counts, tensor_params, 1, 2)
    assert nbytes == 20 * 2 + 5 * 4
    scalars[k.S_SEC_PER_BYTE], scalars[k.S_SEC_PER_BURST], scalars[k.S_CLOCK_HZ] = 0.5, 10.0, 1.0
    scalars[k.S_OVERLAP] = 1.0
    # DRAM: (60 bytes x 0.5 + 3 bursts x 10) x 1 Hz = 60 cycles; overlapped with 40 steps and the buffer's 27: 60
    assert k.latency(0, 40, nbytes, 3.0, scalars, level_cycles) == 60
    assert level_cycles[0, 1] == 60
    scalars[k.S_OVERLAP] = 0.0
    level_cycles[0, 1] = 0.0
    assert k.latency(0, 40, nbytes, 3.0, scalars, level_cycles) == 40 + 27 + 60  # serial
