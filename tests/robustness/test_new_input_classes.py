"""One test per failure class found by fuzzing today's inputs (sparsity, NMP outputs, sweep stores, hardware
generation options): a clear error (exit 2, file / field / option named, no traceback), nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml

from dnnmap.targets.nmp.artifacts import HEADER
from dnnmap.targets.nmp.isa import FIELDS, OPCODES, RECORD
from fuzz_cases import QUICK_MAP, Bases, dump, make_bases
from test_issue8_classes import refused, write


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return make_bases(tmp_path_factory.mktemp("new_inputs"))


# ---- densities -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("densities, fragments", [
    ([["W", 5.0]], ("densities", "'W'", "(0, 1]")),
    ([["W", True]], ("densities", "True")),
    ([["Z", 0.5]], ("densities", "'Z' is not an input tensor")),
    ([["O", 0.5]], ("'O' is not an input tensor",)),
    (["W"], ("[TENSOR, DENSITY] pairs",)),
    ([["W", 0.5], ["W", 0.25]], ("appears twice",)),
])
def test_densities_in_network_files(b: Bases, densities: list, fragments: tuple[str, ...]) -> None:
    doc = yaml.safe_load(dump(b.sparse_network, "yaml"))
    doc["layers"][0]["attrs"]["densities"] = densities
    path = write(b, "dens.yaml", dump(doc, "yaml"))
    refused("map", path, *QUICK_MAP, "--arch", "rtml_192pe", fragments=(str(path), "conv1", *fragments))


def test_density_given_twice_with_different_values() -> None:
    refused("map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--density", "W=0.5", "--density", "W=0.25",
            fragments=("W is given twice",))


def test_role_given_twice_through_two_aliases() -> None:
    refused("map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--density", "weights=0.5", "--density", "weight=0.3",
            fragments=("weights=0.5", "weight=0.3", "weight role"))


def test_density_below_one_nonzero_element() -> None:
    elements = 6 * 1 * 5 * 5  # lenet5 conv1's weights (K, C, R, S)
    stderr = refused("map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--density", "W=1e-320",
                     fragments=("'conv1'", "'W'", "fewer than one non-zero", f"1/{elements}"))
    assert "1e-320" in stderr


# ---- sweep stores ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, fragments", [
    ("UPDATE results SET latency_s = NULL", ("column latency_s is NULL",)),
    ("UPDATE results SET energy = 'abc'", ("column energy", "'abc'")),
    ("UPDATE results SET macs = -5", ("column macs",)),
    ("ALTER TABLE results ADD COLUMN extra REAL", ("not a dnnmap sweep store",)),
])
def test_edited_sweep_store(b: Bases, edit: str, fragments: tuple[str, ...]) -> None:
    store = b.root / "edited.sqlite"
    shutil.copy(b.store, store)
    db = sqlite3.connect(store)
    with db:
        db.execute(edit)
    db.close()
    refused("sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", store, fragments=(str(store), *fragments))


def test_damaged_sweep_store(b: Bases) -> None:
    store = b.root / "damaged.sqlite"
    data = bytearray(b.store.read_bytes())
    data[100:4096] = bytes(len(data[100:4096]))  # the schema page zeroed
    store.write_bytes(bytes(data))
    refused("sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", store,
            fragments=(str(store), "cannot use as a sweep store"))


@pytest.mark.parametrize("workers", ["0", "-1", "100000"])
def test_workers_checked_before_the_store_is_created(b: Bases, workers: str) -> None:
    store = b.root / f"workers_{workers}.sqlite"
    refused("sweep", "lenet5", "--arch", "eyeriss", "--store", store, "--workers", workers,
            fragments=("--workers", "1..256"))
    assert not store.exists()


@pytest.mark.parametrize("mode", [["--serial"], ["--scheduler", "tcp://127.0.0.1:1"]])
def test_workers_refused_without_a_local_cluster(b: Bases, mode: list[str]) -> None:
    store = b.root / "workers_mode.sqlite"
    refused("sweep", "lenet5", "--arch", "eyeriss", "--store", store, "--workers", "3", *mode,
            fragments=("--workers", mode[0]))
    assert not store.exists()


# ---- output paths ---------------------------------------------------------------------------------------------
def test_outputs_below_a_file(b: Bases) -> None:
    blocker = write(b, "blocker", "a file\n")
    refused("compile", "lenet5", "--target", "nmp", "-o", blocker / "out", fragments=(f"{blocker} is a file",))
    refused("generate-hw", "lenet5", "--pes", "16", "--yaml", blocker / "g.yaml", "--verilog", b.root / "g.vh",
            fragments=("--yaml",))
    refused("sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", blocker / "s.sqlite",
            fragments=("--store",))
    assert not (b.root / "g.vh").exists()


def test_nve_only_options_refused_for_nmp(b: Bases) -> None:
    for option in (["-O", "2"], ["--skip-unsupported"]):
        refused("compile", "lenet5", "--target", "nmp", "-o", b.root / "nmp_o", *option, fragments=("--target nve",))
    assert not (b.root / "nmp_o").exists()


# ---- NMP output directories ------------------------------------------------------------------------------------
def _nmp_copy(b: Bases, name: str) -> Path:
    folder = b.root / name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(b.nmp, folder)
    return folder


def _redigest(folder: Path, file: str) -> None:
    manifest = folder / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["sha256"][file] = hashlib.sha256((folder / file).read_bytes()).hexdigest()
    manifest.write_text(json.dumps(doc))


def _edit_first(folder: Path, name: str, **fields: int) -> None:
    """Set ``fields`` of the first ``name`` op of programs.bin (digest updated: the simulator must refuse it)."""
    path = folder / "programs.bin"
    data = bytearray(path.read_bytes())
    pos = HEADER.size
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        for k in range(n):
            code, flags, reserved, *values = RECORD.unpack_from(data, pos + k * RECORD.size)
            if code == OPCODES[name]:
                for f, v in fields.items():
                    values[FIELDS[name].index(f)] = v
                RECORD.pack_into(data, pos + k * RECORD.size, code, flags, reserved, *values)
                path.write_bytes(bytes(data))
                _redigest(folder, "programs.bin")
                return
        pos += n * RECORD.size
    raise AssertionError(f"no {name} op")


@pytest.mark.parametrize("name, fields, fragment", [
    ("nmp_conv2d", {"shift": 2**31 - 1}, "shift"),  # 2**(2**31) was computed: a hang
    ("nmp_conv2d", {"shift": -(2**31)}, "shift"),
    ("nmp_load3d", {"offset": -5}, "offset"),  # a negative slice of the scratchpad
    ("nmp_load3d", {"d0": 2**30, "d1": 2**30}, "larger than"),  # the address array did not fit in memory
    ("nmp_activation", {"count": -3}, "count"),
    ("nmp_load3d", {"mb": 9}, "MB0 or MB1"),  # the listing line indexed MB_NAMES[9]
])
def test_nmp_program_fields(b: Bases, name: str, fields: dict[str, int], fragment: str) -> None:
    folder = _nmp_copy(b, "nmp_fields")
    _edit_first(folder, name, **fields)
    refused("simulate", folder, fragments=(name, fragment))


@pytest.mark.parametrize("edit, fragments", [
    (lambda a: a.update({"conv1/weight": a["conv1/weight"].astype(np.complex128)}), ("conv1/weight", "complex")),
    (lambda a: a.update({"conv1/weight": a["conv1/weight"] > 0}), ("conv1/weight", "bool")),
    (lambda a: a.update({"conv1/bn_gama": np.ones(6)}), ("conv1/bn_gama", "name no parameter")),
    (lambda a: a.update({f"conv1/bn_{f}": np.full(6, np.nan) for f in ("gamma", "beta", "mean", "var")}),
     ("conv1", "finite")),
])
def test_nmp_parameter_files(b: Bases, edit: Callable[[dict], None], fragments: tuple[str, ...]) -> None:
    folder = _nmp_copy(b, "nmp_params")
    with np.load(folder / "params.npz") as z:
        arrays = {k: z[k] for k in z.files}
    edit(arrays)
    with open(folder / "params.npz", "wb") as fh:
        np.savez(fh, **arrays)
    _redigest(folder, "params.npz")
    refused("simulate", folder, fragments=("params.npz", *fragments))
    refused("compile", "lenet5", "--target", "nmp", "-o", b.root / "nmp_p", "--params", folder / "params.npz",
            fragments=fragments)
    assert not (b.root / "nmp_p").exists()
