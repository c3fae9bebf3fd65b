"""A TSO schedule as a core :class:`Mapping` (a point of the core's map space on the NMP), and its
price by the core cost model (docs/cost-model.md), to set beside TSO's own Eq. 6 estimate.

DRAM level: the spatial split of Alg. 2 (TLEs) and of the TLE's filters over its TLTs, then the
tile loops in the dataflow's order (Figs. 4-6, outermost first): IS rows, cols, n-tiles; OS rows,
cols, m-tiles, n-tiles; WS m-tiles, rows, cols, n-tiles. Scratchpad level: the tile itself
(T_M, T_N, T_R, T_C, K, K); the MAC datapath (#MACs lanes) splits the tile dimension with the
largest divisor <= #MACs. Channelwise layers split and tile their channel dimension G.
docs/tso.md lists where the core's counts differ from Eqs. 3-9 and why.
"""

from __future__ import annotations

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.mapping.mapping import BOTH_AXES, LevelMapping, Mapping, validate_mapping
from dnnmap.search.tso.search import TsoSchedule
from dnnmap.workload.ir import Operator

ORDERS = {"IS": ("G", "P", "Q", "C", "K"), "OS": ("G", "P", "Q", "K", "C"), "WS": ("G", "K", "P", "Q", "C")}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _lane_split(tile: dict[str, int], lanes: int) -> tuple[str, int]:
    """The tile dimension (and factor) the MAC lanes split: the largest divisor <= ``lanes``."""
    best = ("", 1)
    for d in ("Q", "P", "K", "G", "C", "S", "R"):
        f = max((v for v in range(1, lanes + 1) if tile.get(d, 1) % v == 0), default=1)
        if f > best[1]:
            best = (d, f)
    return best


def pricing_arch(sched: TsoSchedule, arch: ArchSpec) -> ArchSpec:
    """The architecture a schedule's core mapping is built and priced on: ``arch`` itself (KS and KS&OFM
    split the filters over both axes of the [#TLE, #TLT] fan-out, ``BOTH_AXES``; docs/tso.md)."""
    return arch


def schedule_mapping(sched: TsoSchedule, op: Operator, arch: ArchSpec) -> Mapping:
    """The core mapping of ``sched`` on ``arch``. On a 2-D DRAM fan-out the rows go on axis 0 (TLEs), the
    filters on axis 1 (TLTs) for OFM slicing and on both axes for KS and KS&OFM (filters over TLEs and
    TLTs). Only the TLEs and TLTs that get work are used (a K = 4 layer sliced KS uses one TLT per TLE)."""
    ly, s = sched.layer, sched.slice
    fan = arch.dram.fanout
    two_d = len(fan.shape) == 2
    tlt = fan.size // (s.row_split * s.filter_split)
    per_tlt = _ceil(s.filters, tlt)
    busy_tlt = _ceil(s.filters, per_tlt)  # TLTs of a TLE that get filters
    ch = "G" if ly.channelwise else "K"  # the dimension TLEs and TLTs split
    dram_t = {ch: _ceil(per_tlt, sched.TM), "P": _ceil(s.rows, sched.TR), "Q": _ceil(ly.C, sched.TC)}
    if not ly.channelwise:
        dram_t["C"] = _ceil(ly.N, sched.TN)
        if ly.groups > 1:
            dram_t["G"] = ly.groups
    filter_tles = min(s.filter_split, _ceil(ly.M, s.filters))  # TLEs that get filters
    dram_s = {ch: filter_tles * busy_tlt, "P": _ceil(ly.R, s.rows)}
    axis = {"P": 0, ch: 1 if s.filter_split == 1 else (BOTH_AXES if busy_tlt > 1 else 0)}
    mb = {ch: sched.TM, "P": sched.TR, "Q": sched.TC, "R": ly.Kh, "S": ly.Kw}
    if not ly.channelwise:
        mb["C"] = sched.TN
    dims = set(op.dim_names)
    mb = {d: f for d, f in mb.items() if d in dims}
    lane_dim, lanes = _lane_split(mb, arch.levels[0].fanout_size)
    mb_t = {d: (f // lanes if d == lane_dim else f) for d, f in mb.items()}
    order = "IS" if ly.channelwise else sched.q
    spatial = _nontrivial(dram_s)
    levels = (
        LevelMapping(temporal=_nontrivial(mb_t), spatial=_nontrivial({lane_dim: lanes} if lane_dim else {})),
        LevelMapping(temporal=_nontrivial(dram_t), order=tuple(d for d in ORDERS[order] if dram_t.get(d, 1) > 1),
                     spatial=spatial, spatial_axis=tuple((d, axis[d]) for d, _ in spatial if two_d and axis[d])),
    )
    mapping = Mapping(levels, layer=op.name, arch=arch.name,
                      notes=(f"TSO {sched.describe()}: estimate {sched.seconds * 1e6:.1f} us",))
    validate_mapping(mapping, op, arch)
    return mapping


def _nontrivial(factors: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple((d, f) for d, f in factors.items() if f > 1)


def price(mapping: Mapping, op: Operator, arch: ArchSpec, model: CostModel | None = None) -> CostBatch:
    """The core cost model's costs of ``mapping`` (a batch of one)."""
    model = model or CostModel(op, arch)
    return model.evaluate(MappingBatch.from_mappings(op, arch, [mapping]))
