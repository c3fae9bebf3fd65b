"""Runs shared by the report tests: LeNet-5 mapped for two objectives on Eyeriss and once on a TPU-like
architecture with another energy unit (random mapper, small budget: fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dnnmap
from dnnmap.report.json_report import to_dict
from dnnmap.workload import zoo


def mapped(arch: str, objective: str) -> dict[str, Any]:
    network = zoo.get("lenet5")
    return to_dict(dnnmap.map_network(network, arch=arch, objective=objective, mapper="random", budget=300).search,
                   network)


@pytest.fixture(scope="session")
def run_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """JSON files of LeNet-5 on Eyeriss for EDP and for latency, as `dnnmap map --json` writes them."""
    out = tmp_path_factory.mktemp("runs")
    paths = (out / "edp.json", out / "latency.json")
    for path, objective in zip(paths, ("edp", "latency")):
        path.write_text(json.dumps(mapped("eyeriss", objective)))
    return paths


@pytest.fixture(scope="session")
def tpu_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LeNet-5 on the TPU-like preset, whose energies are in pJ (not x MAC as Eyeriss's)."""
    path = tmp_path_factory.mktemp("tpu") / "tpu.json"
    path.write_text(json.dumps(mapped("tpu_like", "edp")))
    return path


@pytest.fixture(scope="session")
def pages(run_files: tuple[Path, Path]) -> dict[str, str]:
    """The HTML of the first run alone ("single") and of both compared ("comparison"), built once."""
    from dnnmap.report.html.report import build_report
    from dnnmap.report.html.runs import load_run

    runs = [load_run(path) for path in run_files]
    return {"single": build_report(runs[:1]), "comparison": build_report(runs)}
