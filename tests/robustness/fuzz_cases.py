"""Seeded hostile-input generators for every file kind and option, and the invariants every run must keep.

Shared by ``tests/robustness/test_fuzz_inputs.py`` (a fixed budget in the default suite) and
``benchmarks/fuzz_inputs.py`` (the larger run). A case is a command line plus the files it
reads; :func:`run_case` runs it in process (typer's CliRunner) and checks:

* exit code 0 or 2 (1 only where it means "output not bit-exact": ``verify``, ``simulate``);
* no traceback, an ``error:`` (or usage) message on exit 2, no NumPy warning;
* no hang (a per-case alarm) and, on exit 2, no output written (no partial file, no temp file);
* nothing silently coerced: an accepted architecture, network or mapping file loads to exactly
  the values and types it spells (``true`` is not 1, ``2.5`` is not 2, ``'2'`` is not 2);
* an accepted mapping file is legal by an independent check (:func:`mapping_legality`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
import shutil
import signal
import sqlite3
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from typer.testing import CliRunner

from dnnmap.arch.spec import PRESET_DIR, load_arch
from dnnmap.cli.main import app
from dnnmap.errors import DnnmapError
from dnnmap.mapping.dataflow_directives import format_directives, parse_directives
from dnnmap.mapping.io import load_mapping_file
from dnnmap.mapping.mapping import validate_mapping
from dnnmap.workload import zoo
from dnnmap.workload.importers import save_network
from dnnmap.workload.importers.netfile import load_netfile, network_to_dict
from dnnmap.workload.sparsity import apply_densities

HANG_SECONDS = 20
HOSTILE: list[Any] = [None, True, False, 0, -1, 1, 2.5, 2.0, "2", "", "IO", "PQ", 2**63, 2**64, 10**30, 1e308,
                      -1e-300, 1e-300, [], {}, [1, 2], {"x": 1}, "x" * 300, [[[[]]]], "1e9", 3, 7, 1023, 10**12]

TINY_XML = """<convNetDescriptor name="tiny" layerCount="2">
  <layerDescriptor idx="0">
    <outHeight>10</outHeight><outWidth>6</outWidth><kernelHeight>3</kernelHeight><kernelWidth>3</kernelWidth>
    <subHeight>1</subHeight><subWidth>1</subWidth><outCount>2</outCount>
    <outNet idx="0" cnt="1">0</outNet><outNet idx="1" cnt="1">0</outNet>
  </layerDescriptor>
  <layerDescriptor idx="1">
    <outHeight>4</outHeight><outWidth>2</outWidth><kernelHeight>2</kernelHeight><kernelWidth>2</kernelWidth>
    <subHeight>2</subHeight><subWidth>2</subWidth><outCount>1</outCount>
    <outNet idx="0" cnt="2">0,1</outNet>
  </layerDescriptor>
