"""Pareto front of design points over (latency, energy, area), all minimised."""

from __future__ import annotations

from collections.abc import Sequence

from dnnmap.hwgen.evaluate import DesignPoint


def _metrics(p: DesignPoint) -> tuple[float, float, float]:
    return (p.latency_s, p.energy_j, p.area_mm2)


def dominates(a: DesignPoint, b: DesignPoint) -> bool:
    """``a`` is no worse than ``b`` on every metric and better on one."""
    ma, mb = _metrics(a), _metrics(b)
    return all(x <= y for x, y in zip(ma, mb)) and ma != mb


def pareto_front(points: Sequence[DesignPoint]) -> list[DesignPoint]:
    """The points no other point dominates, by latency (ties: energy, area); duplicates kept once."""
    front: list[DesignPoint] = []
    for p in sorted(points, key=_metrics):
        if not any(dominates(q, p) or _metrics(q) == _metrics(p) for q in front):
            front.append(p)
    return front
