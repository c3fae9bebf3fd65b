"""The schedule export: Chrome / Perfetto trace-event JSON and the PNG timeline (``--trace``, ``--trace-png``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from nets import resnet_blocks, vgg16_e_prefix
from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.cli.main import app
from dnnmap.fusion.buffers import fusion_buffer
from dnnmap.fusion.execute import FusedExecutor
from dnnmap.fusion.network import FusionResult, fuse_network
from dnnmap.fusion.proof import random_operands
from dnnmap.fusion.schedule import Schedule
from dnnmap.fusion.tile_search import TileChoice
from dnnmap.fusion.tiling import plan_tiles
from dnnmap.report.fusion_trace import schedule_trace, timeline_png, trace_events
from dnnmap.fusion.volume import offchip_volume
from dnnmap.workload.importers.netfile import save_network

ARCH = load_arch("hwff_config1")


@pytest.fixture(scope="module")
def tiled_result(vgg_prefix_fused: FusionResult) -> FusionResult:
    """The same schedule with every fused group forced onto many tiles (4x4 bottom tiles, T_of slicing
    where the bottom layer allows it), so that the trace has several tiles, chunks and evictions."""
    groups = []
    for g in vgg_prefix_fused.schedule.groups:
        if g.tiling is not None:
            group = g.tiling.plan.group
            tof = group.bottom.out_channels // 2 if group.bottom.has_weights else None
            plan = plan_tiles(group, 4, 4, tof)
            g = replace(g, tiling=TileChoice(plan, fusion_buffer(plan), offchip_volume(plan)))
        groups.append(g)
    return replace(vgg_prefix_fused, schedule=Schedule(tuple(groups), vgg_prefix_fused.schedule.objective))


def check_trace(result: FusionResult) -> dict:
    """Trace-event format and the schedule's invariants; returns the JSON object."""
    data = json.loads(json.dumps(trace_events(schedule_trace(result))))
    events = data["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert {"ph", "name", "pid", "tid"} <= e.keys(), e
        assert e["ph"] in ("X", "C", "M")
        if e["ph"] in ("X", "C"):
            assert e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0 and isinstance(e["args"], dict)
    complete = [e for e in events if e["ph"] == "X"]
    # every layer of every fused group (and every single layer) is present, in its group's process
    for pid, g in enumerate(result.schedule.groups, start=1):
        assert {e["name"].split(" tile ")[0] for e in complete if e["pid"] == pid} == set(g.layers)
        if g.tiling is not None:
            assert {e["args"]["tile"] for e in complete if e["pid"] == pid} == set(range(g.tiling.plan.n_tiles))
    # events of one thread never overlap
    threads: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in complete:
        threads.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in threads.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 * max(1.0, a[1]) for a, b in zip(spans, spans[1:]))
    # the buffer counter stays within Eq. 5 + Eq. 8 of its group
    for pid, g in enumerate(result.schedule.groups, start=1):
        counter = [e["args"]["words"] for e in events if e["ph"] == "C" and e["pid"] == pid]
        if g.tiling is None:
            assert not counter
        else:
            assert counter and 0 <= min(counter) and max(counter) <= g.tiling.buffer.total_words
    # tile durations add up to each layer's mapped cycles (ts/dur in microseconds at the arch clock); a spatial
    # group's layers to their own latency on their sub-array, the group's events end by its pipelined latency
    for pid, g in enumerate(result.schedule.groups, start=1):
        for p, lc in enumerate(g.layer_costs):
            total = sum(e["dur"] for e in complete if e["pid"] == pid and e["name"].split(" tile ")[0] == lc.layer)
            own = lc.cost.cycles if g.pipeline is None else g.pipeline.stage_cycles[p]
            assert total == pytest.approx(own / ARCH.clock_mhz)
        if g.pipeline is not None:
            spans = [(e["ts"], e["ts"] + e["dur"]) for e in complete if e["pid"] == pid]
            first = min(a for a, _ in spans)
            assert max(b for _, b in spans) - first == pytest.approx(g.pipeline.critical / ARCH.clock_mhz)
    return data


def test_trace_of_the_chosen_schedule_is_valid(vgg_prefix_fused: FusionResult) -> None:
    assert vgg_prefix_fused.schedule.fused
    check_trace(vgg_prefix_fused)


def test_trace_with_many_tiles_is_valid_and_its_peak_is_the_executors(tiled_result: FusionResult) -> None:
    data = check_trace(tiled_result)
    net = vgg16_e_prefix(size=32, widths=(8, 8, 8))
    for pid, g in enumerate(tiled_result.schedule.groups, start=1):
        if g.tiling is None:
            continue
        plan = g.tiling.plan
        assert plan.n_tiles > 1
        inputs, weights = random_operands(net, plan.group)
        counts = FusedExecutor(plan, inputs, weights).run().counts
        counter = [e["args"]["words"] for e in data["traceEvents"] if e["ph"] == "C" and e["pid"] == pid]
        assert max(counter) == counts.peak_words


def test_spatial_trace_has_one_thread_per_sub_array() -> None:
    result = fuse_network(resnet_blocks(), ARCH, "spatial", 2, "energy")
    data = check_trace(result)
    names = [e["args"]["name"] for e in data["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    fused = result.schedule.fused
    assert fused and sum(n.startswith("sub-array") for n in names) == sum(len(g.layers) for g in fused)


def test_png_timeline_is_a_png(tiled_result: FusionResult) -> None:
    png = timeline_png(tiled_result)
    assert len(png) > 1000 and png.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The reduced VGG16-E prefix as a dnnmap network file, so the CLI runs take seconds."""
    return str(save_network(vgg16_e_prefix(size=16, widths=(4, 4, 4)), tmp_path_factory.mktemp("net") / "vgg.yaml"))


def fuse_cli(model: str, *extra: str):
    return CliRunner().invoke(app, ["map", model, "--arch", "hwff_config1", "--fuse", "auto", "--objective",
                                    "energy", "--max-fused", "3", *extra])


def test_cli_writes_trace_and_png(tmp_path: Path, small_model: str) -> None:
    out, png = tmp_path / "sched.json", tmp_path / "sub" / "sched.png"
    result = fuse_cli(small_model, "--trace", str(out), "--trace-png", str(png))
    assert result.exit_code == 0, result.output
    assert "fused, DP schedule" in result.output
    assert any(e["ph"] == "X" for e in json.loads(out.read_text())["traceEvents"])
    assert png.stat().st_size > 0 and png.read_bytes().startswith(b"\x89PNG")
    assert not [p for p in tmp_path.rglob(".*.tmp")]  # written via a temporary sibling and a rename


@pytest.mark.parametrize("flag", ["--trace", "--trace-png"])
def test_cli_trace_bad_path_is_a_user_error(tmp_path: Path, small_model: str, flag: str) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for bad in (str(tmp_path), str(blocker / "out.json")):  # a directory; a path under a regular file
        result = fuse_cli(small_model, flag, bad)
        assert result.exit_code == 2, result.output
        assert "error:" in result.stderr


def test_trace_needs_fuse(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["map", "lenet5", "--arch", "hwff_config1", "--trace", str(tmp_path / "t.json")])
    assert result.exit_code == 2 and "--fuse" in result.stderr
    assert not (tmp_path / "t.json").exists()