</convNetDescriptor>
"""
QUICK_MAP = ("--mapper", "random", "--budget", "20")


class Hang(BaseException):
    """Raised by the alarm when a case runs longer than HANG_SECONDS (BaseException: not caught by the CLI)."""


@dataclass
class Outcome:
    kind: str
    args: list[str]
    exit_code: int
    seconds: float
    message: str
    problem: str | None = None  # an invariant the run broke


@dataclass
class Tally:
    """Inputs tried, exit codes and broken invariants per kind."""

    tried: Counter = field(default_factory=Counter)
    codes: Counter = field(default_factory=Counter)
    problems: list[Outcome] = field(default_factory=list)
    slowest_rejection: float = 0.0

    def add(self, o: Outcome) -> None:
        self.tried[o.kind] += 1
        self.codes[(o.kind, o.exit_code)] += 1
        if o.exit_code == 2:
            self.slowest_rejection = max(self.slowest_rejection, o.seconds)
        if o.problem:
            self.problems.append(o)


# ---- base inputs ------------------------------------------------------------------
@dataclass(frozen=True)
class Bases:
    root: Path
    arch: dict[str, Any]
    network: dict[str, Any]
    mapping: dict[str, Any]
    compiled: Path  # a compiled tiny NVE folder
    xml: str
    sparse_arch: dict[str, Any]  # rtml_192pe: an architecture with a `sparsity` block
    sparse_network: dict[str, Any]  # LeNet-5 whose layers carry weight densities
    nmp: Path  # LeNet-5 compiled for the NMP target
    store: Path  # a finished sweep store (LeNet-5 on eyeriss)


def make_bases(root: Path) -> Bases:
    """Valid inputs of every kind, the starting points of the mutations."""
    root.mkdir(parents=True, exist_ok=True)
    runner = CliRunner()
    maps = root / "maps"
    done = runner.invoke(app, ["map", "lenet5", "--layers", "conv1,conv2", "--save-mappings", str(maps), "--json",
                               str(root / "maps_run.json")])
    assert done.exit_code == 0, done.output
    mapping = yaml.safe_load((maps / "00_conv1.yaml").read_text())
    (root / "tiny.xml").write_text(TINY_XML)
    compiled = root / "compiled"
    done = runner.invoke(app, ["compile", str(root / "tiny.xml"), "-o", str(compiled)])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["simulate", str(compiled)])  # loads (or compiles) the ISS kernels before timing
    assert done.exit_code == 0, done.output
    net_path = root / "lenet.yaml"
    save_network(zoo.get("lenet5"), net_path)
    sparse_path = root / "lenet_sparse.yaml"
    save_network(apply_densities(zoo.get("lenet5"), {"W": 0.5}), sparse_path)
    nmp = root / "nmp"
    done = runner.invoke(app, ["compile", "lenet5", "--target", "nmp", "-o", str(nmp)])
    assert done.exit_code == 0, done.output
    store = root / "sweep.sqlite"
    done = runner.invoke(app, ["sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", str(store)])
    assert done.exit_code == 0, done.output
    return Bases(root, yaml.safe_load((PRESET_DIR / "eyeriss.yaml").read_text()), yaml.safe_load(net_path.read_text()),
                 mapping, compiled, TINY_XML, yaml.safe_load((PRESET_DIR / "rtml_192pe.yaml").read_text()),
                 yaml.safe_load(sparse_path.read_text()), nmp, store)


# ---- mutations --------------------------------------------------------------------
def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def mutate_doc(doc: Any, rng: random.Random, rounds: int = 1) -> Any:
    """``doc`` with ``rounds`` random structural edits: a value replaced by a hostile one, a key removed or
    added, a list emptied or its element repeated, a number nudged (x2, +1, 0.5 more)."""
    doc = copy.deepcopy(doc)
    for _ in range(rounds):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            return rng.choice(HOSTILE)
        path = rng.choice(paths)
        parent, key = _get(doc, path[:-1]), path[-1]
        value = parent[key]
        op = rng.randrange(6)
        if op == 0:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE))
        elif op == 1 and isinstance(parent, dict):
            del parent[key]
        elif op == 1 and isinstance(parent, list):
            parent.pop(key)
        elif op == 2 and isinstance(parent, dict):
            parent[rng.choice(["extra", "Energy", "keep", "levelz", "K", "Z", "I9"])] = rng.choice(HOSTILE)
        elif op == 3 and isinstance(value, (int, float)) and not isinstance(value, bool):
            parent[key] = rng.choice([value * 2, value + 1, value + 0.5, -value, value * 10**9, str(value)])
        elif op == 4 and isinstance(value, list):
            parent[key] = value * rng.choice([0, 2]) if value else ["x"]
        else:
            parent[key] = rng.choice([str(value), [value], {"v": value}, None])
    return doc


def mutate_text(text: str, rng: random.Random) -> bytes:
    """Text-level damage: truncation, duplicated lines (duplicate keys), invalid bytes, deep nesting,
    huge integers, a byte-order mark, tabs."""
    op = rng.randrange(8)
    data = text.encode()
    if op == 0:
        return data[: rng.randrange(len(data) + 1)]
    lines = text.splitlines(keepends=True)
    if op == 1 and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "".join(lines).encode()
    if op == 2:
        i = rng.randrange(len(data) + 1)
        return data[:i] + bytes(rng.choice([b"\xff", b"\xfe\x00", b"\x00", b"\xc3", b"\x80\x81"])) + data[i:]
    if op == 3:
        depth = rng.choice([70, 3000])
        return data + f"\ndeep: {'[' * depth}{']' * depth}\n".encode()
    if op == 4:
        return text.replace("1", "1" * rng.choice([25, 5000]), 1).encode()
    if op == 5:
        return b"\xef\xbb\xbf" + data
    if op == 6:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    i = rng.randrange(len(data) + 1)
    return data[:i] + b"\t&a [*a]\n" + data[i:]


def dump(doc: Any, fmt: str) -> bytes:
    if fmt == "json":
        return json.dumps(doc, indent=1).encode()
    return yaml.safe_dump(doc, sort_keys=False).encode()


# ---- independent checks -------------------------------------------------------------
def coercion(doc: Any, loaded: Any, where: str = "") -> str | None:
    """Where a value the file spells differs in value or type from what was loaded (None when faithful)."""
    if isinstance(doc, dict):
        if not isinstance(loaded, dict):
            return f"{where}: mapping loaded as {type(loaded).__name__}"
        for k, v in doc.items():
            if k in loaded:
                problem = coercion(v, loaded[k], f"{where}.{k}")
                if problem:
                    return problem
        return None
    if isinstance(doc, list):
        if not isinstance(loaded, (list, tuple)) or len(loaded) != len(doc):
            return f"{where}: list {doc!r:.40} loaded as {loaded!r:.40}"
        for i, (a, b) in enumerate(zip(doc, loaded)):
            problem = coercion(a, b, f"{where}[{i}]")
            if problem:
                return problem
        return None
    same_kind = isinstance(doc, bool) == isinstance(loaded, bool) and isinstance(doc, str) == isinstance(loaded, str)
    narrowed = isinstance(doc, float) and isinstance(loaded, int) and not isinstance(loaded, bool)
    if doc != loaded or not same_kind or narrowed:
        return f"{where}: {doc!r:.40} ({type(doc).__name__}) loaded as {loaded!r:.40} ({type(loaded).__name__})"
    return None


def mapping_legality(path: Path) -> str | None:
    """An independent legality check of an accepted mapping file (factors cover the bounds, spatial factors fit
    the fan-outs, bypass choices are storable, layouts permute the tensor axes), or why it is illegal."""
    m, op, raw = load_mapping_file(path)
    arch = load_arch(str(raw["arch"]))
    if len(m.levels) != len(arch.levels) or op is None:
        return "level count"
    levels = raw["levels"]
    names = [lv.name for lv in arch.levels]
    for d, bound in op.dims:
        total = math.prod(int((levels.get(n) or {}).get(part, {}).get(d, 1))
                          for n in names for part in ("temporal", "spatial"))
        if total < bound:
            return f"factors of {d} multiply to {total} < {bound}"
    roles = {t.name: t.role for t in op.tensors}
    for i, lv in enumerate(arch.levels):
        entry = levels.get(lv.name) or {}
        spatial = entry.get("spatial") or {}
        if spatial and math.prod(spatial.values()) > 1 and lv.fanout is None:
            return f"spatial factors at {lv.name} without a fan-out"
        if lv.fanout is not None:
            axes = entry.get("spatial_axis") or {}
            for ax, size in enumerate(lv.fanout.shape):
                used = math.prod(f for d, f in spatial.items() if axes.get(d, 0) == ax)
                if used > size:
                    return f"{lv.name} axis {ax} uses {used} > {size}"
        for t in entry.get("keeps") or []:
            if i < len(arch.levels) - 1 and roles.get(t) not in lv.keeps:
                return f"{lv.name} keeps {t}"
    for t, layout in (raw.get("layouts") or {}).items():
        if sorted(layout) != sorted(a.name for a in op.tensor(t).axes):
            return f"layout of {t}"
    return None


# ---- running ----------------------------------------------------------------------
def _alarm(_signum: int, _frame: object) -> None:
    raise Hang()


def _files(directory: Path) -> set[Path]:
    return set(directory.rglob("*")) if directory.exists() else set()


def run_case(kind: str, args: list[str], workdir: Path, outputs: tuple[Path, ...] = (),
             allowed: tuple[int, ...] = (0, 2), check: Callable[[], str | None] | None = None) -> Outcome:
    """Run ``dnnmap ARGS`` in process and check the invariants (module docstring)."""
    before = _files(workdir)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = CliRunner().invoke(app, args)
    except Hang:
        return Outcome(kind, args, -1, HANG_SECONDS, "", f"no answer within {HANG_SECONDS} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    seconds = time.perf_counter() - start
    text = (result.stderr or "") + (result.stdout or "")
    out = Outcome(kind, args, result.exit_code, seconds, text.strip().splitlines()[0] if text.strip() else "")
    numpy_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        out.problem = f"traceback: {type(result.exception).__name__}: {result.exception}"
    elif "Traceback" in text:
        out.problem = "traceback in the output"
    elif result.exit_code not in allowed:
        out.problem = f"exit code {result.exit_code}"
    elif result.exit_code == 2 and not ("error:" in result.stderr or "Usage:" in result.stderr):
        out.problem = "exit 2 without an error message"
    elif numpy_warnings:
        out.problem = f"warning: {numpy_warnings[0].message}"
    if out.problem is None and result.exit_code == 2:
        leftovers = [p for p in _files(workdir) - before if p.name.endswith(".tmp") or p.name.startswith(".")]
        written = [p for p in outputs if p.exists()]
        if leftovers or written:
            out.problem = f"partial output after an error: {[str(p) for p in leftovers + written][:3]}"
    if out.problem is None and result.exit_code == 0 and check is not None:
        out.problem = check()
    return out


def write_mutant(path: Path, base: Any, fmt: str, rng: random.Random, text: str | None = None) -> Any:
    """Write to ``path`` a structurally mutated copy of ``base`` (80%: returned, to check the loaded values
    against) or a byte-level mutation of its text (``text``, default: ``base`` dumped; returns None)."""
    if rng.random() < 0.8:
        doc = mutate_doc(base, rng, rng.choice([1, 1, 2]))
        path.write_bytes(dump(doc, fmt))
        return doc
    path.write_bytes(mutate_text(text if text is not None else dump(base, fmt).decode(), rng))
    return None


# ---- cases per kind -----------------------------------------------------------------
def arch_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    path = b.root / f"arch_{i}.yaml"
    doc = write_mutant(path, b.arch, "yaml", rng, text=(PRESET_DIR / "eyeriss.yaml").read_text())

    def faithful() -> str | None:
        return coercion(doc, load_arch(path).model_dump(), "arch") if isinstance(doc, dict) else None

    return run_case("arch", ["map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--arch", str(path)], b.root,
                    check=faithful)


def network_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    fmt = rng.choice(["yaml", "json"])
    path = b.root / f"net_{i}.{fmt}"
    doc = write_mutant(path, b.network, fmt, rng)

    def faithful() -> str | None:
        return coercion(doc, network_to_dict(load_netfile(path)), "network") if isinstance(doc, dict) else None

    return run_case("network", ["map", str(path), *QUICK_MAP], b.root, check=faithful)


def mapping_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    path = b.root / f"map_{i}.yaml"
    doc = write_mutant(path, b.mapping, "yaml", rng)

    def legal_and_faithful() -> str | None:
        if not isinstance(doc, dict):
            return None
        m, _, _ = load_mapping_file(path)
        loaded = {"levels": {n: {"temporal": dict(lm.temporal), "spatial": dict(lm.spatial), "order": list(lm.order),
                                 "spatial_axis": dict(lm.spatial_axis), **({"keeps": list(lm.keeps)} if lm.keeps
                                                                           is not None else {})}
                             for n, lm in zip(doc["levels"], m.levels)},
                  "layouts": {t: list(ax) for t, ax in m.layouts}}
        spelled = {k: doc[k] for k in ("levels", "layouts") if k in doc}
        spelled["levels"] = {n: e or {} for n, e in doc["levels"].items()}  # `DRAM:` (null) is an empty level
        return coercion(spelled, loaded, "mapping") or mapping_legality(path)

    command = "verify" if rng.random() < 0.2 else "show"
    return run_case("mapping", [command, str(path)], b.root, allowed=(0, 1, 2) if command == "verify" else (0, 2),
                    check=legal_and_faithful)


def nve_spec_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    path = b.root / f"nvespec_{i}.yaml"
    base = {"lanes": 16, "pixels_per_word": 8, "coeffs_per_word": 4, "local_buffer_words": 4096,
            "instruction_buffer_size": 512, "stage_bits": 3, "act_lut_entries": 1024, "agu_modes": 4}
    if rng.random() < 0.8:
        path.write_bytes(dump(mutate_doc(base, rng), "yaml"))
    else:
        path.write_bytes(mutate_text(dump(base, "yaml").decode(), rng))
    out = b.root / f"nve_out_{i}"
    return run_case("nve-spec", ["compile", str(b.root / "tiny.xml"), "--spec", str(path), "-o", str(out)], b.root,
                    outputs=(out,))


def xml_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    path = b.root / f"net_{i}.xml"
    text = b.xml
    if rng.random() < 0.7:
        numbers = [n for n in range(len(text)) if text[n].isdigit() and not text[n - 1].isdigit()]
        for _ in range(rng.choice([1, 2])):
            n = rng.choice(numbers)
            end = n
            while end < len(text) and text[end].isdigit():
                end += 1
            text = text[:n] + str(rng.choice(["0", "-1", "1e20", "99999999999999999999", "3", "2.5", "", "x",
                                             "1" * 5000, "65537", "0,0", "7"])) + text[end:]
            numbers = [n for n in range(len(text)) if text[n].isdigit() and not text[n - 1].isdigit()]
        data = text.encode()
    else:
        data = mutate_text(text, rng)
    path.write_bytes(data)
    out = b.root / f"xml_out_{i}"
    return run_case("nve-xml", ["compile", str(path), "-o", str(out)], b.root, outputs=(out,))


def _copy_compiled(b: Bases, kind: str, i: int) -> Path:
    target = b.root / f"{kind}_{i}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(b.compiled, target)
    return target


def manifest_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    folder = _copy_compiled(b, "manifest", i)
    manifest = folder / "manifest.json"
    doc = json.loads(manifest.read_text())
    if rng.random() < 0.85:
        manifest.write_bytes(dump(mutate_doc(doc, rng, rng.choice([1, 1, 2])), "json"))
    else:
        manifest.write_bytes(mutate_text(manifest.read_text(), rng))
    return run_case("nve-manifest", ["simulate", str(folder)], b.root, allowed=(0, 1, 2))


def binary_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    folder = _copy_compiled(b, "binary", i)
    binary = rng.choice(sorted((folder / "programs").glob("*.nveb")))
    data = bytearray(binary.read_bytes())
    op = rng.randrange(4)
    if op == 0:
        for _ in range(rng.choice([1, 1, 3])):
            pos = rng.randrange(len(data))
            data[pos] ^= 1 << rng.randrange(8)
    elif op == 1:
        data = data[: rng.randrange(len(data))]
    elif op == 2:
        data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))
    else:
        binary.unlink()
    if op != 3:
        binary.write_bytes(bytes(data))
    return run_case("nve-binary", ["simulate", str(folder)], b.root, allowed=(0, 1, 2))


def option_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """Hostile option values for every command."""
    value = rng.choice(["-1", "0", "1", str(10**30), "2.5", "", "garbage", "nan", "inf", "1e999", str(2**63),
                        "x=1x2", "input=0x3", "input=1x3x32x32", "input=-1", "a=1x" + "9" * 30, " ", "."])
    out = b.root / f"opt_out_{i}"
    # output paths stay under the work directory: blank values as given, others below it
    target = value if not value.strip() else str(b.root if value == "." else out / value)
    choices = [
        ["map", "lenet5", "--layers", "conv1", "--mapper", "random", "--budget", value],
        ["map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--seed", value],
        ["map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--budget-seconds", value, "--mapper", "random"],
        ["map", "lenet5", "--layers", value or "x", *QUICK_MAP],
        ["map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--json", target],
        ["map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--objective", value],
        ["map", str(b.root / "lenet.yaml"), *QUICK_MAP, "--input-shape", value],
        ["import", str(b.root / "lenet.yaml"), "-o", str(out / "x.yaml"), "--input-shape", value],
        ["verify", str(b.root / "maps" / "00_conv1.yaml"), "--seed", value],
        ["simulate", str(b.compiled), "--seed", value],
        ["compile", str(b.root / "tiny.xml"), "-o", target, "--opt-level", rng.choice(["3", value])],
        ["show", str(b.root / "maps" / "00_conv1.yaml"), "--arch", value],
    ]
    args = rng.choice(choices)
    outputs = (out / "x.yaml",) if args[0] == "import" else ()
    return run_case("options", args, b.root, outputs=outputs, allowed=(0, 1, 2))


# ---- today's inputs: sparsity, NMP outputs, sweep stores, hardware generation, directives ------------------
def sparse_arch_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """An architecture with a ``sparsity`` block, mutated there (70%) or anywhere, priced with a sparse layer."""
    path = b.root / f"sparch_{i}.yaml"
    if rng.random() < 0.7:
        doc = copy.deepcopy(b.sparse_arch)
        doc["sparsity"] = mutate_doc({**doc["sparsity"], "density": {"weight": 0.5}, "index_bits": 8,
                                      "decompress_below": rng.choice([None, "GLB", "RowSRAM"])},
                                     rng, rng.choice([1, 2]))
        path.write_bytes(dump(doc, "yaml"))
    else:
        doc = write_mutant(path, b.sparse_arch, "yaml", rng)

    def faithful() -> str | None:
        return coercion(doc, load_arch(path).model_dump(), "arch") if isinstance(doc, dict) else None

    density = rng.choice([["--density", "W=0.5"], ["--density", "I=0.25"], []])
    return run_case("sparse-arch", ["map", "lenet5", "--layers", "conv1", *QUICK_MAP, *density, "--arch", str(path)],
                    b.root, check=faithful)


DENSITY_VALUES = ["0.5", "1", "0", "-0.1", "1.5", "nan", "inf", "1e-320", "0x1p-3", "", " ", "true", "1/2", "5e-1",
                  "1" * 400]


def density_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """Densities in a network file (``attrs.densities``) or on the command line (``--density KEY=VALUE``)."""
    if rng.random() < 0.5:
        path = b.root / f"sparse_net_{i}.yaml"
        doc = copy.deepcopy(b.sparse_network)
        layer = rng.choice([ly for ly in doc["layers"] if "densities" in ly["attrs"]])
        layer["attrs"]["densities"] = mutate_doc(layer["attrs"]["densities"], rng, rng.choice([1, 2]))
        path.write_bytes(dump(doc, "yaml"))

        def faithful() -> str | None:
            return coercion(doc, network_to_dict(load_netfile(path)), "network")

        return run_case("density", ["map", str(path), *QUICK_MAP, "--arch", "rtml_192pe"], b.root, check=faithful)
    key = rng.choice(["W", "I", "O", "weights", "activations", "dO", "x", "", "W ", "w"])
    options = [x for _ in range(rng.choice([1, 2])) for x in
               ("--density", rng.choice([f"{key}={rng.choice(DENSITY_VALUES)}", key, "=", f"{key}=0.5=0.5"]))]
    command = rng.choice([["map", "lenet5", "--layers", "conv1", *QUICK_MAP, "--arch", "rtml_192pe"],
                          ["sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", str(b.root / f"ds_{i}.sqlite")],
                          ["generate-hw", "lenet5", "--pes", "16", "--max-candidates", "1", "--yaml",
                           str(b.root / f"dg_{i}.yaml"), "--verilog", str(b.root / f"dg_{i}.vh")]])
    outputs = tuple(b.root / f for f in (f"ds_{i}.sqlite", f"dg_{i}.yaml", f"dg_{i}.vh"))
    return run_case("density", [*command, *options], b.root, outputs=outputs)


def _copy_dir(source: Path, name: str) -> Path:
    target = source.parent / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    return target


def _damage_bytes(data: bytes, rng: random.Random) -> bytes:
    """Flipped bits, a truncation, appended bytes or a zeroed range."""
    buf = bytearray(data)
    op = rng.randrange(4)
    if op == 0:
        for _ in range(rng.choice([1, 1, 3, 20])):
            pos = rng.randrange(len(buf))
            buf[pos] ^= 1 << rng.randrange(8)
    elif op == 1:
        del buf[rng.randrange(len(buf)):]
    elif op == 2:
        buf += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 70)))
    else:
        start = rng.randrange(len(buf))
        buf[start:start + rng.randrange(1, 200)] = bytes(min(200, len(buf) - start))
    return bytes(buf)


def _hostile_params(path: Path, rng: random.Random) -> None:
    """A parameter .npz with one array removed, renamed, reshaped, made non-finite or of another dtype."""
    import numpy as np

    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    key = rng.choice(sorted(arrays))
    op = rng.randrange(7)
    if op == 0:
        del arrays[key]
    elif op == 1:
        arrays[key.replace("/", "/bn_" if rng.random() < 0.5 else "/x")] = arrays.pop(key)
    elif op == 2:
        arrays[key] = arrays[key].reshape(-1)[:-1] if arrays[key].size > 1 else np.zeros((2, 2))
    elif op == 3:
        arrays[key] = arrays[key].copy()
        arrays[key].flat[0] = rng.choice([np.nan, np.inf, 1e300, -1e308])
    elif op == 4:
        arrays[key] = arrays[key].astype(rng.choice([np.complex128, np.bool_, np.int8, np.float16, "U3"]))
    elif op == 5:
        name = key.split("/")[0]
        m = arrays[f"{name}/bias"].shape[0]
        arrays.update({f"{name}/bn_{f}": rng.choice([np.ones(m), np.full(m, -1.0), np.zeros(m), np.ones(m + 1),
                                                     np.full(m, np.nan)]) for f in ("gamma", "beta", "mean", "var")})
    else:
        arrays["extra/weight"] = np.ones(3)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def nmp_dir_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """A compiled NMP directory with its manifest edited or damaged, or another file damaged (its digest in the
    manifest updated half the time, so the damage reaches the program decoder, the network and parameter
    loaders and the simulator)."""
    folder = _copy_dir(b.nmp, f"nmp_{i}")
    manifest = folder / "manifest.json"
    doc = json.loads(manifest.read_text())
    target = rng.choice(["manifest", "manifest", "programs.bin", "programs.bin", "weights.bin", "network.yaml",
                         "params.npz", "missing", "reformatted"])
    if target == "reformatted":  # the same manifest written another way: must still simulate (exit 0)
        manifest.write_text(json.dumps(doc, indent=rng.choice([None, 2, 4]), sort_keys=rng.random() < 0.5))
    elif target == "manifest":
        if rng.random() < 0.85:
            manifest.write_bytes(dump(mutate_doc(doc, rng, rng.choice([1, 1, 2])), "json"))
        else:
            manifest.write_bytes(mutate_text(manifest.read_text(), rng))
    elif target == "missing":
        (folder / rng.choice(["programs.bin", "weights.bin", "network.yaml", "params.npz"])).unlink()
    else:
        path = folder / target
        if target == "network.yaml":
            write_mutant(path, yaml.safe_load(path.read_text()), "yaml", rng)
        elif target == "params.npz" and rng.random() < 0.7:
            _hostile_params(path, rng)
        else:
            path.write_bytes(_damage_bytes(path.read_bytes(), rng))
        if rng.random() < 0.5:
            doc["sha256"][target] = hashlib.sha256(path.read_bytes()).hexdigest()
            manifest.write_text(json.dumps(doc, indent=1))
    return run_case("nmp-dir", ["simulate", str(folder)], b.root, allowed=(0, 1, 2))


STORE_EDITS = [
    "UPDATE results SET latency_s = NULL", "UPDATE results SET energy = 'abc'", "UPDATE results SET macs = -5",
    "UPDATE results SET utilization = 1e308 * 10", "UPDATE results SET energy_unit = NULL",
    "UPDATE results SET arch = 7", "UPDATE results SET area_mm2 = 'x'", "UPDATE results SET macs = 2.5",
    "UPDATE results SET cycles = -1", "UPDATE results SET latency_s = -1e-3", "DROP TABLE results",
    "ALTER TABLE results ADD COLUMN extra REAL", "ALTER TABLE results RENAME TO other",
    "CREATE TABLE results2 (key TEXT)", "DELETE FROM results",
    "INSERT INTO results SELECT key || 'x', arch, model, objective, mapper, latency_s, energy, energy_unit, "
    "area_mm2, cycles, macs, utilization, seconds FROM results",
]


def sweep_store_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """A sweep store edited with SQL (wrong types, NULLs, dropped or extra tables and columns) or damaged
    byte by byte, resumed."""
    path = b.root / f"store_{i}.sqlite"
    shutil.copy(b.store, path)
    if rng.random() < 0.6:
        db = sqlite3.connect(path)
        with db:
            for edit in rng.sample(STORE_EDITS, rng.choice([1, 1, 2])):
                try:
                    db.execute(edit)
                except sqlite3.Error:
                    pass
        db.close()
    else:
        path.write_bytes(_damage_bytes(path.read_bytes(), rng))
    return run_case("sweep-store", ["sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", str(path)],
                    b.root)


def hw_option_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """Hostile values of today's options: budgets, candidate and worker counts, template grids, the NMP
    compiler's options, output paths that exist, are files or sit below a file."""
    value = rng.choice(["-1", "0", "1", "16", "3", str(10**30), "2.5", "", "nan", "inf", "-inf", "1e999", "1e-300",
                        str(2**63), "garbage", " "])
    blocker = b.root / "a_file"
    blocker.write_text("not a directory\n")
    out = b.root / f"hw_out_{i}"
    path = rng.choice([str(out / "x"), str(blocker), str(blocker / "x"), str(b.root), str(b.nmp)])
    cheap = ["--max-candidates", "1"]
    gen = ["generate-hw", "lenet5", "--yaml", str(out / "g.yaml"), "--verilog", str(out / "g.vh")]
    sweep = ["sweep", "lenet5", "--serial", "--store", str(out / "s.sqlite")]
    param = rng.choice(["rows", "cols", "glb_words", "word_bits", "clock_mhz", "offchip_gbps", "bogus", ""])
    choices = [
        [*gen, *cheap, "--area-mm2", value],
        [*gen, *cheap, "--pes", value],
        [*gen, "--pes", "16", "--max-candidates", value],
        [*gen, *cheap, "--pes", "16", "--objective", rng.choice(["edp", "dram", value])],
        [*gen, *cheap, "--pes", "16", "--mapper", rng.choice(["tso", "marvel", value])],
        ["generate-hw", "lenet5", *cheap, "--pes", "16", *rng.choice([["--yaml", path, "--verilog", str(out / "g.vh")],
                                                                      ["--verilog", path, "--yaml", str(out / "g.yaml")]])],
        [*sweep, "--arch", "eyeriss", "--objective", rng.choice(["edp", value])],
        [*sweep, "--param", f"{param}={value}"],
        [*sweep, "--param", f"{param}={rng.choice(['4,8', '4,4', '4', '8,' + value])}"],
        [*sweep, *(x for f in ("rows", "cols", "glb_banks") for x in ("--param", f"{f}={','.join(map(str, range(1, 60)))}"))],
        [*sweep, "--param", f"rows={rng.choice(['4', '8'])}", "--param", f"{rng.choice(['rows', 'cols'])}=4"],
        ["sweep", "lenet5", "--arch", "eyeriss", "--store", str(b.root / f"w_{i}.sqlite"), "--workers", value],
        ["sweep", "lenet5", "--arch", "eyeriss", "--serial", "--store", path],
        ["compile", "lenet5", "--target", "nmp", "-o", path],
        ["compile", "lenet5", "--target", "nmp", "-o", str(out / "c"), "--bits", value],
        ["compile", "lenet5", "--target", "nmp", "-o", str(out / "c"), "--seed", value],
        ["compile", "lenet5", "--target", "nmp", "-o", str(out / "c"), "-O", value],
        ["compile", "lenet5", "--target", "nmp", "-o", str(out / "c"), "--arch", rng.choice(["eyeriss", "nmp", path])],
        ["compile", "lenet5", "--target", "nmp", "-o", str(out / "c"), "--params",
         rng.choice([str(b.nmp / "params.npz"), str(b.nmp / "weights.bin"), path])],
        ["simulate", rng.choice([str(b.nmp), path]), "--seed", value],
        ["show", str(b.root / "maps" / "00_conv1.yaml"), "--dataflow", "--arch", rng.choice(["eyeriss", value])],
    ]
    args = rng.choice(choices)
    # a sweep keeps the rows it finished before a task fails (its store is resumable), so only refusals of
    # options must leave no store
    outputs = (out,) if args[0] == "generate-hw" or str(out / "c") in args else ()
    outputs += (b.root / f"w_{i}.sqlite",) if "--workers" in args else ()
    return run_case("hw-options", args, b.root, outputs=outputs, allowed=(0, 1, 2))


