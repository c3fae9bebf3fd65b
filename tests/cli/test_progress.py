"""Progress when output is piped: periodic plain lines with counts and an ETA, one implementation
(dnnmap/cli/progress.py) for every long command."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from dnnmap.cli.progress import INTERVAL_ENV, count_progress, phase

ROOT = Path(__file__).resolve().parents[2]


def test_piped_command_prints_periodic_lines_with_counts_and_eta(tmp_path: Path) -> None:
    env = {**os.environ, INTERVAL_ENV: "0.1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-m", "dnnmap.cli.main", "map", "resnet18", "--mapper", "random",
                          "--budget", "30000", "--html", str(tmp_path / "r.html")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    periodic = [line for line in lines if re.fullmatch(
        r"mapping resnet18: \d+ of 31 layers \(\d+%\), [\d.]+ s elapsed(, ETA [\d.]+ s)? - [\w.]+", line)]
    assert len(periodic) >= 2, out.stderr
    assert any("ETA" in line for line in periodic)
    assert re.fullmatch(r"drawing the report: 7 of 7 figures in [\d.]+ s", lines[-1])
    assert "\x1b[" not in out.stderr  # plain text, no terminal control codes


def test_counts_without_a_total_and_a_phase_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INTERVAL_ENV, "0.1")
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=False, width=150)
    with count_progress(console, "fusing net", "layer search") as update:
        update(3, 0, "conv1 on half")
        time.sleep(0.35)
    lines = buffer.getvalue().splitlines()
    assert lines[0].startswith("fusing net: 3 layer searches, ") and lines[0].endswith("elapsed - conv1 on half")
    assert re.fullmatch(r"fusing net: 3 layer searches in [\d.]+ s", lines[-1])
    buffer.truncate(0)
    buffer.seek(0)
    with phase(console, "compiling"):
        pass
    assert buffer.getvalue() == ""  # a short phase prints nothing


def test_fuse_counts_on_a_terminal() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=150)
    with count_progress(console, "fusing net", "layer search") as update:
        update(5, 0, "conv2 on half")
        assert "5/?" in buffer.getvalue() and "layer searches" in buffer.getvalue()
