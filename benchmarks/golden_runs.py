"""Golden runs: record the outputs of a fixed set of command-line runs, or compare two recordings.

    python benchmarks/golden_runs.py --out golden.json [--jobs 2] [--only REGEX]
    python benchmarks/golden_runs.py --compare before.json after.json [--strict-text]

The proof that a refactor changed no number: record before, record after, compare. Everything is
driven through the ``dnnmap`` command line (the console script named in pyproject.toml, started
with this Python) and the benchmark scripts, never by importing dnnmap, so the script works
unchanged when modules move. Each run executes in its own temporary directory with relative
output names; a run records per command its exit code, stdout and stderr lines (timings masked),
the ``--json`` file it wrote, and the sha256 or text of the files it wrote. ``--compare`` prints
every differing number or value with its path and exits 1 if there is any; lines whose numbers
are equal but whose words changed are listed as text-only changes (fatal with ``--strict-text``).
Timings, dates, evaluation speeds and wall times are excluded. README.md "Documentation and benchmarks" says when to use it.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FORMAT = "dnnmap-golden/1"

# ---------------------------------------------------------------- the fixed set of runs

PRESETS = ("eyeriss", "tpu_like", "marvel_platform1")
OBJECTIVES = ("edp", "energy")
# three layers of different shapes per model: a large-kernel / 3x3 convolution, a depthwise, a 1x1
LAYERS = {"resnet18": ("conv1", "layer4.0.conv2", "layer4.0.downsample.0"),
          "mobilenetv2": ("conv1", "block_6_depthwise", "block_16_project")}
# the optimal mapper only where it proves the optimum in seconds (a time-limited result is not reproducible)
# (MobileNetV2's depthwise layers keep a gap after 60 s on marvel_platform1, edp)
OPTIMAL_LAYERS = {"resnet18": ("layer4.0.downsample.0",), "mobilenetv2": ("block_16_project",)}
# the exhaustive mapper only where its space is small (elsewhere the main layers record the refusal)
EXHAUSTIVE_LAYERS = {"resnet18": ("fc",)}
# left out: the Marvel mapper searches minutes per layer on tpu_like (or refuses the layer)
SLOW = {("marvel", "tpu_like")}
RANDOM_BUDGET = 2000
OPTIMAL_SECONDS = 60  # generous: these layers prove in 1-10 s; an unproven layer is flagged by --compare

# masks applied to every recorded text line: timings, dates, speeds (values that change run to run)
TIMING_MASKS = (
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "<date>"),
    (re.compile(r"\d[\d.,]*\s?[kMG]?\s?(mappings|evaluations|candidates|points|configurations|layers)"
                r"\s?(/s|per second|/min)"), "<rate>"),
    (re.compile(r"(?<![\w.])\d+(\.\d+)?\s?(s|sec|seconds|min)\b(?!/)"), "<time>"),
)
PADDING = (re.compile(r"\s+<time>"), " <time>")  # a column's padding depends on the timing's width
# Marvel tables: the Fig. 8 seconds column, the switches' time ratio and their summary
MARVEL_MASKS = (
    (re.compile(r"^(L\d+ .*\| energy .*\|\s*)\d+(\.\d+)?\s*$"), r"\1<time>"),
    (re.compile(r"^(L\d+\s+[\d,]+\s+[\d,]+\s+\w+ \|.*\s)\d+(\.\d+)?\s*$"), r"\1<time>"),
    (re.compile(r"search \d+(\.\d+)?x slower"), "search <time>x slower"),
)
EXCLUDED_KEYS = frozenset({"created", "seconds", "compile_seconds", "runtime_s"})  # JSON fields --compare skips
TEXT_KEYS = frozenset({"stdout", "stderr"})


@dataclass(frozen=True)
class Step:
    """One command: ``argv[0]`` is ``dnnmap`` (the CLI) or a script path relative to the repository."""
    argv: tuple[str, ...]
    json_file: str | None = None  # written by the command into the run directory, recorded as data
    retry_layers: bool = False  # on a refusal naming a layer: run each layer of --layers alone as well


@dataclass(frozen=True)
class Run:
    """A named sequence of steps sharing one working directory."""
    id: str
    steps: tuple[Step, ...]
    hash_dir: str | None = None  # every file written under this directory: JSON data or sha256
    text_files: tuple[str, ...] = ()  # files recorded line by line
    masks: tuple[tuple[re.Pattern[str], str], ...] = field(default=())


def map_step(model: str, arch: str, mapper: str, objective: str, layers: tuple[str, ...],
             retry: bool = True) -> Step:
    """``dnnmap map`` of some layers with its JSON output."""
    argv = ["dnnmap", "map", model, "--arch", arch, "--mapper", mapper, "--objective", objective,
            "--layers", ",".join(layers), "--json", "out.json"]
    if mapper == "random":
        argv += ["--budget", str(RANDOM_BUDGET)]
    if mapper == "optimal":
        argv += ["--budget-seconds", str(OPTIMAL_SECONDS)]
    return Step(tuple(argv), "out.json", retry and len(layers) > 1)


def mapper_runs() -> Iterator[Run]:
    """Every mapper on a few layers of ResNet-18 and MobileNetV2, three presets, two objectives."""
    for model, layers in LAYERS.items():
        for arch in PRESETS:
            for objective in OBJECTIVES:
                for mapper in ("auto", "random", "sunstone", "marvel", "tso"):
                    if (mapper, arch) in SLOW:
                        continue
                    yield Run(f"map/{model}/{arch}/{objective}/{mapper}",
                              (map_step(model, arch, mapper, objective, layers),))
                yield Run(f"map/{model}/{arch}/{objective}/optimal",
                          (map_step(model, arch, "optimal", objective, OPTIMAL_LAYERS[model]),))
                for small in EXHAUSTIVE_LAYERS.get(model, ()):
                    yield Run(f"map/{model}/{arch}/{objective}/exhaustive-{small}",
                              (map_step(model, arch, "exhaustive", objective, (small,)),))
            # the exhaustive refusals (with each layer's space size) do not depend on the objective
            yield Run(f"map/{model}/{arch}/edp/exhaustive", (map_step(model, arch, "exhaustive", "edp", layers),))
        for objective in OBJECTIVES:  # the TSO mapper's own preset
            yield Run(f"map/{model}/nmp/{objective}/tso", (map_step(model, "nmp", "tso", objective, layers),))


def other_runs() -> Iterator[Run]:
    """Whole networks, paper tables, fusion, code generation and hardware generation."""
    yield Run("map/resnet18/eyeriss/whole", (Step(("dnnmap", "map", "resnet18", "--arch", "eyeriss", "--json",
                                                   "out.json"), "out.json"),))
    yield Run("tables/tso", (Step(("benchmarks/tso_table.py",)),))
    # --quick without the search-cost section: it compares against wall-time-limited random and optimal runs
    yield Run("tables/marvel", (Step(("benchmarks/marvel_tables.py", "--quick", "--sections",
                                      "offchip,fig8,switches,uniform")),), masks=MARVEL_MASKS)
    yield Run("fusion/resnet18/hwff_config1", (Step(("dnnmap", "map", "resnet18", "--arch", "hwff_config1",
                                                     "--fuse", "auto")),))
    yield Run("nmp/lenet5", (Step(("dnnmap", "compile", "lenet5", "--target", "nmp", "-o", "out")),
                             Step(("dnnmap", "simulate", "out"))), hash_dir="out")
    yield Run("nve/nve_face", (Step(("dnnmap", "compile", "nve_face", "--target", "nve", "-o", "out")),
                               Step(("dnnmap", "simulate", "out"))), hash_dir="out")
    yield Run("hwgen/lenet5", (Step(("dnnmap", "generate-hw", "lenet5", "--pes", "64", "--max-candidates", "8",
                                     "--yaml", "hw.yaml", "--verilog", "hw.vh")),), text_files=("hw.yaml", "hw.vh"))


def all_runs() -> list[Run]:
    return [*other_runs(), *mapper_runs()]  # the longest runs first: shorter ones fill in beside them


# ---------------------------------------------------------------- recording

def cli_prefix() -> list[str]:
    """How to start the ``dnnmap`` console script with this Python: its ``module:attr`` from pyproject.toml."""
    target = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["dnnmap"]
    module, _, attr = target.partition(":")
    code = (f"import functools, importlib, sys; sys.argv[0] = 'dnnmap'; "
            f"functools.reduce(getattr, {attr!r}.split('.'), importlib.import_module({module!r}))()")
    return [sys.executable, "-c", code]


def masked_lines(text: str, masks: tuple[tuple[re.Pattern[str], str], ...]) -> list[str]:
    """``text`` as lines with trailing blanks dropped and timings, dates and speeds masked."""
    lines = []
    for line in text.splitlines():
        for pattern, repl in (*TIMING_MASKS, *masks, PADDING):
            line = pattern.sub(repl, line)
        lines.append(line.rstrip())
    return lines


def execute(step: Step, cwd: Path, env: dict[str, str], masks: tuple[tuple[re.Pattern[str], str], ...]) -> dict:
    """Run one step and record its exit code, masked output and JSON file."""
    program = cli_prefix() if step.argv[0] == "dnnmap" else [sys.executable, str(ROOT / step.argv[0])]
    proc = subprocess.run(program + list(step.argv[1:]), cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    record: dict[str, Any] = {"argv": list(step.argv), "exit_code": proc.returncode,
                              "stdout": masked_lines(proc.stdout, masks), "stderr": masked_lines(proc.stderr, masks)}
    if step.json_file is not None:
        path = cwd / step.json_file
        record["json"] = json.loads(path.read_text()) if path.is_file() else None
        path.unlink(missing_ok=True)
    return record


def layer_retries(step: Step, record: dict) -> list[Step]:
    """After a refusal naming a layer (exit 2), each other layer of ``--layers`` alone, to record which run and
    which are refused."""
    refused = {name for line in record["stderr"] for name in re.findall(r"layer '([^']+)'", line)}
    if not step.retry_layers or record["exit_code"] != 2 or not refused:
        return []
    argv = list(step.argv)
    at = argv.index("--layers") + 1
    return [Step(tuple(argv[:at] + [layer] + argv[at + 1:]), step.json_file)
            for layer in argv[at].split(",") if layer not in refused]


def file_record(path: Path) -> Any:
    """A written file: its data if JSON (so that timing fields can be skipped), else its sha256."""
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_run(run: Run) -> dict:
    """Execute ``run`` in a fresh directory and return its record."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="golden-") as tmp:
        cwd = Path(tmp)
        steps = []
        for step in run.steps:
            steps.append(execute(step, cwd, env, run.masks))
            steps += [execute(retry, cwd, env, run.masks) for retry in layer_retries(step, steps[-1])]
        result: dict[str, Any] = {"steps": steps}
        if run.hash_dir is not None:
            base = cwd / run.hash_dir
            result["files"] = {p.relative_to(base).as_posix(): file_record(p)
                               for p in sorted(base.rglob("*")) if p.is_file()}
        if run.text_files:
            result["texts"] = {name: masked_lines((cwd / name).read_text(), run.masks) if (cwd / name).is_file()
                               else None for name in run.text_files}
    result["runtime_s"] = round(time.perf_counter() - t0, 2)
    return result


