"""Resource limits checked before any work, so that input which cannot finish is refused at once.

Each limit says why it exists (``docs/robustness.md`` lists them all). They bound what the
search, the cost model (64-bit integer counts, float64 energies) and the simulators can
handle in reasonable time; real networks and accelerators stay far below them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dnnmap.errors import DnnmapError

MAX_DIM = 2**20
"""Largest loop bound of an operator: the mappers enumerate every divisor split of a bound by trial
division (work proportional to the bound), so larger bounds cannot be searched in reasonable time."""

MAX_ITERATIONS = 2**50
"""Largest product of an operator's loop bounds (~1.1e15 MACs): access counts, which multiply it by
tensor reuse factors, must stay within 64-bit integers and exact in float64."""

MAX_TENSOR_AXES = 16
"""Most dimensions or tensor axes of one operator (the IR's loop nests have at most 8)."""

MAX_LEVELS = 16
"""Most memory levels of an architecture: the declared map space (factor splits and loop orders per
level) grows exponentially with the level count; real designs use 2-8."""

MAX_MACS = 2**24
"""Most MAC lanes (product of all fan-outs; a 256x256 systolic array has 65,536): spatial splits are
enumerated per array axis and instance counts multiply access counts."""

MAX_CAPACITY = 2**48
"""Largest level capacity in words or bits (256 TiB): tile sizes are 64-bit integers."""

MAX_ENERGY = 1e15
"""Largest energy per action: energies multiply access counts of up to ~2**60 and must stay finite."""

MIN_RATE = 1e-6
"""Smallest bandwidth (words/cycle or GB/s) and clock (MHz): transfer cycles divide by them and must stay
finite (a bandwidth of 1e-300 made every mapping infinitely slow: "no legal mapping found")."""

MAX_RATE = 1e12
"""Largest bandwidth (words/cycle or GB/s), clock (MHz) or CAS latency (ns)."""

MAX_BUDGET = 10**9
"""Most random-mapper samples per layer: at about 1 M mappings/s a larger budget runs for more than a
quarter of an hour per layer, and the sampler's draw counter (50 x budget) must stay far below 2**63."""

MAX_SEED = 2**62
"""Seeds are non-negative 64-bit integers (NumPy's and numba's generators), with room for per-layer offsets."""

MAX_SPLITS = 1_000_000
"""Most ordered factorizations of one loop bound over an architecture's loop slots: the mappers tabulate
them all (a table of a million rows takes seconds to build)."""

MAX_SWEEP_POINTS = 10_000
"""Most template points of one sweep (the product of its ``--param`` grids): every point becomes a spec
and a task per model and objective before the first result; 10,000 whole-network searches already take
days on one machine."""


def check_range(value: int | float, low: int | float, high: int | float, what: str, why: str) -> None:
    """``low <= value <= high`` or a DnnmapError naming ``what``, the limit and ``why``."""
    if not low <= value <= high:
        raise DnnmapError(f"{what} = {value:,} is outside {low:,}..{high:,}: {why}")


def check_budget(budget: int) -> None:
    check_range(budget, 1, MAX_BUDGET, "--budget",
                "at ~1 M mappings/s larger budgets take more than 15 minutes per layer")


def check_seed(seed: int) -> None:
    check_range(seed, 0, MAX_SEED, "--seed", "seeds are non-negative 64-bit integers")


def operator_problem(dims: Iterable[tuple[str, int]]) -> str | None:
    """Why an operator with loop bounds ``dims`` is too large to map, or None."""
    dims = list(dims)
    if len(dims) > MAX_TENSOR_AXES:
        return f"{len(dims)} dimensions (limit {MAX_TENSOR_AXES})"
    for d, b in dims:
        if b > MAX_DIM:
            return (f"dimension {d} = {b:,} exceeds the limit {MAX_DIM:,} (the mappers enumerate the divisor "
                    "splits of every bound, work proportional to the bound)")
    total = math.prod(b for _, b in dims)
    if total > MAX_ITERATIONS:
        return (f"{total:.3g} loop iterations exceed the limit {MAX_ITERATIONS:.3g} (~2**50; access counts must "
                "stay within 64-bit integers)")
    return None


def _prime_exponents(n: int) -> list[int]:
    out = []
    p = 2
    while p * p <= n:
        e = 0
        while n % p == 0:
            n //= p
            e += 1
        if e:
            out.append(e)
        p += 1 if p == 2 else 2
    if n > 1:
        out.append(1)
    return out


def factor_splits(n: int, slots: int) -> int:
    """Number of ordered ``slots``-tuples of positive integers whose product is ``n``."""
    return math.prod(math.comb(e + slots - 1, slots - 1) for e in _prime_exponents(n))


def check_map_space(layer: str, dims: Iterable[tuple[str, int]], slots: int, arch: str) -> None:
    """Refuse a layer whose factor tables (divisor splits over ``slots`` loop slots) would not fit."""
    for d, b in dims:
        splits = factor_splits(b, slots)
        if splits > MAX_SPLITS:
            raise DnnmapError(
                f"layer {layer!r}: dimension {d} = {b:,} has {splits:,} ways to split over the {slots} loop slots "
                f"of {arch!r} (limit {MAX_SPLITS:,}: the mappers tabulate every split); use an architecture "
                "with fewer levels or fan-out axes, or a smaller layer")
