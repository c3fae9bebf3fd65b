"""The stdout console: full width when writing to a pipe or file so tables are not wrapped."""

from __future__ import annotations

from rich.console import Console

PIPE_WIDTH = 200


def stdout_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH)
    return console
