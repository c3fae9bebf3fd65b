"""Every DRAM tile transfer of a TSO schedule, in program order, as boxes of the tensors' row-major DRAM
layouts (IN: N x H x L padded, W: M x N x Kh x Kw, OUT: M x R x C), and the analytical DRAM time of that
list under TSO's burst and volume models (Alg. 4). ``dnnmap.sim.dram_timing`` replays the same list as
byte addresses through a DDR3 timing model (benchmarks/tso_dram_validation.py, docs/tso.md).

The list is what the schedule moves, TLT by TLT (the NMP's multicast stays inside a TLE): per TLE, its
rows and filters (Alg. 2); per TLT, its ceil(TLE_W / #TLT) filters in rounds of T_M. In the dataflow's
loop order (Figs. 4-6):

- IS: rows, cols, n-tiles: the IN tile once per TLE (multicast), each TLT's W tile (all its T_M filters,
  T_N channels); after the n-loop each TLT stores its OUT tile.
- OS: rows, cols, m-rounds, n-tiles: as IS with the W and OUT tiles of the round.
- WS: m-rounds (each TLT loads its T_M filters with all N channels), rows, cols, n-tiles: IN tiles;
  each TLT stores its OUT tile after the n-loop.
- Channelwise layers (depthwise, pooling): every TLT loads its own channels' IN tile (no multicast) and
  W tile, and stores its OUT tile, per (rows, cols, channel tile).

The four TLEs share one DRAM channel: their transfers interleave round-robin, one transfer of each
TLE in turn (TLE 0 first). Counts differ from the literal Eqs. 3-5 (which count W and OUT for one TLT
per TLE); the comparison prices the same list three ways, so that does not enter the errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.cost.transfer import box_bursts
from dnnmap.errors import MappingError
from dnnmap.search.tso.layer import TsoLayer
from dnnmap.search.tso.machine import TsoMachine
from dnnmap.search.tso.search import TsoSchedule
from dnnmap.search.tso.timing import calc_data_transfer
from dnnmap.sim.dram_timing import DDR3_2133, DramTimings, Replay, box_burst_addresses, replay

IN, W, OUT = 0, 1, 2  # tensor ids


@dataclass(frozen=True)
class Transfers:
    """Tile transfers in issue order: tensor id, box origin and extent (4 axes, outermost first, padded with
    leading unit axes), and per tensor its full extents (4 axes) and DRAM base address (bytes)."""

    tensor: np.ndarray  # (T,)
    origin: np.ndarray  # (T, 4)
    extent: np.ndarray  # (T, 4)
    full: np.ndarray  # (3, 4)
    base: np.ndarray  # (3,) bytes

    def __len__(self) -> int:
        return len(self.tensor)

    @property
    def writes(self) -> np.ndarray:
        return self.tensor == OUT


def _pad4(shape: list[int]) -> list[int]:
    return [1] * (4 - len(shape)) + list(shape)


def layouts(layer: TsoLayer, elem_bytes: float, align: int) -> tuple[np.ndarray, np.ndarray]:
    """Full extents (3, 4) of IN, W, OUT and their base addresses, each tensor starting on an ``align``-byte
    boundary (a DRAM row), IN first."""
    in_ch = layer.M if layer.channelwise else layer.N
    w = [layer.M, 1, layer.Kh, layer.Kw] if layer.channelwise else [layer.M, layer.N, layer.Kh, layer.Kw]
    full = np.array([_pad4([in_ch, layer.H, layer.L]), w, _pad4([layer.M, layer.R, layer.C])], dtype=np.int64)
    sizes = full.prod(axis=1) * elem_bytes
    aligned = -(-sizes // align) * align
    return full, np.concatenate([[0], np.cumsum(aligned)[:-1]]).astype(np.int64)


def _ranges(start: int, stop: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Tile origins and extents of [start, stop) cut in tiles of ``step`` (the last one the remainder)."""
    o = np.arange(start, stop, step, dtype=np.int64)
    return o, np.minimum(o + step, stop) - o


