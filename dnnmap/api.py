"""Python API mirroring the command line: ``dnnmap.map_network("resnet18", arch="eyeriss")``.

One flow serves both: a :class:`MapRequest` (everything ``dnnmap map`` takes) is checked by
:func:`prepare_map` (inputs resolved, every option and limit checked before any search), run by
:func:`run_map` (the per-layer search, or the fused schedule with ``fuse``), and its :class:`MapRun` writes
the outputs (JSON, HTML report, mapping files). The CLI builds a request from its options and runs the same
steps, so every CLI option exists here and every path receives the user's search options."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.arch.variants import with_dram_model
from dnnmap.cost.objective import check_objective
from dnnmap.errors import DnnmapError, UnknownNameError, unknown_name_message
from dnnmap.fileio import builtin_wins
from dnnmap.search import registry
from dnnmap.search.constraints import Constraints, load_constraints
from dnnmap.search.network import NetworkResult, check_search_limits, search_network, select_layers
from dnnmap.search.options import DEFAULT_BUDGET, DEFAULT_BUDGET_SECONDS, SearchOptions
from dnnmap.workload import zoo
from dnnmap.workload.ir import Network, Operator
from dnnmap.workload.named import is_named_workload, parse_workload
from dnnmap.workload.sparsity import apply_densities
from dnnmap.workload.training import parse_passes, training_network, with_derived_passes

if TYPE_CHECKING:
    from dnnmap.workload.importers import InputShapes

ModelRef = Network | str | os.PathLike[str]
ArchRef = ArchSpec | str | os.PathLike[str]


def model_path(model: str | os.PathLike[str]) -> Path | None:
    """The model file ``model`` names, or None when it names a zoo model or a named workload. A zoo model's
    name is the zoo model even when a file or folder of that name is in the current directory (``./NAME``
    reads that; :func:`dnnmap.fileio.builtin_wins`); an existing path or a name with a suffix is a file."""
    path = Path(model)
    if builtin_wins(model, isinstance(model, str) and zoo.has(model), "zoo model"):
        return None
    if not path.exists() and is_named_workload(str(model)):
        return None
    return path if path.exists() or path.suffix else None


def resolve_network(model: ModelRef, input_shapes: InputShapes | None = None,
                    skip_unsupported: bool = False) -> Network:
    """A network object as is; a model file (:func:`model_path`); a named workload (``mttkrp:I=..``,
    ``ttmc:..``, ``einsum:EXPR:..``, dnnmap.workload.named); else a zoo name."""
    if isinstance(model, Network):
        return model
    path = model_path(model)
    if path is not None:
        from dnnmap.workload.importers import load_network  # the importers' schemas: only for a model file

        return load_network(path, input_shapes, skip_unsupported)
    what = "workload" if is_named_workload(str(model)) else "zoo model"
    if input_shapes:
        raise DnnmapError(f"--input-shape applies to model files only, not to the {what} {str(model)!r}")
    return parse_workload(str(model)) if what == "workload" else zoo.get(str(model))


def resolve_arch(arch: ArchRef) -> ArchSpec:
    """An architecture object as is, else a preset name or a YAML spec path."""
    return arch if isinstance(arch, ArchSpec) else load_arch(arch)


@dataclass(frozen=True)
class MapRequest:
    """Everything ``dnnmap map`` takes. ``passes``: training passes (``"all"``, ``"backward,weight-update"``,
    dnnmap.workload.training); ``densities``: tensor name or role -> density (docs/sparse.md); ``dram_model``:
    ``burst`` or ``volume`` (default: the architecture's); ``fuse``: ``temporal``, ``spatial`` or ``auto``
    fuses consecutive layers (docs/fusion.md) in groups of at most ``max_fused``, compared with the single-layer
    schedule ``fuse_baseline``: ``best`` (the mapper's) or ``paper`` (row-stationary with Eq. 2/3 traffic);
    ``workers`` (a new local Dask cluster of that many processes) or ``scheduler`` (``tcp://host:port``)
    searches the distinct layer shapes in parallel (dnnmap.sweep.network; None and None: in this process)."""

    model: ModelRef
    arch: ArchRef = "eyeriss"
    objective: str = "edp"
    mapper: str = "auto"
    layers: tuple[str, ...] | None = None
    options: SearchOptions = SearchOptions()
    input_shapes: InputShapes | None = None
    passes: str | Sequence[str] = "forward"
    densities: Mapping[str, float] | None = None
    dram_model: str | None = None
    fuse: str | None = None
    max_fused: int = 2
    fuse_baseline: str = "best"
    workers: int | None = None
    scheduler: str | None = None

    @property
    def layer_names(self) -> list[str] | None:
        """The selected layers as the search takes them (None: every layer)."""
        return list(self.layers) if self.layers else None


@dataclass(frozen=True)
class PreparedMap:
    """A request with its inputs resolved and every option checked: nothing can be refused after this."""

    request: MapRequest
    network: Network
    arch: ArchSpec
    selected: tuple[Operator, ...] = field(repr=False)

    @property
    def layer_names(self) -> list[str] | None:
        """The layers the search maps (None: every layer): ``--layers`` with the training passes derived from
        each (``conv1`` with ``--pass all`` is ``conv1``, ``conv1.bwd``, ``conv1.wgt``)."""
        return [op.name for op in self.selected] if self.request.layers else None


def check_mapper_options(mapper: str, options: SearchOptions) -> None:
    """Refuse, before any work, an unknown mapper (dnnmap.search.registry), options it would ignore
    (``--imperfect``, ``--tile-first``, ``--placement``, ``--constraints``; a constraints file with only
    ``placement`` and ``both_axes`` is taken by the mappers that take those), naming the mappers that take them, and budgets,
    seeds or time limits the mappers cannot honour."""
    flags = {"imperfect": "--imperfect", "tile_first": "--tile-first", "placement": "--placement",
             "constraints.placement": "placement in --constraints", "constraints.both_axes": "both_axes in --constraints",
             "constraints": "--constraints"}
    for key, takes in registry.refused_options(registry.info(mapper), options)[:1]:
        raise DnnmapError(f"{flags[key]} applies to the {', '.join(registry.names(takes))} mappers, not to {mapper!r}")
    options.check()


def check_fuse_baseline(request: MapRequest) -> None:
    """``--fuse-baseline``: one of the baselines, only with ``--fuse``; ``paper`` maps in the row-stationary
    space, so only with a mapper that walks constrained spaces."""
    if request.fuse is None:
        if request.fuse_baseline == "best":
            return  # the default without --fuse: nothing to check, and the fusion modules stay unloaded
        raise DnnmapError("--fuse-baseline chooses what fused layers are compared with; it needs --fuse")
    from dnnmap.fusion.baseline import BASELINES

    if request.fuse_baseline not in BASELINES:
        raise UnknownNameError(unknown_name_message("--fuse-baseline", request.fuse_baseline, BASELINES))
    if request.fuse_baseline == "paper" and not registry.info(request.mapper).takes_constraints:
        raise DnnmapError(f"--fuse-baseline paper maps layers in the row-stationary space: use one of the "
                          f"{', '.join(registry.names(registry.takes_constraints))} mappers (the {request.mapper!r} "
                          "mapper builds its own candidates)")


def prepare_map(request: MapRequest) -> PreparedMap:
    """Resolve the model and architecture and refuse, before any search, options that do not apply."""
    check_objective(request.objective)
    passes = parse_passes(request.passes)
    if request.fuse is not None:
        if passes != ("forward",):
            raise DnnmapError("--fuse applies to the forward pass only (--pass forward)")
        if request.layers:
            raise DnnmapError("--layers does not apply with --fuse: fusion schedules the whole layer sequence")
        if not request.options.constraints.empty:
            raise DnnmapError("--constraints does not apply with --fuse: fusion maps layers on hardware shares the "
                              "constraints do not name")
        if request.options.placement:
            raise DnnmapError("--placement does not apply with --fuse: fusion maps layers in the shared-boundary space")
        if request.max_fused < 2:
            raise DnnmapError(f"--max-fused must be at least 2, got {request.max_fused}")
    check_fuse_baseline(request)
    check_mapper_options(request.mapper, request.options)
    check_engine(request)
    network = training_network(resolve_network(request.model, request.input_shapes), passes)
    network = apply_densities(network, request.densities or {})
    spec = resolve_arch(request.arch)
    if request.dram_model is not None:
        spec = with_dram_model(spec, request.dram_model)
    names = request.layer_names
    selected = tuple(select_layers(network, with_derived_passes(network, names) if names else None))
    check_search_limits(selected, spec, request.options)
    return PreparedMap(request, network, spec, selected)


def check_engine(request: MapRequest) -> None:
    """Refuse, before any work, a parallel run that cannot happen: ``workers`` with ``scheduler`` or ``fuse``, a
    local cluster size outside 1..256, Dask not installed."""
    if request.workers is None and request.scheduler is None:
        return
    from dnnmap.sweep.engine import check_dask, check_workers

    if request.workers is not None and request.scheduler is not None:
        raise DnnmapError("--workers sizes a new local Dask cluster; it does not apply with --scheduler (give one "
                          "of them)")
    if request.fuse is not None:
        raise DnnmapError(f"--{'workers' if request.workers is not None else 'scheduler'} does not apply with "
                          "--fuse: the fused schedule is searched in this process")
    if request.workers is not None:
        check_workers(request.workers)
    check_dask()


def mapping_file_name(index: int, layer: str) -> str:
    """``03_layer1.0.conv1.yaml``: layer order first, characters unsafe in file names replaced."""
    return f"{index:02d}_{_safe(layer)}.yaml"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


@dataclass(frozen=True)
class MapRun:
    """The result of one request: ``search`` (per-layer mappings) or, with ``fuse``, ``fusion`` (the fused
    schedule; its groups hold each layer's mapping on its hardware share)."""

    prepared: PreparedMap
    search: NetworkResult | None = None
    fusion: Any = None  # dnnmap.fusion.network.FusionResult (imported lazily: fusion is optional work)

    @property
    def network(self) -> Network:
        return self.prepared.network

    @property
    def arch(self) -> ArchSpec:
        return self.prepared.arch

    @property
    def layers(self) -> tuple:
        """Per-layer results of an unfused run (``fusion.schedule.groups`` for a fused one)."""
        if self.search is None:
            raise DnnmapError("a fused run has groups, not per-layer search results: read run.fusion.schedule")
        return self.search.layers

    @property
    def _totals(self) -> Any:
        """What the totals are read from: the per-layer search, or the fused schedule's cost."""
        return self.search if self.search is not None else self.fusion.schedule.cost

    @property
    def cycles(self) -> float:
        return self._totals.cycles

    @property
    def energy(self) -> float:
        return self._totals.energy

    @property
    def dram_bytes(self) -> float:
        return self._totals.dram_bytes

    @property
    def latency_s(self) -> float:
        return self.cycles / (self.arch.clock_mhz * 1e6)

    def to_dict(self) -> dict[str, Any]:
        """What ``--json`` writes (dnnmap.report.json_report; fused runs: dnnmap.report.fusion_json)."""
        if self.search is not None:
            from dnnmap.report.json_report import to_dict

            return to_dict(self.search, self.network)
        from dnnmap.report.fusion_json import fused_to_dict

        return fused_to_dict(self.fusion, self.network, self.prepared.request.mapper)

    def save_json(self, path: str | os.PathLike[str]) -> None:
        import json

        from dnnmap.fileio import write_text_atomic

        write_text_atomic(Path(path), json.dumps(self.to_dict(), indent=2) + "\n")

    def save_mappings(self, directory: str | os.PathLike[str]) -> int:
        """One self-contained mapping file per layer (operator embedded) for ``dnnmap show``/``verify``; a layer
        mapped on a hardware share of a fused group names its share's spec, written beside it into ``archs/``.
        Returns the number of mapping files."""
        from dnnmap.mapping.io import save_mapping

        entries = self._mapping_entries()
        for index, (layer, search) in enumerate(entries):
            arch_ref = search.arch.name
            if search.arch != self.arch:
                arch_ref = f"archs/{_safe(search.arch.name)}.yaml"
                _write_arch(Path(directory) / arch_ref, search.arch)
            mapping = replace(search.mapping, layer=layer, arch=arch_ref)
            save_mapping(Path(directory) / mapping_file_name(index, layer), mapping,
                         [lv.name for lv in search.arch.levels], self.network.layer(layer).op)
        return len(entries)

    def _mapping_entries(self) -> list[tuple[str, Any]]:
        if self.search is not None:
            return [(layer.layer, layer.search) for layer in self.search.layers]
        return [(lc.layer, lc.result) for group in self.fusion.schedule.groups for lc in group.layer_costs]

    def report_runs(self, command: str) -> list:
        """This run as the HTML report reads it (dnnmap.report.html.runs)."""
        from dnnmap.report.html.runs import run_from_dict

        return [run_from_dict(self.to_dict(), command, f"{self.network.name}-{self.arch.name}")]


def _write_arch(path: Path, arch: ArchSpec) -> None:
    import yaml

    from dnnmap.fileio import write_text_atomic

    write_text_atomic(path, yaml.safe_dump(arch.model_dump(mode="json", exclude_defaults=True), sort_keys=False))


def run_map(prepared: PreparedMap, on_layer: Callable[[str], None] | None = None) -> MapRun:
    """Run a prepared request: the per-layer search, or the fused schedule (``on_layer`` is called after each
    layer search; for fusion, after each search on a hardware share, with ``"layer on share"``)."""
    request = prepared.request
    if request.fuse is None and (request.workers is not None or request.scheduler is not None):
        from dnnmap.sweep.engine import dask_client
        from dnnmap.sweep.network import search_network_dask

        with dask_client(request.workers or 1, request.scheduler) as client:
            search = search_network_dask(prepared.network, prepared.arch, client, request.objective, request.mapper,
                                         prepared.layer_names, request.options,
                                         on_layer=on_layer)
        return MapRun(prepared, search=search)
    if request.fuse is None:
        search = search_network(prepared.network, prepared.arch, request.objective, request.mapper,
                                prepared.layer_names, request.options,
                                on_layer=on_layer)
        return MapRun(prepared, search=search)
    from dnnmap.fusion.network import fuse_network

    fusion = fuse_network(prepared.network, prepared.arch, request.fuse, request.max_fused, request.objective,
                          request.mapper, on_search=on_layer, options=request.options, baseline=request.fuse_baseline)
    return MapRun(prepared, fusion=fusion)


def map_network(model: ModelRef, arch: ArchRef = "eyeriss", objective: str = "edp", mapper: str = "auto",
                layers: Sequence[str] | None = None, budget: int = DEFAULT_BUDGET, seed: int = 0,
                input_shapes: InputShapes | None = None,
                on_layer: Callable[[str], None] | None = None, passes: str = "forward",
                densities: Mapping[str, float] | None = None,
                budget_seconds: float | None = DEFAULT_BUDGET_SECONDS, imperfect: float | None = None,
                tile_first: bool = False, dram_model: str | None = None, fuse: str | None = None,
                max_fused: int = 2, constraints: Constraints | str | os.PathLike[str] | None = None,
                fuse_baseline: str = "best", workers: int | None = None, scheduler: str | None = None,
                placement: bool = False) -> MapRun:
    """Map every (selected) layer of ``model`` onto ``arch``, as ``dnnmap map`` does with the same options
    (``imperfect``: the padding fraction, e.g. 0.15 as ``--imperfect``; ``constraints``: a
    :class:`~dnnmap.search.constraints.Constraints` value or a YAML file as ``--constraints``; ``workers`` /
    ``scheduler``: the distinct layers searched in parallel on Dask, as ``--workers`` / ``--scheduler``;
    ``placement``: per-tensor placements in the map space, as ``--placement``); see
    :class:`MapRequest` and
    :class:`dnnmap.search.options.SearchOptions`. ``run.save_json(path)``, ``run.save_mappings(dir)`` and
    ``run.to_dict()`` write or give what the CLI's ``--json`` and ``--save-mappings`` write."""
    if constraints is not None and not isinstance(constraints, Constraints):
        constraints = load_constraints(Path(constraints))
    options = SearchOptions(budget=budget, seed=seed, budget_seconds=budget_seconds, imperfect=imperfect,
                            tile_first=tile_first, constraints=constraints or Constraints(), placement=placement)
    request = MapRequest(model, arch, objective, mapper, tuple(layers) if layers else None, options, input_shapes,
                         passes, densities, dram_model, fuse, max_fused, fuse_baseline, workers, scheduler)
    return run_map(prepare_map(request), on_layer)
