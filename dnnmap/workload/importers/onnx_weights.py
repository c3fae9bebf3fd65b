"""Initializer values of an ONNX model, inline or in external data files, read without trusting the files.

Mapping needs shapes, which every TensorProto carries even when its data lives in an external file; values
only give the measured weight densities (docs/sparse.md) and small constants (pads, clip bounds, reshape
targets). So a weight that cannot be read is not an error: an external data file that is missing, truncated,
a directory, a FIFO or device, or a location outside the model's folder leaves that tensor's value unknown,
and :meth:`ModelWeights.note` says how many tensors and why. External files are opened only inside the
model's folder (symlinks resolved), only if regular, and never blocking.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

NONBLOCKING = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check must not hang open()


class UnreadableWeightError(Exception):
    """An external weight cannot be read; the message says why (for the import note)."""


class ModelWeights:
    """The initializers of one model file; unreadable external ones are recorded in ``unreadable``."""

    def __init__(self, path: Path, initializers: Mapping[str, onnx.TensorProto]) -> None:
        self.path = path
        self.folder = path.parent.resolve()
        self.initializers = initializers
        self.unreadable: dict[str, str] = {}  # tensor name -> why
        for name, tensor in initializers.items():
            if uses_external_data(tensor):
                try:
                    with _open_external(tensor, self.folder):
                        pass
                except UnreadableWeightError as exc:
                    self.unreadable[name] = str(exc)

    def inline(self, name: str) -> onnx.TensorProto | None:
        """Initializer ``name`` with its data in the proto (external data read in), ``None`` if unreadable."""
        tensor = self.initializers[name]
        if name in self.unreadable:
            return None
        if not uses_external_data(tensor):
            return tensor
        try:
            with _open_external(tensor, self.folder) as (data_file, length):
                data = data_file.read(length)
        except UnreadableWeightError as exc:
            self.unreadable[name] = str(exc)
            return None
        except OSError as exc:  # an I/O error while reading a file that opened
            self.unreadable[name] = f"reading its external data failed: {exc.strerror or exc}"
            return None
        loaded = onnx.TensorProto()
        loaded.CopyFrom(tensor)
        loaded.data_location = onnx.TensorProto.DEFAULT
        del loaded.external_data[:]
        loaded.raw_data = data
        return loaded

    def value(self, name: str) -> np.ndarray | None:
        """Values of initializer ``name``, ``None`` if its external data cannot be read or has the wrong size."""
        tensor = self.inline(name)
        if tensor is None:
            return None
        try:
            return numpy_helper.to_array(tensor)
        except ValueError:
            if not uses_external_data(self.initializers[name]):
                raise  # an inline tensor of the wrong size is a malformed model (translate_node reports it)
            location = ExternalDataInfo(self.initializers[name]).location
            self.unreadable[name] = f"external data in {location!r} does not match the tensor's shape"
            return None

    def note(self) -> str | None:
        """One line naming how many weight tensors could not be read and why, ``None`` if all could."""
        if not self.unreadable:
            return None
        reasons = "; ".join(dict.fromkeys(self.unreadable.values()))
        return (f"{self.path}: {len(self.unreadable)} of {len(self.initializers)} weight tensors could not be read "
                f"({reasons}); their densities are unknown and the layers are mapped dense")


@contextmanager
def _open_external(tensor: onnx.TensorProto, folder: Path) -> Iterator[tuple[BinaryIO, int]]:
    """The external data file of ``tensor`` positioned at its offset, with the tensor's byte count;
    :class:`UnreadableWeightError` if the file is absent, not a regular file, outside ``folder`` or too short."""
    try:
        info = ExternalDataInfo(tensor)
    except ValueError as exc:
        raise UnreadableWeightError(f"invalid external data entry: {exc}") from exc
    location = info.location
    if not location:
        raise UnreadableWeightError("external data without a file location")
    target = (folder / location).resolve()
    if Path(location).is_absolute() or not target.is_relative_to(folder):
        raise UnreadableWeightError(f"external data location {location!r} is outside the model's folder")
    try:
        _check_regular(os.stat(target).st_mode, location)
        fd = os.open(target, os.O_RDONLY | NONBLOCKING)
    except FileNotFoundError as exc:
        raise UnreadableWeightError(f"external data file {location!r} not found") from exc
    except OSError as exc:
        raise UnreadableWeightError(f"external data file {location!r} cannot be read: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as data_file:
        status = os.fstat(fd)
        _check_regular(status.st_mode, location)
        offset = info.offset or 0
        length = status.st_size - offset if info.length is None else info.length
        if offset + length > status.st_size or length < 0:
            raise UnreadableWeightError(f"external data file {location!r} is shorter than its tensors need "
                                        "(truncated?)")
        data_file.seek(offset)
        yield data_file, length


def _check_regular(mode: int, location: str) -> None:
    if stat.S_ISDIR(mode):
        raise UnreadableWeightError(f"external data file {location!r} is a directory")
    if not stat.S_ISREG(mode):
        raise UnreadableWeightError(f"external data file {location!r} is not a regular file")