def directives_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """MAESTRO directives of a saved mapping, edited (numbers, names, markers, lines) and parsed back: a legal
    mapping or a DnnmapError naming the line, nothing else (in process; no command reads directive files)."""
    m, op, raw = load_mapping_file(b.root / "maps" / "00_conv1.yaml")
    arch = load_arch(str(raw["arch"]))
    lines = format_directives(m, op, arch).splitlines()
    for _ in range(rng.choice([1, 1, 2, 3])):
        k = rng.randrange(len(lines))
        op_ = rng.randrange(6)
        if op_ == 0:
            words = lines[k].split(" ")
            j = rng.randrange(len(words))
            words[j] = rng.choice(["0", "-1", "9" * rng.choice([3, 30, 5000]), "K", "Z", "Y'", "(", "", "DRAM", "GLB"])
            lines[k] = " ".join(words)
        elif op_ == 1:
            lines.insert(k, lines[k])
        elif op_ == 2:
            del lines[k]
        elif op_ == 3:
            lines.insert(k, rng.choice(["Cluster(3, P);", "Cluster(999999999999, P);", "// level NOPE",
                                        "// fan-out GLB axis 7", "// keeps DRAM: Z", "// layout I: N N",
                                        "SpatialMap(1,1) K;", "TemporalMap(2,2) C;", "Dimensions { K: 1 }"]))
        elif op_ == 4:
            lines[k] = re.sub(r"\d+", lambda mm: str(int(mm.group()) * rng.choice([0, 2, 3]) + rng.choice([0, 1])),
                              lines[k], count=1)
        else:
            lines[k] = lines[k][: rng.randrange(len(lines[k]) + 1)]
    text = "\n".join(lines)
    start = time.perf_counter()
    args = ["<parse_directives>", text[:200]]
    try:
        parsed = parse_directives(text, op, arch)
        validate_mapping(parsed, op, arch)
        problem, code, message = None, 0, ""
    except DnnmapError as err:
        problem, code, message = (None if str(err) else "empty message"), 2, str(err)
    except Exception as err:  # noqa: BLE001 - any other exception is what this case looks for
        problem, code, message = f"traceback: {type(err).__name__}: {err}", -1, str(err)
    return Outcome("directives", args, code, time.perf_counter() - start, message[:200], problem)


