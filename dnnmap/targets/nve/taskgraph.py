"""Task graph of one NVE program: the micro-operations of one loop iteration and their edges.

Implements NVE §4.2 (Figs. 14-15): per output map (a *chain*) one ``set rb`` and
kH·kW ``mac`` per input map; the image-register operations each MAC needs (per kernel
column and phase: ``set ri``, ``set-shift ri``, ``shift ri``...); one weight-register
operation per coefficient (``set rw`` at the start of each packed load, ``shift rw``
otherwise); the local-buffer reads of every set operation (2 for ``set ri``, 1 for
``set-shift ri`` and ``set rw``); one repetitive write per new pixel word; two ``act``
per output vector. Several chains form a fused program (NVE §5.3): pixel writes are
shared, register operations are not.

Edge distances (minimum cycles between the endpoints, NVE §4.2 with the latencies of §3.1;
the anti-dependence distance 0 is derived from Figs. 17/24/26, docs/nve.md §3):
register op -> consuming mac 1; shift -> previous op on the same register 1; consumer ->
next op overwriting its operand 0 (anti-dependence); ``set rb`` -> first mac 1; last
mac -> next chain's ``set rb`` 1; rd -> set 2; wr -> rd 2; ``set rb`` -> act 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from dnnmap.targets.nve.layers import ConvLayer
from dnnmap.targets.nve.spec import NveSpec


class Field(str, Enum):
    """The six VLIW issue slots (NVE Table 2)."""

    MEMA = "MEMA"
    MEMB = "MEMB"
    WREG = "WREG"
    IREG = "IREG"
    VMAC = "VMAC"
    ACT = "ACT"


FIELDS: tuple[Field, ...] = tuple(Field)


class Kind(str, Enum):
    READ = "rd"
    WRITE = "wr"
    SET_RW = "set rw"
    SHIFT_RW = "sh rw"
    SET_RI = "set ri"
    SETSH_RI = "setsh ri"
    SHIFT_RI = "sh ri"
    SET_RB = "set rb"
    MAC = "mac"
    ACT = "act"


SET_KINDS = frozenset({Kind.SET_RW, Kind.SET_RI})  # the port-A register loads (NVE §3.4)


@dataclass(frozen=True, order=True)
class PixelWord:
    """Word ``word`` of phase ``phase`` of input map ``in_map``, kernel column ``col`` of the window."""

    in_map: int
    col: int
    phase: int
    word: int

    def label(self, multi_map: bool, phased: bool) -> str:
        m = f"m{self.in_map}:" if multi_map else ""
        p = f"p{self.phase}" if phased else ""
        return f"{m}s(i+{self.col}){p} w{self.word}"


@dataclass(frozen=True, order=True)
class CoeffWord:
    """Packed coefficient load ``index`` of the program (NVE §5.1)."""

    index: int


@dataclass(frozen=True)
class Op:
    id: int
    kind: Kind
    field: Field
    chain: int = -1  # output-map chain (register/VMAC/ACT ops), -1 for memory ops
    data: PixelWord | CoeffWord | None = None  # word read or written
    half: int = 0  # act: lanes 0-7 (0) or 8-15 (1)


@dataclass(frozen=True)
class Edge:
    src: int
    dst: int
    distance: int


@dataclass(frozen=True)
class Chain:
    """One output map's accumulation: its coefficients are ``coeff_start .. +count`` of the program."""

    out_map: int
    inputs: tuple[int, ...]
    coeff_start: int
    coeff_count: int
    loads: tuple[int, ...]  # coefficients per packed load (sums to coeff_count)


@dataclass(frozen=True)
class TaskGraph:
    layer: ConvLayer
    chains: tuple[Chain, ...]
    ops: tuple[Op, ...]
    edges: tuple[Edge, ...]
    reads: dict[int, tuple[int, ...]]  # set-register op -> its read ops
    set_rb: tuple[int, ...]  # per chain
    last_mac: tuple[int, ...]  # per chain
    acts: tuple[tuple[int, int], ...]  # per chain
    load_of_set: dict[int, int]  # set rw op -> global load index
    init_words: tuple[PixelWord | CoeffWord, ...]  # written by the init part, in order

    @cached_property
    def in_maps(self) -> tuple[int, ...]:
        return tuple(sorted({m for c in self.chains for m in c.inputs}))

    @property
    def loads(self) -> tuple[tuple[int, int], ...]:
        """(first coefficient, count) of every packed load, program order."""
        out = []
        for c in self.chains:
            start = c.coeff_start
            for n in c.loads:
                out.append((start, n))
                start += n
        return tuple(out)

    def count(self, field: Field) -> int:
        return sum(1 for o in self.ops if o.field == field)


def full_loads(count: int, capacity: int) -> tuple[int, ...]:
    """Always load the register to capacity (the unoptimized layout, NVE §4.2)."""
    return tuple(min(capacity, count - i) for i in range(0, count, capacity))


class _Builder:
    def __init__(self) -> None:
        self.ops: list[Op] = []
        self.edges: list[Edge] = []

    def op(self, kind: Kind, field: Field, **kw: object) -> int:
        self.ops.append(Op(len(self.ops), kind, field, **kw))  # type: ignore[arg-type]
        return len(self.ops) - 1

    def edge(self, src: int, dst: int, distance: int) -> None:
        self.edges.append(Edge(src, dst, distance))


