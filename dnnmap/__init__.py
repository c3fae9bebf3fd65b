"""dnnmap: map CNNs onto DNN accelerators.

The top-level names load lazily (PEP 562): ``import dnnmap.workload.ir`` reads the IR without the
search, the cost model's compiled kernel or numba; ``dnnmap.map_network`` imports the API on first use
and ``dnnmap.__version__`` reads the installed distribution's version.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dnnmap.api import map_network

_LAZY = {"map_network": "dnnmap.api"}  # top-level name -> the module that defines it

__all__ = ["__version__", "map_network"]


def __getattr__(name: str) -> Any:
    """Import a top-level name's module on first access (PEP 562)."""
    if name == "__version__":
        from importlib import metadata

        try:
            return metadata.version("dnnmap")
        except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
            return "0+unknown"
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dnnmap' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})