def run_json_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """A saved run (``map --json``) mutated structurally or damaged as text, drawn by ``report``: accepted only
    if it still meets the run schema (non-negative numbers, utilization a share, totals the layers' sums)."""
    path = b.root / f"run_{i}.json"
    base = json.loads((b.root / "maps_run.json").read_text())
    doc = write_mutant(path, base, "json", rng)
    out = b.root / f"report_{i}.html"

    def schema_kept() -> str | None:  # an independent check of what an accepted run must satisfy
        accepted = doc if doc is not None else json.loads(path.read_text(encoding="utf-8-sig"))
        layers, totals = accepted["layers"], accepted["totals"]
        for layer in layers:
            if type(layer["macs"]) is not int or layer["macs"] < 0 or not 0 <= layer["utilization"] <= 1 \
                    or min(layer["cycles"], layer["energy"], layer["dram_bytes"]) < 0:
                return f"accepted layer {layer.get('name')!r} with a negative, fractional or out-of-range value"
        if totals["macs"] != sum(x["macs"] for x in layers):
            return "accepted totals that are not the layers' sums"
        return None

    return run_case("run-json", ["report", str(path), "-o", str(out)], b.root, outputs=(out,), check=schema_kept)


WORKLOAD_VALUES = ["8", "+8", "-8", "0", "\uff18", "1_0", "8.0", "0x8", "8e0", " 8", "", "2097152", "9" * 40, "I"]


