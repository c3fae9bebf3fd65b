"""The resumable SQLite store and the serial sweep: a stored task is never recomputed nor counted twice,
an interrupted sweep resumes to the same rows as an uninterrupted one."""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import astuple, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.arch.templates.sparse_simd import sparse_simd_spec
from dnnmap.cli.main import app
from dnnmap.errors import DnnmapError
from dnnmap.sweep.candidates import template_points
from dnnmap.sweep.engine import run_sweep
from dnnmap.sweep.store import ResultStore
from dnnmap.sweep.tasks import SweepRow, SweepTask
from dnnmap.workload import zoo


def sweep_tasks() -> list[SweepTask]:
    net = zoo.get("lenet5")
    archs = [("eyeriss", load_arch("eyeriss"))] + [(p.name, sparse_simd_spec(p)) for p in
                                                    (SparseSimdParams(name="a", rows=4, cols=4),
                                                     SparseSimdParams(name="b", rows=8, cols=4))]
    return [SweepTask(label, spec, net, obj) for label, spec in archs for obj in ("edp", "energy")]


def results_of(rows: list[SweepRow]) -> list[tuple]:
    """Everything but the wall time."""
    return [astuple(replace(r, seconds=0.0)) for r in rows]


class Interrupt(Exception):
    pass


def test_interrupted_sweep_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    tasks = sweep_tasks()
    reference = run_sweep(tasks, ResultStore(tmp_path / "ref.sqlite"))
    store = ResultStore(tmp_path / "s.sqlite")
    finished: list[str] = []

    def stop_after_two(row: SweepRow) -> None:
        finished.append(row.key)
        if len(finished) == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep(tasks, store, on_done=stop_after_two)
    store.close()
    reopened = ResultStore(tmp_path / "s.sqlite")
    assert reopened.keys() == set(finished)
    resumed: list[str] = []
    rows = run_sweep(tasks, reopened, on_done=lambda r: resumed.append(r.key))
    assert set(resumed) == {t.key for t in tasks} - set(finished)  # nothing recomputed
    assert results_of(rows) == results_of(reference)
    assert len(reopened) == len(tasks)


def test_a_row_stored_twice_counts_once(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "s.sqlite")
    row = SweepRow("k", "a", "m", "edp", "auto", 1.0, 2.0, "pJ", None, 3.0, 4, 0.5, 0.1)
    assert store.add(row) and not store.add(replace(row, latency_s=9.0))
    assert len(store) == 1 and store.get("k") == row


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE results (x TEXT)")
    with pytest.raises(DnnmapError, match="not a dnnmap sweep store"):
        ResultStore(path)


def test_template_grid_parsing() -> None:
    assert template_points([]) == []
    points = template_points(["rows=4,8", "glb_banks=8"])
    assert [(p.rows, p.glb_banks, p.name) for p in points] == [(4, 8, "simd_rows4_glb_banks8"),
                                                               (8, 8, "simd_rows8_glb_banks8")]
    for bad, message in (["nope=1"], "NAME one of"), (["rows=x"], "int values"), (["rows=0"], "invalid"):
        with pytest.raises(DnnmapError, match=message):
            template_points(bad)


def test_cli_serial_sweep_compares_presets_and_template_points_and_resumes(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["sweep", "lenet5", "--arch", "eyeriss", "--arch", "rtml_192pe", "--param", "rows=4", "--serial",
            "--store", str(tmp_path / "s.sqlite")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "3 to run" in first.output
    for name in ("eyeriss", "rtml_192pe", "simd_rows4"):
        assert name in first.output
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "3 already in" in again.output and "0 to run" in again.output
    bad = runner.invoke(app, ["sweep", "nosuchnet", "--arch", "eyeriss", "--serial"])
    assert bad.exit_code == 2 and "unknown model" in bad.output


def test_cluster_sweep_without_dask_is_refused_before_the_store_exists(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    store = tmp_path / "s.sqlite"
    out = CliRunner().invoke(app, ["sweep", "lenet5", "--arch", "eyeriss", "--store", str(store)])
    assert out.exit_code == 2 and "Dask, which is not installed" in out.output and "--serial" in out.output
    assert not store.exists()
