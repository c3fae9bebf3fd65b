"""Registry of zoo builders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class ZooEntry:
    name: str
    description: str
    builder: Callable[[int], Network]

    def build(self, batch: int = 1) -> Network:
        return self.builder(batch)


MODELS: dict[str, ZooEntry] = {}


def register(name: str, description: str) -> Callable[[Callable[[int], Network]], Callable[[int], Network]]:
    """Decorator: register ``builder(batch) -> Network`` under ``name``."""

    def wrap(fn: Callable[[int], Network]) -> Callable[[int], Network]:
        MODELS[name] = ZooEntry(name, description, fn)
        return fn

    return wrap
