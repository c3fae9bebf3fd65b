"""Program generation: a TSO schedule (slice p, dataflow q, tile T_R, T_C, T_N, T_M) becomes, per TLT core,
the ordered NMP operations of one layer (TSO Section V; loop orders of Figs. 4-6, docs/nmp.md "Programs").

- TLE slice (Alg. 2): TLE e computes OFM rows ``ri * TLE_R ...`` and filters ``fj * TLE_W ...`` with
  e = ri * filter_split + fj; a TLE's filters are spread over its TLTs, leftovers on the lowest IDs.
- Convolutions: every IN tile is loaded once per TLE by TLT 0 with a multicast ``nmp_load3d`` between two
  TLE barriers (the other TLTs must be done with MB0 before it lands, and wait for it); every TLT loads
  its own W tiles and stores its own OUT tiles. IS: rows, cols, n-tiles, W = all the TLT's filters x T_N
  channels; OS: rows, cols, m-rounds (T_M of the TLT's filters), n-tiles; WS: m-rounds (W = T_M filters x
  all N channels, loaded once), rows, cols, n-tiles. The accumulator is cleared at the first n-tile
  (with the bias) and requantized into MB2 at the last.
- Depthwise, pooling and add (channelwise): every TLT loads its own channel tiles (no multicast), computes
  (depthwise: its T_M x Kh x Kw weights loaded once per channel tile), stores.
- Idle cores: a TLE whose OFM rows or filters are empty (TLE_R or TLE_W rounded up leaves the last TLEs
  nothing) and a TLT with no filters or channels of its own (fewer than #TLT in its TLE) get no operation
  but the barriers, so no operation ever has an empty box, count or tile; :func:`check_sizes` asserts it.
- Every layer ends with a barrier across all cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.search.tso.search import TsoSchedule
from dnnmap.targets.nmp.isa import (ACT_CLIP, ACT_RELU, BIAS, FLAG_DEPTHWISE, FLAG_FIRST, FLAG_LAST, FLAG_MULTICAST, MB0, MB1, MB2, POOL_AVG,
                                    POOL_MAX, SCOPE_ALL, SCOPE_TLE, SIZE_FIELDS, Op, listing_line)
from dnnmap.targets.nmp.layers import NmpLayer
from dnnmap.targets.nmp.layout import MemoryMap, Region
from dnnmap.targets.nmp.quantize import AVG_RECIP_BITS, QuantNet
from dnnmap.targets.nmp.reference import avg_reciprocal, relu6_limit

Range = tuple[int, int]


@dataclass(frozen=True)
class LayerProgram:
    """The programs of one layer: ``cores[e * tlt + t]`` is TLT t of TLE e."""

    layer: str
    cores: tuple[tuple[Op, ...], ...]


def tiles(a: int, b: int, step: int) -> list[Range]:
    """[a, b) in pieces of ``step``, the last one shorter."""
    return [(x, min(b, x + step)) for x in range(a, b, step)]


def is_empty(r: Range) -> bool:
    """No index in [a, b): the share of an idle core."""
    return r[1] <= r[0]


def split(a: int, b: int, parts: int) -> list[Range]:
    """[a, b) in ``parts`` contiguous pieces, the leftovers on the lowest indices (TSO Alg. 3, GetFilters);
    with fewer than ``parts`` indices the last pieces are empty."""
    base, rem = divmod(b - a, parts)
    out, x = [], a
    for i in range(parts):
        n = base + (i < rem)
        out.append((x, x + n))
        x += n
    return out


def tle_ranges(sched: TsoSchedule, e: int) -> tuple[Range, Range]:
    """OFM rows and filters (channels) of TLE ``e`` under TSO Alg. 2."""
    s, ly = sched.slice, sched.layer
    ri, fj = divmod(e, s.filter_split)
    return ((min(ly.R, ri * s.rows), min(ly.R, (ri + 1) * s.rows)),
            (min(ly.M, fj * s.filters), min(ly.M, (fj + 1) * s.filters)))


def _box(ly: NmpLayer, reg: Region, chans: Range, rows: Range, cols: Range) -> dict[str, int]:
    """The nmp_load3d fields of the input window that output rows x cols read, channels ``chans``."""
    if ly.kind == "fc":
        return dict(addr=reg.addr + chans[0] * reg.elem_bytes, d0=chans[1] - chans[0], d1=1, d2=1, s0=1, s1=1, s2=1)
    (kh, kw), (sh, sw), (dh, dw) = ly.kernel, ly.stride, ly.dilation
    h0, w0 = rows[0] * sh, cols[0] * sw
    th, tl = (rows[1] - rows[0] - 1) * sh + dh * (kh - 1) + 1, (cols[1] - cols[0] - 1) * sw + dw * (kw - 1) + 1
    oh, ow = reg.border[0] - ly.padding[0], reg.border[1] - ly.padding[1]
    s0, s1, s2 = reg.strides()
    return dict(addr=reg.element(chans[0], h0 + oh, w0 + ow), d0=chans[1] - chans[0], d1=th, d2=tl, s0=s0, s1=s1, s2=s2)


def _store(ly: NmpLayer, out: Region, chans: Range, rows: Range, cols: Range, q: QuantNet) -> list[Op]:
    ops = []
    n = (chans[1] - chans[0]) * (rows[1] - rows[0]) * (cols[1] - cols[0])
    if ly.activation == "relu":
        ops.append(Op.make("nmp_activation", count=n, mode=ACT_RELU, hi=0))
    elif ly.activation == "relu6":
        ops.append(Op.make("nmp_activation", count=n, mode=ACT_CLIP, hi=relu6_limit(q.frac[ly.name], q.bits)))
    s0, s1, s2 = out.strides()
    ops.append(Op.make("nmp_store3d", mb=MB2, offset=0,
                       addr=out.element(chans[0], rows[0] + out.border[0], cols[0] + out.border[1]),
                       d0=chans[1] - chans[0], d1=rows[1] - rows[0], d2=cols[1] - cols[0], s0=s0, s1=s1, s2=s2))
    return ops


class _ConvTle:
    """The programs of the TLTs of one TLE for a convolution (module docstring)."""

    def __init__(self, ly: NmpLayer, sched: TsoSchedule, mm: MemoryMap, q: QuantNet, tlt: int, filters: Range):
        self.ly, self.sched, self.q = ly, sched, q
        self.inp, self.out = mm.tensor(ly.inputs[0]), mm.tensor(ly.name)
        self.w, self.b = mm.weights(ly.name), mm.bias(ly.name)
        self.own = split(*filters, tlt)
        self.progs: list[list[Op]] = [[] for _ in range(tlt)]
        for t, (a, b) in enumerate(self.own):
            if not is_empty((a, b)):
                self.progs[t].append(Op.make("nmp_load", mb=BIAS, offset=0, addr=self.b.addr + a * 4, count=b - a,
                                             elem_bytes=4))

    def multicast(self, chans: Range, rows: Range, cols: Range) -> None:
        for p in self.progs:
            p.append(Op.make("nmp_barrier", scope=SCOPE_TLE))
        self.progs[0].append(Op.make("nmp_load3d", FLAG_MULTICAST, mb=MB0, offset=0,
                                     **_box(self.ly, self.inp, chans, rows, cols)))
        for p in self.progs:
            p.append(Op.make("nmp_barrier", scope=SCOPE_TLE))

    def load_w(self, t: int, fil: Range, chans: Range) -> None:
        _, n, kh, kw = self.ly.weight_shape
        self.progs[t].append(Op.make("nmp_load3d", mb=MB1, offset=0, addr=self.w.element(fil[0], chans[0], 0),
                                     d0=fil[1] - fil[0], d1=chans[1] - chans[0], d2=kh * kw, s0=n * kh * kw,
                                     s1=kh * kw, s2=1))

    def conv(self, t: int, fil: Range, chans: Range, rows: Range, cols: Range, first: bool, last: bool,
             w_ch0: int, w_chans: int) -> None:
        ly = self.ly
        flags = (FLAG_FIRST if first else 0) | (FLAG_LAST if last else 0)
        self.progs[t].append(Op.make(
            "nmp_conv2d", flags, tm=fil[1] - fil[0], tn=chans[1] - chans[0], tr=rows[1] - rows[0],
            tc=cols[1] - cols[0], kh=ly.kernel[0], kw=ly.kernel[1], sh=ly.stride[0], sw=ly.stride[1],
            dh=ly.dilation[0], dw=ly.dilation[1], w_ch0=w_ch0, w_chans=w_chans, bias_off=fil[0] - self.own[t][0],
            shift=self.q.shift(ly)))

    def store(self, t: int, fil: Range, rows: Range, cols: Range) -> None:
        self.progs[t] += _store(self.ly, self.out, fil, rows, cols, self.q)


def _conv_tle(ly: NmpLayer, sched: TsoSchedule, mm: MemoryMap, q: QuantNet, tlt: int, rows: Range,
              filters: Range) -> list[list[Op]]:
    """The TLTs' programs of a TLE with some rows and filters (module docstring)."""
    g = _ConvTle(ly, sched, mm, q, tlt, filters)
    n = ly.weight_shape[1]
    row_t, col_t, n_t = tiles(*rows, sched.TR), tiles(0, ly.out_shape[2], sched.TC), tiles(0, n, sched.TN)
    rounds = [tiles(a, b, sched.TM) for a, b in g.own]
    busy = [t for t, r in enumerate(g.own) if not is_empty(r)]
    last_n = len(n_t) - 1
    if sched.q == "IS":
        for rr in row_t:
            for cc in col_t:
                for k, nn in enumerate(n_t):
                    g.multicast(nn, rr, cc)
                    for t in busy:
                        g.load_w(t, g.own[t], nn)
                        g.conv(t, g.own[t], nn, rr, cc, k == 0, k == last_n, 0, nn[1] - nn[0])
                for t in busy:
                    g.store(t, g.own[t], rr, cc)
    elif sched.q == "OS":
        for rr in row_t:
            for cc in col_t:
                for r in range(max(len(x) for x in rounds)):
                    mine = [t for t in busy if r < len(rounds[t])]
                    for k, nn in enumerate(n_t):
                        g.multicast(nn, rr, cc)
                        for t in mine:
                            g.load_w(t, rounds[t][r], nn)
                            g.conv(t, rounds[t][r], nn, rr, cc, k == 0, k == last_n, 0, nn[1] - nn[0])
                    for t in mine:
                        g.store(t, rounds[t][r], rr, cc)
    else:  # WS
        for r in range(max(len(x) for x in rounds)):
            mine = [t for t in busy if r < len(rounds[t])]
            for t in mine:
                g.load_w(t, rounds[t][r], (0, n))
            for rr in row_t:
                for cc in col_t:
                    for k, nn in enumerate(n_t):
                        g.multicast(nn, rr, cc)
                        for t in mine:
                            g.conv(t, rounds[t][r], nn, rr, cc, k == 0, k == last_n, nn[0], n)
                    for t in mine:
                        g.store(t, rounds[t][r], rr, cc)
    return g.progs


