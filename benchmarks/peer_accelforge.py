"""AccelForge beside dnnmap on one architecture written for both tools (issue 28's side-by-side benchmark).

Inputs: the shared reference folder ``shared/reference/peer-inputs/accelforge`` (an Eyeriss-like architecture
in both formats, dnnmap's ``eyeriss`` preset with hop energy 0; the 1x1 convolution ``r18_l3ds_s1`` and BERT-base's
query projection ``bert_qproj``). For each layer, in one run:

- AccelForge's mapper (FFM) with its default storage order and with ``force_memory_hierarchy_order=False``
  (each tensor's storage at its own depth), energy objective: its energy, latency and CPU seconds;
- dnnmap's mappers (``optimal`` with its certificate over the shared-boundary space, with ``--placement``, with
  ``both_axes`` on the PE array's level (a constraints file's ``both_axes: true``) and with both; ``random
  --placement`` with ``both_axes``, the widest space dnnmap searches): energy, seconds;
- each tool's best mapping priced in the other tool's model (AccelForge's loop tree translated into a dnnmap
  mapping with per-tensor placement and both-axis unrolling; dnnmap's loop nest written as an AccelForge
  mapping), or the reason a mapping cannot be expressed in the other format.

Energies are in MAC units (the MAC costs 1 in both specs). Not part of the test run.

Run: ``python benchmarks/peer_accelforge.py [--accelforge-python PY] [--layers r18_l3ds_s1,bert_qproj]
[--random-budget N] [--optimal-seconds S]``. AccelForge needs Python >= 3.12 and graphviz's ``dot``:
``python3.12 -m venv /work/afvenv && /work/afvenv/bin/pip install accelforge`` and ``apt-get install graphviz``.
Without it (or without the shared inputs) the AccelForge columns are skipped with the reason.
Translation semantics (what differs between the two models) are in docs/search.md, "AccelForge side by side".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import DnnmapError, MappingError
from dnnmap.mapping.mapping import BOTH_AXES, LevelMapping, Mapping, validate_mapping
from dnnmap.search import registry
from dnnmap.search.constraints import Constraints, LevelConstraints
from dnnmap.search.options import SearchOptions
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator

INPUTS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "peer-inputs" / "accelforge"

# The shared architecture's components: AccelForge memory -> dnnmap level name (the register file is three
# per-tensor memories in AccelForge, one level with per-role capacities in dnnmap); spatial names -> fan-out axis.
LEVEL_OF_COMPONENT = {"DRAM": "DRAM", "GLB": "GLB", "InputRF": "RF", "WeightRF": "RF", "OutputRF": "RF"}
RF_COMPONENT_OF_ROLE = {"input": "InputRF", "weight": "WeightRF", "output": "OutputRF"}
AXIS_OF_SPATIAL = {"X": 0, "Y": 1}
SPATIAL_OF_AXIS = {0: "X", 1: "Y"}
TENSOR_NAMES = {"I": "I", "Wt": "W", "O": "O"}  # AccelForge tensor -> dnnmap tensor


@dataclass(frozen=True)
class Layer:
    """One shared workload: the dnnmap operator and AccelForge's rank variables -> dnnmap dimensions."""

    name: str
    op: Operator
    ranks: dict[str, str]


def shared_layers() -> dict[str, Layer]:
    """The workloads of the shared folder as dnnmap operators (their sizes are checked against the files)."""
    conv = ops.conv2d("r18_l3ds_s1", 128, 256, (14, 14), 1, 1, 0, 1, 1)
    qproj = ops.matmul("bert_qproj", 128, 768, 768)
    return {"r18_l3ds_s1": Layer("r18_l3ds_s1", conv, {"k": "K", "c": "C", "p": "P", "q": "Q"}),
            "bert_qproj": Layer("bert_qproj", qproj, {"m": "M", "n": "N", "k": "K"})}


