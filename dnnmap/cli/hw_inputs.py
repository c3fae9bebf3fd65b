"""Inputs shared by ``dnnmap generate-hw`` and ``dnnmap sweep``: the networks (passes, densities) and
output paths checked before any work."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from dnnmap.api import resolve_network
from dnnmap.errors import InputFileError
from dnnmap.workload.ir import Network
from dnnmap.workload.sparsity import apply_densities, parse_density_options
from dnnmap.workload.training import parse_passes, training_network

DENSITY_HELP = ("KEY=VALUE: density (share of non-zeros) of a tensor (W, dO, ...) or role (weights, activations) "
                "in every layer; repeatable; priced by the core's sparse model (docs/sparse.md)")


def networks_of(models: list[str], passes: str, density: list[str] | None) -> list[Network]:
    """The models resolved, expanded to the training ``passes`` and given the ``--density`` values."""
    chosen = parse_passes(passes)
    densities = parse_density_options(density or [])
    return [apply_densities(training_network(resolve_network(m), chosen), densities) for m in models]


def check_writable(path: Path, option: str) -> None:
    """Refuse, before any work, an output that cannot be written (a directory, a folder where no file can be
    created): probe by creating and removing a file in the nearest existing folder."""
    if path.is_dir():
        raise InputFileError(f"{option} {path}: is a directory; give a file name")
    folder = path.parent if str(path.parent) else Path(".")
    existing = next((d for d in (folder, *folder.parents) if d.exists()), Path("."))
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is not a directory")
        fd, probe = tempfile.mkstemp(dir=existing, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputFileError(f"{option} {path}: cannot write into {existing} ({err.strerror or err})") from None