def build_task_graph(layer: ConvLayer, out_maps: tuple[int, ...], loads: dict[int, tuple[int, ...]],
                     spec: NveSpec) -> TaskGraph:
    """Task graph of a program computing ``out_maps`` (in chain order) with the given coefficient loads.

    ``loads[out_map]`` lists how many coefficients each ``set rw`` of that chain loads
    (NVE §5.1 packing; :func:`full_loads` is the unoptimized layout).
    """
    kh, kw = layer.kernel
    sw = layer.subsample[1]
    b = _Builder()
    reads: dict[int, tuple[int, ...]] = {}
    read_ops_of_word: dict[PixelWord, list[int]] = {}
    chains: list[Chain] = []
    set_rb: list[int] = []
    last_mac: list[int] = []
    acts: list[tuple[int, int]] = []
    load_of_set: dict[int, int] = {}
    coeff_words: list[CoeffWord] = []
    prev_consumer_w: int | None = None  # last consumer of the weight register (anti-dependences)
    prev_wreg: int | None = None
    prev_last_mac: int | None = None
    prev_consumer_i: int | None = None  # last consumer of the image register
    prev_ireg: int | None = None

    def read(port: Field, word: PixelWord | CoeffWord, set_op: int) -> int:
        r = b.op(Kind.READ, port, data=word)
        b.edge(r, set_op, spec.read_latency)
        if isinstance(word, PixelWord):
            read_ops_of_word.setdefault(word, []).append(r)
        return r

    for ci, out_map in enumerate(out_maps):
        inputs = layer.connections[out_map]
        count = layer.coefficients(out_map)
        chain_loads = loads[out_map]
        if sum(chain_loads) != count or any(not 1 <= n <= spec.coeffs_per_word for n in chain_loads):
            raise ValueError(f"loads {chain_loads} do not pack {count} coefficients into words of "
                             f"{spec.coeffs_per_word}")
        start = sum(c.coeff_count for c in chains)
        chains.append(Chain(out_map, inputs, start, count, tuple(chain_loads)))
        # weight-register operations, one per coefficient (set at each load start, shift otherwise)
        load_starts = {}
        pos = 0
        for n in chain_loads:
            load_starts[pos] = len(coeff_words)
            coeff_words.append(CoeffWord(len(coeff_words)))
            pos += n
        wreg_ops: list[int] = []
        for k in range(count):
            if k in load_starts:
                w = b.op(Kind.SET_RW, Field.WREG, chain=ci)
                load_of_set[w] = load_starts[k]
                reads[w] = (read(Field.MEMA, coeff_words[load_starts[k]], w),)
            else:
                w = b.op(Kind.SHIFT_RW, Field.WREG, chain=ci)
                b.edge(prev_wreg, w, spec.register_latency)  # type: ignore[arg-type]
            wreg_ops.append(w)
            prev_wreg = w
        # VMAC: set rb then one mac per (input, kernel column, phase row), all with their image-register op
        rb = b.op(Kind.SET_RB, Field.VMAC, chain=ci)
        set_rb.append(rb)
        if prev_last_mac is not None:
            b.edge(prev_last_mac, rb, 1)
        consumers = [rb]
        for m in inputs:
            for s in range(kw):
                for phi, rows in enumerate(layer.phases):
                    for j in range(len(rows)):
                        if j == 0:
                            r = b.op(Kind.SET_RI, Field.IREG, chain=ci)
                            reads[r] = (read(Field.MEMA, PixelWord(m, s, phi, 0), r),
                                        read(Field.MEMB, PixelWord(m, s, phi, 1), r))
                        else:
                            kind = Kind.SETSH_RI if j == 1 else Kind.SHIFT_RI
                            r = b.op(kind, Field.IREG, chain=ci)
                            if kind == Kind.SETSH_RI:
                                reads[r] = (read(Field.MEMB, PixelWord(m, s, phi, 2), r),)
                            b.edge(prev_ireg, r, spec.register_latency)  # type: ignore[arg-type]
                        if prev_consumer_i is not None:
                            b.edge(prev_consumer_i, r, 0)
                        mac = b.op(Kind.MAC, Field.VMAC, chain=ci)
                        b.edge(r, mac, spec.register_latency)
                        prev_ireg, prev_consumer_i = r, mac
                        consumers.append(mac)
        b.edge(rb, consumers[1], 1)
        for k, consumer in enumerate(consumers):
            b.edge(wreg_ops[k], consumer, spec.register_latency)
            if prev_consumer_w is not None:
                b.edge(prev_consumer_w, wreg_ops[k], 0)
            prev_consumer_w = consumer
        prev_last_mac = consumers[-1]
        last_mac.append(consumers[-1])
        a0 = b.op(Kind.ACT, Field.ACT, chain=ci, half=0)
        a1 = b.op(Kind.ACT, Field.ACT, chain=ci, half=1)
        b.edge(rb, a0, spec.vmac_to_act_latency)
        b.edge(rb, a1, spec.vmac_to_act_latency)
        b.edge(a0, a1, 1)
        acts.append((a0, a1))

    # repetitive writes: the sw newest columns of every input map (NVE §4.2 step 5)
    in_maps = sorted({m for ci in out_maps for m in layer.connections[ci]})
    words = layer.phase_words()
    for m in in_maps:
        for s in range(kw - sw, kw):
            for phi, nw in enumerate(words):
                for w in range(nw):
                    pw = PixelWord(m, s, phi, w)
                    wr = b.op(Kind.WRITE, Field.MEMA, data=pw)
                    for r in read_ops_of_word.get(pw, ()):
                        b.edge(wr, r, spec.write_to_read_latency)
    init_cols = [PixelWord(m, s, phi, w) for s in range(kw - sw) for m in in_maps
                 for phi, nw in enumerate(words) for w in range(nw)]
    return TaskGraph(layer, tuple(chains), tuple(b.ops), tuple(b.edges), reads, tuple(set_rb), tuple(last_mac),
                     tuple(acts), load_of_set, (*coeff_words, *init_cols))
