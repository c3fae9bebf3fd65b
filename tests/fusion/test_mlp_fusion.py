"""Fused MLP with a tiled hidden dimension (dnnmap.fusion.mlp): each hidden block's up-projection output stays on chip
and the down-projection accumulates into the output. Bit-exactness, zero recomputation, Eq. 5/6 and the costing's
counts are proven with every other group in test_proof.py (its hidden-block cases)."""

from __future__ import annotations

import numpy as np
import pytest
from nets import tiny_bert

from dnnmap.arch.spec import load_arch
from dnnmap.fusion import mlp
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.network import fuse_network
from dnnmap.fusion.proof import prove
from dnnmap.fusion.tile_search import best_tiling
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.report.fusion_trace import schedule_trace
from dnnmap.search.options import SearchOptions
from dnnmap.workload.zoo.transformers import bert_base

MLP = ("layer0.fc1", "layer0.gelu", "layer0.fc2")
TAIL = ("layer0.fc2", "layer0.add2", "layer0.norm2")


@pytest.mark.parametrize("tokens,hidden", [(8, 8), (8, 1), (4, 32), (5, 16)])
def test_hidden_map_never_leaves_the_chip(tokens: int, hidden: int) -> None:
    """DRAM moves fc1's input and fc2's output once and every weight once per token tile; one block of the hidden
    map (tokens x block) is held at a time."""
    net = tiny_bert()  # 8 tokens, 16 features, 64 hidden
    report = prove(net, plan_tiles(build_group(net, MLP), tokens, 1, None, hidden), seed=tokens * hidden)
    assert report.holds
    tiles = -(-8 // tokens)
    assert report.counts.dram_words == 8 * 16 + 2 * 16 * 64 * tiles + 8 * 16
    assert report.counts.peak_map_words["layer0.fc1"] == tokens * hidden


def test_a_lost_partial_sum_breaks_exactness(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exactness check can fail: dropping one hidden block's contribution changes the output."""
    net = tiny_bert()
    plan = plan_tiles(build_group(net, MLP), 8, 1, None, 16)
    real = mlp.HiddenTiledExecutor._run_block

    def lossy(self, box, n0, n1, acc_words):  # noqa: ANN001, ANN202
        partial = real(self, box, n0, n1, acc_words)
        return partial * 0 if n0 == 16 else partial

    monkeypatch.setattr(mlp.HiddenTiledExecutor, "_run_block", lossy)
    assert not prove(net, plan).exact


def test_only_an_mlp_tiles_its_hidden_dimension() -> None:
    net = tiny_bert()
    with pytest.raises(FusionError, match="cannot tile its hidden dimension"):
        plan_tiles(build_group(net, TAIL), 8, 1, None, 4)
    with pytest.raises(FusionError, match="must divide the hidden size"):
        plan_tiles(build_group(net, MLP), 8, 1, None, 5)
    assert mlp.hidden_tiles(build_group(net, TAIL)) == []
    assert mlp.mlp_runs(net) == [MLP]


def test_bert_base_mlp_fits_a_512kb_buffer_by_hidden_blocks() -> None:
    """BERT-base's MLP weights (4.7 M words) exceed hwff_config1's 256 k-word buffer: the untiled MLP has no legal
    tile; in hidden blocks it fuses with one token tile, moving the input, the weights and the output once."""
    group = build_group(bert_base(), MLP)
    choice = best_tiling(group, 262144)
    assert choice is not None and choice.plan.hidden_tile and choice.plan.n_tiles == 1
    assert choice.volume.total_words == 128 * 768 + 2 * 768 * 3072 + 128 * 768
    assert choice.buffer.total_words <= 262144
    untiled = best_tiling(group, 1e12)
    assert untiled is not None and untiled.plan.hidden_tile == 0  # when everything fits, no hidden blocks


def test_search_fuses_an_mlp_whose_weights_do_not_fit() -> None:
    """A 128-feature encoder on eyeriss (55 k words): 131 k words of MLP weights; the DRAM-objective schedule fuses
    the MLP in hidden blocks and moves fewer bytes than its layers singly. With --max-fused 3 the growth from fc1
    stops at fc1 + gelu (all of fc1's 65 k weights resident do not fit), and the whole MLP is still offered."""
    net = tiny_bert(seq=16, hidden=128)
    result = fuse_network(net, load_arch("eyeriss"), "temporal", max_fused=3, objective="dram",
                          options=SearchOptions(budget=200))
    (group,) = [g for g in result.schedule.groups if g.layers == MLP]
    assert group.tiling.plan.hidden_tile and group.cost.dram_bytes < group.single.dram_bytes
    assert np.isclose(group.cost.dram_bytes, group.tiling.volume.total_words * 2)  # 16-bit words
    traced = {g.name: g for g in schedule_trace(result).groups}[" + ".join(MLP)]  # --trace's occupancy counter
    assert 0 < max(words for _, words in traced.buffer) <= group.tiling.buffer.total_words
