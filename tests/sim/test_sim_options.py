"""The architecture options of docs/cost-model.md section 2b on tiny mappings, counts derived by hand
in each docstring, then invariants the options must keep on random cases."""

from __future__ import annotations

import numpy as np
import pytest
from sim_cases import arch_of, mapping_of

from dnnmap.arch.spec import ActionEnergy, ArchSpec, Fanout, Level, Mac, TransferModel
from dnnmap.sim import AccessCounts, dram_transfers, sim_metrics, simulate
from random_cases import random_case
from dnnmap.workload import ops


def conv1d():
    """O[q] += I[q + s] * W[s] with Q = 4, S = 3, input width 6 (a 1 x 6 image, 1 x 3 kernel)."""
    return ops.conv2d("conv1d", 1, 1, (1, 6), (1, 3))


WS = mapping_of({"temporal": {"S": 3}}, {"temporal": {"Q": 4}})  # for q in 4 (DRAM): for s in 3 (RF)


# ---- read-modify-write ----------------------------------------------------------------------------
@pytest.mark.parametrize("rmw", [True, False])
def test_accumulate_reads_in_the_rf_keeping_the_output(rmw: bool) -> None:
    """One lane, RF keeps the output, ``for q in 4: for s in 3``. RF copy q enters at zero at event q
    and receives the 3 lane results of s = 0, 1, 2: the first is its first touch (no read), the other
    two read the partial sum first: updates 12, accumulate_reads 4 x 2 = 8 (0 without
    read-modify-write). The 4 drains reach DRAM as each word's first touch: 0 there."""
    rf = Level(name="RF", read_modify_write=rmw)
    r = simulate(conv1d(), arch_of(rf, Level(name="DRAM")), WS)
    assert r.output_matches
    assert r.count("RF", "O") == AccessCounts(updates=12, drains=4, accumulate_reads=8 if rmw else 0)
    assert r.count("DRAM", "O") == AccessCounts(updates=4)


@pytest.mark.parametrize("rmw", [True, False])
def test_lanes_accumulating_straight_into_the_backing_store(rmw: bool) -> None:
    """The RF bypasses the output, so the 12 lane results update DRAM, whose copies enter at zero at
    the start: each of the 4 words' first update is free, the 8 others read: accumulate_reads 8."""
    m = mapping_of({"temporal": {"S": 3}, "keeps": ("I", "W")}, {"temporal": {"Q": 4}})
    r = simulate(conv1d(), arch_of(Level(name="RF"), Level(name="DRAM", read_modify_write=rmw)), m)
    assert r.count("RF", "O") == AccessCounts()
    assert r.count("DRAM", "O") == AccessCounts(updates=12, accumulate_reads=8 if rmw else 0)


# ---- multicast rule and per-role no-multicast -------------------------------------------------------
def two_pe_conv(rule: str, no_multicast: tuple = (), multicast: bool = True):
    """DRAM fans out Q = 2 to 2 PEs; PE j runs ``for q in 2: for s in 3`` on q = 2j + q0.

    PE j's tiles (one PE event): I {2j, .., 2j + 3} (PE 0: 0-3, PE 1: 2-5, overlapping in 2, 3),
    W {0, 1, 2} (identical), O {2j, 2j + 1}."""
    dram = Level(name="DRAM", fanout=Fanout(shape=(2,), multicast=multicast, multicast_rule=rule,
                                            no_multicast=no_multicast))
    m = mapping_of({"temporal": {"Q": 2, "S": 3}, "order": ("Q", "S")}, {"spatial": {"Q": 2}})
    return simulate(conv1d(), arch_of(Level(name="PE"), dram), m)


