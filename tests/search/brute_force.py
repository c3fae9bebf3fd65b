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


def axis_assignments(spatial: dict[str, int], shape: tuple[int, ...]) -> Iterator[dict[str, int]]:
    """Every assignment of the spatial dims of one level to fan-out axes that fits each axis."""
    dims = list(spatial)
    for axes in itertools.product(range(len(shape)), repeat=len(dims)):
        used = [math.prod(spatial[d] for d, a in zip(dims, axes) if a == ax) for ax in range(len(shape))]
        if all(u <= size for u, size in zip(used, shape)):
            yield dict(zip(dims, axes))


def level_choices(op: Operator, arch: ArchSpec, level: int,
                  factors: dict[str, tuple[int, int]]) -> list[LevelMapping]:
    """Every (loop order x axis assignment) of one level with the given (temporal, spatial) factors."""
    temporal = tuple((d, t) for d, (t, _) in factors.items() if t > 1)
    spatial = {d: s for d, (_, s) in factors.items() if s > 1}
    fanout = arch.levels[level].fanout
    if fanout is None:
        assignments: list[dict[str, int]] = [{}]
    else:
        assignments = list(axis_assignments(spatial, fanout.shape))
    return [LevelMapping(temporal=temporal, order=order, spatial=tuple(spatial.items()),
                         spatial_axis=tuple((d, a) for d, a in axes.items() if a))
            for order in itertools.permutations(d for d, _ in temporal) for axes in assignments]


def all_mappings(op: Operator, arch: ArchSpec) -> list[Mapping]:
    """Every mapping of the declared space of ``op`` on ``arch``."""
    dims = op.dim_names
    per_dim = [dimension_splits(op.bound(d), arch) for d in dims]
    out = []
    for combo in itertools.product(*per_dim):
        levels = [level_choices(op, arch, i, {d: split[i] for d, split in zip(dims, combo)})
                  for i in range(len(arch.levels))]
        out.extend(Mapping(tuple(lv), layer=op.name, arch=arch.name) for lv in itertools.product(*levels))
    return out
