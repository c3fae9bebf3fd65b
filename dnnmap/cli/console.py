"""The stdout console: when writing to a pipe or file, wide enough that no table is wrapped or cut."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from dnnmap.arch.spec import ArchSpec
from dnnmap.cli.progress import phase

# Piped or redirected output has no screen to fit: a width no table reaches, so long layer names never
# squeeze the numeric columns into "1,220,4…" (rich shrinks no_wrap columns to fit the console width).
PIPE_WIDTH = 2000


def stdout_console() -> Console:
    """The console of a command's results: the terminal's width, or PIPE_WIDTH when not a terminal."""
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


def wrote(out: Console, path: Path, what: str = "", detail: str = "") -> None:
    """Say that a command wrote an output, every command the same way: ``wrote [WHAT to ]PATH[ (in FOLDER)][: DETAIL]``
    (the folder when ``path`` is relative; printed without rich markup, so brackets in a path stay as given)."""
    target = f"{what} to {shown(path)}" if what else shown(path)
    out.print(f"wrote {target}{f': {detail}' if detail else ''}", markup=False)
