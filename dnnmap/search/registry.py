"""Mappers by name: each mapper package under ``dnnmap.search`` registers one :class:`Mapper` when imported,
and ``map_layer``, the CLI and the API look mappers up here (docs/search.md, "Adding a mapper").

:data:`BUILTIN` is the one list of the built-in mappers: name, package, description and the options each
takes. Listing names (:func:`names`), describing and checking options (:func:`info`) read it without
importing any search package (so the command line refuses bad input without loading the cost kernel);
:func:`get` imports the one package of the mapper asked for, which registers its :class:`Mapper` built by
:meth:`Mapper.builtin`. A new built-in mapper is one folder whose ``__init__`` calls :func:`register` plus its
line in :data:`BUILTIN` (tests/search/test_registry.py checks the two agree); a mapper defined elsewhere (a
user's script) is registered by calling :func:`register` before the search.
"""

from __future__ import annotations

import importlib
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
class MapperInfo:
    """What is known of a mapper without importing it: ``name`` (the ``--mapper`` value), ``description`` (one
    line for listings), ``takes_imperfect`` / ``takes_tile_first`` / ``takes_constraints`` (whether its search
    honours ``options.imperfect`` / ``options.tile_first`` / ``options.constraints``; map_layer refuses them
    otherwise); ``takes_placement``: the space with per-tensor placement only (a mapper that takes constraints
    takes it too, :func:`takes_placement`); ``takes_both_axes``: the space with the constraint ``both_axes``
    only (likewise, :func:`takes_both_axes`); for a built-in mapper, the ``module`` that registers it."""

    name: str
    description: str
    takes_imperfect: bool = False
    takes_tile_first: bool = False
    takes_constraints: bool = False
    takes_placement: bool = False
    takes_both_axes: bool = False
    module: str = ""


BUILTIN: dict[str, MapperInfo] = {info.name: info for info in (
    MapperInfo("auto", "exhaustive on small spaces, else sunstone", True, True, True, module="dnnmap.search.auto"),
    MapperInfo("exhaustive", "every mapping of the declared space (the optimum), up to 5e6 mappings", True, False,
               True, module="dnnmap.search.exhaustive"),
    MapperInfo("random", "the best of --budget mappings sampled from the declared space (seeded)", True, False,
               True, module="dnnmap.search.sampled"),
    MapperInfo("sunstone", "a level-by-level walk over maximal tiles and unrollings (fast, near the optimum)",
               True, True, False, takes_placement=True, takes_both_axes=True, module="dnnmap.search.sunstone"),
    MapperInfo("optimal", "branch and bound to the proven optimum, or a certified gap when --budget-seconds runs "
               "out", takes_imperfect=True, takes_placement=True, takes_both_axes=True, module="dnnmap.search.optimal"),
    MapperInfo("tso", "tensor slicing and tiling for multicore NPUs (TSO; minimizes its own time estimate)",
               module="dnnmap.search.tso"),
    MapperInfo("marvel", "off-chip tiles and layouts first, then the on-chip mapping (Marvel)",
               module="dnnmap.search.marvel"),
)}


@dataclass(frozen=True)
class Mapper:
    """A search for the best mapping of one operator on one architecture: ``info`` (its name, description and the
    options it takes; ``module`` stays empty for a mapper defined outside dnnmap) and ``search``."""

    info: MapperInfo
    search: SearchFn

    @property
    def name(self) -> str:
        return self.info.name

    @classmethod
    def builtin(cls, name: str, search: SearchFn) -> Mapper:
        """The built-in mapper ``name`` of :data:`BUILTIN` searching with ``search``."""
        return cls(BUILTIN[name], search)


_MAPPERS: dict[str, Mapper] = {}


