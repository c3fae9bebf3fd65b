"""Proof by execution (HW-Flow-Fusion Sec. 4.1-4.2): fused schedules run literally on small networks.

Every case checks the four claims separately: bit-exact outputs against the operator reference,
MACs equal to the unfused network's (Eq. 13), peak buffer occupancy within Eq. 5 + Eq. 8, and
DRAM words equal to the model's Eq. 6 volume.
"""

from __future__ import annotations

import numpy as np
import pytest
from nets import resnet_blocks, vgg16_e_prefix

from dnnmap.fusion import execute
from dnnmap.fusion.execute import FusedExecutor
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.proof import prove, random_operands, reference_maps
from dnnmap.fusion.tiling import plan_tiles

VGG = vgg16_e_prefix()
RESNET = resnet_blocks()
VGG_LAYERS = [layer.name for layer in VGG.layers]
RESNET_LAYERS = [layer.name for layer in RESNET.layers]

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
]


def _ids(case):  # noqa: ANN001, ANN202
    net, names, toy, tox, tof = case
    return f"{net.name}:{names[0]}..{names[-1]}:{toy}x{tox}" + (f":tof{tof}" if tof else "")


@pytest.fixture(params=CASES, ids=_ids)
def proof(request):  # noqa: ANN001, ANN201
    net, names, toy, tox, tof = request.param
    return prove(net, plan_tiles(build_group(net, names), toy, tox, tof), seed=len(names))


def test_fused_output_is_bit_exact(proof) -> None:  # noqa: ANN001
    assert proof.exact


def test_no_recomputation(proof) -> None:  # noqa: ANN001
    assert proof.counts.macs == proof.unfused_macs > 0


def test_peak_occupancy_within_eq5_plus_reuse(proof) -> None:  # noqa: ANN001
    assert proof.counts.peak_words <= proof.buffer.total_words


def test_dram_traffic_equals_eq6(proof) -> None:  # noqa: ANN001
    assert proof.counts.dram_words == proof.volume.total_words


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
