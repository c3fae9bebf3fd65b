"""Views of a core architecture the TSO mapper prices on (no change to the spec format).

- :func:`with_dram_model`: the same machine with the burst (TSO-burst) or volume (TSO-noburst) transfer model.
- :func:`flat_fanout`: the DRAM fan-out [#TLE, #TLT] as one axis of #TLE x #TLT. The cost model's unions
  and instance counts are over all instances under one parent whatever the axes (its kernel never reads
  them), so both price every mapping identically (tests/tso checks it); the flat view only lets the
  filters split over TLEs and TLTs at once (KS: 4 x 8), which one-axis-per-dimension forbids on [4, 8].
"""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import DnnmapError


def _with_dram(arch: ArchSpec, **fields) -> ArchSpec:
    """``arch`` with these fields of its DRAM level (the last level) replaced."""
    return arch.model_copy(update={"levels": arch.levels[:-1] + (arch.dram.model_copy(update=fields),)})


def with_dram_model(arch: ArchSpec, model: str) -> ArchSpec:
    """``arch`` with its DRAM transfer model set to ``burst`` or ``volume`` (bandwidth, burst size, CAS kept)."""
    if model not in ("burst", "volume"):
        raise DnnmapError(f"unknown DRAM model {model!r}; choose burst or volume")
    dram = arch.dram
    if dram.transfer is None:
        raise DnnmapError(f"architecture {arch.name!r} has no DRAM transfer model to switch to {model!r}")
    if dram.transfer.model == model:
        return arch
    return _with_dram(arch, transfer=dram.transfer.model_copy(update={"model": model}))


def with_dram_constants(arch: ArchSpec, bandwidth_gbps: float, cas_ns: float) -> ArchSpec:
    """``arch`` with another DRAM bandwidth and CAS (e.g. the constants fitted to TSO Fig. 1, docs/tso.md)."""
    dram = arch.dram
    if dram.transfer is None:
        raise DnnmapError(f"architecture {arch.name!r} has no DRAM transfer model")
    transfer = dram.transfer.model_copy(update={"bandwidth_gbps": bandwidth_gbps, "cas_ns": cas_ns})
    return _with_dram(arch, transfer=transfer)


def flat_fanout(arch: ArchSpec) -> ArchSpec:
    """``arch`` with its 2-D DRAM fan-out flattened to one axis of the same size."""
    dram = arch.dram
    if dram.fanout is None or len(dram.fanout.shape) == 1:
        return arch
    fan = dram.fanout.model_copy(update={"shape": (dram.fanout.size,)})
    return _with_dram(arch, fanout=fan)
