"""User-facing failures: ``error: <message>`` in red on stderr, exit code 2, no traceback; and notes
(:class:`DnnmapNote` warnings) as ``note: <message>`` lines on stderr."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from dnnmap.errors import DnnmapError, DnnmapNote

EXIT_BAD_INPUT = 2

P = ParamSpec("P")
R = TypeVar("R")


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def fail(message: str) -> NoReturn:
    """Print ``message`` as an error and exit with code 2."""
    stderr_console().print(Text(f"error: {message}", style="red"), soft_wrap=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _show_notes(show: Callable[..., None]) -> Callable[..., None]:
    """A ``warnings.showwarning`` printing :class:`DnnmapNote` as one ``note:`` line, others through ``show``."""

    def showwarning(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
        if issubclass(category, DnnmapNote):
            stderr_console().print(f"note: {message}", markup=False, soft_wrap=True)
        else:
            show(message, category, *args, **kwargs)

    return showwarning


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn :class:`DnnmapError` and file-system errors raised by ``command`` into :func:`fail`, and print
    every :class:`DnnmapNote` it warns as a ``note:`` line."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", DnnmapNote)
                warnings.showwarning = _show_notes(warnings.showwarning)
                return command(*args, **kwargs)
        except DnnmapError as err:
            fail(str(err))
        except OSError as err:
            fail(f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err))

    return wrapper
