"""Proof by execution (HW-Flow-Fusion Sec. 4.1-4.2): fused schedules run literally on small networks.

Every case checks the four claims separately: bit-exact outputs against the operator reference (attention
with its keys tiled: the float64 forward pass within a stated tolerance, dnnmap.fusion.online_softmax),
MACs equal to the unfused network's (Eq. 13), peak buffer occupancy within Eq. 5 + Eq. 8, and
DRAM words equal to the model's Eq. 6 volume. The fused costing's counts at the chip boundary
(buffer fills from DRAM by role, buffer drains to DRAM, DRAM reads and writes) equal the executor's.
"""

from __future__ import annotations

import numpy as np
import pytest
from archs import eyeriss_without_hops
from nets import inception_blocks, resnet_blocks, tiny_bert, tiny_llama, vgg16_e_prefix

from dnnmap.arch.spec import load_arch
from dnnmap.fusion import execute
from dnnmap.fusion.costing import boundary_level, fused_counts
from dnnmap.fusion.execute import FusedExecutor
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.proof import execute_plan, prove, random_operands, reference_maps
from dnnmap.fusion.partition import spatial_share, temporal_share
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.fusion.volume import traffic_by_layer
from dnnmap.mapping.mapping import BOTH_AXES
from dnnmap.search.network import map_layer
from dnnmap.search.refine import refine
from dnnmap.search.sunstone import descent
from dnnmap.workload.builder import NetworkBuilder

ARCH = load_arch("hwff_config1")
VGG = vgg16_e_prefix()
RESNET = resnet_blocks()
VGG_LAYERS = [layer.name for layer in VGG.layers]
RESNET_LAYERS = [layer.name for layer in RESNET.layers]
INCEPTION = inception_blocks()
INCEPTION_LAYERS = [layer.name for layer in INCEPTION.layers]
MODULE_A, MODULE_B = INCEPTION_LAYERS[:10], INCEPTION_LAYERS[10:]
BERT, LLAMA = tiny_bert(), tiny_llama()
ATTENTION = ["layer0.attn.scores", "layer0.attn.softmax", "layer0.attn.values"]
MLP, SWIGLU = ["layer0.fc1", "layer0.gelu", "layer0.fc2"], ["layer0.gate_proj", "layer0.up_proj", "layer0.swiglu",
                                                             "layer0.down_proj"]

CASES = [
    (VGG, VGG_LAYERS[:2], 3, 4, None),
    (VGG, VGG_LAYERS[:3], 1, 9, None),
    (VGG, VGG_LAYERS[:7], 2, 3, None),
    (VGG, VGG_LAYERS[2:5], 4, 2, 3),  # bottom conv tiles its output channels (G5)
    (VGG, VGG_LAYERS[3:6], 3, 3, None),  # ends in a pool (Table 5's CONV4+POOL2)
    (RESNET, RESNET_LAYERS[:2], 2, 2, None),  # CONV1+POOL1 (padded max-pool)
    (RESNET, RESNET_LAYERS[2:4], 2, 3, 1),  # CONV2_1_1+CONV2_1_2, the add outside the group
    (RESNET, RESNET_LAYERS[2:5], 1, 2, None),  # identity block with its residual add
    (RESNET, RESNET_LAYERS[5:9], 1, 1, None),  # strided block with the 1x1 projection shortcut
    (RESNET, RESNET_LAYERS, 1, 1, None),  # stem and both blocks in one group
    (BERT, ATTENTION, 1, 3, None),  # attention per head and query-row block: K/V banded (dnnmap.fusion.attention)
    (BERT, ATTENTION, 2, 8, None),  # all heads, every query: the whole score map on chip
    (LLAMA, ATTENTION, 1, 4, None),  # grouped-query: a 1-head band re-fetches its shared K/V head
    (LLAMA, ATTENTION, 2, 5, None),
    (BERT, MLP, 8, 1, None, 16),  # MLP, hidden dimension in blocks of 16: fc2 accumulates (dnnmap.fusion.mlp)
    (BERT, MLP, 3, 1, None, 4),  # token tiles too: every weight streams once per tile
    (LLAMA, SWIGLU, 4, 1, None, 8),  # gate and up projections, SwiGLU, down projection
    (BERT, ATTENTION, 1, 3, None, 0, 2),  # keys in blocks of 2: online softmax, K/V stream per query block
    (BERT, ATTENTION, 2, 8, None, 0, 1),  # every query of both heads, one key at a time: K/V fetched once
    (LLAMA, ATTENTION, 1, 4, None, 0, 2),  # grouped-query with the keys tiled
    (LLAMA, ATTENTION, 4, 2, None, 0, 3),  # a band over both K/V heads, 3 query blocks, 2 key blocks
    (BERT, ATTENTION, 2, 3, None, 0, 3),  # 8 keys in blocks of 3, 3 and 2: the last block is short
    (INCEPTION, MODULE_A, 1, 1, None),  # stem and an Inception-A module: four branches joined by a concat
    (INCEPTION, MODULE_A, 2, 3, None),  # tiles that do not divide the 9x9 maps
    (INCEPTION, MODULE_A[1:9], 4, 9, None),  # the four branches without the concat: they share the stem map
    (INCEPTION, MODULE_A[7:], 3, 3, None),  # avg-pool branch + concat: the other branches' maps come from DRAM
    (INCEPTION, MODULE_B, 1, 1, None),  # the reduction module: 3x3/2, 1x1-3x3-3x3/2, max-pool/2, concat
    (INCEPTION, MODULE_A[5:] + MODULE_B, 1, 2, None),  # across the two modules
    (BERT, ["layer0.q_proj", "layer0.k_proj", "layer0.v_proj"], 3, 1, None),  # three projections of one input
]


