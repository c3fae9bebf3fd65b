"""Certified-optimal mapper: branch and bound over the declared map space (:mod:`.search`)."""

from dnnmap.search.optimal.search import Certificate, OptimalResult, optimal_search

__all__ = ["Certificate", "OptimalResult", "optimal_search"]
