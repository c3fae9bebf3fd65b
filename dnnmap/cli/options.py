"""Parsing of option values shared by several commands."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import typer

from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.search import registry

INPUT_SHAPE_HELP = "graph input shape, e.g. input=1x3x224x224 (repeat for several inputs)"


def parse_input_shapes(values: list[str] | None) -> dict[str, tuple[int, ...]] | None:
    """``["name=1x3x224x224", ...]`` -> ``{"name": (1, 3, 224, 224)}`` (None when no value is given)."""
    if not values:
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for value in values:
        name, sep, dims = value.partition("=")
        try:
            shape = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            shape = ()
        if not sep or not name or not shape or any(d < 1 for d in shape):
            raise DnnmapError(f"--input-shape {value!r}: expected NAME=DIMxDIMx..., e.g. input=1x3x224x224")
        shapes[name] = shape
    return shapes


def check_mapper(mapper: str) -> None:
    """Refuse, before any work, a ``--mapper`` that is not a registered mapper (dnnmap.search.registry)."""
    registry.get(mapper)


def mapper_help(prefix: str = "") -> str:
    """``--mapper`` help: every registered mapper with its one-line description."""
    return prefix + "; ".join(f"{name}: {registry.get(name).description}" for name in registry.names())


def parse_layer_list(value: str | None) -> list[str] | None:
    """``"conv1,conv2"`` -> ``["conv1", "conv2"]`` (None for all layers)."""
    if not value:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def output_path(value: str | Path) -> Path:
    """Parser of output file/directory options: an empty name is refused (``--json ''`` would otherwise
    name the current directory)."""
    if not str(value).strip():
        raise typer.BadParameter("needs a file or directory name, got an empty string")
    return Path(value)


def check_writable(path: Path, option: str, directory: bool = False) -> None:
    """Refuse, before any work, an output that cannot be written (a file where a ``directory`` output or a
    directory where a file should go, a folder where nothing can be created): probe by creating and removing
    a file in the nearest existing folder."""
    if directory and path.exists() and not path.is_dir():
        raise InputFileError(f"{option} {path}: exists and is not a directory")
    if not directory and path.is_dir():
        raise InputFileError(f"{option} {path}: is a directory; give a file name")
    folder = path if directory else path.parent if str(path.parent) else Path(".")
    existing = next((d for d in (folder, *folder.parents) if d.exists()), Path("."))
    try:
        if not existing.is_dir():
            raise NotADirectoryError(f"{existing} is not a directory")
        fd, probe = tempfile.mkstemp(dir=existing, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputFileError(f"{option} {path}: cannot write into {existing} ({err.strerror or err})") from None