@pytest.mark.parametrize("rule, i_reads, w_reads", [("union", 6, 3), ("identical", 8, 3)])
def test_identical_rule_shares_only_identical_fills(rule: str, i_reads: int, w_reads: int) -> None:
    """Union: DRAM reads each word once however many PEs need it: I |0-5| = 6, W 3. Identical: the
    PEs' W fills are the same set, read once (3); their I fills overlap but differ, so each is read
    for separately: 4 + 4 = 8. Without multicast: 8 and 6. Each distinct set is one DRAM transfer."""
    r = two_pe_conv(rule)
    assert r.output_matches
    assert r.count("PE", "I").fills == 8 and r.count("PE", "W").fills == 6
    assert (r.count("DRAM", "I").reads, r.count("DRAM", "W").reads) == (i_reads, w_reads)
    i_groups = [t.group for t in dram_transfers(r) if t.tensor == "I"]
    assert i_groups == ([-1] if rule == "union" else [0, 1])
    assert [t.group for t in dram_transfers(r) if t.tensor == "W"] == ([-1] if rule == "union" else [0])
    none = two_pe_conv(rule, multicast=False)
    assert (none.count("DRAM", "I").reads, none.count("DRAM", "W").reads) == (8, 6)


def test_no_multicast_for_one_role() -> None:
    """``no_multicast: [weight]``: the two PEs' weights are read separately (6), inputs still by the
    union (6)."""
    r = two_pe_conv("union", no_multicast=("weight",))
    assert (r.count("DRAM", "I").reads, r.count("DRAM", "W").reads) == (6, 6)


@pytest.mark.parametrize("top, i_reads", [(Fanout(shape=(1,), multicast_rule="identical"), 8),
                                          (Fanout(shape=(1,)), 6),
                                          (Fanout(shape=(1,), multicast=False), 8)])
def test_rule_of_every_fan_out_in_between(top: Fanout, i_reads: int) -> None:
    """PE <- GLB (fan-out 2 over Q, union) <- DRAM (a 1-wide fan-out); I bypasses the GLB, so the PE
    fills I from DRAM across both fan-outs. Tiles as in :func:`two_pe_conv`. The pair uses the
    identical rule when either fan-out does (8 reads), multicasts only when both do (else 8); with
    both union it reads the union, 6. W stops at the GLB, across the union fan-out only: 3."""
    arch = arch_of(Level(name="PE"), Level(name="GLB", fanout=Fanout(shape=(2,))), Level(name="DRAM", fanout=top))
    m = mapping_of({"temporal": {"Q": 2, "S": 3}}, {"spatial": {"Q": 2}, "keeps": ("W", "O")}, {})
    r = simulate(conv1d(), arch, m)
    assert r.count("DRAM", "I").reads == i_reads
    assert r.count("GLB", "W").reads == 3


def two_fanout_conv(rule: str, multicast: bool = True):
    """O[k, q] += I[q + s] * W[k, s], K = Q = S = 2 (input width 3), all spatial: DRAM fans out K x Q
    to 4 GLBs, each GLB fans out S to 2 PEs (8 lanes, one step); I and W bypass the GLBs."""
    op = ops.conv2d("c", 1, 2, (1, 3), (1, 2))
    glb = Level(name="GLB", keeps=("output",), fanout=Fanout(shape=(2,), multicast_rule=rule, multicast=multicast))
    dram = Level(name="DRAM", fanout=Fanout(shape=(4,), multicast_rule=rule, multicast=multicast))
    m = mapping_of({}, {"spatial": {"S": 2}}, {"spatial": {"K": 2, "Q": 2}})
    return simulate(op, arch_of(Level(name="PE"), glb, dram), m)


@pytest.mark.parametrize("rule, multicast, i_reads, w_reads", [("union", True, 3, 4), ("identical", True, 4, 4),
                                                               ("identical", False, 8, 8)])
def test_identical_rule_decides_fan_out_by_fan_out(rule: str, multicast: bool, i_reads: int, w_reads: int) -> None:
    """PE (k, q, s) needs I[q + s] and W[k, s]. Union: DRAM reads I 0-2 once each (3) and the 4 weights.
    Identical (Timeloop's rule): at DRAM's fan-out the GLBs (k, q) need I {q, q + 1}, equal for equal q:
    2 groups; inside one, the PEs s = 0, 1 need different words: 2 reads each, 4 in all, although PE
    (q = 0, s = 1) and PE (q = 1, s = 0) need the same word I[1] (they sit under different GLB groups).
    W: GLBs differ in k (2 groups) and PEs in s: 4, as the union. Without multicast every PE: 8, 8."""
    r = two_fanout_conv(rule, multicast)
    assert r.output_matches
    assert (r.count("DRAM", "I").reads, r.count("DRAM", "W").reads) == (i_reads, w_reads)
    assert len([t for t in dram_transfers(r) if t.tensor == "I"]) == (1 if rule == "union" else i_reads)


