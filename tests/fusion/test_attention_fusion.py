"""Fused attention (scores -> softmax -> values) on head maps (dnnmap.fusion.attention): K/V banded per head, the
score block on chip, and the search choosing it. Bit-exactness, zero recomputation, Eq. 5/6 and the costing's
counts are proven with every other group in test_proof.py (its tiny_bert / tiny_llama cases)."""

from __future__ import annotations

import numpy as np
import pytest
from nets import tiny_bert, tiny_llama

from dataclasses import replace

from dnnmap.arch.spec import load_arch
from dnnmap.arch.units import compute_unit
from dnnmap.fusion.costing import fused_cost, fused_cycle_parts
from dnnmap.fusion.attention import attention_runs
from dnnmap.fusion.execute import FusedExecutor
from dnnmap.fusion.geometry import FusionError
from dnnmap.fusion.group import build_group
from dnnmap.fusion.network import fuse_network
from dnnmap.fusion.partition import with_buffer
from dnnmap.fusion.online_softmax import TOLERANCE, KeyTiledExecutor, float_reference
from dnnmap.fusion.proof import prove, random_operands
from dnnmap.fusion.search import FusionSearch
from dnnmap.fusion.tile_search import best_tiling
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.fusion.volume import traffic_by_layer
from dnnmap.search.network import map_layer
from dnnmap.search.options import SearchOptions

ATTENTION = ("layer0.attn.scores", "layer0.attn.softmax", "layer0.attn.values")


def _words(net, name: str) -> int:  # noqa: ANN001
    return int(np.prod(net.layer(name).op.tensor_shape(net.layer(name).op.output.name)))


@pytest.mark.parametrize("heads,queries", [(1, 8), (1, 3), (2, 1), (2, 8)])
def test_only_q_k_v_and_the_output_leave_the_chip(heads: int, queries: int) -> None:
    """Without grouped-query sharing every K/V word is fetched once per run, whatever the tile: DRAM moves Q, K, V
    and the attention output, never the score or probability map."""
    net = tiny_bert()
    report = prove(net, plan_tiles(build_group(net, ATTENTION), heads, queries), seed=heads + queries)
    assert report.holds
    q, k, v = "layer0.q_proj", "layer0.k_proj", "layer0.v_proj"
    assert report.counts.dram_words == sum(_words(net, n) for n in (q, k, v, "layer0.attn.values"))
    unfused = sum(int(np.prod(net.layer(n).op.tensor_shape(t.name))) for n in ATTENTION for t in net.layer(n).op.tensors)
    assert unfused - report.counts.dram_words == 4 * _words(net, "layer0.attn.scores")  # S and P, written and read
    score_block = heads * queries * 8  # T_oy heads x T_ox queries x 8 keys
    assert max(report.counts.peak_map_words[m] for m in ATTENTION[:2]) == score_block


def test_grouped_query_bands_refetch_shared_heads() -> None:
    """4 query heads on 2 K/V heads: bands of one head fetch each K/V head twice, bands of two heads once."""
    net = tiny_llama()
    kv = 2 * 6 * 4  # K/V heads x tokens x head dim
    one, two = (prove(net, plan_tiles(build_group(net, ATTENTION), band, 6)) for band in (1, 2))
    assert one.holds and two.holds
    assert one.counts.dram_words - two.counts.dram_words == 2 * kv


def test_a_band_that_drops_its_head_too_early_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """An executor that holds the wrong band of K/V slices reads a head it does not hold."""
    net = tiny_bert()
    plan = plan_tiles(build_group(net, ATTENTION), 1, 4)
    inputs, weights = random_operands(net, plan.group)
    executor = FusedExecutor(plan, inputs, weights)
    real = executor._fetch_bands
    monkeypatch.setattr(executor, "_fetch_bands", lambda i: real(max(i - 1, 0)))
    with pytest.raises(FusionError, match="weight slices the buffer does not hold"):
        executor.run()


def test_heads_not_channels_are_tiled() -> None:
    net = tiny_bert()
    with pytest.raises(FusionError, match="tile its heads"):
        plan_tiles(build_group(net, ATTENTION), 1, 8, 4)


def test_attention_fuses_whole_and_saves_dram() -> None:
    """The search offers the whole attention even with --max-fused 2, and the schedule takes it."""
    net = tiny_bert(layers=2)
    assert attention_runs(net) == [ATTENTION, tuple(n.replace("layer0", "layer1") for n in ATTENTION)]
    arch = load_arch("eyeriss")
    assert ATTENTION in [c for c, _ in FusionSearch(net, arch, max_fused=2).candidates()]
    result = fuse_network(net, arch, "temporal", max_fused=2, objective="dram", options=SearchOptions(budget=200))
    fused = {g.layers: g for g in result.schedule.groups if g.mode != "single"}
    assert ATTENTION in fused and fused[ATTENTION].cost.dram_bytes < fused[ATTENTION].single.dram_bytes


