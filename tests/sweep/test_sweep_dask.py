"""The sweep on a real Dask LocalCluster with 2 workers, one killed mid-sweep: the rows equal the serial run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from test_sweep_store import results_of, sweep_tasks  # noqa: E402

from dnnmap.sweep.engine import dask_client, run_sweep  # noqa: E402
from dnnmap.sweep.store import ResultStore  # noqa: E402


def test_killing_a_worker_mid_sweep_loses_nothing(tmp_path: Path) -> None:
    tasks = sweep_tasks()
    serial = run_sweep(tasks, ResultStore(tmp_path / "serial.sqlite"))
    store = ResultStore(tmp_path / "dask.sqlite")
    killed: list[int] = []
    with dask_client(2, None) as client:
        pids = list(client.run(os.getpid).values())
        assert len(pids) == 2

        def kill_one_worker(_row) -> None:  # noqa: ANN001
            if not killed:
                killed.append(pids[0])
                os.kill(pids[0], signal.SIGKILL)

        rows = run_sweep(tasks, store, client, on_done=kill_one_worker)
    assert killed
    assert results_of(rows) == results_of(serial)
    assert len(store) == len(tasks)
