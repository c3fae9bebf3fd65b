"""Certified-optimal mapper: branch and bound over the declared map space (:mod:`.search`)."""

from dnnmap.search.optimal.search import Certificate, OptimalMapper, OptimalResult, optimal_search
from dnnmap.search.registry import register

register(OptimalMapper())

__all__ = ["Certificate", "OptimalResult", "optimal_search"]
