"""The target registry behind `dnnmap compile --target T` and `dnnmap simulate DIR` (dnnmap/targets/registry.py)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cli_runs import assert_user_error, run

from dnnmap.arch.spec import PRESET_DIR
from dnnmap.errors import UnknownNameError
from dnnmap.targets import registry
from dnnmap.targets.nmp import compile_network as compile_nmp
from dnnmap.targets.nmp.artifacts import FORMAT as NMP_FORMAT
from dnnmap.targets.nve.artifacts import FORMAT as NVE_FORMAT
from dnnmap.workload import zoo
from dnnmap.workload.ir import Network


@pytest.fixture(scope="module")
def nmp_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("targets") / "nmp"
    result = run("compile", "lenet5", "--target", "nmp", "--arch", "nmp", "--bits", "8", "--seed", "2", "-o", out)
    assert result.exit_code == 0, result.output
    return out


def test_registry_lists_both_targets_with_their_manifest_formats() -> None:
    assert registry.names() == ("nve", "nmp")
    assert {t.name: t.manifest_format for t in registry.targets()} == {"nve": NVE_FORMAT, "nmp": NMP_FORMAT}
    assert registry.get("nve").source_suffixes == (".xml",)
    with pytest.raises(UnknownNameError, match="unknown target 'tpu'; targets: nve, nmp"):
        registry.get("tpu")


def test_cli_compile_equals_the_target_called_directly(nmp_out: Path, tmp_path: Path) -> None:
    direct = compile_nmp(zoo.get("lenet5"), tmp_path / "direct", bits=8, seed=2).out_dir
    assert sorted(p.name for p in nmp_out.iterdir()) == sorted(p.name for p in direct.iterdir())
    for path in nmp_out.iterdir():
        assert path.read_bytes() == (direct / path.name).read_bytes(), path.name
    by_file = run("compile", "lenet5", "--target", "nmp", "--arch", PRESET_DIR / "nmp.yaml", "--bits", "8",
                  "--seed", "2", "-o", tmp_path / "file")
    assert by_file.exit_code == 0, by_file.output
    assert (tmp_path / "file" / "programs.bin").read_bytes() == (nmp_out / "programs.bin").read_bytes()
    simulated = run("simulate", nmp_out)
    assert simulated.exit_code == 0, simulated.output
    assert "all 7 layer outputs bit-exact" in simulated.stdout


@pytest.mark.parametrize(("edit", "fragments"), [
    (lambda m: m.pop("format"), ("manifest.json: field 'format' is missing", "'dnnmap-nmp/1' (target nmp)")),
    (lambda m: m.update(format="dnnmap-tpu/1"), ("field 'format': 'dnnmap-tpu/1' is not a format",
                                                 "'dnnmap-nve/1' (target nve)")),
    (lambda m: m.update(format=NVE_FORMAT), ("invalid NVE manifest",)),  # declared nve: read as nve, not guessed
])
def test_a_manifest_without_a_known_format_is_refused(nmp_out: Path, tmp_path: Path, edit, fragments) -> None:
    out = tmp_path / "out"
    shutil.copytree(nmp_out, out)
    manifest = json.loads((out / "manifest.json").read_text())
    edit(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert_user_error(run("simulate", out), *fragments)


def test_a_manifest_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    tmp_path.joinpath("manifest.json").write_text("[1, 2]")
    assert_user_error(run("simulate", tmp_path), "manifest.json: not a manifest", "'format'")


def test_options_a_target_does_not_read_are_refused_with_what_to_use(nmp_out: Path, tmp_path: Path) -> None:
    never = tmp_path / "never"
    assert_user_error(run("compile", "lenet5", "--target", "nmp", "--spec", PRESET_DIR / "nmp.yaml", "-o", never),
                      "--spec applies to --target nve only, not nmp", "give it with --arch")
    assert_user_error(run("compile", "lenet5", "--target", "nve", "--arch", "nmp", "-o", never),
                      "--arch applies to --target nmp only, not nve", "--spec SPEC.yaml")
    assert_user_error(run("compile", "lenet5", "--target", "nve", "--params", "w.npz", "-o", never),
                      "--params applies to --target nmp only")
    assert_user_error(run("simulate", nmp_out, "--full-frame"),
                      "--full-frame applies to folders compiled for nve only; this one was compiled for nmp")
    assert not never.exists()


@dataclass(frozen=True)
class EchoTarget:
    """A stand-in target: writes a manifest with its own format; its simulation fails unless seed is 7."""

    name: str = "echo"
    description: str = "test target"
    manifest_format: str = "test-echo/1"
    source_suffixes: tuple[str, ...] = (".echo",)
    compile_options: frozenset[str] = frozenset({"bits"})
    simulate_options: frozenset[str] = frozenset({"seed"})
    option_hints: dict[str, str] = field(default_factory=dict)

    def compile(self, network: Network | Path, out_dir: Path, options: registry.CompileOptions) -> EchoRun:
        out_dir.mkdir()
        source = network.name if isinstance(network, Network) else f"file {network.name}"
        (out_dir / "manifest.json").write_text(json.dumps({"format": self.manifest_format, "source": source}))
        return EchoRun(f"echo compiled {source} at {options.bits} bits", False)

    def simulate(self, folder: Path, options: registry.SimulateOptions) -> EchoRun:
        return EchoRun(f"echo ran {json.loads((folder / 'manifest.json').read_text())['source']}", options.seed == 7)


@dataclass(frozen=True)
class EchoRun:
    text: str
    passed: bool

    def summary(self) -> str:
        return self.text


def test_a_registered_target_is_reached_by_compile_and_simulate(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setitem(registry._REGISTERED, "echo", EchoTarget())
    compiled = run("compile", "lenet5", "--target", "echo", "--bits", "4", "-o", tmp_path / "net")
    assert compiled.exit_code == 0, compiled.output
    assert "echo compiled lenet5 at 4 bits" in compiled.stdout
    assert run("compile", tmp_path / "a.echo", "--target", "echo", "-o", tmp_path / "file").exit_code == 0
    assert json.loads((tmp_path / "file" / "manifest.json").read_text())["source"] == "file a.echo"
    failed = run("simulate", tmp_path / "net")
    assert failed.exit_code == 1 and "echo ran lenet5" in failed.stdout
    assert run("simulate", tmp_path / "net", "--seed", "7").exit_code == 0
    assert_user_error(run("compile", "lenet5", "--target", "echo", "-O", "1", "-o", tmp_path / "x"),
                      "--opt-level applies to --target nve only, not echo")
    assert_user_error(run("simulate", tmp_path / "net", "--full-frame"), "compiled for echo")
