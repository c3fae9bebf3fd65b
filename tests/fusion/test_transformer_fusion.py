"""Fusion of transformer layers on token maps: the MLP (fc1 -> GELU -> fc2) and the residual/norm tail, proven by
literal execution on a reduced BERT encoder (8 tokens, 16 features, 2 heads)."""

from __future__ import annotations

import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.network import fuse_network
from dnnmap.fusion.proof import prove
from dnnmap.fusion.search import FusionSearch
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.search.options import SearchOptions
from tests.fusion.nets import resnet_blocks, tiny_bert

MLP = ("layer0.fc1", "layer0.gelu", "layer0.fc2")
TAIL = ("layer0.fc2", "layer0.add2", "layer0.norm2")
ATTENTION = ("layer0.attn.scores", "layer0.attn.softmax", "layer0.attn.values")
QKV = ("layer0.q_proj", "layer0.k_proj", "layer0.v_proj")  # connected through the hidden state they all read
BLOCK = ("layer0.o_proj", "layer0.add1", "layer0.norm1", *MLP, "layer0.add2", "layer0.norm2")

CASES = [  # (layers, token tile, bottom output-channel tile)
    (MLP, 8, None), (MLP, 2, None), (MLP, 3, 4), (MLP, 1, 1),
    (MLP[:2], 4, None), (TAIL, 1, None), (TAIL, 5, None), (BLOCK, 2, None), (BLOCK, 8, None),
]


@pytest.mark.parametrize("names,tile,tof", CASES, ids=[f"{len(c[0])}L-t{c[1]}-f{c[2]}" for c in CASES])
def test_token_groups_execute_exactly(names: tuple[str, ...], tile: int, tof: int | None) -> None:
    net = tiny_bert()
    group = build_group(net, names)
    assert group.out_hw == (8, 1)  # tokens are the rows of a one-column map
    report = prove(net, plan_tiles(group, tile, 1, tof), seed=tile)
    assert report.exact and report.zero_recomputation and report.within_buffer and report.dram_matches
    assert report.counts.macs == sum(net.layer(n).op.macs for n in names) > 0
    if names == MLP and tof is None:  # the 8 x 64 GELU map never leaves the chip: only fc1's input, the weights and fc2's output move
        assert report.counts.dram_words == 8 * 16 + 16 * 64 + 64 * 16 + 8 * 16


def test_bigger_stack_with_other_tiles() -> None:
    net = tiny_bert(seq=12, hidden=8, heads=2, layers=2)
    for names in (MLP, tuple(n.replace("layer0", "layer1") for n in BLOCK)):
        for tile in (1, 5, 12):
            report = prove(net, plan_tiles(build_group(net, names), tile, 1), seed=tile)
            assert report.holds, (names, tile)


def test_what_does_not_fuse_says_why() -> None:
    net = tiny_bert()
    with pytest.raises(FusionError, match="layer0.o_proj.*matmul.*cannot be fused.*head maps"):
        build_group(net, ("layer0.attn.softmax", "layer0.attn.values", "layer0.o_proj"))
    with pytest.raises(FusionError, match="layer0.v_proj.*matmul.*cannot be fused.*head maps"):
        build_group(net, ("layer0.v_proj", "layer0.attn.scores"))
    with pytest.raises(FusionError, match="only a convolution or projection may tile"):
        plan_tiles(build_group(net, TAIL), 8, 1, 4)  # a norm's row of features is never split


def test_cnn_groups_keep_their_layout() -> None:
    net = resnet_blocks()
    group = build_group(net, ("l1.conv2", "l1.add"))
    assert group.layers[1].in_channels == 4 and group.out_hw == (5, 5)
    assert prove(net, plan_tiles(group, 2, 2)).holds


def test_search_fuses_the_mlp() -> None:
    net = tiny_bert()
    arch = load_arch("eyeriss")
    names = [c for c, _ in FusionSearch(net, arch, max_fused=3).candidates()]
    assert MLP in names and TAIL in names and ("layer0.norm1", "layer0.fc1") in names and QKV in names
    attention = [c for c in names if any("attn" in n for n in c)]  # head maps (test_attention_fusion.py)
    assert attention and all(all("attn" in n for n in c) for c in attention)  # never mixed with token maps
    result = fuse_network(net, arch, "temporal", max_fused=3, objective="dram", options=SearchOptions(budget=200))
    fused = [g.layers for g in result.schedule.groups if g.mode != "single"]
    assert fused and all(set(g) <= set(BLOCK) or set(g) in (set(ATTENTION), set(QKV)) for g in fused)
    assert result.schedule.cost.dram_bytes < result.unfused.cost.dram_bytes
