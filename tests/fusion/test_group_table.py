"""The `--fuse` group table (dnnmap/report/fusion.py) in the user's words."""

from __future__ import annotations

from nets import resnet_blocks
from rich.console import Console

from dnnmap.arch.spec import load_arch
from dnnmap.fusion.network import fuse_network
from dnnmap.report.fusion import group_table


def test_a_group_tiled_over_output_channels_says_how_many_of_how_many() -> None:
    """On the small ResNet blocks the l2 convolution pair fuses one output channel at a time: the tile column
    reads '3x3, 1 of 8 output channels', not the paper's T_of notation."""
    result = fuse_network(resnet_blocks(), load_arch("hwff_config1"), "auto", 3, "energy")
    console = Console(width=400, record=True)
    console.print(group_table(result))
    text = console.export_text()
    tiled = [g for g in result.schedule.fused if g.tiling.plan.out_channel_tile < g.tiling.plan.group.bottom.out_channels]
    assert tiled, "the fixture network should have a channel-tiled group"
    for g in tiled:
        plan = g.tiling.plan
        row = next(line for line in text.splitlines() if " + ".join(g.layers) in line)
        assert (f"{plan.rows.tile}x{plan.cols.tile}, {plan.out_channel_tile} of {plan.group.bottom.out_channels} "
                "output channels") in row
    assert "Tof" not in text
