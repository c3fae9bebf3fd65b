"""Variants of an architecture: the same :class:`ArchSpec` with a few fields changed (no change to the spec format).

Every mapper, target and study prices on these views instead of editing a spec in place:

- :func:`with_dram_model`: the same machine with the burst or volume DRAM transfer model (``dnnmap map
  --dram-model``, any mapper).
- :func:`with_dram_constants`: another DRAM bandwidth and CAS (e.g. the constants fitted to TSO Fig. 1).
- :func:`flat_fanout`: the DRAM fan-out [#TLE, #TLT] as one axis of #TLE x #TLT. The cost model's unions
  and instance counts are over all instances under one parent whatever the axes (its kernel never reads
  them), so both price every mapping identically (tests/tso checks it); the flat view only lets the
  filters split over TLEs and TLTs at once (KS: 4 x 8), which one-axis-per-dimension forbids on [4, 8].
- :func:`buffered_view`: the levels below the one under DRAM holding their tiles n-fold (Marvel's
  double-buffered L1).
- :func:`arch_for_bits`: another word width on the same datapath and scratchpad bytes (the NMP at 8 bits).
- :func:`with_capacity`: another capacity of one level (``dnnmap bounds``: the on-chip buffer swept).
"""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import DnnmapError, MappingError


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


def buffered_view(arch: ArchSpec, buffers: int) -> ArchSpec:
    """``arch`` with every level below the one under DRAM holding its tiles ``buffers``-fold (Marvel's
    double-buffered L1): the core then checks each such tile against capacity / buffers."""
    levels = tuple(lv.model_copy(update={"buffers": max(lv.buffers, buffers)}) if i < len(arch.levels) - 2 else lv
                   for i, lv in enumerate(arch.levels))
    return arch.model_copy(update={"levels": levels})


def arch_for_bits(arch: ArchSpec, bits: int) -> ArchSpec:
    """``arch`` with ``bits``-bit words: same scratchpad bytes and datapath width, rescaled words and MAC lanes.

    For the NMP preset (16-bit): at 8 bits the same 128-bit MAC datapath does 16 MACs per cycle and an
    8 KB scratchpad holds twice the words (TSO Section III)."""
    old = arch.bits_of("input")
    if bits == old:
        return arch
    mb = arch.levels[0]
    if not isinstance(mb.capacity, dict) or mb.fanout is None or (mb.fanout.size * old) % bits:
        raise MappingError(f"architecture {arch.name!r}: cannot rescale its scratchpads to {bits}-bit words")
    cap = {k: v * old // bits for k, v in mb.capacity.items()}
    fan = mb.fanout.model_copy(update={"shape": (mb.fanout.size * old // bits,)})
    new_mb = mb.model_copy(update={"capacity": cap, "fanout": fan})
    return arch.model_copy(update={"word_bits": bits, "levels": (new_mb, *arch.levels[1:]),
                                   "mac": arch.mac.model_copy(update={"precision_bits": bits})})


def with_capacity(arch: ArchSpec, level: int, capacity: int) -> ArchSpec:
    """``arch`` with level ``level`` holding ``capacity`` (in the level's ``capacity_unit``) per instance.

    A level partitioned per role keeps its partition: each role gets its share of ``capacity`` (rounded
    down), in the proportions of the original partition."""
    if capacity < 1:
        raise DnnmapError(f"capacity of level {arch.levels[level].name!r} must be >= 1, got {capacity}")
    lv = arch.levels[level]
    if isinstance(lv.capacity, dict):
        total = sum(lv.capacity.values())
        new: int | dict = {role: capacity * c // total for role, c in lv.capacity.items()}
    else:
        new = capacity
    levels = arch.levels[:level] + (lv.model_copy(update={"capacity": new}),) + arch.levels[level + 1:]
    return arch.model_copy(update={"levels": levels})