def _sources(ly: NmpLayer, ins: list[Region], chans: Range) -> list[tuple[Region, Range]]:
    """The input regions and their channel ranges a channel tile reads (concat: the inputs it spans)."""
    if ly.kind != "concat":
        return [(reg, chans) for reg in ins]
    out, start = [], 0
    for reg, n in zip(ins, ly.in_channels, strict=True):
        lo, hi = max(chans[0], start), min(chans[1], start + n)
        if lo < hi:
            out.append((reg, (lo - start, hi - start)))
        start += n
    return out


def _channelwise_tlt(ly: NmpLayer, sched: TsoSchedule, mm: MemoryMap, q: QuantNet, rows: Range,
                     chans: Range) -> list[Op]:
    """One TLT's depthwise, pooling or add program over its own (non-empty) rows and channels (no multicast)."""
    ops: list[Op] = []
    ins, out = [mm.tensor(s) for s in ly.inputs], mm.tensor(ly.name)
    kh, kw = ly.kernel
    if ly.is_conv:
        ops.append(Op.make("nmp_load", mb=BIAS, offset=0, addr=mm.bias(ly.name).addr + chans[0] * 4,
                           count=chans[1] - chans[0], elem_bytes=4))
    for cc in tiles(*chans, sched.TM):
        if ly.is_conv:  # the channel tile's filters, once
            ops.append(Op.make("nmp_load3d", mb=MB1, offset=0, addr=mm.weights(ly.name).element(cc[0], 0, 0),
                               d0=cc[1] - cc[0], d1=1, d2=kh * kw, s0=kh * kw, s1=kh * kw, s2=1))
        for rr in tiles(*rows, sched.TR):
            for kk in tiles(0, ly.out_shape[2], sched.TC):
                tile = dict(tm=cc[1] - cc[0], tr=rr[1] - rr[0], tc=kk[1] - kk[0])
                offsets = [0]
                for reg, part in _sources(ly, ins, cc):  # add: the second input after the first in MB0
                    box = _box(ly, reg, part, rr, kk)  # concat: the pieces of the channel tile, in order
                    ops.append(Op.make("nmp_load3d", mb=MB0, offset=offsets[-1], **box))
                    offsets.append(offsets[-1] + box["d0"] * box["d1"] * box["d2"])
                if ly.is_conv:
                    ops.append(Op.make("nmp_conv2d", FLAG_DEPTHWISE | FLAG_FIRST | FLAG_LAST, tn=1, kh=kh, kw=kw,
                                       sh=ly.stride[0], sw=ly.stride[1], dh=ly.dilation[0], dw=ly.dilation[1],
                                       w_ch0=0, w_chans=1, bias_off=cc[0] - chans[0], shift=q.shift(ly), **tile))
                elif ly.kind == "add":
                    ops.append(Op.make("nmp_veop", b_off=offsets[1], shift=q.shift(ly), **tile))
                else:  # pooling; concat copies with a 1 x 1 max window
                    avg = ly.kind == "pool_avg"
                    ops.append(Op.make("nmp_pool", kh=ly.kernel[0], kw=ly.kernel[1], sh=ly.stride[0],
                                       sw=ly.stride[1], mode=POOL_AVG if avg else POOL_MAX,
                                       recip=avg_reciprocal(ly) if avg else 0, recip_bits=AVG_RECIP_BITS if avg else 0,
                                       **tile))
                ops += _store(ly, out, cc, rr, kk, q)
    return ops


