"""Silicon area of a sparse SIMD template point (docs/hwgen.md "Area model").

``area = PEs x (MAC + PE logic + input SRAM + psum SRAM) + rows x row SRAM + banks x GLB bank
+ NoC + (de)compression + uncore``, every SRAM a separate macro priced by
:meth:`~dnnmap.arch.technology.Technology.sram_um2` (smaller macros cost more per KB), the NoC by its
wire bits times its ports (one per row and one per GLB bank). Constants and their sources:
:mod:`dnnmap.arch.technology`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from dnnmap.arch.technology import GF12_CLASS, Technology
from dnnmap.arch.templates.params import SparseSimdParams


@dataclass(frozen=True)
class AreaBreakdown:
    """Area of each component in mm^2."""

    pe_logic: float
    pe_sram: float
    row_sram: float
    glb: float
    noc: float
    codec: float
    uncore: float

    @property
    def total(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total": self.total}


def area_of(p: SparseSimdParams, tech: Technology = GF12_CLASS) -> AreaBreakdown:
    """Area of the template point ``p`` in mm^2, by component."""
    um2 = 1e-6
    pe_sram = (tech.sram_um2(p.bytes_of(p.pe_input_words, p.word_bits))
               + tech.sram_um2(p.bytes_of(p.pe_psum_words, p.psum_bits)))
    noc_bits = math.ceil(p.noc_words_per_cycle) * p.word_bits * 2  # both directions
    return AreaBreakdown(
        pe_logic=p.pes * tech.pe_logic_um2(p.word_bits) * um2,
        pe_sram=p.pes * pe_sram * um2,
        row_sram=p.rows * tech.sram_um2(p.bytes_of(p.row_sram_words, p.word_bits)) * um2,
        glb=p.glb_banks * tech.sram_um2(p.glb_bank_bytes) * um2,
        noc=noc_bits * (p.rows + p.glb_banks) * tech.noc_um2_per_bit_port * um2,
        codec=tech.codec_um2 * um2,
        uncore=tech.uncore_um2 * um2,
    )


def die_side_mm(p: SparseSimdParams, tech: Technology = GF12_CLASS) -> float:
    """Side of a square die of the point's area: the NoC's wire length scale."""
    return math.sqrt(area_of(p, tech).total)
