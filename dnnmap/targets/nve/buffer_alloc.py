"""Local-buffer allocation with AGU circular addressing (NVE §4.4, Eqs. 3.1-3.2, Figs. 18-19).

Coefficient words sit at fixed addresses 0.. (mode 0), written by the init part. Pixel
words live in circular arrays ("rings"), one per input map and horizontal column
residue ``c mod sw``: with subsample ``sw`` every residue receives exactly one new
column per iteration, so each memory op's address advances by one slot per execution
and the AGU wrap of Eq. 3.2 (``update + inc == toggle``) is always hit exactly, which a
single ring cannot do for stride 2 (docs/nve.md §4). A slot holds
all words of one column (all phases); a word's position in the slot goes into the
``offset``. Every ring uses the same (toggle, inc) = (R*slot, slot), i.e. AGU mode 1.

The ring size R is the smallest that never overwrites a word before its last read, in
absolute time with the modulo schedule's overlap (a write at t is visible at
t + write_to_read_latency, so it may issue ``write_to_read_latency - 1`` cycles before the
last read of the old word).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import MappingError
from dnnmap.targets.nve.modulo import LoopSchedule
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.targets.nve.taskgraph import Kind, PixelWord


@dataclass(frozen=True)
class BufferLayout:
    coeff_words: int
    ring_base: tuple[tuple[tuple[int, int], int], ...]  # ((in_map, residue), base address)
    slot_words: int
    ring_slots: int
    phase_offsets: tuple[int, ...]
    sw: int

    @property
    def words_used(self) -> int:
        return self.coeff_words + len(self.ring_base) * self.ring_slots * self.slot_words

    @property
    def modes(self) -> tuple[tuple[int, int], ...]:
        """The AGU mode table (toggle, inc) for modes 1.. (Fig. 19)."""
        return ((self.ring_slots * self.slot_words, self.slot_words),)

    def _base(self, in_map: int, residue: int) -> int:
        return dict(self.ring_base)[(in_map, residue)]

    def pixel_address(self, in_map: int, column: int, phase: int, word: int) -> int:
        """Address of word ``word`` of phase ``phase`` of absolute input column ``column``."""
        q, r = divmod(column, self.sw)
        return self._base(in_map, r) + (q % self.ring_slots) * self.slot_words + self.phase_offsets[phase] + word

    def circular(self, pw: PixelWord, stage: int) -> tuple[int, int]:
        """(offset, initial update) of a loop op accessing ``pw`` whose execution k serves iteration k - stage."""
        offset = self._base(pw.in_map, pw.col % self.sw) + self.phase_offsets[pw.phase] + pw.word
        return offset, ((pw.col // self.sw - stage) % self.ring_slots) * self.slot_words


def _ring_ok(loop: LoopSchedule, slots: int, spec: NveSpec) -> bool:
    g, t, ii = loop.flat.graph, loop.flat.time, loop.ii
    kw, sw = g.layer.kernel[1], g.layer.subsample[1]
    first_new = kw - sw
    write_t = {o.data: t[o.id] for o in g.ops if o.kind == Kind.WRITE}
    read_t: dict[PixelWord, int] = {}
    for o in g.ops:
        if o.kind == Kind.READ and isinstance(o.data, PixelWord):
            read_t[o.data] = max(read_t.get(o.data, t[o.id]), t[o.id])
    keys = {(pw.in_map, pw.phase, pw.word) for pw in read_t}

    def written(m: int, c: int, phi: int, w: int) -> float:
        if c < first_new:
            return float("-inf")
        j = (c - first_new) // sw
        return j * ii + write_t[PixelWord(m, c - sw * j, phi, w)]

    def last_read(m: int, c: int, phi: int, w: int) -> float:
        times = [((c - s) // sw) * ii + read_t[PixelWord(m, s, phi, w)]
                 for s in range(kw) if (c - s) % sw == 0 and c >= s and PixelWord(m, s, phi, w) in read_t]
        return max(times, default=float("-inf"))

    horizon = sw * (slots + kw + loop.epilogue_iterations + 2)
    return all(written(m, c + sw * slots, phi, w) >= last_read(m, c, phi, w) - (spec.write_to_read_latency - 1)
               for m, phi, w in keys for c in range(horizon))


def allocate_buffer(loop: LoopSchedule, spec: NveSpec, ring_slots: int | None = None) -> BufferLayout:
    """Smallest rings that are safe for ``loop`` (or ``ring_slots`` known safe for an equal schedule);
    MappingError if the local buffer is too small."""
    g = loop.flat.graph
    layer = g.layer
    kw, sw = layer.kernel[1], layer.subsample[1]
    words = layer.phase_words()
    offsets = tuple(sum(words[:i]) for i in range(len(words)))
    slot = sum(words)
    if ring_slots is None:
        slots = -(-kw // sw)
        while not _ring_ok(loop, slots, spec):
            slots += 1
    else:
        slots = ring_slots
    coeff_words = len(g.loads)
    bases = []
    addr = coeff_words
    for m in g.in_maps:
        for r in range(sw):
            bases.append(((m, r), addr))
            addr += slots * slot
    layout = BufferLayout(coeff_words, tuple(bases), slot, slots, offsets, sw)
    if layout.words_used > spec.local_buffer_words:
        raise MappingError(f"layer {layer.name!r}: program for output maps {[c.out_map for c in g.chains]} needs "
                           f"{layout.words_used} local-buffer words, spec.local_buffer_words is "
                           f"{spec.local_buffer_words}")
    return layout