def schedule_transfers(s: TsoSchedule, m: TsoMachine, align: int = 8192) -> Transfers:
    """The tile transfers of ``s`` in issue order (module docstring)."""
    ly, sl = s.layer, s.slice
    if ly.groups > 1:
        raise MappingError(f"layer {ly.name!r}: grouped convolutions have no trace generator; map groups apart")
    if ly.channelwise and not ly.weights and ly.n_inputs > 1:
        raise MappingError(f"layer {ly.name!r}: add/concat layers have no trace generator")
    full, base = layouts(ly, m.elem_bytes, align)
    per_tle = []
    for e in range(m.tle):
        r_part, f_part = divmod(e, sl.filter_split) if sl.p == "KS&OFM" else (
            (0, e) if sl.p == "KS" else (e, 0))
        r0, r1 = r_part * sl.rows, min((r_part + 1) * sl.rows, ly.R)
        f0, f1 = f_part * sl.filters, min((f_part + 1) * sl.filters, ly.M)
        if r0 >= r1 or f0 >= f1:
            per_tle.append(None)
            continue
        per_tle.append(_tle_transfers(s, m, (r0, r1), (f0, f1)))
    return _interleave([p for p in per_tle if p is not None], full, base)


def _tle_transfers(s: TsoSchedule, m: TsoMachine, rows: tuple[int, int],
                   filters: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One TLE's transfers in its program order: (tensor, origin, extent), built per template (the
    transfers of one outer step) broadcast over the outer steps and sorted by (step, place in template)."""
    ly = s.layer
    per_tlt = -(-(filters[1] - filters[0]) // m.tlt)
    tlts = [(f, min(f + per_tlt, filters[1])) for f in range(filters[0], filters[1], per_tlt)]
    ro, re = _ranges(*rows, s.TR)
    co, ce = _ranges(0, ly.C, s.TC)
    r_i, c_i = (a.ravel() for a in np.meshgrid(np.arange(len(ro)), np.arange(len(co)), indexing="ij"))
    h, nh = ro[r_i] * ly.Sh, (re[r_i] - 1) * ly.Sh + ly.Dh * (ly.Kh - 1) + 1  # Eq. 1
    w, nw = co[c_i] * ly.Sw, (ce[c_i] - 1) * ly.Sw + ly.Dw * (ly.Kw - 1) + 1
    steps = len(r_i)
    blocks: list[tuple[np.ndarray, ...]] = []  # (key, place, tensor, origin, extent)

    def emit(key: np.ndarray, tensor: list[int], fo: list[int], fe: list[int], no: list[int], ne: list[int],
             sel: np.ndarray) -> None:
        """Template (tensor, filter/channel origin+extent, n origin+extent) at every outer step ``sel``."""
        T, S = len(tensor), len(sel)
        tid = np.tile(np.array(tensor), S)
        fo_, fe_ = np.tile(np.array(fo), S), np.tile(np.array(fe), S)
        no_, ne_ = np.tile(np.array(no), S), np.tile(np.array(ne), S)
        st = np.repeat(sel, T)
        is_in, is_w = tid == IN, tid == W
        k, kk = ly.Kh, ly.Kw
        origin = np.where(is_in[:, None], np.stack([0 * st, no_, h[st], w[st]], 1),
                          np.where(is_w[:, None], np.stack([fo_, no_, 0 * st, 0 * st], 1),
                                   np.stack([0 * st, fo_, ro[r_i[st]], co[c_i[st]]], 1)))
        extent = np.where(is_in[:, None], np.stack([1 + 0 * st, ne_, nh[st], nw[st]], 1),
                          np.where(is_w[:, None], np.stack([fe_, ne_, k + 0 * st, kk + 0 * st], 1),
                                   np.stack([1 + 0 * st, fe_, re[r_i[st]], ce[c_i[st]]], 1)))
        blocks.append((np.repeat(key, T), np.tile(np.arange(T), S), tid, origin, extent))

    every = np.arange(steps)
    if ly.channelwise:  # per TLT its own channels: IN, W, OUT per channel tile
        tpl = [(g, ng) for t0, t1 in tlts for g, ng in zip(*_ranges(t0, t1, s.TM))]
        kinds = [IN, W, OUT] if ly.weights else [IN, OUT]
        tensor = [kd for _ in tpl for kd in kinds]
        fo = [g for g, _ in tpl for _ in kinds]
        fe = [ng for _, ng in tpl for _ in kinds]
        emit(every, tensor, fo, fe, fo, fe, every)  # the IN tile's channels are the filters' (axis 1)
        _, _, tid, origin, extent = blocks[0]
        w_sel = tid == W
        origin[w_sel, 1], extent[w_sel, 1] = 0, 1  # depthwise W: one channel per filter
        return tid, origin, extent
    no, ne = _ranges(0, ly.N, s.TN)
    rounds = [list(zip(*_ranges(t0, t1, s.TM))) for t0, t1 in tlts]  # per TLT its m-rounds (IS: one)
    for k in range(max(len(r) for r in rounds)):
        active = [rd[k] for rd in rounds if k < len(rd)]
        tensor, fo, fe, n_o, n_e = [], [], [], [], []
        for n, nn in zip(no, ne):  # the n-loop: IN, then (not WS) every TLT's W tile
            tensor.append(IN), fo.append(0), fe.append(0), n_o.append(int(n)), n_e.append(int(nn))
            if s.q != "WS":
                for f, nf in active:
                    tensor.append(W), fo.append(f), fe.append(nf), n_o.append(int(n)), n_e.append(int(nn))
        for f, nf in active:  # after the n-loop: every TLT stores its OUT tile
            tensor.append(OUT), fo.append(f), fe.append(nf), n_o.append(0), n_e.append(0)
        if s.q == "WS":  # m-rounds outermost: each TLT loads its filters with all N channels first
            base_key = k * (steps + 1)
            emit(np.array([base_key]), [W] * len(active), [f for f, _ in active], [nf for _, nf in active],
                 [0] * len(active), [ly.N] * len(active), np.array([0]))
            emit(base_key + 1 + every, tensor, fo, fe, n_o, n_e, every)
        else:  # IS (one round) and OS: rows, cols, m-rounds
            emit(every * len(rounds[0]) + k, tensor, fo, fe, n_o, n_e, every)
    key, place, tid, origin, extent = (np.concatenate([b[x] for b in blocks]) for x in range(5))
    order = np.lexsort((place, key))
    return tid[order], origin[order], extent[order]


def _interleave(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], full: np.ndarray,
                base: np.ndarray) -> Transfers:
    """Round-robin over the TLEs: the k-th transfer of every TLE, TLE 0 first, then the (k+1)-th."""
    step = np.concatenate([np.arange(len(p[0])) for p in parts])
    tle = np.concatenate([np.full(len(p[0]), i) for i, p in enumerate(parts)])
    order = np.lexsort((tle, step))
    return Transfers(*(np.concatenate([p[k] for p in parts])[order] for k in range(3)), full, base)


def analytical_seconds(t: Transfers, m: TsoMachine, burst_model: bool) -> float:
    """Alg. 4 summed over the transfers: bytes / BW (+ CalBurstCount x CAS for the burst model)."""
    total = 0.0
    for tid in (IN, W, OUT):
        sel = t.tensor == tid
        if not sel.any():
            continue
        ext = t.extent[sel]
        nbytes = ext.prod(axis=1) * m.elem_bytes
        bursts = box_bursts([ext[:, x] for x in range(4)], [int(f) for f in t.full[tid]], m.elem_bytes,
                            m.burst_bytes)
        total += float(np.sum(calc_data_transfer(m, nbytes, bursts, burst_model)))
    return total


def trace_replay(t: Transfers, m: TsoMachine, timings: DramTimings = DDR3_2133) -> Replay:
    """The transfers as byte addresses of aligned bursts (:func:`box_burst_addresses`), replayed through the
    DRAM timing simulator; stores are writes."""
    addresses, box = box_burst_addresses(t.origin, t.extent, t.full, t.base, t.tensor, int(m.elem_bytes),
                                         timings.burst_bytes)
    return replay(addresses, t.writes[box], timings)