# ---- operand registers -------------------------------------------------------------------------------
def mm_in_rf(registers: tuple, order: tuple):
    """O[m] += I[m, k] * W[k] with M = 4, K = 2 on one lane, everything in the RF's 8 temporal steps."""
    arch = ArchSpec(name="reg", clock_mhz=100.0, mac=Mac(operand_registers=registers),
                    levels=(Level(name="RF"), Level(name="DRAM")))
    m = mapping_of({"temporal": {"K": 2, "M": 4}, "order": order}, {})
    return simulate(ops.matmul("mm", 4, 2, 1), arch, m)


def test_weight_register_when_the_innermost_loop_does_not_index_weights() -> None:
    """``for k in 2: for m in 4``: the lane's weight W[k] changes only when k does, so a weight
    register is filled twice: RF reads of W drop from 8 to 2. I[m, k] changes at every step: 8 reads
    either way. The register has no counts of its own (no level is added)."""
    plain, reg = mm_in_rf((), ("K", "M")), mm_in_rf(("weight",), ("K", "M"))
    assert plain.count("RF", "W").reads == 8 and reg.count("RF", "W").reads == 2
    assert plain.count("RF", "I").reads == reg.count("RF", "I").reads == 8
    assert reg.output_matches and set(reg.counts) == set(plain.counts)


def test_output_register_drains_when_the_lane_moves_to_another_word() -> None:
    """``for k in 2: for m in 4`` with an output register: the lane's word O[m] changes every step,
    so 8 register copies drain (RF updates 8). Those of k = 1 hold partial sums from k = 0 and are
    reloaded (RF reads 4); their drains carry the full sum and overwrite, those of k = 0 are the
    first touch of RF copies that entered at zero: accumulate_reads 0 (without the register: 4,
    the second lane result into each word). ``for m in 4: for k in 2``: the register keeps O[m]
    for both k: 4 drains, no reloads."""
    plain, reg = mm_in_rf((), ("K", "M")), mm_in_rf(("output",), ("K", "M"))
    assert plain.count("RF", "O") == AccessCounts(updates=8, drains=4, accumulate_reads=4)
    assert reg.count("RF", "O") == AccessCounts(reads=4, updates=8, drains=4)
    assert mm_in_rf(("output",), ("M", "K")).count("RF", "O") == AccessCounts(updates=4, drains=4)


# ---- no halo reuse -----------------------------------------------------------------------------------
def test_no_halo_reuse_refills_a_sliding_window_whole() -> None:
    """``for q in 4 (DRAM): for s in 3 (RF)``: the RF's I tile {q, q+1, q+2} changes at every event;
    without halo reuse all 3 words are filled each time: 12 (with it 3 + 1 + 1 + 1 = 6), all read
    from DRAM. The W tile never changes and moves nothing: 3. O tiles {q} are disjoint: drains 4."""
    r = simulate(conv1d(), arch_of(Level(name="RF", halo_reuse=False), Level(name="DRAM")), WS)
    assert r.output_matches
    assert r.count("RF", "I").fills == 12 and r.count("DRAM", "I").reads == 12
    assert r.count("RF", "W").fills == 3
    assert r.count("RF", "O").drains == 4


# ---- metrics (energy, latency, bytes, capacity) -------------------------------------------------------
def metrics_arch(rf_capacity: int | dict | None = None, buffers: int = 1, dram_capacity: int | None = None) -> ArchSpec:
    rf = Level(name="RF", read_energy=1.0, write_energy=2.0, energy={"output": ActionEnergy(update=5.0)},
               read_bandwidth=1.0, write_bandwidth=2.0, capacity=rf_capacity, capacity_unit="bits", buffers=buffers)
    dram = Level(name="DRAM", read_energy=10.0, write_energy=20.0, bandwidth=2.0, capacity=dram_capacity,
                 transfer=TransferModel(model="burst", bandwidth_gbps=1.0, burst_bytes=4, cas_ns=10.0))
    return ArchSpec(name="metrics", clock_mhz=100.0, word_bits={"input": 8, "weight": 16, "output": 32},
                    levels=(rf, dram))


