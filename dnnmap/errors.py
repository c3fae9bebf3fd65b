"""User-facing error types. The CLI prints these as one clear message and exits non-zero."""

from __future__ import annotations


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