def _spec_items(rng: random.Random, items: list[str], key: str, extras: list[str]) -> tuple[list[str], bool]:
    """``items`` (``NAME=VALUE``) with, at random, the value of ``key`` made hostile, a bad or repeated item
    added, or an empty item at the start, in the middle or at the end; and whether they are still plain."""
    plain = True
    if rng.random() < 0.5:
        value = rng.choice(WORKLOAD_VALUES)
        items = [f"{key}={value}" if item.startswith(f"{key}=") else item for item in items]
        plain = value.strip() == "8"
    if rng.random() < 0.3:
        items.insert(rng.randrange(len(items) + 1), rng.choice(extras))
        plain = False
    if rng.random() < 0.3:
        items.insert(rng.choice([0, len(items), rng.randrange(len(items) + 1)]), rng.choice(["", " "]))
        plain = False
    return items, plain


def workload_spec_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """Named workload specs (``mttkrp:I=..``, mapped) and zoo parameters (``gpt2:phase=..,seq=..``, listed) with
    hostile sizes, separators, names and empty items anywhere: exit 0 only for a plain spec."""
    separator = rng.choice([",", ", ", " ,"])
    if i % 2:
        items, plain = _spec_items(rng, [f"phase={rng.choice(['decode', 'prefill'])}", "seq=8"], "seq",
                                   ["seq=8", "x=4", "=4", "phase", "Seq=8"])
        spec = "gpt2:" + separator.join(items)
        return run_case("workload-spec", ["models", "--layers", spec], b.root,
                        check=lambda: None if plain else f"accepted {spec!r}")
    items, plain = _spec_items(rng, [f"{d}={rng.choice(['4', '8'])}" for d in "IJKL"], rng.choice("IJKL"),
                               ["Z=4", "I=4", "ij=4", "=4"])
    spec = "mttkrp:" + separator.join(items)
    return run_case("workload-spec", ["map", spec, *QUICK_MAP], b.root,
                    check=lambda: None if plain else f"accepted {spec!r}")


