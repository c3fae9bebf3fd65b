"""User-facing error types. The CLI prints these as one clear message and exits non-zero."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class DnnmapError(Exception):
    """Base class for errors caused by user input (files, names, options), not by bugs."""


class InputFileError(DnnmapError):
    """A file could not be read or does not match its expected format; the message names file and field."""


class UnknownNameError(DnnmapError):
    """An unknown model, architecture, target or layer name; the message lists the known ones."""


class MappingError(DnnmapError):
    """No legal mapping exists (e.g. a tile does not fit); the message names the level and tensor."""


class DnnmapNote(UserWarning):
    """Not an error: an assumption the user should know about (e.g. model weights that could not be read, taken
    as dense). Raised with :func:`warnings.warn`; the CLI prints it as one ``note: ...`` line on stderr."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` did you mean 'x'?`` for the known names closest to ``name`` (case-insensitive), or ``""``."""
    by_key = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_key), n=2, cutoff=0.6)
    return " did you mean " + " or ".join(repr(by_key[c]) for c in close) + "?" if close else ""


def unknown_name_message(what: str, name: str, known: Iterable[str], listing: str = "choose from") -> str:
    """``unknown WHAT 'name'; did you mean 'x'? choose from a, b, c`` - the one wording of every unknown name."""
    known = list(known)
    return f"unknown {what} {name!r};{did_you_mean(name, known)} {listing} {', '.join(known)}"
