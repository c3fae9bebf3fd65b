"""``dnnmap sweep --csv/--json``: the table's rows as files; a rerun with nothing left to do starts no cluster."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.cli import sweep_command
from dnnmap.cli.main import app

ARGS = ["sweep", "lenet5", "--arch", "eyeriss", "--arch", "tpu_like", "--objective", "edp", "--objective", "energy"]


def test_exports_hold_every_row_and_a_rerun_starts_no_cluster(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store, out_csv, out_json = tmp_path / "s.sqlite", tmp_path / "r.csv", tmp_path / "r.json"
    first = CliRunner().invoke(app, [*ARGS, "--serial", "--store", str(store), "--csv", str(out_csv),
                                     "--json", str(out_json)])
    assert first.exit_code == 0, first.output
    rows = list(csv.DictReader(out_csv.open()))
    data = json.loads(out_json.read_text())
    assert len(rows) == len(data) == 4
    assert {(r["arch"], r["objective"]) for r in rows} == {(a, o) for a in ("eyeriss", "tpu_like")
                                                           for o in ("edp", "energy")}
    for r, d in zip(rows, data):
        assert float(r["latency_s"]) == d["latency_s"] > 0 and r["area_mm2"] == "" and d["area_mm2"] is None
        assert f"{d['latency_s'] * 1e3:.4g}" in first.stdout
    assert first.stdout.splitlines()[-3:] == [f"results stored in {store}", f"wrote the CSV table to {out_csv}",
                                              f"wrote the JSON table to {out_json}"]

    def no_cluster(*_args: object) -> None:
        raise AssertionError("a rerun with nothing to compute must not start Dask")

    monkeypatch.setattr(sweep_command, "dask_client", no_cluster)
    again = CliRunner().invoke(app, [*ARGS, "--store", str(store), "--json", str(tmp_path / "again.json")])
    assert again.exit_code == 0, again.output
    assert "0 to run" in again.stderr
    assert json.loads((tmp_path / "again.json").read_text()) == data


def test_outputs_must_differ(tmp_path: Path) -> None:
    same = tmp_path / "x.sqlite"
    result = CliRunner().invoke(app, [*ARGS, "--serial", "--store", str(same), "--csv", str(same)])
    assert result.exit_code == 2 and "the same path as --store" in result.stderr
    assert not same.exists()
