"""Built-in model zoo: exact layer shapes of every network the source documents evaluate."""

from __future__ import annotations

from dnnmap.errors import UnknownNameError, unknown_name_message
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import MODELS, register


class UnknownModelError(UnknownNameError, KeyError):
    """Raised for a model name that is not in the zoo; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def names() -> list[str]:
    _load_all()
    return sorted(MODELS)


def get(name: str, batch: int = 1) -> Network:
    """The zoo network ``name`` (case-insensitive, '-' and '_' interchangeable)."""
    _load_all()
    key = name.lower().replace("-", "_")
    if key not in MODELS:
        raise UnknownModelError(unknown_name_message("model", name, sorted(MODELS), "known models:"))
    return MODELS[key].build(batch)


def describe(name: str) -> str:
    _load_all()
    return MODELS[name].description


def _load_all() -> None:
    from dnnmap.workload.zoo import classic, mobile, nve, resnet, inception, yolo  # noqa: F401


__all__ = ["get", "names", "describe", "register", "UnknownModelError"]