def test_metrics_of_the_weight_stationary_conv() -> None:
    """Counts of ``for q in 4: for s in 3`` (see above): RF W 12 reads / 3 fills, I 12 / 6, O 12
    updates, 4 drains, 8 accumulate reads; DRAM reads W 3, I 6, updates O 4.

    - energy: RF W 12 x 1 + 3 x 2 = 18, I 12 + 6 x 2 = 24, O (4 + 8) x 1 + 12 x 5 = 72; DRAM
      (3 + 6) x 10 + 4 x 20 = 170; MACs 12 x 1: 296.
    - DRAM bytes at 1/2/4 bytes per I/W/O word: 6 + 6 + 16 = 28. Bursts of 4 bytes: I runs of 3, 1,
      1, 1 bytes: 4; W one run of 6 bytes: 2; O 4 single 4-byte words: 4; 10 in all. Transfer time
      28 ns + 10 x 10 ns = 128 ns = 12.8 cycles at 100 MHz; DRAM bandwidth 13 words / 2 = 6.5.
    - RF: reads 24 + 4 + 8 = 36 at 1 word/cycle, writes 9 + 12 = 21 at 2: 36 cycles.
    - latency max(12, 36, 12.8) = 36 (serial 12 + 36 + 12.8 = 60.8), utilization 12 / 36.
    """
    op, arch = conv1d(), metrics_arch()
    s = sim_metrics(simulate(op, arch, WS), op, arch, WS)
    assert s.action_energy[("RF", "O", "read")] == 12 and s.action_energy[("RF", "O", "update")] == 60
    assert s.level_energy == {"RF": 114, "DRAM": 170} and s.mac_energy == 12 and s.energy == 296
    assert (s.dram_bytes, s.dram_bursts) == (28, 10)
    assert s.transfer_cycles == pytest.approx(12.8) and s.level_cycles["DRAM"] == pytest.approx(12.8)
    assert s.level_cycles["RF"] == 36 and s.compute_cycles == 12
    assert (s.latency_overlap, s.cycles) == (36, 36) and s.latency_serial == pytest.approx(60.8)
    assert s.utilization == pytest.approx(1 / 3)
    assert s.tile_words == {("RF", "I"): 3, ("RF", "W"): 3, ("RF", "O"): 1, ("DRAM", "I"): 6, ("DRAM", "W"): 3,
                            ("DRAM", "O"): 4}


def test_final_outputs_at_their_width() -> None:
    """``final_output_bits: 8`` (partial sums 32): the weight-stationary conv (``for q in 4: for s in 3``)
    finishes each output in the RF before the q loop moves it, so the RF's 4 drains and DRAM's 4 updates
    carry final values; the 12 lane results are partial sums.

    - RF O reads (4 drains at 8 / 32 of a word + 8 accumulate reads) x 1 = 9, updates 12 x 5 = 60 (were 12
      and 60); DRAM O updates 4 x 20 x 8 / 32 = 20 (was 80): energy 296 - 3 - 60 = 233.
    - DRAM bytes 6 + 6 + 4 x 1 = 16; bursts unchanged (10: each output a 1-byte transfer, one burst).
    Spilling instead (``for s in 3: for q in 4`` at DRAM, nothing in the RF loops), every output word leaves
    the RF and reaches DRAM 3 times, partial sums until the last: no transfer counts as final, as without
    the field."""
    op, arch = conv1d(), metrics_arch()
    narrow = arch.model_copy(update={"final_output_bits": 8})
    r = simulate(op, narrow, WS)
    assert (r.count("RF", "O").final_drains, r.count("RF", "O").final_updates) == (4, 0)
    assert r.count("DRAM", "O").final_updates == 4
    s = sim_metrics(r, op, narrow, WS)
    assert s.action_energy[("RF", "O", "read")] == 9 and s.action_energy[("DRAM", "O", "update")] == 20
    assert s.energy == 233 and (s.dram_bytes, s.dram_bursts) == (16, 10)
    assert s.transfer_cycles == pytest.approx(11.6)
    spill = mapping_of({}, {"temporal": {"S": 3, "Q": 4}, "order": ("S", "Q")})
    r = simulate(op, narrow, spill)
    assert r.count("RF", "O").drains == 12 and r.count("DRAM", "O").updates == 12
    assert not any(c.final_drains or c.final_updates for c in r.counts.values())
    assert sim_metrics(r, op, narrow, spill).energy == sim_metrics(simulate(op, arch, spill), op, arch, spill).energy


