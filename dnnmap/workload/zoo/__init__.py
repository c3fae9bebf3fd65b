"""Built-in model zoo: exact layer shapes of every network the source documents evaluate."""

from __future__ import annotations

from dnnmap import limits
from dnnmap.errors import DnnmapError, UnknownNameError, unknown_name_message
from dnnmap.workload.ir import Network
from dnnmap.workload.named import size_value, spec_items
from dnnmap.workload.zoo.registry import MODELS, ZooEntry, register


class UnknownModelError(UnknownNameError, KeyError):
    """Raised for a model name that is not in the zoo; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


def names() -> list[str]:
    _load_all()
    return sorted(MODELS)


def _params(name: str, entry: ZooEntry, text: str, sep_given: bool) -> dict[str, object]:
    """``key=value,...`` of a zoo name (``sep_given``: the name has a ``:``), checked against the model's
    parameters (their defaults' types)."""
    defaults = dict(entry.params)
    given: dict[str, object] = {}
    example = (f"{entry.name}:" + ",".join(f"{k}={v}" for k, v in entry.params) if entry.params
               else f"{entry.name} (it takes no parameters)")
    for item in spec_items(text, f"model {name!r}", example) if sep_given else ():
        key, sep, value = (s.strip() for s in item.partition("="))
        if not sep or key not in defaults:
            allowed = ", ".join(f"{k}={v}" for k, v in entry.params) or "none"
            raise DnnmapError(f"model {name!r}: {item!r} is not a parameter of {entry.name} (parameters, with "
                              f"their defaults: {allowed})")
        if key in given:
            raise DnnmapError(f"model {name!r}: {key} is given twice")
        if isinstance(defaults[key], int):
            if not 1 <= size_value(value) <= limits.MAX_DIM:
                raise DnnmapError(f"model {name!r}: {key} must be an integer from 1 to {limits.MAX_DIM:,}, "
                                  f"got {value!r}")
            given[key] = size_value(value)
        else:
            given[key] = value
    return given


def has(name: str) -> bool:
    """Whether ``name`` (``get``'s spelling, parameters included) names a zoo model."""
    _load_all()
    return name.partition(":")[0].lower().replace("-", "_") in MODELS


def get(name: str, batch: int = 1) -> Network:
    """The zoo network ``name`` (case-insensitive, '-' and '_' interchangeable), optionally with parameters
    ``name:key=value,...`` (the transformer models' ``phase``, ``seq``, ...; docs/zoo.md)."""
    _load_all()
    base, colon, text = name.partition(":")
    key = base.lower().replace("-", "_")
    if key not in MODELS:
        raise UnknownModelError(unknown_name_message("model", base, sorted(MODELS), "known models:"))
    return MODELS[key].build(batch, **_params(name, MODELS[key], text, bool(colon)))


def describe(name: str) -> str:
    _load_all()
    return MODELS[name].description


def _load_all() -> None:
    from dnnmap.workload.zoo import classic, inception, mobile, nve, resnet, transformers, yolo  # noqa: F401


__all__ = ["get", "names", "describe", "register", "UnknownModelError"]
