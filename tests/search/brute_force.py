"""Independent brute-force enumeration of the declared map space, as :class:`Mapping` objects.

Shares no code with ``dnnmap.search``: its own divisor factorizations, its own fan-out
axis assignment and every loop order of every level (level 0 included), built directly
as :class:`~dnnmap.mapping.mapping.Mapping` objects. The declared space it enumerates is
the one docs/search.md states: every dimension's bound is an exact product of one
temporal factor per level and one spatial factor per fan-out level, each spatial dimension
sits on one axis of its level's fan-out, the factors on an axis multiply to at most the
axis size; bypass is the architecture's ``keeps`` and DRAM layouts are row-major. Loops
of factor 1 do not exist in a :class:`Mapping` (they never advance), so a level's orders
are the permutations of its loops of factor > 1.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.workload.ir import Operator

# one dimension's split: per level (temporal factor, spatial factor)
Split = tuple[tuple[int, int], ...]


def divisor_chains(n: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every ``parts``-tuple of positive integers whose product is exactly ``n``."""
    if parts == 0:
        if n == 1:
            yield ()
        return
    for d in (d for d in range(1, n + 1) if n % d == 0):
        for rest in divisor_chains(n // d, parts - 1):
            yield (d, *rest)


def dimension_splits(bound: int, arch: ArchSpec) -> list[Split]:
    """Temporal factor at every level and a spatial factor at every fan-out level, multiplying to ``bound``."""
    fanout_levels = [i for i, lv in enumerate(arch.levels) if lv.fanout is not None]
    L = len(arch.levels)
    splits = []
    for chain in divisor_chains(bound, L + len(fanout_levels)):
        spatial = dict(zip(fanout_levels, chain[L:]))
        splits.append(tuple((chain[i], spatial.get(i, 1)) for i in range(L)))
    return splits


def axis_assignments(spatial: dict[str, int], shape: tuple[int, ...], both: bool = False) -> Iterator[dict[str, int]]:
    """Every assignment of the spatial dims of one level to fan-out axes that fits each axis; ``both``: a dim may
    also take x > 1 on axis 0 and y > 1 on axis 1 of a 2-D fan-out with x * y its factor (axis label 2), each
    assignment of labels once."""
    dims = list(spatial)
    per_dim = []
    for d in dims:
        options = [(a, tuple(spatial[d] if b == a else 1 for b in range(len(shape)))) for a in range(len(shape))]
        if both and len(shape) == 2:
            options += [(2, (x, spatial[d] // x)) for x in range(2, spatial[d]) if spatial[d] % x == 0
                        and spatial[d] // x > 1]
        per_dim.append(options)
    seen = set()
    for combo in itertools.product(*per_dim):
        labels = tuple(a for a, _ in combo)
        used = [math.prod(split[ax] for _, split in combo) for ax in range(len(shape))]
        if labels not in seen and all(u <= size for u, size in zip(used, shape)):
            seen.add(labels)
            yield dict(zip(dims, labels))


def level_choices(op: Operator, arch: ArchSpec, level: int,
                  factors: dict[str, tuple[int, int]], both: bool = False) -> list[LevelMapping]:
    """Every (loop order x axis assignment) of one level with the given (temporal, spatial) factors (``both``:
    with dims over both axes of a 2-D fan-out)."""
    temporal = tuple((d, t) for d, (t, _) in factors.items() if t > 1)
    spatial = {d: s for d, (_, s) in factors.items() if s > 1}
    fanout = arch.levels[level].fanout
    if fanout is None:
        assignments: list[dict[str, int]] = [{}]
    else:
        assignments = list(axis_assignments(spatial, fanout.shape, both))
    return [LevelMapping(temporal=temporal, order=order, spatial=tuple(spatial.items()),
                         spatial_axis=tuple((d, a) for d, a in axes.items() if a))
            for order in itertools.permutations(d for d, _ in temporal) for axes in assignments]


def all_mappings(op: Operator, arch: ArchSpec, both: bool = False) -> list[Mapping]:
    """Every mapping of the declared space of ``op`` on ``arch`` (``both``: and those splitting a dimension over
    both axes of a 2-D fan-out, the constraint ``both_axes`` on every such level)."""
    dims = op.dim_names
    per_dim = [dimension_splits(op.bound(d), arch) for d in dims]
    out = []
    for combo in itertools.product(*per_dim):
        levels = [level_choices(op, arch, i, {d: split[i] for d, split in zip(dims, combo)}, both)
                  for i in range(len(arch.levels))]
        out.extend(Mapping(tuple(lv), layer=op.name, arch=arch.name) for lv in itertools.product(*levels))
    return out