def _ids(case):  # noqa: ANN001, ANN202
    net, names, toy, tox, tof, *inner = case
    return (f"{net.name}:{names[0]}..{names[-1]}:{toy}x{tox}" + (f":tof{tof}" if tof else "")
            + "".join(f":{label}{b}" for label, b in zip(("hidden", "keys"), inner) if b))


def _plan(case):  # noqa: ANN001, ANN202
    """The tile plan of a case: (network, layers, T_oy, T_ox, T_of[, hidden block[, key block]])."""
    net, names, toy, tox, tof, *hidden = case
    return plan_tiles(build_group(net, names), toy, tox, tof, *hidden)


@pytest.fixture(params=CASES, ids=_ids)
def proof(request):  # noqa: ANN001, ANN201
    return prove(request.param[0], _plan(request.param), seed=len(request.param[1]))


def test_fused_output_is_bit_exact(proof) -> None:  # noqa: ANN001
    """Bit for bit; attention with its keys tiled: the float64 forward pass within online_softmax.TOLERANCE."""
    assert proof.exact


def test_no_recomputation(proof) -> None:  # noqa: ANN001
    assert proof.counts.macs == proof.unfused_macs > 0


def test_peak_occupancy_within_eq5_plus_reuse(proof) -> None:  # noqa: ANN001
    assert proof.counts.peak_words <= proof.buffer.total_words


def test_dram_traffic_equals_eq6(proof) -> None:  # noqa: ANN001
    assert proof.counts.dram_words == proof.volume.total_words


def _boundary(counts: dict[str, np.ndarray], result, arch) -> dict[str, float]:  # noqa: ANN001
    """Words crossing the chip boundary: fills by role and drains of the level that exchanges each tensor with
    DRAM (the buffer, or the register file for a tensor that bypasses it), DRAM reads and writes."""
    out = {"input": 0.0, "weight": 0.0, "drains": 0.0, "dram_reads": 0.0, "dram_writes": 0.0}
    for t, tensor in enumerate(result.op.tensors):
        child = boundary_level(result, arch, tensor.name)
        if tensor.role == "output":
            out["drains"] += counts["drains"][child, t]
            out["dram_writes"] += counts["updates"][-1, t]
        else:
            out[tensor.role] += counts["fills"][child, t]
            out["dram_reads"] += counts["reads"][-1, t]
    return out


@pytest.mark.parametrize("case", [CASES[i] for i in (0, 3, 4, 5, 7, 8, 10, 12, 15, 16, 17, 20, 22, 25, 27)], ids=_ids)
def test_fused_costing_counts_the_executors_transfers(case) -> None:  # noqa: ANN001
    """Eq. 6 at both ends: the costing's buffer fills and drains and DRAM words, summed over the group's
    layers, equal the literal executor's; every other count is the core mapping's. The core mapping's own
    counts (DRAM as every tensor's parent) would not match: the test can fail."""
    net, names = case[:2]
    arch = temporal_share(ARCH, len(names))
    _check_costing_against_executor(net, _plan(case), arch, lambda op: map_layer(op, arch, "energy"))


