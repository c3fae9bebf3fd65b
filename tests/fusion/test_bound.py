"""The proven least off-chip traffic of a fused group (``volume.compulsory_volume``): never above what any
schedule moves (the executor's counted DRAM words, Eq. 6, the fused costing), tight where Eq. 6 moves every
word once, and below Eq. 6 exactly where a stride skips input pixels or the bottom layer re-fetches weights."""

from __future__ import annotations

import numpy as np
import pytest
from nets import resnet_blocks, tiny_bert, vgg16_e_prefix

from dnnmap.arch.spec import load_arch
from dnnmap.fusion.costing import volume_bytes
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.network import FusionResult
from dnnmap.fusion.proof import prove
from dnnmap.fusion.tile_search import channel_tiles
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.fusion.volume import compulsory_volume, offchip_volume
from dnnmap.report.fusion import group_table
from dnnmap.workload.builder import NetworkBuilder

VGG, RESNET, BERT = vgg16_e_prefix(), resnet_blocks(), tiny_bert()


@pytest.mark.parametrize("seed", range(6))
def test_executed_traffic_is_never_below_the_bound(seed: int) -> None:
    """Random groups and tiles (output-channel slices included): the literal executor's DRAM words and each
    Eq. 6 term are at least the bound's."""
    rng = np.random.default_rng(seed)
    net = (VGG, RESNET, BERT)[seed % 3]
    names = [layer.name for layer in net.layers]
    checked = 0
    for _ in range(6):
        a = int(rng.integers(0, len(names) - 1))
        b = int(rng.integers(a + 2, min(a + 5, len(names)) + 1))
        try:
            group = build_group(net, names[a:b])
        except FusionError:
            continue
        h, w = group.out_hw
        tof = int(rng.choice(channel_tiles(group)))
        plan = plan_tiles(group, int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1)), tof)
        bound, eq6 = compulsory_volume(group), offchip_volume(plan)
        assert eq6.input_words >= bound.input_words and eq6.weight_words >= bound.weight_words
        assert eq6.output_words == bound.output_words
        assert prove(net, plan, seed).counts.dram_words >= bound.total_words
        checked += 1
    assert checked


def test_bound_equals_eq6_when_every_word_moves_once() -> None:
    group = build_group(VGG, [layer.name for layer in VGG.layers][:3])
    plan = plan_tiles(group, 3, 4)
    assert compulsory_volume(group) == offchip_volume(plan)
    conv = group.layers[0]
    assert compulsory_volume(group).input_words == conv.in_channels * conv.in_hw[0] * conv.in_hw[1]


def test_bound_counts_only_the_pixels_a_strided_window_reads() -> None:
    """A 1x1 stride-2 convolution over an 8x8 map reads 4x4 of its pixels: 16 x 4 channels, not 256 words;
    Eq. 6 fetches the whole map. Slicing the bottom layer's outputs re-fetches its weights per tile."""
    b = NetworkBuilder("strided", (1, 4, 8, 8))
    b.conv("down", 6, 1, 2, 0)
    b.conv("conv", 8, 3, 1, 1)
    net = b.build()
    group = build_group(net, ["down", "conv"])
    bound = compulsory_volume(group)
    assert bound.input_words == 4 * 4 * 4
    assert bound.weight_words == 4 * 6 + 6 * 8 * 9 and bound.output_words == 8 * 4 * 4
    sliced = offchip_volume(plan_tiles(group, 2, 2, 2))
    assert sliced.input_words == 4 * 8 * 8 and sliced.weight_words == 4 * 6 + 6 * 8 * 9 * 4
    assert prove(net, plan_tiles(group, 2, 2, 2), 0).counts.dram_words > bound.total_words


def test_fused_schedule_prints_its_bound_and_never_goes_below_it(vgg_prefix_fused: FusionResult) -> None:
    arch, result = load_arch("hwff_config1"), vgg_prefix_fused
    assert result.candidates
    for g in result.candidates:
        assert g.cost.dram_bytes >= volume_bytes(arch, g.tiling.bound) > 0
    headers = [c.header for c in group_table(result).columns]
    assert headers[-1] == "DRAM bytes, least possible"