def record(out: Path, jobs: int, only: str | None) -> int:
    """Record every run (or those whose id matches ``only``) into ``out``."""
    runs = [r for r in all_runs() if only is None or re.search(only, r.id)]
    t0 = time.perf_counter()
    records: dict[str, dict] = {}

    def one(run: Run) -> None:
        records[run.id] = record_run(run)
        codes = ",".join(str(s["exit_code"]) for s in records[run.id]["steps"])
        print(f"[{len(records)}/{len(runs)}] {run.id}: exit {codes}, {records[run.id]['runtime_s']:.1f} s",
              file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, runs))
    data = {"format": FORMAT, "runtime_s": round(time.perf_counter() - t0, 1),
            "runs": {run.id: records[run.id] for run in runs}}
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}: {len(runs)} runs in {data['runtime_s']:.1f} s", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- comparing

NUMBER = re.compile(r"(?:(?<![\w)])-)?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass
class Differences:
    values: list[str] = field(default_factory=list)  # differing numbers and values: fatal
    text: list[str] = field(default_factory=list)  # lines with the same numbers but other words


def compare_line(path: str, old: str, new: str, diffs: Differences) -> None:
    """Report each differing number of two versions of a line, or the line as a text-only change."""
    old_numbers, new_numbers = NUMBER.findall(old), NUMBER.findall(new)
    matcher = difflib.SequenceMatcher(a=old_numbers, b=new_numbers, autojunk=False)
    changed = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    for _, i1, i2, j1, j2 in changed:
        diffs.values.append(f"{path} number {i1 + 1}: {' '.join(old_numbers[i1:i2]) or '(none)'} -> "
                            f"{' '.join(new_numbers[j1:j2]) or '(none)'}")
    target = diffs.values if changed else diffs.text
    target.append(f"{path}\n    - {old}\n    + {new}")


def compare_lines(path: str, old: list[str], new: list[str], diffs: Differences) -> None:
    """Align two texts line by line (difflib) and compare the lines that changed."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for i, j in zip(range(i1, i2), range(j1, j2)):
                compare_line(f"{path}[line {i + 1}]", old[i], new[j], diffs)
            continue
        for i in range(i1, i2):
            diffs.values.append(f"{path}[line {i + 1}] removed: {old[i]}")
        for j in range(j1, j2):
            diffs.values.append(f"{path}[new line {j + 1}] added: {new[j]}")


def compare_data(path: str, old: Any, new: Any, diffs: Differences) -> None:
    """Recursive comparison of two recorded values; text blocks line by line, numbers exactly."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            if key in EXCLUDED_KEYS:
                continue
            sub = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                diffs.values.append(f"{sub}: {'<missing>' if key not in old else 'present'} -> "
                                    f"{'<missing>' if key not in new else 'present'}")
            elif key in TEXT_KEYS or path.endswith(".texts"):
                compare_lines(sub, old[key] or [], new[key] or [], diffs)
            else:
                compare_data(sub, old[key], new[key], diffs)
    elif isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip_longest(old, new)):
            if i >= len(old) or i >= len(new):
                diffs.values.append(f"{path}[{i}]: {a!r} -> {b!r}")
            else:
                compare_data(f"{path}[{i}]", a, b, diffs)
    elif isinstance(old, str) and isinstance(new, str) and "\n" in old + new:
        compare_lines(path, old.splitlines(), new.splitlines(), diffs)
    elif old != new or type(old) is not type(new):
        diffs.values.append(f"{path}: {old!r} -> {new!r}")


