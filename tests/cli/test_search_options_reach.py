"""The user's search options reach the search from every command that maps layers (map, generate-hw, sweep),
and options a mapper would ignore are refused before any work."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.cli.main import app
from dnnmap.hwgen import evaluate
from dnnmap.search import network
from dnnmap.search.options import SearchOptions
from dnnmap.sweep import tasks

WANTED = SearchOptions(budget=40, seed=3, budget_seconds=7.0, imperfect=0.15)
FLAGS = ["--mapper", "random", "--budget", "40", "--seed", "3", "--budget-seconds", "7", "--imperfect"]


def spy_on(monkeypatch: pytest.MonkeyPatch, module: object) -> list[SearchOptions]:
    seen: list[SearchOptions] = []
    real = network.search_network

    def spy(*args, options: SearchOptions = SearchOptions(), **kwargs):  # type: ignore[no-untyped-def]
        seen.append(options)
        return real(*args, options=options, **kwargs)

    monkeypatch.setattr(module, "search_network", spy)
    return seen


def test_generate_hw_passes_the_search_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = spy_on(monkeypatch, evaluate)
    result = CliRunner().invoke(app, ["generate-hw", "lenet5", "--pes", "16", "--max-candidates", "2", *FLAGS,
                                      "--yaml", str(tmp_path / "hw.yaml"), "--verilog", str(tmp_path / "hw.vh")])
    assert result.exit_code == 0, result.output
    assert seen and all(o == WANTED for o in seen)


def test_sweep_passes_the_search_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = spy_on(monkeypatch, tasks)
    result = CliRunner().invoke(app, ["sweep", "lenet5", "--arch", "eyeriss", "--serial", *FLAGS,
                                      "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 0, result.output
    assert seen == [WANTED]


def test_sweep_task_key_depends_on_the_options() -> None:
    from dnnmap.arch.spec import load_arch
    from dnnmap.workload import zoo

    spec, net = load_arch("eyeriss"), zoo.get("lenet5")
    plain = tasks.SweepTask("eyeriss", spec, net, "edp", "random")
    assert plain.key == tasks.task_key(spec, net, "edp", "random")  # stores written before options stay valid
    assert tasks.SweepTask("eyeriss", spec, net, "edp", "random", options=WANTED).key != plain.key


@pytest.mark.parametrize("command", [["map", "lenet5"], ["generate-hw", "lenet5", "--pes", "16"],
                                     ["sweep", "lenet5", "--arch", "eyeriss", "--serial"]])
@pytest.mark.parametrize("flags, message", [(["--mapper", "tso", "--imperfect"], "--imperfect applies to"),
                                            (["--mapper", "random", "--tile-first"], "--tile-first applies to"),
                                            (["--mapper", "nosuch"], "unknown mapper")])
def test_options_a_mapper_ignores_are_refused(command: list[str], flags: list[str], message: str,
                                              tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [*command, *flags], catch_exceptions=False)
    assert result.exit_code == 2 and message in result.stderr, result.output
