"""`dnnmap import-arch timeloop` and `dnnmap show --timeloop-map` end to end (typer CliRunner)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.cli.main import app
from dnnmap.mapping.io import load_mapping_file
from dnnmap.mapping.mapping import Mapping
from dnnmap.mapping.timeloop_map import load_timeloop_mapping
from dnnmap.workload.importers import load_network
from exercises import FIXTURES, exercise

runner = CliRunner()


def run(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def test_import_design_problem_and_mapping_then_export(tmp_path: Path) -> None:
    arch_out = tmp_path / "arch.yaml"
    result = run("import-arch", "timeloop", FIXTURES / "3levelspatial.arch.yaml", FIXTURES / "3level.ert.yaml",
                 "-o", arch_out, "--problem", FIXTURES / "conv1d+oc+ic.prob.yaml",
                 "--mapping", FIXTURES / "04-kp.map.yaml", "--ert-energy", "max")
    assert result.exit_code == 0, result.output
    ex = exercise("04-kp")
    assert load_arch(arch_out).levels == ex.arch.levels
    net = load_network(tmp_path / "conv1d+oc+ic.net.yaml")
    assert net.layers[0].op.dims == ex.op.dims
    mapping_file = tmp_path / "04-kp.mapping.yaml"
    m, op, _ = load_mapping_file(mapping_file)
    assert op is not None and op.tensors == ex.op.tensors
    assert _factors(m, ex.op.dim_names) == _factors(ex.mapping, ex.op.dim_names)

    exported = tmp_path / "kp.map.yaml"
    shown = run("show", mapping_file, "--timeloop-map", exported)
    assert shown.exit_code == 0, shown.output
    assert _last_words(shown.output).endswith(_last_words(f"wrote {exported}: Timeloop mapping"))
    back = load_timeloop_mapping([exported], ex.op, ex.arch)
    assert _factors(back, ex.op.dim_names) == _factors(ex.mapping, ex.op.dim_names)

    as_directives = tmp_path / "dataflow.map.yaml"
    shown = run("show", mapping_file, "--dataflow", "--timeloop-map", as_directives)
    assert shown.exit_code == 0, shown.output
    assert "SpatialMap" in shown.output or "TemporalMap" in shown.output
    assert _last_words(shown.output).endswith(_last_words(f"wrote {as_directives}: Timeloop mapping"))
    back = load_timeloop_mapping([as_directives], ex.op, ex.arch)
    assert _factors(back, ex.op.dim_names) == _factors(ex.mapping, ex.op.dim_names)


def _last_words(text: str) -> str:
    """``text`` without whitespace, so a line the console wrapped still compares."""
    return "".join(text.split())


def _factors(m: Mapping, dims: tuple[str, ...]) -> list[tuple[list[int], list[int]]]:
    return [([lm.t(d) for d in dims], [lm.s(d) for d in dims]) for lm in m.levels]


def _user_error(result, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert fragment in result.stderr, result.stderr


def test_import_arch_errors(tmp_path: Path) -> None:
    _user_error(run("import-arch", "maestro", FIXTURES / "2level.arch.yaml"), "unknown format 'maestro'")
    _user_error(run("import-arch", "timeloop", FIXTURES / "2level.arch.yaml", "--mapping", FIXTURES / "01-ws.map.yaml",
                    "-o", tmp_path / "a.yaml"), "--mapping needs --problem")
    _user_error(run("import-arch", "timeloop", FIXTURES / "2level.arch.yaml", "--ert-energy", "min",
                    "-o", tmp_path / "a.yaml"), "--ert-energy")
    bad = tmp_path / "bad.yaml"
    bad.write_text("architecture:\n  subtree: [{name: S, local: [{name: B, class: SRAM, attributes: {depth: x}},\n"
                   "    {name: M, class: intmac}]}]\n")
    _user_error(run("import-arch", "timeloop", bad, "-o", tmp_path / "a.yaml"),
                "field 'architecture.subtree[0].local[0].attributes.depth'")
    assert not (tmp_path / "a.yaml").exists()
