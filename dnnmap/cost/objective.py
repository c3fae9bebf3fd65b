"""What a search minimizes, and how it ranks candidates: the one objective table and the one tie-break.

Every mapper, the fusion scheduler and the hardware generator read these: an objective is one of
:data:`OBJECTIVES`; candidates are ranked by the objective, then by :func:`tie_break` (energy, then
latency: results do not depend on enumeration order when objectives tie), then by enumeration order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dnnmap.errors import DnnmapError, UnknownNameError, unknown_name_message

if TYPE_CHECKING:  # numpy loads with the first ranking, not with the objective names (the CLI's checks)
    import numpy as np

OBJECTIVES = ("latency", "energy", "edp", "dram")
TIE_CYCLES_WEIGHT = 1e-9  # the tie-break: energy + this x cycles (energy first, latency second)


def check_objective(name: str, choices: tuple[str, ...] = OBJECTIVES) -> None:
    """Refuse an objective that is not one of ``choices``, listing them."""
    if name not in choices:
        raise UnknownNameError(unknown_name_message("objective", name, choices))


def objective_value(name: str, energy, cycles, dram_bytes=None):  # noqa: ANN001, ANN201 - floats or arrays
    """The value ``name`` minimizes from energy, latency (cycles, or seconds) and DRAM bytes; scalars or
    arrays alike. ``edp`` is energy x latency; ``dram`` needs ``dram_bytes``."""
    check_objective(name)
    if name == "latency":
        return cycles
    if name == "energy":
        return energy
    if name == "edp":
        return energy * cycles
    if dram_bytes is None:
        raise DnnmapError("objective 'dram' needs DRAM bytes, which this result does not have; "
                               "choose from latency, energy, edp")
    return dram_bytes


def tie_break(energy: np.ndarray, cycles: np.ndarray) -> np.ndarray:
    """The second ranking key: lower energy first, then lower latency."""
    return energy + TIE_CYCLES_WEIGHT * cycles


def rank(score: np.ndarray, tie: np.ndarray) -> np.ndarray:
    """Candidate indices best first: lowest ``score``, then lowest ``tie``, then enumeration order."""
    import numpy as np

    return np.lexsort((tie, score))


def best_index(score: np.ndarray, tie: np.ndarray) -> int:
    """Index of the best candidate under :func:`rank`."""
    return int(rank(score, tie)[0])
