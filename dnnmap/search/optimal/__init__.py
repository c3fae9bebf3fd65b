"""Certified-optimal mapper: branch and bound over the declared map space (:mod:`.search`)."""

from dnnmap.search.optimal.search import MAPPER, Certificate, OptimalResult, optimal_search
from dnnmap.search.registry import register

register(MAPPER)

__all__ = ["Certificate", "OptimalResult", "optimal_search"]
