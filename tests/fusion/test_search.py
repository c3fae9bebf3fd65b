"""Fusion search: hardware shares, the single-layer comparison, DP against greedy restarts, the CLI."""

from __future__ import annotations

import pytest
from nets import inception_blocks, vgg16_e_prefix
from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.cli.main import app
from dnnmap.fusion.costing import Cost
from dnnmap.fusion.network import FusionResult
from dnnmap.fusion.partition import array_shape, packs, spatial_partitions, temporal_share
from dnnmap.fusion.schedule import dp_schedule, greedy_schedule
from dnnmap.fusion.search import FusionSearch, GroupSchedule, LayerCost, beats_single
from dnnmap.search.network import map_layer

ARCH = load_arch("hwff_config1")


def test_temporal_share_splits_every_rf_section() -> None:
    rf = ARCH.levels[0].capacity
    half = temporal_share(ARCH, 2).levels[0].capacity
    assert {r: 2 * c for r, c in half.items()} == rf  # type: ignore[union-attr]


def test_spatial_partitions_pack_without_overlap() -> None:
    width, height = array_shape(ARCH)
    parts = spatial_partitions(ARCH, (3, 3))
    assert parts and all(sum(x * y for x, y in p) <= width * height for p in parts)
    assert ((32, 16), (32, 16)) not in parts and ((16, 16), (16, 16)) in parts
    assert not packs(((32, 8), (16, 16)), width, height)
    assert all(y >= 7 for p in spatial_partitions(ARCH, (7, 3)) for _, y in (p[0],))  # RS prune: rows >= N_ky


def test_fused_layers_are_mapped_by_the_core_mapper_on_their_share() -> None:
    """No second cost model: a fused layer's energy is the core model's on the share, except the chip boundary:
    the buffer fills and drains and the DRAM accesses of the core mapping become Eq. 6's words (8-bit words:
    bytes = words; 26.7 pJ per buffer access, 200 pJ per DRAM access)."""
    net = vgg16_e_prefix(size=32, widths=(8, 8, 8))
    search = FusionSearch(net, ARCH, "energy", max_fused=2)
    names, choice = search.candidates()[0]
    fused = search.fused(names, choice, "temporal")
    for lc in fused.layer_costs:
        core = map_layer(net.layer(lc.layer).op, lc.result.arch, "energy")
        dram = float(core.cost.energy_breakdown[0, -3])  # levels: RF, Buffer, DRAM; then hops, MACs
        boundary = float(core.cost.counts["fills"][0, 1].sum() + core.cost.counts["drains"][0, 1].sum()) * 26.7
        assert lc.result.arch.levels[0].capacity == temporal_share(ARCH, 2).levels[0].capacity
        assert lc.cost.energy - lc.cost.dram_bytes * (200.0 + 26.7) == pytest.approx(
            float(core.cost.energy[0]) - dram - boundary)


def _group(layers: tuple[str, ...], score: float, single: float) -> GroupSchedule:
    def lc(name: str, value: float) -> LayerCost:
        return LayerCost(name, Cost(value, 1.0, 0.0), "array", None)  # type: ignore[arg-type]

    return GroupSchedule(layers, "temporal" if len(layers) > 1 else "single",
                         tuple(lc(n, score / len(layers)) for n in layers),
                         tuple(lc(n, single / len(layers)) for n in layers))


def test_dp_beats_greedy_when_a_pair_blocks_a_better_one() -> None:
    singles = [_group((n,), 10.0, 10.0) for n in "abc"]
    kept = {(0, 2): _group(("a", "b"), 18.0, 20.0), (1, 3): _group(("b", "c"), 12.0, 20.0)}
    greedy, dp = greedy_schedule(singles, kept, "energy"), dp_schedule(singles, kept, "energy")
    assert greedy.score == 28.0 and dp.score == 22.0
    assert [g.layers for g in dp.groups] == [("a",), ("b", "c")]


def test_fusion_is_kept_only_when_better_than_single() -> None:
    assert beats_single(_group(("a", "b"), 9.0, 10.0), "energy")
    assert not beats_single(_group(("a", "b"), 10.0, 10.0), "energy")


def test_dp_schedule_never_loses_to_unfused_or_greedy(vgg_prefix_fused: FusionResult) -> None:
    net, result = vgg16_e_prefix(size=32, widths=(8, 8, 8)), vgg_prefix_fused
    assert result.schedule.score <= min(result.greedy.score, result.unfused.score)
    assert all(g.score("energy") < g.single_score("energy") for g in result.schedule.fused)
    covered = [n for g in result.schedule.groups for n in g.layers]
    assert covered == [layer.name for layer in net.layers]


def test_cli_fuse_prints_groups_and_totals() -> None:
    result = CliRunner().invoke(app, ["map", "lenet5", "--arch", "hwff_config1", "--fuse", "auto",
                                      "--objective", "dram"])
    assert result.exit_code == 0, result.output
    assert "unfused (single layer)" in result.output and "fused, DP schedule" in result.output
    bad = CliRunner().invoke(app, ["map", "lenet5", "--arch", "hwff_config1", "--fuse", "sideways"])
    assert bad.exit_code != 0 and "temporal" in bad.output


def test_inception_branches_are_fusion_candidates() -> None:
    """Runs across Inception branches are candidates: branches that share the module input (fetched once for
    both), a branch with the concat that joins them, and the whole reduction module up to its concat."""
    net = inception_blocks()
    search = FusionSearch(net, ARCH, "latency", "random", 6)
    names = {group for group, _ in search.candidates()}
    assert ("a/branch1x1", "a/branch5x5_1") in names  # connected only through the stem map they both read
    assert ("a/branch_pool", "a") in names and ("b/branch3x3dbl_3", "b/maxpool", "b") in names
    assert any(len(g) == 6 and g[-1] == "b" for g in names)  # the reduction module whole
