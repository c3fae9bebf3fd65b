"""Mappers by name: each mapper package under ``dnnmap.search`` registers one :class:`Mapper` when imported,
and ``map_layer``, the CLI and the API look mappers up here (docs/search.md, "Adding a mapper").

The first lookup (:func:`get`, :func:`names`) imports every subpackage of ``dnnmap.search``, so a new
mapper is one folder whose ``__init__`` calls :func:`register`; a mapper defined elsewhere (a user's
script) is registered by calling :func:`register` before the search.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from dnnmap.errors import DnnmapError, UnknownNameError, unknown_name_message

if TYPE_CHECKING:
    from dnnmap.arch.spec import ArchSpec
    from dnnmap.search.mappers import Progress, SearchResult
    from dnnmap.search.options import SearchOptions
    from dnnmap.workload.ir import Operator


class SearchFn(Protocol):
    def __call__(self, op: Operator, arch: ArchSpec, objective: str, options: SearchOptions,
                 progress: Progress | None = None) -> SearchResult:
        """The best mapping found for ``objective`` under ``options`` (``progress``: candidates evaluated,
        for mappers that count them); raises :class:`dnnmap.errors.MappingError` when nothing fits."""
        ...


@dataclass(frozen=True)
class Mapper:
    """A search for the best mapping of one operator on one architecture.

    ``name``: the ``--mapper`` value; ``description``: one line for listings; ``search``: the search.
    ``takes_imperfect`` / ``takes_tile_first`` / ``takes_constraints``: whether ``search`` honours
    ``options.imperfect`` / ``options.tile_first`` / ``options.constraints`` (walks the constrained map space;
    map_layer refuses them otherwise). ``takes_placement``: ``options.placement`` (per-tensor placements)
    without taking constraints; a mapper that takes constraints takes placement too (:func:`takes_placement`)."""

    name: str
    description: str
    search: SearchFn
    takes_imperfect: bool = False
    takes_tile_first: bool = False
    takes_constraints: bool = False
    takes_placement: bool = False


_MAPPERS: dict[str, Mapper] = {}
_discovered = False


def register(mapper: Mapper) -> Mapper:
    """Make ``mapper`` available under ``mapper.name``; a different mapper may not take a registered name."""
    known = _MAPPERS.get(mapper.name)
    if known is not None and known != mapper:
        raise ValueError(f"mapper name {mapper.name!r} is taken: {known.description}")
    _MAPPERS[mapper.name] = mapper
    return mapper


def _discover() -> None:
    """Import every subpackage of ``dnnmap.search`` once: each mapper package registers on import."""
    global _discovered
    if _discovered:
        return
    import dnnmap.search as package

    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.ispkg:
            importlib.import_module(info.name)
    _discovered = True


def names(where: Callable[[Mapper], bool] | None = None) -> tuple[str, ...]:
    """Registered mapper names, ``auto`` first then alphabetical; ``where`` keeps those it accepts."""
    _discover()
    ordered = sorted(_MAPPERS, key=lambda n: (n != "auto", n))
    return tuple(n for n in ordered if where is None or where(_MAPPERS[n]))


def get(name: str) -> Mapper:
    """The mapper registered as ``name``; an unknown name is refused with the known ones."""
    _discover()
    if name not in _MAPPERS:
        raise UnknownNameError(unknown_name_message("mapper", name, names()))
    return _MAPPERS[name]


def takes_imperfect(mapper: Mapper) -> bool:
    return mapper.takes_imperfect


def takes_tile_first(mapper: Mapper) -> bool:
    return mapper.takes_tile_first


def takes_constraints(mapper: Mapper) -> bool:
    return mapper.takes_constraints


def takes_placement(mapper: Mapper) -> bool:
    return mapper.takes_placement or mapper.takes_constraints


def check_options(name: str, options: SearchOptions) -> Mapper:
    """The mapper ``name``, refusing options it does not take (imperfect, tile_first, constraints or placement),
    naming those that do."""
    mapper = get(name)
    if options.imperfect is not None and not mapper.takes_imperfect:
        raise DnnmapError(f"imperfect factorization is an option of the {', '.join(names(takes_imperfect))} "
                          f"mappers, not of {name!r}")
    if options.tile_first and not mapper.takes_tile_first:
        raise DnnmapError(f"tile_first is an option of the {', '.join(names(takes_tile_first))} mappers, "
                          f"not of {name!r}")
    if options.space_constraints().placement and not takes_placement(mapper):
        raise DnnmapError(f"per-tensor placement is an option of the {', '.join(names(takes_placement))} mappers, "
                          f"not of {name!r}")
    if not replace(options.space_constraints(), placement=False).empty and not mapper.takes_constraints:
        raise DnnmapError(f"map-space constraints apply to the {', '.join(names(takes_constraints))} mappers; the "
                          f"{name!r} mapper builds its own candidates and would ignore them")
    return mapper
