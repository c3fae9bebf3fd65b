"""Access counts of tiny mappings, derived by hand in each docstring from docs/cost-model.md section 2."""

from __future__ import annotations

import pytest
from sim_cases import arch_of, level, mapping_of

from dnnmap.arch.spec import TransferModel, load_arch
from dnnmap.sim import AccessCounts, dram_bursts, dram_transfers, simulate
from dnnmap.workload import ops


def conv1d():
    """O[q] += I[q + s] * W[s] with Q = 4, S = 3, input width 6 (a 1 x 6 image, 1 x 3 kernel)."""
    return ops.conv2d("conv1d", 1, 1, (1, 6), (1, 3))


def test_weight_stationary_rf_with_sliding_window_halo() -> None:
    """RF keeps everything, ``for q in 4 (DRAM): for s in 3 (RF): MAC``.

    RF events are the 4 values of q. Tiles at event q: W = {0, 1, 2}, I = {q, q+1, q+2}, O = {q}.
    - W: 3 words enter at the first event and stay: fills = R x S = 3, DRAM reads 3.
    - I: 3 words at the first event, then each q step reuses the 2-word overlap and fills 1:
      fills = 3 + 1 + 1 + 1 = 6 (the input width), DRAM reads 6.
    - O: each new word was never touched, so no fill; word q drains when q advances and the
      last at the end: drains 4 = DRAM updates. Each RF copy entered at zero and receives 3
      lane results: the first is its first touch, the other 2 read it first (read-modify-write,
      section 2b): accumulate_reads 4 x 2 = 8. The 4 DRAM updates are each word's first touch: 0.
    - MAC lanes: 12 steps x 1 lane read I and W 12 times from the RF and write 12 partial sums.
    """
    op = conv1d()
    arch = arch_of(level("RF"), level("DRAM"))
    m = mapping_of({"temporal": {"S": 3}}, {"temporal": {"Q": 4}})
    r = simulate(op, arch, m)
    assert r.output_matches and r.iterations_exact
    assert (r.macs, r.temporal_steps, r.lanes) == (12, 12, 1)
    assert r.count("RF", "W") == AccessCounts(reads=12, fills=3)
    assert r.count("RF", "I") == AccessCounts(reads=12, fills=6)
    assert r.count("RF", "O") == AccessCounts(updates=12, drains=4, accumulate_reads=8)
    assert r.count("DRAM", "W") == AccessCounts(reads=3)
    assert r.count("DRAM", "I") == AccessCounts(reads=6)
    assert r.count("DRAM", "O") == AccessCounts(updates=4)
    # DRAM transfers of I: the first 3-word tile, then the one new word per q step
    reads_i = [t for t in dram_transfers(r) if t.tensor == "I"]
    assert [(t.step, t.words) for t in reads_i] == [(0, 3), (3, 1), (6, 1), (9, 1)]
    assert reads_i[0].boxes == (((0, 1), (0, 1), (0, 1), (0, 1), (0, 3)),)
    assert reads_i[2].boxes == (((0, 1), (0, 1), (0, 1), (0, 1), (4, 5)),)
    # 16-bit words, 4-byte bursts: I runs 3, 1, 1, 1 -> 2 + 1 + 1 + 1; W one run of 3 -> 2; O 4 single words -> 4
    burst_arch = arch_of(level("RF"), level("DRAM").model_copy(
        update={"transfer": TransferModel(model="burst", bandwidth_gbps=1.0, burst_bytes=4)}))
    assert dram_bursts(simulate(op, burst_arch, m), burst_arch, m) == 5 + 2 + 4
    # level cycles: the RF instance moves 12 + 3 + 12 + 6 + 12 + 4 words and reads 8 to accumulate
    assert r.max_instance_words("RF") == 57
    assert r.max_instance_words("DRAM") == 3 + 6 + 4


