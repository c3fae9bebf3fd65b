"""Parse ``--input-shape NAME=1x3x224x224`` options into the ``input_shapes`` mapping of the importers."""

from __future__ import annotations

import re
from collections.abc import Iterable

from dnnmap.errors import InputFileError

_OPTION = re.compile(r"^\s*([^=\s][^=]*?)\s*=\s*(\d+(?:\s*[xX,]\s*\d+)*)\s*$")


def parse_input_shapes(options: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """``["input=1x3x224x224"]`` -> ``{"input": (1, 3, 224, 224)}``; each name at most once, dims >= 1."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in options:
        m = _OPTION.match(text)
        if not m:
            raise InputFileError(f"--input-shape {text!r}: expected NAME=DIMS with positive integer dimensions "
                                 "separated by 'x', e.g. input=1x3x224x224")
        name, dims = m.group(1), tuple(int(d) for d in re.split(r"\s*[xX,]\s*", m.group(2)))
        if name in shapes:
            raise InputFileError(f"--input-shape {name!r} is given twice")
        if 0 in dims:
            raise InputFileError(f"--input-shape {text!r}: dimensions must be at least 1")
        shapes[name] = dims
    return shapes
