"""The paper's single-layer baseline (``--fuse-baseline paper``): Eq. 1-3 volumes, the row-stationary space, the CLI."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.cli.main import app
from dnnmap.fusion.baseline import ROW_STATIONARY, paper_tiling, paper_traffic
from dnnmap.fusion.geometry import layer_geometry
from dnnmap.fusion.search import FusionSearch
from dnnmap.fusion.tile_search import resolution
from dnnmap.search.options import SearchOptions
from dnnmap.search.space import divisors
from dnnmap.workload.builder import NetworkBuilder

ARCH = load_arch("hwff_config1")


def _conv(size: int, cin: int, cout: int, k: int, s: int, pad: int):
    b = NetworkBuilder("one", (1, cin, size, size))
    b.conv("c", cout, k, s, pad)
    b.pool("p", 2, 2)
    return b.build()


@pytest.mark.parametrize("rows,cols,tof", [(2, 4, 3), (8, 8, 6), (1, 2, 1), (4, 1, 2)])
def test_traffic_is_eq2_eq3_for_tiles_that_divide(rows: int, cols: int, tof: int) -> None:
    """An unpadded conv whose tiles divide the map: Eq. 2's invocation counts times Eq. 1's tile sizes."""
    net = _conv(18, 4, 6, 3, 2, 0)  # output 8x8
    layer = layer_geometry(net.layer("c"))
    _, traffic = paper_traffic(layer, rows, cols, tof)
    nif, nof, (noy, nox), k, s = 4, 6, (8, 8), 3, 2
    tix, tiy = (cols - 1) * s + k, (rows - 1) * s + k
    spatial = (noy // rows) * (nox // cols)
    assert traffic.input_fetch == (nif * (nof // tof) * spatial * tix * tiy,)  # T_if = N_if: one input slice
    assert traffic.weight_words == (nof // tof) * spatial * k * k * nif * tof
    assert traffic.output_words == nof * noy * nox


def test_halo_is_clipped_at_the_border_and_pools_fetch_each_channel_once() -> None:
    net = _conv(8, 2, 4, 3, 1, 1)  # padded: the first and last tiles read one row less
    conv, pool = layer_geometry(net.layer("c")), layer_geometry(net.layer("p"))
    _, traffic = paper_traffic(conv, 4, 8, 4)
    assert traffic.input_fetch == (2 * 8 * (5 + 5),)  # rows 0..4 and 3..7, all 8 columns
    _, traffic = paper_traffic(pool, 2, 2, 2)
    assert traffic.input_fetch == (4 * 8 * 8,) and traffic.weight_words == 0  # 2x2/2 windows do not overlap


def test_chosen_tiling_is_the_least_eq3_volume_that_fits() -> None:
    net = _conv(30, 8, 16, 3, 1, 1)
    layer = layer_geometry(net.layer("c"))
    for capacity in (300, 2000, 1e9):
        best = paper_tiling(layer, capacity)
        legal = [paper_traffic(layer, r, c, t) for r, c, t in itertools.product(resolution(30), resolution(30),
                                                                               divisors(16))]
        volumes = [sum(tr.input_fetch) + tr.weight_words + tr.output_words for fp, tr in legal if fp <= capacity]
        assert best is not None and best.words == min(volumes)
    assert paper_tiling(layer, 10) is None


def test_paper_singles_move_at_least_the_compulsory_traffic_in_the_row_stationary_space() -> None:
    net = _conv(16, 4, 8, 3, 1, 1)
    options = SearchOptions(budget=200)
    best = FusionSearch(net, ARCH, "energy", "random", 2, options=options)
    paper = FusionSearch(net, ARCH, "energy", "random", 2, options=options, baseline="paper")
    for name in ("c", "p"):
        b, p = best.single(name), paper.single(name)
        assert b.traffic is None and p.traffic is not None
        assert p.cost.dram_bytes == sum(p.traffic.input_fetch) + p.traffic.weight_words + p.traffic.output_words
        g = layer_geometry(net.layer(name))
        compulsory = g.in_channels * g.in_hw[0] * g.in_hw[1] + g.weight_words + g.out_channels * g.out_hw[0] * g.out_hw[1]
        assert p.cost.dram_bytes >= compulsory  # 8-bit words: bytes = words
        allowed = ROW_STATIONARY.ir_dims(p.result.op)
        assert all(d in allowed for lv in p.result.mapping.levels for d, f in lv.spatial if f > 1)


FUSE = ["map", "lenet5", "--arch", "hwff_config1", "--objective", "energy", "--fuse", "auto", "--mapper", "random",
        "--budget", "200"]


def test_cli_paper_baseline(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*FUSE, "--fuse-baseline", "paper", "--json", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert "unfused (row-stationary)" in result.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["fusion"]["baseline"] == "paper"
    best = CliRunner().invoke(app, [*FUSE, "--json", str(tmp_path / "b.json")])
    assert best.exit_code == 0, best.output
    assert json.loads((tmp_path / "b.json").read_text())["fusion"]["baseline"] == "best"
    assert data["fusion"]["unfused"]["dram_bytes"] >= json.loads((tmp_path / "b.json").read_text())["fusion"][
        "unfused"]["dram_bytes"]


@pytest.mark.parametrize("args, message", [
    (["map", "lenet5", "--arch", "hwff_config1", "--fuse-baseline", "paper"], "needs --fuse"),
    ([*FUSE, "--fuse-baseline", "hwflowq"], "unknown --fuse-baseline"),
    ([*FUSE[:-4], "--mapper", "sunstone", "--fuse-baseline", "paper"], "row-stationary"),
])
def test_cli_refuses_a_baseline_it_cannot_honour(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output