def test_output_reload_when_the_reduction_loop_is_outermost() -> None:
    """RF holds one word of each tensor; ``for s in 3: for q in 4 (both DRAM): MAC``.

    Every step is an RF event with tiles W = {s}, I = {q + s}, O = {q}.
    - O: the word changes at every step; in the rows s = 1, 2 word q already holds the
      partial sum from s = 0, so it is reloaded: fills = 2 x 4 = 8 = DRAM reads of O. Each
      step drains the previous word and the last drains at the end: drains 12 = DRAM updates.
    - W: changes only with s: fills 3. I: q + s changes at every step (also at the wrap from
      (s, 3) to (s + 1, 0)): fills 12.
    - Read-modify-write: the 8 reloaded RF copies read before their lane result is added
      (accumulate_reads 8; the 4 copies of s = 0 entered at zero). At DRAM the 4 drains of s = 0
      are partial sums and each word's first touch, the 8 others carry full sums and overwrite: 0.
    """
    op = conv1d()
    arch = arch_of(level("RF"), level("DRAM"))
    m = mapping_of({}, {"temporal": {"S": 3, "Q": 4}, "order": ("S", "Q")})
    r = simulate(op, arch, m)
    assert r.output_matches
    assert r.count("RF", "O") == AccessCounts(fills=8, updates=12, drains=12, accumulate_reads=8)
    assert r.count("DRAM", "O") == AccessCounts(reads=8, updates=12)
    assert r.count("RF", "W").fills == 3
    assert r.count("RF", "I").fills == 12
    reloads = [t for t in dram_transfers(r) if t.tensor == "O" and t.direction == "read"]
    assert [t.step for t in reloads] == [4, 5, 6, 7, 8, 9, 10, 11]


def matmul_4x2x3():
    """O[m, n] += I[m, k] * W[k, n] with M = 4, K = 2, N = 3 (B = 1)."""
    return ops.matmul("mm", 4, 2, 3)


@pytest.mark.parametrize("multicast", [True, False])
def test_multicast_of_weights_to_four_pes(multicast: bool) -> None:
    """PE keeps everything; DRAM fans out to 4 PEs, one row m each; each PE runs N x K = 6 steps.

    One PE event (nothing temporal above the PE). PE m's tiles: I row m (2 words), all of W
    (6 words), O row m (3 words).
    - PE fills: I 4 x 2 = 8, W 4 x 6 = 24; O has no fill and drains 4 x 3 = 12 at the end.
    - DRAM reads of W: with multicast the union over the 4 PEs, 6; without, the sum, 24.
      I rows are disjoint: 8 either way. O updates: disjoint rows, 12.
    - Lanes: 6 steps x 4 lanes = 24 reads of I and W, 24 updates of O at the PEs; each of the
      12 output copies receives K = 2 of them, the second reading the first: accumulate_reads 12.
    """
    op = matmul_4x2x3()
    arch = arch_of(level("PE"), level("DRAM", fanout=4, multicast=multicast))
    m = mapping_of({"temporal": {"N": 3, "K": 2}}, {"spatial": {"M": 4}})
    r = simulate(op, arch, m)
    assert r.output_matches
    assert (r.macs, r.temporal_steps, r.lanes) == (24, 6, 4)
    assert r.count("PE", "I") == AccessCounts(reads=24, fills=8)
    assert r.count("PE", "W") == AccessCounts(reads=24, fills=24)
    assert r.count("PE", "O") == AccessCounts(updates=24, drains=12, accumulate_reads=12)
    assert r.count("DRAM", "W").reads == (6 if multicast else 24)
    assert r.count("DRAM", "I").reads == 8
    assert r.count("DRAM", "O").updates == 12
    w_reads = [t for t in dram_transfers(r) if t.tensor == "W"]
    assert [t.group for t in w_reads] == ([-1] if multicast else [0, 1, 2, 3])
    # per PE: 6 + 2 (I) + 6 + 6 (W) + 6 + 3 + 3 (O, with the accumulate reads) words in/out
    assert r.max_instance_words("PE") == 32