def test_fused_costing_of_refined_mappings_counts_the_executors_transfers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The three chained 1x1 convolutions, reduced, on the Eyeriss of the AccelForge comparison (weights bypass
    its buffer), each layer mapped on its spatial share and refined in the widened space (both-axis splits,
    placed tiles) as the fused search does: the same equality at the chip boundary. Sunstone's factor descent is
    off here: with it, Sunstone's start already has the energy of the refined placed mapping (an unplaced one),
    so the refinement would not place a tile and the equality would not cover placed tiles."""
    monkeypatch.setattr(descent, "ROUNDS", 0)
    b = NetworkBuilder("chain", (1, 16, 12, 12))
    for i in range(3):
        b.conv(f"conv{i}", 16, 1, fused=())
    net = b.build()
    arch = spatial_share(eyeriss_without_hops(), (14, 4))
    refined = []

    def search(op):  # noqa: ANN001, ANN202
        refined.append(refine(map_layer(op, arch, "energy"), "energy"))
        return refined[-1]

    _check_costing_against_executor(net, plan_tiles(build_group(net, ["conv0", "conv1", "conv2"]), 2, 12), arch,
                                    search)
    assert all(r.mapping.placed and dict(r.mapping.levels[1].spatial_axis) == {"C": BOTH_AXES} for r in refined)


def _check_costing_against_executor(net, plan, arch, search) -> None:  # noqa: ANN001
    inputs, weights = random_operands(net, plan.group)
    executed = execute_plan(plan, inputs, weights).counts
    traffic = traffic_by_layer(plan)
    fused = dict.fromkeys(("input", "weight", "drains", "dram_reads", "dram_writes"), 0.0)
    core = dict(fused)
    for g in plan.group.layers:
        result = search(net.layer(g.name).op)
        counts = fused_counts(result, arch, traffic[g.name])
        for key, words in _boundary(counts, result, arch).items():
            fused[key] += words
        for key, words in _boundary({k: v[0] for k, v in result.cost.counts.items()}, result, arch).items():
            core[key] += words
        for kind, values in counts.items():  # on-chip counts other than the boundary's are the core model's
            same = np.ones(values.shape, dtype=bool)
            same[-1] = False
            if kind in ("fills", "drains"):
                for t, tensor in enumerate(result.op.tensors):
                    same[boundary_level(result, arch, tensor.name), t] = False
            assert np.array_equal(values[same], result.cost.counts[kind][0][same])
        for t, tensor in enumerate(result.op.tensors):  # a tensor bypassing the buffer (Eyeriss' weights) fills
            child = boundary_level(result, arch, tensor.name)  # the registers from DRAM: the mapping must
            if child < len(arch.levels) - 2 and tensor.role != "output":  # fill them no more than Eq. 6 fetches
                assert counts["fills"][child, t] == result.cost.counts["fills"][0, child, t]
    assert fused == {"input": executed.buffer_fills["input"], "weight": executed.buffer_fills["weight"],
                     "drains": executed.buffer_drains, "dram_reads": executed.dram_read_words,
                     "dram_writes": executed.dram_write_words}
    assert core != fused


def test_executor_counts_on_chip_buffer_traffic() -> None:
    """Every computed word is written into the buffer once; windows read at least every map word they use."""
    plan = plan_tiles(build_group(VGG, VGG_LAYERS[:3]), 2, 2)
    inputs, weights = random_operands(VGG, plan.group)
    counts = FusedExecutor(plan, inputs, weights).run().counts
    maps = plan.group.maps
    assert counts.buffer_writes == sum(maps[g.name].words for g in plan.group.layers)
    assert counts.buffer_reads >= sum(maps[m].words for g in plan.group.layers for m in g.inputs)
    assert counts.buffer_drains == maps["pool1"].words


@pytest.mark.parametrize("seed", range(6))
def test_random_tiles_and_groups(seed: int) -> None:
    """Random contiguous groups and bottom tiles (not divisors of the map) on both networks."""
    rng = np.random.default_rng(seed)
    net = (VGG, RESNET)[seed % 2]
    names = [layer.name for layer in net.layers]
    for _ in range(4):
        a = int(rng.integers(0, len(names) - 1))
        b = int(rng.integers(a + 2, len(names) + 1))
        try:
            group = build_group(net, names[a:b])
        except FusionError:
            continue
        h, w = group.out_hw
        plan = plan_tiles(group, int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1)))
        assert prove(net, plan, seed).holds


def test_eviction_too_early_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A buffer that drops the reuse rows makes a later tile read pixels it no longer holds."""
    real = execute.last_reads

    def forgetful(plan):  # noqa: ANN001, ANN202
        return {m: np.where(last >= 0, last - len(plan.group), last) for m, last in real(plan).items()}

    monkeypatch.setattr(execute, "last_reads", forgetful)
    plan = plan_tiles(build_group(VGG, VGG_LAYERS[:2]), 3, 4)
    inputs, weights = random_operands(VGG, plan.group)
    with pytest.raises(FusionError, match="does not hold"):
        FusedExecutor(plan, inputs, weights).run()


def test_reference_detects_a_wrong_weight() -> None:
    """The exactness check can fail: one changed weight changes the fused output."""
    plan = plan_tiles(build_group(VGG, VGG_LAYERS[:3]), 2, 2)
    inputs, weights = random_operands(VGG, plan.group)
    fused = FusedExecutor(plan, inputs, weights).run().outputs["pool1"]
    weights["conv2"][0, 0, 1, 1] += 5
    assert not np.array_equal(fused, reference_maps(VGG, plan.group, inputs, weights)["pool1"])