@pytest.mark.parametrize("capacity, buffers, excess", [
    (100, 2, 54),  # tiles 3 x 8 + 3 x 16 + 1 x 32 = 104 bits against 100 / 2
    (220, 2, -6),  # ... against 110
    ({"input": 24, "weight": 48, "output": 32}, 1, 0),  # each role's partition exactly full
    ({"input": 24, "weight": 40}, 1, 32),  # the output has no partition: 32 bits over 0
])
def test_capacity_in_bits_per_buffer_and_partition(capacity, buffers: int, excess: int) -> None:
    op = conv1d()
    arch = metrics_arch(capacity, buffers)
    s = sim_metrics(simulate(op, arch, WS), op, arch, WS)
    assert s.capacity_excess["RF"] == excess and s.valid == (excess <= 0)


def test_a_bounded_backing_store_must_hold_the_whole_tensors() -> None:
    """I, W, O have 6, 3 and 4 words: 13 do not fit a 12-word backing store."""
    op = conv1d()
    for capacity, valid in ((12, False), (13, True)):
        arch = metrics_arch(dram_capacity=capacity)
        s = sim_metrics(simulate(op, arch, WS), op, arch, WS)
        assert s.capacity_excess["DRAM"] == 13 - capacity and s.valid == valid


# ---- invariants on random cases -----------------------------------------------------------------------
def option_cases(seed: int, n: int) -> list:
    rng = np.random.default_rng(seed)
    return [random_case(rng, options=True) for _ in range(n)]


def with_levels(arch: ArchSpec, change) -> ArchSpec:
    """``arch`` with ``change(level)`` applied to every level (a dict of fields to update)."""
    levels = tuple(lv.model_copy(update=change(lv)) for lv in arch.levels)
    return arch.model_copy(update={"levels": levels})


def test_options_match_the_naive_sequential_simulation() -> None:
    from test_sim_random import assert_matches_naive
    for op, arch, m in option_cases(21, 80):
        assert_matches_naive(op, arch, m)


def test_accumulate_reads_are_bounded_by_updates() -> None:
    for op, arch, m in option_cases(22, 80):
        r = simulate(op, arch, m, compute=False)
        for (level, tensor), c in r.counts.items():
            assert c.accumulate_reads <= c.updates
            if not arch.levels[arch.level_index(level)].read_modify_write or op.tensor(tensor).role != "output":
                assert c.accumulate_reads == 0
        for lv in arch.levels:
            assert r.instance_reads[lv.name].sum() == sum(c.read_words for (n, _), c in r.counts.items()
                                                          if n == lv.name)


def test_identical_reads_lie_between_union_and_no_multicast() -> None:
    checked = 0
    for op, arch, m in option_cases(23, 60):
        if not any(lv.fanout for lv in arch.levels):
            continue
        runs = {}
        for name, fan in (("union", {"multicast": True, "multicast_rule": "union", "no_multicast": ()}),
                          ("identical", {"multicast": True, "multicast_rule": "identical", "no_multicast": ()}),
                          ("none", {"multicast": False})):
            a = with_levels(arch, lambda lv: {"fanout": lv.fanout.model_copy(update=fan)} if lv.fanout else {})
            runs[name] = simulate(op, a, m, compute=False)
        for key in runs["none"].counts:
            reads = [runs[name].counts[key].reads for name in ("union", "identical", "none")]
            assert reads == sorted(reads), (key, reads)
            checked += reads[0] < reads[2]
    assert checked > 0