def register(mapper: Mapper) -> Mapper:
    """Make ``mapper`` available under ``mapper.name``; a different mapper may not take a registered name, nor
    a built-in mapper's name with another description or other options."""
    known = _MAPPERS.get(mapper.name)
    if known is not None and known != mapper:
        raise ValueError(f"mapper name {mapper.name!r} is taken: {known.info.description}")
    builtin = BUILTIN.get(mapper.name)
    if builtin is not None and builtin != replace(mapper.info, module=builtin.module):
        raise ValueError(f"mapper name {mapper.name!r} is taken: {builtin.description}")
    _MAPPERS[mapper.name] = mapper
    return mapper


def _known() -> dict[str, MapperInfo]:
    """Every mapper's info: the built-in ones and those registered (imported or a user's), no import."""
    return {**BUILTIN, **{n: m.info for n, m in _MAPPERS.items() if n not in BUILTIN}}


def names(where: Callable[[MapperInfo], bool] | None = None) -> tuple[str, ...]:
    """Known mapper names, ``auto`` first then alphabetical; ``where`` keeps those it accepts (no import)."""
    known = _known()
    ordered = sorted(known, key=lambda n: (n != "auto", n))
    return tuple(n for n in ordered if where is None or where(known[n]))


def info(name: str) -> MapperInfo:
    """What is known of the mapper ``name`` without importing it; an unknown name is refused with the known
    ones."""
    known = _known()
    if name not in known:
        raise UnknownNameError(unknown_name_message("mapper", name, names()))
    return known[name]


def get(name: str) -> Mapper:
    """The mapper registered as ``name`` (a built-in one's package is imported on first use); an unknown name is
    refused with the known ones."""
    if name not in _MAPPERS:
        importlib.import_module(info(name).module)
    return _MAPPERS[name]


def takes_imperfect(mapper: MapperInfo) -> bool:
    return mapper.takes_imperfect


def takes_tile_first(mapper: MapperInfo) -> bool:
    return mapper.takes_tile_first


def takes_constraints(mapper: MapperInfo) -> bool:
    return mapper.takes_constraints


def takes_placement(mapper: MapperInfo) -> bool:
    return mapper.takes_placement or mapper.takes_constraints


def takes_both_axes(mapper: MapperInfo) -> bool:
    return mapper.takes_both_axes or mapper.takes_constraints


Capability = Callable[[MapperInfo], bool]

# Each option a mapper may not take, in the words of the Python options (``SearchOptions``' fields).
OPTION_WORDS = {"imperfect": "imperfect factorization", "tile_first": "tile_first", "placement": "per-tensor placement",
                "constraints.placement": "per-tensor placement", "constraints.both_axes": "both-axis unrolling "
                "(both_axes)", "constraints": "a map-space constraint"}


def refused_options(caps: MapperInfo, options: SearchOptions) -> list[tuple[str, Capability]]:
    """The options given in ``options`` that the mapper ``caps`` describes does not take, each as its key of
    :data:`OPTION_WORDS` and the capability of the mappers that take it (a constraints file holding only
    ``placement`` and ``both_axes`` is taken by the mappers that take those)."""
    given = (("imperfect", options.imperfect is not None, takes_imperfect),
             ("tile_first", options.tile_first, takes_tile_first),
             ("placement", options.placement, takes_placement),
             ("constraints.placement", options.constraints.placement, takes_placement),
             ("constraints.both_axes", options.constraints.both_axes, takes_both_axes),
             ("constraints", bool(options.constraints.narrowing_fields()), takes_constraints))
    return [(key, takes) for key, asked, takes in given if asked and not takes(caps)]


def check_options(name: str, options: SearchOptions) -> Mapper:
    """The mapper ``name``, refusing the first option it does not take (:func:`refused_options`), naming the
    mappers that take it."""
    mapper = get(name)
    for key, takes in refused_options(mapper.info, options)[:1]:
        raise DnnmapError(f"{OPTION_WORDS[key]} applies to the {', '.join(names(takes))} mappers, not to {name!r}")
    return mapper