ZIGZAG_HARDWARE = sorted((Path(__file__).resolve().parents[1] / "zigzag" / "fixtures" / "hardware").glob("*.yaml"))


def zigzag_hw_case(b: Bases, rng: random.Random, i: int) -> Outcome:
    """A mutant of one of ZigZag's shipped hardware files (in-memory computing arrays included) through
    ``import-arch zigzag``; the spec it writes must not be left behind after a refusal."""
    source = rng.choice(ZIGZAG_HARDWARE)
    path, out = b.root / f"zz_{i}.yaml", b.root / f"zz_{i}.dnnmap.yaml"
    write_mutant(path, yaml.safe_load(source.read_text()), "yaml", rng, text=source.read_text())
    return run_case("zigzag-hw", ["import-arch", "zigzag", str(path), "-o", str(out)], b.root, outputs=(out,))


KINDS: dict[str, Callable[[Bases, random.Random, int], Outcome]] = {
    "arch": arch_case, "network": network_case, "mapping": mapping_case, "nve-spec": nve_spec_case,
    "nve-xml": xml_case, "nve-manifest": manifest_case, "nve-binary": binary_case, "options": option_case,
    "sparse-arch": sparse_arch_case, "density": density_case, "nmp-dir": nmp_dir_case,
    "sweep-store": sweep_store_case, "hw-options": hw_option_case, "directives": directives_case,
    "run-json": run_json_case, "workload-spec": workload_spec_case, "zigzag-hw": zigzag_hw_case,
}


def fuzz(bases: Bases, counts: dict[str, int], seed: int = 0) -> Tally:
    """Run ``counts[kind]`` seeded cases of every kind; returns the tally (problems are not raised)."""
    tally = Tally()
    for kind, n in counts.items():
        rng = random.Random(f"{seed}-{kind}")
        for i in range(n):
            tally.add(KINDS[kind](bases, rng, i))
    return tally
