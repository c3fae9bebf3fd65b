"""TSO (Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs"): TLE slicing (Alg. 2), TLT
tiling (Alg. 3) and the burst-aware time estimate (Eqs. 1-9, Alg. 4) as a mapper on the core (docs/tso.md)."""

from dnnmap.search.registry import register
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.mapper import MAPPER
from dnnmap.search.tso.search import TsoLayerResult, TsoSchedule, tso_layer_search

register(MAPPER)

__all__ = ["TsoMachine", "TsoOptions", "TsoLayerResult", "TsoSchedule", "tso_layer_search"]