def check_sizes(layer: Layer, workload_file: Path) -> None:
    """The AccelForge workload's ``0 <= r < n`` bounds equal the dnnmap operator's dimensions."""
    bounds = {r: int(n) for r, n in re.findall(r"0\s*<=\s*(\w+)\s*<\s*(\d+)", workload_file.read_text())}
    dims = dict(layer.op.dims)
    for rank, dim in layer.ranks.items():
        if bounds.get(rank) != dims[dim]:
            raise SystemExit(f"error: {workload_file}: {rank} < {bounds.get(rank)} but dnnmap's {layer.name} has "
                             f"{dim} = {dims[dim]}")


def shared_arch(inputs: Path) -> ArchSpec:
    """dnnmap's side of the shared architecture (the folder's YAML; the eyeriss preset with hop energy 0)."""
    return load_arch(str(inputs / "eyeriss_shared.dnnmap.yaml"))


# --- AccelForge, run in its own Python -------------------------------------------------------------------------

_ACCELFORGE_RUN = r"""
import json, resource, sys, time, logging, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.CRITICAL)
import accelforge as af
af.set_n_parallel_jobs(1, print_message=False)
mode, arch, workload = sys.argv[1:4]
def cpu():
    r = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(x.ru_utime + x.ru_stime for x in r)
c0, t0 = cpu(), time.perf_counter()
if mode == "evaluate":
    spec = af.Spec.from_yaml(arch, workload, sys.argv[4])
    result = spec.evaluate_mapping()
    json.dump({"energy": float(result.energy()), "latency_s": float(result.latency())}, sys.stdout)
    sys.exit(0)
spec = af.Spec.from_yaml(arch, workload)
spec.mapper.metrics = af.mapper.Metrics.ENERGY
spec.mapper.force_memory_hierarchy_order = mode == "search-ordered"
result = spec.map_workload_to_arch(print_progress=False)
mapping = result.data.iloc[0]["Total<SEP>mapping"]()
nodes = []
for n in mapping.nodes:
    kind = type(n).__name__
    if kind == "Storage":
        nodes.append({"kind": kind, "tensors": list(n.tensors), "component": n.component})
    elif kind in ("Temporal", "Spatial"):
        nodes.append({"kind": kind, "rank": str(n.rank_variable), "tile": int(n.tile_shape),
                      "name": str(getattr(n, "name", ""))})
    elif kind == "Compute":
        nodes.append({"kind": kind, "einsum": str(n.einsum)})
json.dump({"energy": float(result.energy()), "latency_s": float(result.latency()), "cpu_s": cpu() - c0,
           "wall_s": time.perf_counter() - t0, "nodes": nodes}, sys.stdout)
"""


def find_accelforge_python(given: str | None) -> str | None:
    """The Python that imports accelforge: ``given``, ``$ACCELFORGE_PYTHON``, /work/afvenv, or python3.12/3.13."""
    candidates = [given, os.environ.get("ACCELFORGE_PYTHON"), "/work/afvenv/bin/python",
                  shutil.which("python3.12"), shutil.which("python3.13")]
    for python in candidates:
        if python and Path(python).exists():
            probe = subprocess.run([python, "-c", "import accelforge"], capture_output=True, check=False)
            if probe.returncode == 0:
                return python
    return None


def run_accelforge(python: str, mode: str, arch: Path, workload: Path, mapping: Path | None = None) -> dict | str:
    """AccelForge's result (``mode``: search-ordered, search-free or evaluate), or why it failed."""
    args = [python, "-c", _ACCELFORGE_RUN, mode, str(arch), str(workload)] + ([str(mapping)] if mapping else [])
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return f"AccelForge failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
    return json.loads(proc.stdout)


# --- translations ----------------------------------------------------------------------------------------------

class NotExpressible(ValueError):
    """A mapping the other tool's format cannot hold."""