def generate_layer(ly: NmpLayer, sched: TsoSchedule, mm: MemoryMap, q: QuantNet, tle: int, tlt: int) -> LayerProgram:
    """Per-core programs of one layer from its TSO schedule (module docstring), checked by :func:`check_sizes`."""
    cores: list[list[Op]] = []
    for e in range(tle):
        rows, fil = tle_ranges(sched, e)
        if is_empty(rows) or is_empty(fil):
            cores += [[] for _ in range(tlt)]
        elif not ly.channelwise:
            cores += _conv_tle(ly, sched, mm, q, tlt, rows, fil)
        else:
            cores += [[] if is_empty(c) else _channelwise_tlt(ly, sched, mm, q, rows, c) for c in split(*fil, tlt)]
    end = Op.make("nmp_barrier", scope=SCOPE_ALL)
    prog = LayerProgram(ly.name, tuple(tuple(p) + (end,) for p in cores))
    check_sizes(prog, tlt)
    return prog


def check_sizes(prog: LayerProgram, tlt: int) -> None:
    """Internal assertion: no operation of ``prog`` has an empty box, count or tile (:data:`SIZE_FIELDS`), so
    the compiler never writes a program the simulator refuses; the message names layer, core and operation."""
    for i, ops in enumerate(prog.cores):
        for k, op in enumerate(ops):
            empty = [f for f in SIZE_FIELDS[op.name] if getattr(op, f) < 1]
            if empty:
                e, t = divmod(i, tlt)
                raise AssertionError(f"layer {prog.layer!r} TLE {e} TLT {t} op {k}: {', '.join(empty)} < 1 in "
                                     f"'{listing_line(op)}' (an idle core was given work)")