def test_a_head_that_does_not_fit_streams_its_keys() -> None:
    """Untiled, one head's K and V must fit; below that the search tiles the keys (online softmax), and where the
    untiled plan fits it keeps it (the same volume in fewer steps)."""
    net = tiny_bert()
    group = build_group(net, ATTENTION)
    kv_head = 2 * 8 * 8  # K and V of one head: 8 keys x 8 dims each
    tight = best_tiling(group, kv_head)
    assert tight is not None and tight.plan.key_tile and tight.buffer.total_words <= kv_head
    assert prove(net, tight.plan).holds
    assert best_tiling(group, kv_head + 64).plan.key_tile == 0
    assert best_tiling(group, 10) is None  # not even a one-key block of one query row fits


@pytest.mark.parametrize("queries", [1, 2, 4, 8])
def test_key_tiled_kv_streams_once_per_query_block(queries: int) -> None:
    """With the keys tiled, every query block streams its band's K and V again: once per band only when the
    block covers every query row."""
    net = tiny_bert()
    report = prove(net, plan_tiles(build_group(net, ATTENTION), 1, queries, None, 0, 2))
    assert report.holds
    q, k, v = (_words(net, f"layer0.{n}_proj") for n in "qkv")
    assert report.counts.dram_words == q + (k + v) * (8 // queries) + _words(net, "layer0.attn.values")


def test_online_softmax_operations_are_counted_and_priced() -> None:
    """The rescaling the executor performs equals the model's count, and the fused costing prices exactly those
    operations on the vector unit: energy per operation, compute cycles at least all operations over its lanes."""
    net = tiny_bert(seq=64, hidden=64)
    arch = load_arch("tpu_like")  # declares a vector unit (eyeriss runs the softmax on its MAC array)
    plan = plan_tiles(build_group(net, ATTENTION), 1, 16, None, 0, 8)
    inputs, weights = random_operands(net, plan.group)
    executed = KeyTiledExecutor(plan, inputs, weights).run().counts.extra_operations
    traffic = traffic_by_layer(plan)[ATTENTION[1]]
    heads, dim, blocks = 2, 32, 8
    assert executed == traffic.extra_operations == heads * 64 * ((blocks - 1) * (dim + 2) + dim)
    result = map_layer(net.layer(ATTENTION[1]).op, arch, "energy")
    plain = fused_cost(result, arch, replace(traffic, extra_operations=0))
    priced = fused_cost(result, arch, traffic)
    unit = compute_unit(result.op, arch)
    assert unit.name == "vector unit"
    assert priced.energy - plain.energy == pytest.approx(executed * unit.energy)
    parts = fused_cycle_parts(result, arch, traffic)
    assert parts["compute"] == max(float(result.cost.compute_cycles[0]),
                                   unit.least_cycles(result.op.operations + executed))


def test_key_tiled_output_check_can_fail() -> None:
    """The tolerance is tight enough to catch one changed V word."""
    net = tiny_llama()
    plan = plan_tiles(build_group(net, ATTENTION), 2, 3, None, 0, 2)
    inputs, weights = ({m: a * 0.25 for m, a in d.items()} for d in random_operands(net, plan.group))
    fused = KeyTiledExecutor(plan, inputs, weights).run().outputs[ATTENTION[2]]
    assert np.allclose(fused, float_reference(net, plan.group, inputs, weights)[ATTENTION[2]], **TOLERANCE)
    weights[ATTENTION[2]][0, 0, 0] += 0.001
    assert not np.allclose(fused, float_reference(net, plan.group, inputs, weights)[ATTENTION[2]], **TOLERANCE)


def test_only_a_whole_attention_tiles_its_keys() -> None:
    net = tiny_bert()
    with pytest.raises(FusionError, match="cannot tile its keys"):
        plan_tiles(build_group(net, ATTENTION[:2]), 1, 8, None, 0, 2)
    with pytest.raises(FusionError, match="smaller than the 8 keys"):
        plan_tiles(build_group(net, ATTENTION), 1, 8, None, 0, 8)


def test_the_search_fuses_attention_with_its_keys_tiled_where_a_head_does_not_fit() -> None:
    """A buffer below one head's K and V (2 x 32 keys x 16 dims): untiled attention cannot fuse, the schedule
    fuses it with its keys tiled and moves fewer DRAM bytes than the layers alone (the score maps stay on chip)."""
    net = tiny_bert(seq=32, hidden=32)
    arch = with_buffer(load_arch("eyeriss"), 768)
    assert best_tiling(build_group(net, ATTENTION), 768).plan.key_tile
    result = fuse_network(net, arch, "temporal", objective="dram", options=SearchOptions(budget=200))
    fused = {g.layers: g for g in result.schedule.groups if g.mode != "single"}
    assert fused[ATTENTION].tiling.plan.key_tile
    assert fused[ATTENTION].cost.dram_bytes < fused[ATTENTION].single.dram_bytes