def accelforge_to_dnnmap(nodes: list[dict], layer: Layer, arch: ArchSpec) -> Mapping:
    """AccelForge's loop tree (top-down nodes) as a dnnmap mapping.

    A temporal loop belongs to the innermost level with a storage node above it, or to the level under the
    fan-out once a spatial loop was passed; a tensor's storage node after ``n`` of its level's loops is
    ``loops_above = n`` (docs/cost-model.md 1b); a dimension spatial over X and Y is ``spatial_axis: 2``."""
    names = [lv.name for lv in arch.levels]
    fan_level = next(i for i, lv in enumerate(arch.levels) if lv.fanout is not None)
    extent = {rank: dict(layer.op.dims)[dim] for rank, dim in layer.ranks.items()}
    temporal: list[list[tuple[str, int]]] = [[] for _ in names]
    spatial: dict[str, int] = {}
    axes: dict[str, set[int]] = {}
    above: list[dict[str, int]] = [{} for _ in names]
    keeps: list[list[str]] = [[] for _ in names]
    innermost, passed_fanout = len(names) - 1, False
    for node in nodes:
        if node["kind"] == "Storage":
            level = names.index(LEVEL_OF_COMPONENT[node["component"]])
            innermost = min(innermost, level)
            for t in node["tensors"]:
                keeps[level].append(TENSOR_NAMES[t])
                above[level][TENSOR_NAMES[t]] = len(temporal[level])
        elif node["kind"] in ("Temporal", "Spatial"):
            rank, tile = node["rank"], node["tile"]
            if extent[rank] % tile:
                raise NotExpressible(f"{rank}: tile {tile} does not divide {extent[rank]} (imperfect factor)")
            factor, extent[rank] = extent[rank] // tile, tile
            if factor == 1:
                continue
            dim = layer.ranks[rank]
            if node["kind"] == "Spatial":
                passed_fanout = True
                spatial[dim] = spatial.get(dim, 1) * factor
                axes.setdefault(dim, set()).add(AXIS_OF_SPATIAL[node["name"]])
                continue
            level = fan_level - 1 if passed_fanout else innermost
            if any(d == dim for d, _ in temporal[level]):
                raise NotExpressible(f"{dim} loops twice at level {names[level]}")
            temporal[level].append((dim, factor))
    levels = []
    for i, loops in enumerate(temporal):
        backing = i == len(names) - 1
        lm = LevelMapping(temporal=tuple(loops), order=tuple(d for d, _ in loops),
                          keeps=None if backing else tuple(keeps[i]),
                          loops_above=() if backing else tuple((t, n) for t, n in above[i].items() if n))
        if i == fan_level:
            lm = replace(lm, spatial=tuple(spatial.items()),
                         spatial_axis=tuple((d, BOTH_AXES if len(a) > 1 else a.pop()) for d, a in axes.items()))
        levels.append(lm)
    mapping = Mapping(tuple(levels), layer=layer.name, arch=arch.name)
    validate_mapping(mapping, layer.op, arch)
    return mapping


