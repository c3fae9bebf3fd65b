"""Registry of zoo builders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class ZooEntry:
    name: str
    description: str
    builder: Callable[..., Network]
    params: tuple[tuple[str, object], ...] = ()  # parameters ``NAME:key=value,...`` sets, with their defaults

    def build(self, batch: int = 1, **params: Any) -> Network:
        return self.builder(batch, **params)


MODELS: dict[str, ZooEntry] = {}


def register(name: str, description: str,
             params: tuple[tuple[str, object], ...] = ()) -> Callable[[Callable[..., Network]], Callable[..., Network]]:
    """Decorator: register ``builder(batch, **params) -> Network`` under ``name``; ``params`` are the
    parameters a zoo name may set (``gpt2:phase=decode,seq=1024``) with their defaults."""

    def wrap(fn: Callable[..., Network]) -> Callable[..., Network]:
        MODELS[name] = ZooEntry(name, description, fn, params)
        return fn

    return wrap