def test_registers_never_increase_reads_and_no_halo_never_decreases_fills() -> None:
    for op, arch, m in option_cases(24, 60):
        plain = arch.model_copy(update={"mac": arch.mac.model_copy(update={"operand_registers": ()})})
        regs = arch.model_copy(update={"mac": arch.mac.model_copy(update={"operand_registers": ("input", "weight",
                                                                                                "output")})})
        without, with_regs = simulate(op, plain, m, compute=False), simulate(op, regs, m, compute=False)
        for key, c in without.counts.items():
            if op.tensor(key[1]).role == "output":
                assert with_regs.counts[key].updates <= c.updates
            else:
                assert with_regs.counts[key].reads <= c.reads
        halo = simulate(op, with_levels(plain, lambda lv: {"halo_reuse": True}), m, compute=False)
        no_halo = simulate(op, with_levels(plain, lambda lv: {"halo_reuse": False}), m, compute=False)
        for key, c in halo.counts.items():
            assert no_halo.counts[key].fills >= c.fills and no_halo.counts[key].drains >= c.drains


# ---- the L2-to-PE network: ingress and egress bandwidth per fan-out ---------------------------------
@pytest.mark.parametrize("multicast", [True, False])
def test_network_cycles_of_a_link_crossing_two_fan_outs(multicast: bool) -> None:
    """``O[n] += I[k] * W[k, n]``, K = 2, N = 4: 4 PEs (2 GLBs x 2) each run ``for k in 2`` on their own
    n; the GLB keeps nothing, so each tensor's PE -> DRAM link crosses the GLB's fan-out (2 per GLB,
    on N) and DRAM's (2 GLBs, on N). One event per PE: tiles I {I[0], I[1]}, W {W[0, n], W[1, n]},
    O {O[n]} (enters at zero, drains at the end).

    - Ingress, the parent-side reads of each link per instance of the owning level: with multicast
      everywhere, per GLB I 2 (shared by its 2 PEs) + W 4 = 6, at DRAM I 2 + W 8 = 10; without multicast
      on the GLB's fan-out the link does not multicast: per GLB I 4 + W 4 = 8, at DRAM 8 + 8 = 16.
    - Egress, the updates (reduction on, distinct words): per GLB 2, at DRAM 4.
    - GLB network (ingress 2, egress 1 words/cycle): max(6 / 2, 2 / 1) = 3 (8 / 2 = 4 without
      multicast); DRAM network (ingress 5, egress 1): max(10 / 5, 4 / 1) = 4 (max(16 / 5, 4) = 4
      without). Compute is 2 steps, no level has a bandwidth: latency 4 (serial 2 + 3 + 4 = 9, 10
      without multicast).
    The model gives the same cycles."""
    from dnnmap.cost.batch import MappingBatch
    from dnnmap.cost.model import CostModel

    op = ops.matmul("mm", 1, 2, 4)
    glb = Level(name="GLB", keeps=(), fanout=Fanout(shape=(2,), multicast=multicast, ingress_bandwidth=2.0,
                                                    egress_bandwidth=1.0))
    dram = Level(name="DRAM", fanout=Fanout(shape=(2,), ingress_bandwidth=5.0, egress_bandwidth=1.0))
    arch = arch_of(Level(name="PE"), glb, dram)
    m = mapping_of({"temporal": {"K": 2}}, {"spatial": {"N": 2}, "keeps": ()}, {"spatial": {"N": 2}})
    r = simulate(op, arch, m)
    assert r.output_matches
    assert r.network_ingress["GLB"].tolist() == ([6, 6] if multicast else [8, 8])
    assert r.network_ingress["DRAM"].tolist() == [10 if multicast else 16]
    assert r.network_egress["GLB"].tolist() == [2, 2] and r.network_egress["DRAM"].tolist() == [4]
    s = sim_metrics(r, op, arch, m)
    assert s.network_cycles == {"GLB": 3 if multicast else 4, "DRAM": 4}
    assert s.cycles == 4 and s.latency_serial == (9 if multicast else 10)
    cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
    assert cost.network_cycles[0].tolist() == [0, 3 if multicast else 4, 4]
    assert cost.cycles[0] == 4