def dnnmap_to_accelforge(mapping: Mapping, layer: Layer, arch: ArchSpec, einsum: str) -> str:
    """A dnnmap loop nest as an AccelForge mapping (YAML): per level, outermost first, each kept tensor's storage
    node after its ``loops_above`` loops, the fan-out as X/Y spatial loops, the compute at the bottom.

    AccelForge refetches a tile on every iteration of the loops above its storage node, dnnmap only when the
    tile changes; a storage node is therefore lifted above the temporal loops right above it that its tensor
    does not depend on (which changes nothing in dnnmap's model, docs/cost-model.md 1b), and a level's loops
    below its last storage node are written below its fan-out's spatial loops (the same steps over the same
    instances) so that the child's storage nodes can be lifted over them."""
    op, dims = layer.op, tuple(d for d, _ in layer.op.dims)
    rank_of = {dim: rank for rank, dim in layer.ranks.items()}
    extent = dict(op.dims)
    af_tensor = {v: k for k, v in TENSOR_NAMES.items()}
    role = {t.name: t.role for t in op.tensors}
    uses = {t.name: {d for ax in t.axes for d, _ in ax.terms} for t in op.tensors}
    nodes: list[tuple[str, str, str]] = []  # (kind (Storage<level>), dim or tensor, YAML line)

    def loop(kind: str, dim: str, factor: int, extra: str = "") -> None:
        if dim not in rank_of:
            raise NotExpressible(f"dimension {dim} has no AccelForge rank")
        extent[dim] //= factor
        nodes.append((kind, dim, f"!{kind} {{rank_variable: {rank_of[dim]}, tile_shape: {extent[dim]}{extra}}}"))

    def storage(level: int, tensors: list[str]) -> None:
        for t in tensors:
            component = RF_COMPONENT_OF_ROLE[role[t]] if arch.levels[level].name == "RF" else arch.levels[level].name
            at = len(nodes)
            while at > 0 and (nodes[at - 1][0] == "Temporal" and nodes[at - 1][1] not in uses[t]
                              or nodes[at - 1][0] == f"Storage{level}"):
                at -= 1
            nodes.insert(at, (f"Storage{level}", t, f"!Storage {{tensors: [{af_tensor[t]}], component: {component}}}"))

    for i in reversed(range(len(arch.levels))):
        lm = mapping.levels[i]
        kept = list(mapping.kept_tensors(i, op, arch))
        loops = lm.loops(dims)
        last = max((lm.above(t) for t in kept), default=0) if i < len(arch.levels) - 1 else 0
        for n in range(last + 1):
            storage(i, [t for t in kept if (0 if i == len(arch.levels) - 1 else lm.above(t)) == n])
            if n < last:
                loop("Temporal", loops[n], lm.t(loops[n]))
        fanout = arch.levels[i].fanout
        axes = dict(lm.spatial_axis)
        free = list(fanout.shape) if fanout is not None else []
        for d, f in lm.spatial:
            if f > 1 and axes.get(d, 0) != BOTH_AXES:
                free[axes.get(d, 0)] //= f
        for d, f in lm.spatial:
            if f == 1:
                continue
            a = axes.get(d, 0)
            if a != BOTH_AXES:
                loop("Spatial", d, f, f", name: {SPATIAL_OF_AXIS[a]}, component: PE")
                continue
            x = max(x for x in range(1, f + 1) if f % x == 0 and x <= free[0] and f // x <= free[1])
            free[0], free[1] = free[0] // x, free[1] // (f // x)
            loop("Spatial", d, x, ", name: X, component: PE")
            loop("Spatial", d, f // x, ", name: Y, component: PE")
        for d in loops[last:]:
            loop("Temporal", d, lm.t(d))
    if any(v != 1 for v in extent.values()):
        raise NotExpressible(f"padded factors (left {extent}): AccelForge's tile shapes are exact here")
    body = [f"  - {line}" for _, _, line in nodes] + [f"  - !Compute {{einsum: {einsum}, component: MAC}}"]
    return "\n".join(["mapping:", "  nodes:", *body]) + "\n"


def dnnmap_energy(mapping: Mapping, layer: Layer, arch: ArchSpec) -> float | str:
    """Energy of ``mapping`` in dnnmap's model, or why it does not fit."""
    cost = CostModel(layer.op, arch).evaluate(MappingBatch.from_mappings(layer.op, arch, [mapping]))
    return float(cost.energy[0]) if cost.valid[0] else "does not fit in dnnmap's capacities"


# --- dnnmap's side ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DnnmapRun:
    label: str
    energy: float
    seconds: float
    mapping: Mapping
    certificate: str


def run_dnnmap(label: str, mapper: str, layer: Layer, arch: ArchSpec, options: SearchOptions) -> DnnmapRun | str:
    """One dnnmap mapper on the layer (energy objective): its best energy, seconds and certificate."""
    try:
        entry = registry.check_options(mapper, options)
    except DnnmapError as exc:
        return str(exc)
    t0 = time.perf_counter()
    try:
        result = entry.search(layer.op, arch, "energy", options)
    except MappingError as exc:
        return str(exc)
    seconds = time.perf_counter() - t0
    return DnnmapRun(label, float(result.cost.energy[0]), seconds, result.mapping, result.mapper)


def fmt(value: float | str) -> str:
    return f"{value:,.0f}" if isinstance(value, float) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accelforge-python", default=None, help="Python with accelforge installed")
    parser.add_argument("--inputs", type=Path, default=INPUTS, help="the shared inputs folder")
    parser.add_argument("--layers", default="r18_l3ds_s1,bert_qproj")
    parser.add_argument("--random-budget", type=int, default=2_000_000, help="samples of random --placement")
    parser.add_argument("--optimal-seconds", type=float, default=300.0, help="optimal mapper's limit per layer")
    args = parser.parse_args()
    if not args.inputs.is_dir():
        print(f"skipped: no shared AccelForge inputs at {args.inputs}")
        return
    layers = shared_layers()
    unknown = [n for n in args.layers.split(",") if n not in layers]
    if unknown:
        raise SystemExit(f"error: --layers: unknown {unknown}; known: {', '.join(layers)}")
    arch_af = args.inputs / "eyeriss_shared.af.yaml"
    arch = shared_arch(args.inputs)
    python = find_accelforge_python(args.accelforge_python)
    if python is None:
        print("AccelForge columns skipped: no Python that imports accelforge (see the docstring to install it)")
    for name in args.layers.split(","):
        layer, workload = layers[name], args.inputs / f"{name}.workload.yaml"
        check_sizes(layer, workload)
        print(f"\n## {name}: {layer.op.macs:,} MACs, energy in MAC units")
        print("| tool / search | energy | in the other model | seconds | note |")
        print("|---|---|---|---|---|")
        einsum = "O"
        if python is not None:
            for mode, label in (("search-ordered", "AccelForge FFM (default order)"),
                                ("search-free", "AccelForge FFM, force_memory_hierarchy_order=False")):
                res = run_accelforge(python, mode, arch_af, workload)
                if isinstance(res, str):
                    print(f"| {label} | - | - | - | {res} |")
                    continue
                einsum = next((n["einsum"] for n in res["nodes"] if n["kind"] == "Compute"), einsum)
                try:
                    other: float | str = dnnmap_energy(accelforge_to_dnnmap(res["nodes"], layer, arch), layer, arch)
                except (NotExpressible, MappingError) as exc:
                    other = f"not expressible: {exc}"
                print(f"| {label} | {res['energy']:,.0f} | dnnmap: {fmt(other)} | {res['cpu_s']:.1f} CPU "
                      f"({res['wall_s']:.1f} wall) | |")
        both = Constraints(tuple((lv.name, LevelConstraints(both_axes=True)) for lv in arch.levels
                                 if lv.fanout is not None and len(lv.fanout.shape) == 2))
        runs = [("dnnmap optimal", "optimal", SearchOptions(budget_seconds=args.optimal_seconds)),
                ("dnnmap optimal --placement", "optimal",
                 SearchOptions(budget_seconds=args.optimal_seconds, placement=True)),
                ("dnnmap optimal, both_axes", "optimal",
                 SearchOptions(budget_seconds=args.optimal_seconds, constraints=both)),
                ("dnnmap optimal --placement, both_axes", "optimal",
                 SearchOptions(budget_seconds=args.optimal_seconds, placement=True, constraints=both)),
                (f"dnnmap random --placement, both_axes, --budget {args.random_budget}", "random",
                 SearchOptions(budget=args.random_budget, placement=True, constraints=both))]
        for label, mapper, options in runs:
            run = run_dnnmap(label, mapper, layer, arch, options)
            if isinstance(run, str):
                print(f"| {label} | - | - | - | {run} |")
                continue
            other = "-"
            if python is not None:
                try:
                    text = dnnmap_to_accelforge(run.mapping, layer, arch, einsum)
                except NotExpressible as exc:
                    other = f"not expressible: {exc}"
                else:
                    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
                        fh.write(text)
                    res = run_accelforge(python, "evaluate", arch_af, workload, Path(fh.name))
                    os.unlink(fh.name)
                    other = res if isinstance(res, str) else f"{res['energy']:,.0f}"
            print(f"| {label} | {run.energy:,.0f} | AccelForge: {other} | {run.seconds:.1f} | {run.certificate} |")


if __name__ == "__main__":
    main()
