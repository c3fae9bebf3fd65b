"""Kernel warm-up: compile (first run) or load from numba's cache the cost kernel before a search."""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.bounds import compile_kernels as compile_bound_tables
from dnnmap.search.optimal.mirror import compile_kernels as compile_mirror
from dnnmap.search.optimal.placement import compile_kernels as compile_order_stages
from dnnmap.search.optimal.shared_order import compile_kernels as compile_shared_order
from dnnmap.workload.ops import conv2d


def compile_kernels(arch: ArchSpec | None = None) -> None:
    """Compile (first run) or load from numba's on-disk cache the cost kernel as ``arch`` (default: the
    Eyeriss preset) needs it - with or without the burst code, and the network pass when a fan-out has a
    network bandwidth (docs/cost-model.md section 5) - by evaluating one mapping of a tiny layer. Compiling takes
    about 12-15 s of CPU (Eyeriss; more with the burst code), loading the cache well under 1 s; an in-place install
    runs this for Eyeriss (install/backend.py); the random mapper's sampler compiles on its first use (~2 s). Also
    the optimal mapper's order-stage kernels (:func:`dnnmap.search.optimal.placement.compile_kernels`), B39's
    (:func:`dnnmap.search.optimal.shared_order.compile_kernels`), its bounds' divisor tables'
    (:func:`dnnmap.search.optimal.bounds.compile_kernels`) and B42's (:func:`dnnmap.search.optimal.mirror.compile_kernels`)."""
    compile_bound_tables()
    compile_mirror()
    compile_order_stages()
    compile_shared_order()
    arch = arch or load_arch("eyeriss")
    op = conv2d("warm-up", 2, 2, (2, 2), 1)
    L, D = len(arch.levels), len(op.dim_names)
    temporal = np.ones((1, L, D), dtype=np.int64)
    temporal[0, L - 1] = [op.bounds[d] for d in op.dim_names]  # the whole layer at the backing store
    order = np.broadcast_to(np.arange(D), (1, L, D))
    batch = MappingBatch(temporal, np.ones_like(temporal), order, MappingBatch.default_keeps(op, arch))
    CostModel(op, arch).evaluate(batch)
