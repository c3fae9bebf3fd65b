"""The package loads lazily: reading the IR, preparing a map request or refusing a bad command line does not
pay for the search, the compiled cost kernel or numba (each test runs a fresh interpreter, since this one has
imported everything already)."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dnnmap
from dnnmap.cli.main import COMMANDS, command_function, command_summary

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numba", "dnnmap.api", "dnnmap.cost.kernel", "dnnmap.search.network")


def _probe(statement: str, heavy: tuple[str, ...] = HEAVY) -> tuple[list[str], str]:
    """The modules of ``heavy`` a fresh interpreter has loaded after running ``statement`` (lines of code), and
    what it printed on stderr."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    probe = f"import sys\n{statement}\nprint('loaded=' + ','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.splitlines()[-1].removeprefix("loaded=").split(",") if m], out.stderr


def _loaded_after(statement: str) -> list[str]:
    """The modules of ``HEAVY`` a fresh interpreter has loaded after running ``statement``."""
    return _probe(statement)[0]


def test_importing_the_ir_does_not_load_numba_or_the_search() -> None:
    assert _loaded_after("import dnnmap.workload.ir, dnnmap.workload.ops, dnnmap.arch.spec") == []


def test_map_network_loads_the_api_on_first_use_and_the_search_with_the_first_search() -> None:
    assert _loaded_after("import dnnmap; dnnmap.map_network") == ["dnnmap.api", "dnnmap.search.network"]
    assert _loaded_after("import dnnmap; dnnmap.map_network('lenet5', layers=['conv1'], mapper='random', "
                         "budget=5)") == list(HEAVY)


def test_unknown_top_level_name_is_an_attribute_error() -> None:
    assert "map_network" in dir(dnnmap)
    with pytest.raises(AttributeError, match="no_such_name"):
        dnnmap.no_such_name  # noqa: B018 - the attribute access is the test


# the command-line refusals (issue 25): each refused before the search packages, the cost kernel or numba load
CLI_HEAVY = ("numba", "numpy", "dnnmap.cost.kernel", "dnnmap.cost.model", "dnnmap.search.mappers", "dnnmap.fusion.search",
             "onnx", "torch", "matplotlib")


def _cli(args: list[str]) -> tuple[list[str], str]:
    """Run ``dnnmap ARGS`` in a fresh interpreter: (heavy modules loaded, stderr with the exit code last)."""
    run = (f"from dnnmap.cli.main import app\ntry:\n    app({args!r}, prog_name='dnnmap')\n"
           "except SystemExit as stop:\n    print('exit', stop.code, file=sys.stderr)")
    return _probe(run, CLI_HEAVY)


REFUSALS = ("unknown arch", "bad workload spec", "missing file", "fifo", "bad budget", "output is an input",
            "unknown mapper", "option the mapper ignores", "fusion option without --fuse")


def refusal_cases(folder: Path) -> dict[str, tuple[list[str], str]]:
    """Representative refusals of issue 25's classes (files made in ``folder``): name -> (``dnnmap`` arguments,
    what the error says). Shared with ``benchmarks/refusal_speed.py``."""
    arch = folder / "arch.yaml"
    arch.write_text("name: x\n")
    fifo = folder / "fifo.yaml"
    if not fifo.exists():
        os.mkfifo(fifo)
    return dict(zip(REFUSALS, [
        (["map", "lenet5", "--arch", "nosuch"], "unknown architecture 'nosuch'"),
        (["map", "mttkrp:I=+8,J=4,K=4,L=4"], "size 'I=+8'"),
        (["map", "lenet5", "--arch", str(folder / "no.yaml")], "no.yaml: architecture file not found"),
        (["map", "lenet5", "--arch", str(fifo)], "fifo.yaml: a FIFO"),
        (["map", "lenet5", "--budget", "1.5"], "'1.5' is not an integer"),
        (["map", "lenet5", "--arch", str(arch), "--json", str(arch)], "is the input file"),
        (["map", "lenet5", "--mapper", "nosuch"], "unknown mapper 'nosuch'"),
        (["map", "lenet5", "--mapper", "tso", "--imperfect"], "--imperfect applies to"),
        (["map", "lenet5", "--fuse-baseline", "nosuch"], "it needs --fuse"),
    ], strict=True))


@pytest.mark.parametrize("case", REFUSALS)
def test_a_refusal_loads_no_search_module(case: str, tmp_path: Path) -> None:
    args, says = refusal_cases(tmp_path)[case]
    loaded, err = _cli(args)
    assert err.splitlines()[-1] == "exit 2" and says in " ".join(err.split()), err
    assert loaded == [], f"{case}: loaded {loaded}"


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["map", "--help"]])
def test_help_and_version_load_no_search_module(args: list[str]) -> None:
    loaded, err = _cli(args)
    assert err.splitlines()[-1] == "exit 0" and loaded == []
    if args == ["--help"]:
        assert _probe("from dnnmap.cli.main import COMMANDS, app\ntry:\n    app(['--help'])\n"
                      "except SystemExit:\n    pass", tuple(m for m, _ in COMMANDS.values()))[0] == []


def test_the_help_listing_shows_each_command_s_own_summary() -> None:
    """The listing reads the summaries from the sources: each is its command's docstring's first paragraph."""
    for name in COMMANDS:
        summary = command_summary(name)
        assert summary and summary == inspect.getdoc(command_function(name)).split("\n\n")[0]
