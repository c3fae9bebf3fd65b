"""The stdout console: full width when writing to a pipe or file so tables are not wrapped."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dnnmap.arch.spec import ArchSpec
from dnnmap.cli.progress import phase

PIPE_WIDTH = 200


def stdout_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH)
    return console


def load_kernels(err: Console, arch: ArchSpec | None = None) -> None:
    """Load the compiled cost kernel as ``arch`` needs it under a status line (an in-place install compiles the
    Eyeriss family into numba's cache; another family, or a cache that does not match, compiles on first use, about
    15 s of CPU)."""
    from dnnmap.cost.warmup import compile_kernels

    with phase(err, "loading the compiled cost model (compiled on first use where the install did not: ~15 s)"):
        compile_kernels(arch)


def shown(path: Path) -> str:
    """An output path as the user gave it, plus the folder it landed in when it is relative."""
    return str(path) if path.is_absolute() else f"{path} (in {Path.cwd()})"
