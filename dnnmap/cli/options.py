"""Parsing of option values shared by several commands."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from dnnmap.errors import DnnmapError, InputFileError
from dnnmap.search.constraints import Constraints
from dnnmap.search.options import DEFAULT_BUDGET, DEFAULT_BUDGET_SECONDS, DEFAULT_WASTE, SearchOptions
from dnnmap.search import registry

INPUT_SHAPE_HELP = "graph input shape, e.g. input=1x3x224x224 (repeat for several inputs)"
PNG_DIR_HELP = "also write every figure as a PNG file into this directory"


def parse_input_shapes(values: list[str] | None) -> dict[str, tuple[int, ...]] | None:
    """``["name=1x3x224x224", ...]`` -> ``{"name": (1, 3, 224, 224)}`` (None when no value is given)."""
    if not values:
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    for value in values:
        name, sep, dims = value.partition("=")
        parts = dims.lower().split("x")  # ASCII digits only (int() takes "+3", "1_0", " 3", full-width digits)
        shape = tuple(int(d) for d in parts) if all(re.fullmatch(r"[0-9]{1,9}", d) for d in parts) else ()
        if not sep or not name.strip() or name != name.strip() or not shape or any(d < 1 for d in shape):
            raise DnnmapError(f"--input-shape {value!r}: expected NAME=DIMxDIMx... (positive ASCII integers), "
                              "e.g. input=1x3x224x224")
        if name in shapes and shapes[name] != shape:
            raise DnnmapError(f"--input-shape {name!r} is given twice with different shapes")
        shapes[name] = shape
    return shapes


def strict_int(value: str | int) -> int:
    """Parser of integer options: ASCII digits with an optional leading minus, nothing else (typer's own
    conversion takes ``16.0``, ``+16``, ``1_6``, `` 16`` and full-width digits as 16)."""
    if isinstance(value, int):
        return value
    if not re.fullmatch(r"-?[0-9]{1,100}", value):  # longer ones: beyond every limit (int() refuses 4,300)
        raise typer.BadParameter(f"{value!r} is not an integer (ASCII digits only)")
    return int(value)


# The search options every command that maps layers takes (map, generate-hw, sweep): one definition each.
BudgetOption = Annotated[int, typer.Option(parser=strict_int, help="random mapper: mappings sampled per layer")]
SeedOption = Annotated[int, typer.Option(parser=strict_int, help="random mapper seed")]
BudgetSecondsOption = Annotated[Optional[float], typer.Option(min=0.0, help="optimal mapper: seconds per layer "
                                                              "before it stops with a certified gap")]
ImperfectOption = Annotated[bool, typer.Option("--imperfect", help="imperfect factorization: factors may pad a "
                                               "dimension by up to 15% of its bound (edge tiles; auto, exhaustive, "
                                               "optimal, random and sunstone mappers; docs/search.md)")]
TileFirstOption = Annotated[bool, typer.Option("--tile-first", help="Sunstone (auto, sunstone mappers): also walk "
                                               "the report's tile-first order; closes its last 1-2% gaps on some "
                                               "layers at ~2.7x the search time (docs/search.md)")]


def search_options(budget: int = DEFAULT_BUDGET, seed: int = 0,
                   budget_seconds: float | None = DEFAULT_BUDGET_SECONDS, imperfect: bool = False,
                   tile_first: bool = False, constraints: Constraints | None = None,
                   placement: bool = False) -> SearchOptions:
    """The search options value of the command-line flags (``--imperfect`` pads by up to 15%)."""
    return SearchOptions(budget=budget, seed=seed, budget_seconds=budget_seconds,
                         imperfect=DEFAULT_WASTE if imperfect else None, tile_first=tile_first,
                         constraints=constraints or Constraints(), placement=placement)


PlacementOption = Annotated[bool, typer.Option("--placement", help="per-tensor placement: the map space also "
                                               "places each tensor a level keeps below some of the level's loops "
                                               "(auto, exhaustive, optimal, random and sunstone mappers; "
                                               "docs/search.md)")]
ConstraintsOption = Annotated[Optional[Path], typer.Option("--constraints", help="YAML file of map-space constraints "
                                                           "(a dataflow: fixed factors, spatial loops, loop order, "
                                                           "bypass per level); auto, exhaustive and random mappers; "
                                                           "the optimal mapper takes a file holding only placement "
                                                           "and both_axes; docs/search.md")]


def mapper_help(prefix: str = "") -> str:
    """``--mapper`` help: every registered mapper with its one-line description."""
    return prefix + "; ".join(f"{name}: {registry.info(name).description}" for name in registry.names())


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
            raise NotADirectoryError(f"{existing} is a file, not a directory")
        fd, probe = tempfile.mkstemp(dir=existing, prefix=f".{path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputFileError(f"{option} {path}: cannot write into {existing} ({err.strerror or err})") from None


Output = tuple[Optional[Path], str, bool]  # (path or None when not asked for, option name, is a directory)


def check_outputs(outputs: list[Output], inputs: list[Optional[Path]] = (),  # type: ignore[assignment]
                  replaces_dirs: bool = False) -> None:
    """Refuse, before any work, a command's outputs that cannot all be written as asked: an empty name, one
    that cannot be written (:func:`check_writable`), two options naming the same path (the last write would
    win) or an output that is one of the command's input files (it would be overwritten). ``replaces_dirs``:
    the command replaces its directory outputs whole (``compile``), so no input may lie inside one."""
    seen: dict[Path, str] = {}
    read = {p.resolve(): p for p in inputs if p is not None and p.exists()}
    for path, option, is_dir in outputs:
        if path is None:
            continue
        if not str(path).strip():
            raise DnnmapError(f"{option}: needs a file or directory name, got an empty string")
        check_writable(path, option, directory=is_dir)
        real = path.resolve()
        if real in seen:
            raise DnnmapError(f"{option} {path}: the same path as {seen[real]}; give each output its own name")
        if real in read:
            raise DnnmapError(f"{option} {path}: is the input file {read[real]}; refusing to overwrite an input")
        inside = [p for r, p in read.items() if real in r.parents] if is_dir and replaces_dirs else []
        if inside:
            raise DnnmapError(f"{option} {path}: holds the input {inside[0]}, and the folder is replaced whole; "
                              "write the output elsewhere")
        seen[real] = option
