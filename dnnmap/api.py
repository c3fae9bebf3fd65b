"""Python API mirroring the command line: ``dnnmap.map_network("resnet18", arch="eyeriss")``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.errors import DnnmapError
from dnnmap.search.network import NetworkResult, search_network
from dnnmap.search.options import DEFAULT_BUDGET, SearchOptions
from dnnmap.workload import zoo
from dnnmap.workload.importers import InputShapes, load_network
from dnnmap.workload.ir import Network
from dnnmap.workload.named import is_named_workload, parse_workload
from dnnmap.workload.sparsity import apply_densities
from dnnmap.workload.training import parse_passes, training_network

ModelRef = Network | str | os.PathLike[str]
ArchRef = ArchSpec | str | os.PathLike[str]


def resolve_network(model: ModelRef, input_shapes: InputShapes | None = None,
                    skip_unsupported: bool = False) -> Network:
    """A network object as is; an existing path (or any name with a suffix) as a model file; a named
    workload (``mttkrp:I=..``, ``ttmc:..``, ``einsum:EXPR:..``, dnnmap.workload.named); else a zoo name."""
    if isinstance(model, Network):
        return model
    path = Path(model)
    if not path.exists() and is_named_workload(str(model)):
        if input_shapes:
            raise DnnmapError(f"--input-shape applies to model files only, not to the workload {str(model)!r}")
        return parse_workload(str(model))
    if path.exists() or path.suffix:
        return load_network(path, input_shapes, skip_unsupported)
    if input_shapes:
        raise DnnmapError(f"--input-shape applies to model files only, not to the zoo model {str(model)!r}")
    return zoo.get(str(model))


def resolve_arch(arch: ArchRef) -> ArchSpec:
    """An architecture object as is, else a preset name or a YAML spec path."""
    return arch if isinstance(arch, ArchSpec) else load_arch(arch)


def map_network(model: ModelRef, arch: ArchRef = "eyeriss", objective: str = "edp", mapper: str = "auto",
                layers: list[str] | None = None, budget: int = DEFAULT_BUDGET, seed: int = 0,
                input_shapes: InputShapes | None = None,
                on_layer: Callable[[str], None] | None = None, passes: str = "forward",
                densities: dict[str, float] | None = None) -> NetworkResult:
    """Map every (selected) layer of ``model`` onto ``arch``; see :func:`dnnmap.search.network.search_network`.
    ``passes``: training passes, e.g. ``"all"`` or ``"backward,weight-update"`` (dnnmap.workload.training);
    ``densities``: tensor name or role -> density, as ``--density`` (docs/sparse.md)."""
    network = training_network(resolve_network(model, input_shapes), parse_passes(passes))
    network = apply_densities(network, densities or {})
    return search_network(network, resolve_arch(arch), objective, mapper, layers, SearchOptions(budget=budget, seed=seed),
                          on_layer=on_layer)
