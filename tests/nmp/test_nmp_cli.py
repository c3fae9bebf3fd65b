"""`dnnmap compile --target nmp` and `dnnmap simulate` end to end, and bad output directories."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from cli_runs import assert_user_error, run

from dnnmap.targets.nmp.artifacts import HEADER, decode_programs, encode_programs, load_compiled
from dnnmap.targets.nmp.isa import FLAG_MULTICAST, RECORD
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.importers import save_network


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nmp") / "out"
    result = run("compile", "lenet5", "--target", "nmp", "-o", out)
    assert result.exit_code == 0, result.output
    return out


def _copy(compiled: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(compiled, out)
    return out


def _rehash(out: Path, name: str) -> None:
    """Record ``name``'s new digest in the manifest, as someone editing the directory on purpose would."""
    man = json.loads((out / "manifest.json").read_text())
    man["sha256"][name] = hashlib.sha256((out / name).read_bytes()).hexdigest()
    (out / "manifest.json").write_text(json.dumps(man))


def test_compile_then_simulate_lenet(compiled: Path) -> None:
    assert {p.name for p in compiled.iterdir()} == {"manifest.json", "programs.bin", "weights.bin", "listing.txt",
                                                    "network.yaml", "params.npz"}
    listing = (compiled / "listing.txt").read_text()
    assert "multicast" in listing and "nmp_conv2d" in listing and "memory map" in listing
    result = run("simulate", compiled)
    assert result.exit_code == 0, result.output
    assert "all 7 layer outputs bit-exact" in result.stdout and "float network" in result.stdout


def test_program_file_round_trips(compiled: Path) -> None:
    c, _ = load_compiled(compiled)
    data = (compiled / "programs.bin").read_bytes()
    assert encode_programs(c.programs, 32) == data
    assert decode_programs(data, compiled / "programs.bin", 7, 32) == tuple(p.cores for p in c.programs)


def test_an_edited_program_is_a_mismatch_not_a_pass(compiled: Path, tmp_path: Path) -> None:
    out = _copy(compiled, tmp_path)
    data = bytearray((out / "programs.bin").read_bytes())
    pos = next(p for p in _records(data) if data[p + 1] & FLAG_MULTICAST)  # the first multicast load
    data[pos + 1] &= ~FLAG_MULTICAST
    (out / "programs.bin").write_bytes(bytes(data))
    _rehash(out, "programs.bin")
    result = run("simulate", out)
    assert result.exit_code == 1 and "MISMATCHES" in result.stdout


def _records(data: bytearray):
    """Byte offsets of every operation record (layout: docs/nmp.md "Binary format")."""
    _, _, layers, cores = HEADER.unpack_from(data)
    pos = HEADER.size
    for _ in range(layers * cores):
        n = int.from_bytes(data[pos:pos + 4], "little")
        pos += 4
        for _ in range(n):
            yield pos
            pos += RECORD.size


@pytest.mark.parametrize(("edit", "message"), [
    (lambda out: shutil.rmtree(out), "no manifest"),
    (lambda out: (out / "params.npz").unlink(), "params.npz"),
    (lambda out: (out / "weights.bin").write_bytes(b"\x00" + (out / "weights.bin").read_bytes()[1:]),
     "changed since it was compiled"),
    (lambda out: (out / "manifest.json").write_text("{"), "manifest.json"),
    (lambda out: (out / "manifest.json").write_text(json.dumps({"format": "dnnmap-nmp/1", "bits": 12})),
     "invalid NMP manifest"),
])
def test_damaged_directories_are_clean_errors(compiled: Path, tmp_path: Path, edit, message: str) -> None:
    out = _copy(compiled, tmp_path)
    edit(out)
    assert_user_error(run("simulate", out), message)


def test_a_corrupt_program_record_is_a_clean_error(compiled: Path, tmp_path: Path) -> None:
    out = _copy(compiled, tmp_path)
    data = bytearray((out / "programs.bin").read_bytes())
    data[HEADER.size + 4] = 99  # opcode of the first record
    (out / "programs.bin").write_bytes(bytes(data))
    _rehash(out, "programs.bin")
    assert_user_error(run("simulate", out), "unknown opcode 99")
    (out / "programs.bin").write_bytes(bytes(data[:-10]))
    _rehash(out, "programs.bin")
    assert_user_error(run("simulate", out), "programs.bin")


def test_unsupported_layers_and_options_are_named(tmp_path: Path) -> None:
    b = NetworkBuilder("grouped", (1, 8, 10, 10))
    b.conv("c1", 8, 3)
    b.conv("g1", 8, 3, groups=2)
    net = save_network(b.build(), tmp_path / "grouped.yaml")
    assert_user_error(run("compile", net, "--target", "nmp", "-o", tmp_path / "o"), "'g1' (conv2d)", "grouped")
    b = NetworkBuilder("leaky", (1, 8, 10, 10))
    b.conv("c1", 8, 3, fused=("leaky_relu",))
    net = save_network(b.build(), tmp_path / "leaky.yaml")
    assert_user_error(run("compile", net, "--target", "nmp", "-o", tmp_path / "o"), "'c1'", "leaky_relu")
    assert_user_error(run("compile", "lenet5", "--target", "nmp", "--bits", "12", "-o", tmp_path / "o"), "8, 16")
    assert_user_error(run("compile", "lenet5", "--target", "nve", "--bits", "8", "-o", tmp_path / "o"), "nmp only")