def unproven(data: dict) -> list[str]:
    """Runs of the optimal mapper that stopped on their time budget (results not reproducible)."""
    return sorted({run_id for run_id, run in data["runs"].items() for step in run["steps"]
                   if any("gap" in str(layer.get("mapper", "")) for layer in (step.get("json") or {}).get("layers", []))})


def compare(old_path: Path, new_path: Path, strict_text: bool) -> int:
    """Print every difference between two recordings; 1 if any number or value differs."""
    old, new = (json.loads(p.read_text()) for p in (old_path, new_path))
    for p, d in ((old_path, old), (new_path, new)):
        if d.get("format") != FORMAT:
            print(f"error: {p}: not a golden-runs recording (format {d.get('format')!r}, expected {FORMAT})")
            return 2
    diffs = Differences()
    compare_data("runs", old["runs"], new["runs"], diffs)
    for label, items in (("differing numbers and values", diffs.values), ("text-only changes", diffs.text)):
        if items:
            print(f"{len(items)} {label}:")
            for item in items:
                print(f"  {item}")
    for p, d in ((old_path, old), (new_path, new)):
        if late := unproven(d):
            print(f"warning: {p}: the optimal mapper stopped on its time limit in {', '.join(late)}; "
                  "those results depend on the machine's speed")
    same = not diffs.values and not (strict_text and diffs.text)
    print(f"{'same' if same else 'DIFFERENT'}: {len(old['runs'])} runs in {old_path}, {len(new['runs'])} in {new_path} "
          f"({old.get('runtime_s')} s and {new.get('runtime_s')} s to record)")
    return 0 if same else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=Path, help="record every run into this JSON file")
    mode.add_argument("--compare", type=Path, nargs=2, metavar=("OLD", "NEW"), help="compare two recordings")
    ap.add_argument("--jobs", type=int, default=2, help="runs in parallel while recording")
    ap.add_argument("--only", help="record only the runs whose id matches this regular expression")
    ap.add_argument("--strict-text", action="store_true", help="--compare: text-only changes count as differences")
    args = ap.parse_args()
    if args.out is not None:
        return record(args.out, max(1, args.jobs), args.only)
    return compare(*args.compare, args.strict_text)


if __name__ == "__main__":
    sys.exit(main())