@pytest.mark.parametrize("reduction", [True, False])
def test_spatial_reduction_of_partial_sums(reduction: bool) -> None:
    """DRAM fans out K = 2 over 2 PEs (spatial reduction); each PE runs M x N = 12 steps.

    PE k holds I column k (4 words), W row k (3 words) and all 12 output words. No output
    word is touched before the single PE event, so no fills; each PE drains its 12 partial
    sums at the end: drains 24. DRAM updates of O: the union over the 2 PEs (partial sums
    added in the network) 12 with reduction, else the sum 24. Read-modify-write: each PE copy
    receives one lane result (its first touch: 0); at DRAM the reduced update is each word's
    first touch (0), while without reduction the second PE's drain of a word reads it: 12.
    """
    op = matmul_4x2x3()
    arch = arch_of(level("PE"), level("DRAM", fanout=2, reduction=reduction))
    m = mapping_of({"temporal": {"M": 4, "N": 3}}, {"spatial": {"K": 2}})
    r = simulate(op, arch, m)
    assert r.output_matches
    assert r.count("PE", "O") == AccessCounts(updates=24, drains=24)
    assert r.count("DRAM", "O") == (AccessCounts(updates=12) if reduction else AccessCounts(updates=24, accumulate_reads=12))
    assert r.count("PE", "I").fills == 8 and r.count("PE", "W").fills == 6
    assert r.count("DRAM", "I").reads == 8 and r.count("DRAM", "W").reads == 6


@pytest.mark.parametrize("multicast", [True, False])
def test_mac_lane_multicast_and_reduction_at_the_innermost_level(multicast: bool) -> None:
    """M = 1, K = 2, N = 3; the PE fans out N = 3 over MAC lanes and loops K = 2 in time.

    Per step the 3 lanes read the same I[0, k]: union 1 word with multicast, else 3:
    PE reads of I = 2 steps x (1 or 3). W[k, n] differs per lane: 6 reads. O[0, n] differs
    per lane: 6 updates, each output copy receiving K = 2 (accumulate_reads 3). The PE fills
    I 2, W 6 and drains 3 output words.
    """
    op = ops.matmul("mm", 1, 2, 3)
    arch = arch_of(level("PE", fanout=3, multicast=multicast), level("DRAM"))
    m = mapping_of({"temporal": {"K": 2}, "spatial": {"N": 3}}, {})
    r = simulate(op, arch, m)
    assert r.output_matches
    assert r.count("PE", "I") == AccessCounts(reads=2 if multicast else 6, fills=2)
    assert r.count("PE", "W") == AccessCounts(reads=6, fills=6)
    assert r.count("PE", "O") == AccessCounts(updates=6, drains=3, accumulate_reads=3)
    assert r.hop_words == {"PE": 6 + 6 + 6}


def test_bypass_reads_from_the_grandparent_and_edge_tiles() -> None:
    """Three levels, the middle one bypasses weights; N = 5 split imperfectly as 2 (RF) x 3 (GLB).

    M = K = 1: O[0, n] += I[0, 0] * W[0, n]. Loops: ``for n1 in 3 (GLB): for n0 in 2 (RF)``,
    n = 2 n1 + n0, and n = 5 is skipped: 6 temporal steps, 5 executed.
    - RF events are the 3 values of n1, W tiles {0, 1}, {2, 3}, {4}: fills 5, and since the
      GLB does not keep W they are read from DRAM: DRAM reads of W = 5, GLB has no W counts.
    - I[0, 0] enters the RF once (fills 1); the GLB (one event) fills it once from DRAM.
    - O: RF drains its tile at each n1 step, 2 + 2 + 1 = 5 words, which the GLB receives as
      updates; the GLB drains all 5 at the end into DRAM.
    """
    op = ops.matmul("mm", 1, 1, 5)
    arch = arch_of(level("RF"), level("GLB", keeps=("input", "output")), level("DRAM"))
    m = mapping_of({"temporal": {"N": 2}}, {"temporal": {"N": 3}}, {})
    r = simulate(op, arch, m)
    assert r.output_matches and r.iterations_exact
    assert (r.temporal_steps, r.macs) == (6, 5)
    assert r.count("RF", "W") == AccessCounts(reads=5, fills=5)
    assert r.count("GLB", "W") == AccessCounts()
    assert r.count("DRAM", "W") == AccessCounts(reads=5)
    assert r.count("RF", "I").fills == 1 and r.count("GLB", "I") == AccessCounts(reads=1, fills=1)
    assert r.count("RF", "O") == AccessCounts(updates=5, drains=5)
    assert r.count("GLB", "O") == AccessCounts(updates=5, drains=5)
    assert r.count("DRAM", "O") == AccessCounts(updates=5)


