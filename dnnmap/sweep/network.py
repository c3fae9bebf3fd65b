"""Whole-network mapping on a Dask cluster (``dnnmap map --workers N`` / ``--scheduler tcp://...``).

The distinct layer shapes of the network are searched in parallel, one task per shape, on the engine the
sweep uses (:func:`dnnmap.sweep.engine.dask_client`); the per-layer results are then assembled by
:func:`dnnmap.search.network.search_network` exactly as the serial run assembles its own (identical layers
reuse the first one's search). A task of a worker that dies is rescheduled on the others (``retries``), and
every mapper is deterministic for its seed, so the result equals the serial run's - except the ``optimal``
mapper's when its ``--budget-seconds`` limit stops a layer: how far it got depends on the load.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.mappers import SearchResult
from dnnmap.search.network import NetworkResult, check_search_limits, map_layer, search_network, select_layers, \
    shape_key
from dnnmap.search.options import SearchOptions
from dnnmap.workload.ir import Network, Operator

if TYPE_CHECKING:
    from distributed import Client

RETRIES = 2  # reschedules of a task whose worker died, as the sweep's


def search_network_dask(network: Network, arch: ArchSpec, client: Client, objective: str = "edp",
                        mapper: str = "auto", layers: list[str] | None = None,
                        options: SearchOptions = SearchOptions(),
                        on_layer: Callable[[str], None] | None = None) -> NetworkResult:
    """:func:`~dnnmap.search.network.search_network` with the distinct layer shapes searched on ``client``'s
    cluster; ``on_layer`` is called with every layer name of a shape when its search arrives."""
    from distributed import as_completed

    selected = select_layers(network, layers)
    check_search_limits(selected, arch, options)
    t0 = time.perf_counter()
    by_shape: dict[tuple, list[Operator]] = {}
    for op in selected:
        by_shape.setdefault(shape_key(op), []).append(op)
    futures = {client.submit(map_layer, same[0], arch, objective, mapper, options, pure=False, retries=RETRIES): key
               for key, same in by_shape.items()}
    shapes: dict[tuple, tuple[str, SearchResult]] = {}
    for future in as_completed(futures):
        key = futures[future]
        shapes[key] = (by_shape[key][0].name, future.result())
        future.release()
        for op in by_shape[key]:
            if on_layer:
                on_layer(op.name)
    result = search_network(network, arch, objective, mapper, layers, options, shapes=shapes)
    # the first layer of each shape was searched, not reused (search_network saw every shape as known)
    first = {name for name, _ in shapes.values()}
    results = tuple(replace(r, reused_from=None) if r.layer in first else r for r in result.layers)
    return replace(result, layers=results, seconds=time.perf_counter() - t0)
