"""TSO's architecture constants (Section III, Alg. 4) read from a core architecture spec, and the choices
the paper leaves open (digest section 7; docs/tso.md "Ambiguities") as options.

The machine must have the NMP's shape (``dnnmap/arch/presets/nmp.yaml``): one scratchpad level with
a per-role capacity (MB0 = input, MB1 = weight, MB2 = output) whose fan-out is the MAC datapath
(#MACs), and a DRAM level whose 2-D fan-out is [#TLE, #TLT] and whose transfer model gives BW,
BURST and CAS.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import MappingError

# DRAM constants fitted to TSO Fig. 1 (84 / 58 / 46 us for 1024 / 512 / 256 bursts of a 32 KB channel
# read and written once): least squares gives 49.7 ns per burst and a 33.0 us burst-free part, i.e. 64 KB
# moved at ~2 GB/s (docs/tso.md "Constants"; tests/tso/test_worked_examples.py refits them)
FIG1_BANDWIDTH_GBPS = 2.0
FIG1_CAS_NS = 49.7

DramModel = Literal["burst", "volume"]
Alpha = Literal["literal", "per_tlt", "tlt_rounds"]
Edges = Literal["exact", "ceil"]
Filters = Literal["digest", "fit_w"]
MacDivisor = Literal["all", "tlt"]


@dataclass(frozen=True)
class TsoMachine:
    """Constants of Eqs. 2 and 7-9 and Alg. 4. Capacities in elements, times in seconds."""

    tle: int  # #TLE
    tlt: int  # #TLT (per TLE)
    macs: int  # #MACs per TLT per cycle
    freq_hz: float
    elem_bytes: float  # "type"
    mb_in: int  # MB0 / type
    mb_w: int  # MB1 / type
    mb_out: int  # MB2 / type
    bw_bytes_per_s: float  # BW
    burst_bytes: int  # BURST
    cas_s: float  # CAS

    @classmethod
    def from_arch(cls, arch: ArchSpec) -> "TsoMachine":
        if len(arch.levels) != 2:
            raise MappingError(f"the TSO mapper needs an NMP-like architecture (one scratchpad level and DRAM), "
                               f"{arch.name!r} has {len(arch.levels)} levels; try --arch nmp")
        mb, dram = arch.levels
        if not isinstance(mb.capacity, dict) or dram.fanout is None or len(dram.fanout.shape) != 2:
            raise MappingError(f"the TSO mapper needs per-role scratchpad capacities (MB0/MB1/MB2) and a 2-D DRAM "
                               f"fan-out [#TLE, #TLT]; {arch.name!r} has neither; try --arch nmp")
        if dram.transfer is None:
            raise MappingError(f"architecture {arch.name!r}: the DRAM level needs a transfer model (bandwidth, "
                               "burst size, CAS) for TSO's Alg. 4")
        if arch.bits_of("input") != arch.bits_of("weight") or arch.bits_of("input") != arch.bits_of("output"):
            raise MappingError("the TSO mapper assumes one element type for IN, W and OUT (TSO's 'type')")
        t = dram.transfer
        return cls(tle=dram.fanout.shape[0], tlt=dram.fanout.shape[1], macs=mb.fanout_size,
                   freq_hz=arch.clock_mhz * 1e6, elem_bytes=arch.bytes_of("input"),
                   mb_in=int(mb.capacity_for("input")), mb_w=int(mb.capacity_for("weight")),
                   mb_out=int(mb.capacity_for("output")), bw_bytes_per_s=t.bandwidth_gbps * 1e9,
                   burst_bytes=t.burst_bytes, cas_s=t.cas_ns * 1e-9)

    def with_dram(self, bandwidth_gbps: float | None = None, cas_ns: float | None = None) -> "TsoMachine":
        """The same machine with another DRAM bandwidth and/or CAS (calibrated constants, docs/tso.md)."""
        out = self
        if bandwidth_gbps is not None:
            out = replace(out, bw_bytes_per_s=bandwidth_gbps * 1e9)
        if cas_ns is not None:
            out = replace(out, cas_s=cas_ns * 1e-9)
        return out


@dataclass(frozen=True)
class TsoOptions:
    """How the search reads the paper where it is ambiguous (defaults first; docs/tso.md says why).

    - ``dram``: ``burst`` = TSO-burst, ``volume`` = TSO-noburst (Alg. 4).
    - ``alpha``: ``literal`` = Eqs. 3-5 as printed; ``per_tlt`` = every DRAM transfer counted (IN
      multicast once per TLE, W and OUT once per TLT, M-rounds of the TLT's own filters); ``tlt_rounds`` =
      Eqs. 3-5 as printed except that the M-rounds are ceil((TLE_W / #TLT) / T_M), T_M being per TLT.
    - ``edges``: ``exact`` = each loaded tile has its true size (the last tile of a dimension is the
      remainder); ``ceil`` = the equations' ceil-count times the full tile.
    - ``filters`` (GetFilters): ``digest`` = T_M from MB2 (OS) and MB2 + MB1 with all N channels (WS),
      all the TLT's filters (IS), then Eq. 2 rejects; ``fit_w`` = OS also shrinks T_M to fit MB1 with T_N.
    - ``mac_divisor``: Eq. 8's divisor, ``all`` = #TLE x #TLT (the text), ``tlt`` = #TLT (as printed).
    - ``sw_s_per_transfer``: T_SW of Eq. 6 as a fixed cost per tile transfer (the paper: < 5%, not modelled).
    - ``prune_depth``: visit only the smallest T_N of each tile count (:func:`tiling.candidate_grid`).
    """

    dram: DramModel = "burst"
    alpha: Alpha = "literal"
    edges: Edges = "exact"
    filters: Filters = "digest"
    mac_divisor: MacDivisor = "all"
    sw_s_per_transfer: float = 0.0
    prune_depth: bool = True

    def __post_init__(self) -> None:
        choices = {"dram": ("burst", "volume"), "alpha": ("literal", "per_tlt", "tlt_rounds"), "edges": ("exact", "ceil"),
                   "filters": ("digest", "fit_w"), "mac_divisor": ("all", "tlt")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"TsoOptions.{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.sw_s_per_transfer < 0:
            raise ValueError("TsoOptions.sw_s_per_transfer must be >= 0")
