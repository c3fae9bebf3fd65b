"""``dnnmap map --workers``: the distinct layers searched on a Dask LocalCluster, one worker killed mid-run,
give the serial run's results; the options that cannot apply are refused before any work."""

from __future__ import annotations

import os
import signal

import pytest
from typer.testing import CliRunner

pytest.importorskip("distributed")

from distributed import default_client  # noqa: E402

from dnnmap.api import map_network  # noqa: E402
from dnnmap.cli.main import app  # noqa: E402

# six layers, five shapes (layer1.0.conv2 repeats layer1.0.conv1's): the reuse is assembled as serially
LAYERS = ["conv1", "layer1.0.conv1", "layer1.0.conv2", "layer2.0.conv1", "layer2.0.downsample.0", "fc"]


def _summary(run) -> list[tuple]:  # noqa: ANN001 - a MapRun
    return [(r.layer, r.reused_from, r.search.mapping, r.cycles, r.energy, r.search.evaluated)
            for r in run.layers]


def test_workers_with_a_killed_worker_equal_the_serial_run() -> None:
    serial = map_network("resnet18", "eyeriss", mapper="sunstone", layers=LAYERS)
    killed: list[int] = []

    def kill_one_worker(_layer: str) -> None:
        if not killed:
            pids = sorted(default_client().run(os.getpid).values())
            assert len(pids) == 2
            killed.append(pids[0])
            os.kill(pids[0], signal.SIGKILL)

    parallel = map_network("resnet18", "eyeriss", mapper="sunstone", layers=LAYERS, workers=2,
                           on_layer=kill_one_worker)
    assert killed
    assert _summary(parallel) == _summary(serial)
    assert [r.reused_from for r in serial.layers].count(None) == 5
    assert parallel.search.evaluated == serial.search.evaluated


@pytest.mark.parametrize("args,message", [
    (["--workers", "2", "--fuse", "temporal"], "--fuse"),
    (["--workers", "0"], "--workers 0"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
])
def test_cli_refuses_workers_that_cannot_apply(args: list[str], message: str) -> None:
    out = CliRunner().invoke(app, ["map", "resnet18", *args])
    assert out.exit_code == 2 and "error:" in out.output and message in out.output
    assert "Traceback" not in out.output


def test_local_workers_keep_glibcs_adaptive_malloc() -> None:
    """The local cluster's workers start without Dask's MALLOC_TRIM_THRESHOLD_ (which turns off glibc's adaptive mmap
    threshold and cost the searches a third of their time in the kernel), and keep Dask's other settings."""
    from dnnmap.sweep.engine import dask_client

    def environment() -> tuple[str | None, str | None]:
        return os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS")

    with dask_client(1, None) as client:
        assert list(client.run(environment).values()) == [(None, "1")]
