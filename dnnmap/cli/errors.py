"""User-facing failures: ``error: <message>`` in red on stderr, exit code 2, no traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from dnnmap.errors import DnnmapError

EXIT_BAD_INPUT = 2

P = ParamSpec("P")
R = TypeVar("R")


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def fail(message: str) -> NoReturn:
    """Print ``message`` as an error and exit with code 2."""
    stderr_console().print(Text(f"error: {message}", style="red"), soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn :class:`DnnmapError` and file-system errors raised by ``command`` into :func:`fail`."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except DnnmapError as err:
            fail(str(err))
        except OSError as err:
            fail(f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err))

    return wrapper
