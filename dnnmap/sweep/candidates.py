"""Hardware candidates of a sweep: template points from ``--param NAME=V1,V2,...`` grids."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from pydantic import ValidationError

from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.errors import DnnmapError
from dnnmap.limits import MAX_SWEEP_POINTS

GRID_FIELDS = tuple(f for f, info in SparseSimdParams.model_fields.items() if info.annotation in (int, float))


def parse_param(text: str) -> tuple[str, list[float | int]]:
    """``"rows=8,16"`` -> ``("rows", [8, 16])``, typed by the template field."""
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or name not in GRID_FIELDS:
        raise DnnmapError(f"--param {text!r}: expected NAME=V1,V2,... with NAME one of {', '.join(GRID_FIELDS)}")
    kind = int if SparseSimdParams.model_fields[name].annotation is int else float
    try:
        parsed = [kind(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise DnnmapError(f"--param {text!r}: {name} takes {kind.__name__} values, comma-separated") from None
    if not parsed:
        raise DnnmapError(f"--param {text!r}: no values")
    return name, parsed


def template_points(params: Sequence[str]) -> list[SparseSimdParams]:
    """The Cartesian product of the ``--param`` grids over the template's reference point; each point is
    named after the values it sets (``simd_rows16_cols12``); no ``--param``: no points."""
    grids: dict[str, list[float | int]] = {}
    for text in params:
        name, values = parse_param(text)
        if name in grids:
            raise DnnmapError(f"--param {text!r}: {name} is given twice (list all its values in one --param)")
        if len(set(values)) != len(values):
            raise DnnmapError(f"--param {text!r}: a value repeats")
        grids[name] = values
    if not grids:
        return []
    count = math.prod(len(v) for v in grids.values())
    if count > MAX_SWEEP_POINTS:
        raise DnnmapError(f"--param: the grids give {count:,} template points, more than the limit "
                          f"{MAX_SWEEP_POINTS:,} (docs/robustness.md); sweep a coarser grid")
    points = []
    for values in itertools.product(*grids.values()):
        setting = dict(zip(grids, values))
        name = "simd_" + "_".join(f"{k}{v:g}" for k, v in setting.items())
        try:
            points.append(SparseSimdParams(name=name, **setting))
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            raise DnnmapError(f"--param: template point {setting} is invalid ({problems})") from None
    return points
