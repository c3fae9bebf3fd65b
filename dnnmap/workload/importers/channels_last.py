"""Shared by the TensorFlow front ends (Keras files, SavedModel directories; optional extra ``dnnmap[keras]``).

Loading the extra's modules lazily with an install hint, the NHWC -> NCHW transposition,
and the concrete input shapes: overrides given in the model's own channels-last layout,
an unspecified batch taken as 1 (and said so), any other unknown dimension an error.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

from dnnmap.errors import InputFileError
from dnnmap.workload.importers.graph import InputShapes, check_input_names

Shape = tuple[int, ...]
DeclaredShape = tuple[int | None, ...]


def tensorflow_module(name: str, path: str | os.PathLike[str]) -> Any:
    """Import ``keras`` or ``tensorflow`` to read ``path`` (quieting TensorFlow's C++ start-up log unless the
    user set its level); without the extra, an :class:`InputFileError` naming ``path`` says how to install it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise InputFileError(f"{path}: importing Keras and TensorFlow models needs TensorFlow/Keras: "
                             "pip install 'dnnmap[keras]'") from exc


def nchw(shape: Shape) -> Shape:
    """A channels-last 4-D shape in the IR's (N, C, H, W) order; other ranks unchanged."""
    return (shape[0], shape[3], shape[1], shape[2]) if len(shape) == 4 else tuple(shape)


def pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def resolve_input_shapes(path: str, declared: dict[str, DeclaredShape], overrides: InputShapes,
                         notes: list[str]) -> dict[str, Shape]:
    """Concrete channels-last input shapes: ``overrides`` must fit ``declared`` (``None`` = unknown dimension);
    an unknown batch becomes 1 (appended to ``notes``); another unknown dimension needs an override."""
    check_input_names(path, overrides, list(declared))
    shapes = {}
    for name, dims in declared.items():
        if name in overrides:
            given = tuple(int(d) for d in overrides[name])
            if len(given) != len(dims) or any(d is not None and d != g for d, g in zip(dims, given)):
                raise InputFileError(f"{path}: --input-shape {name}={'x'.join(map(str, given))} does not "
                                     f"fit the model's input shape {dims} (channels-last layout)")
            shapes[name] = given
            continue
        if any(d is None for d in dims[1:]):
            example = "x".join(str(d or 224) for d in (1, *dims[1:]))
            raise InputFileError(f"{path}: input {name!r} has dynamic dimensions {dims}; give a fixed "
                                 f"shape in the model's layout with --input-shape {name}={example}")
        if dims and dims[0] is None:
            notes.append(f"batch of input {name!r} unspecified in the model; assumed 1")
        shapes[name] = (dims[0] or 1, *dims[1:]) if dims else ()
    return shapes