def test_an_idle_edge_event_keeps_the_resident_set() -> None:
    """B = 2, M = 3, K = N = 1; ``for b in 2: for m1 in 3 (DRAM): for m0 in 2 (RF)``, m = 2 m1 + m0.

    M is over-covered (6 > 3): RF events (b, m1) have tiles m = {0, 1}, {2} and, for m1 = 2,
    nothing at all (every iteration skipped). The idle event moves nothing, so the single
    weight W[0, 0] stays resident from the first event to the last: fills 1 (reading the
    contract as "R := empty" would refetch it after each idle event: 2).
    - I[b, m, 0]: 2 + 1 words per b: fills 6. O: the 2 words of (b, 0) drain when (b, 1)
      starts (steps 2 and 8); the word of (b, 1) is kept through the idle event and drains
      when (1, 0) starts (step 6) or at the end (step 12): drains 6.
    - 2 x 3 x 2 = 12 temporal steps, 6 executed.
    """
    op = ops.matmul("mm", 3, 1, 1, batch=2)
    arch = arch_of(level("RF"), level("DRAM"))
    m = mapping_of({"temporal": {"M": 2}}, {"temporal": {"B": 2, "M": 3}, "order": ("B", "M")})
    r = simulate(op, arch, m)
    assert r.output_matches and (r.temporal_steps, r.macs) == (12, 6)
    assert r.count("RF", "W") == AccessCounts(reads=6, fills=1)
    assert r.count("RF", "I").fills == 6
    assert r.count("RF", "O") == AccessCounts(updates=6, drains=6)
    updates = [(t.step, t.words) for t in dram_transfers(r) if t.tensor == "O"]
    assert updates == [(2, 2), (6, 1), (8, 2), (12, 1)]


def test_eyeriss_preset_weight_stationary_conv() -> None:
    """The eyeriss preset (RF, GLB with a 14 x 12 multicast/reduction array, DRAM; W bypasses the GLB).

    3x3 conv, C = K = 4, 8x8 input (6x6 output). PE (k, r) of a 4 x 3 sub-array loops C, S in its
    RF; the GLB loops Q, DRAM loops P. PE (k, r) keeps W[k, :, r, :] (12 words) for the whole
    nest: RF fills of W = 12 x 12 PEs = 144 = |W|, and with multicast DRAM reads each weight once.
    Each PE's RF holds one output word per (p, q) event and never sees it again: no reloads,
    drains 36 x 12 = 432; the 3 PEs of one k (the R reduction) merge in the array, so the GLB
    receives 36 x 4 = 144 updates, drains its 24-word tile per p (144) and DRAM gets |O| = 144.
    Read-modify-write: each RF copy receives C x S = 12 lane results, 11 of them reading it
    (432 x 11); GLB and DRAM copies receive one (merged) update each, their first touch.
    """
    op = ops.conv2d("c3", 4, 4, 8, 3)
    arch = load_arch("eyeriss")
    m = mapping_of({"temporal": {"C": 4, "S": 3}},
                   {"temporal": {"Q": 6}, "spatial": {"K": 4, "R": 3}},
                   {"temporal": {"P": 6}})
    r = simulate(op, arch, m)
    assert r.output_matches and r.lanes == 12 and r.temporal_steps == 36 * 12
    assert r.count("RF", "W").fills == 144 and r.count("DRAM", "W") == AccessCounts(reads=144)
    assert r.count("RF", "O") == AccessCounts(updates=36 * 12 * 12, drains=432, accumulate_reads=432 * 11)
    assert r.count("GLB", "O") == AccessCounts(updates=144, drains=144)
    assert r.count("DRAM", "O") == AccessCounts(updates=144)
