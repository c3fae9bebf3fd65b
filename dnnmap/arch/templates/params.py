"""Parameters of the RTML sparse SIMD template (seed 003 section 3.1, Figs. 4-6; docs/hwgen.md).

The template: a ``rows x cols`` PE array whose rows are SIMD units sharing one sparse operand read
from a per-row SRAM; every PE has two private SRAMs (dense operand, partial sums updated
read-modify-write); a multi-banked global buffer (GLB) feeds the rows through a NoC; a
(de)compression stage sits between the GLB and the off-chip link. The report gives none of the
sizes, widths or clock (digest section 2.3): the defaults are the project's choices for its
16 x 12 = 192-PE proof-of-concept chip, each justified in docs/hwgen.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SparseSimdParams(BaseModel):
    """One point of the template family; every buffer size is in words of its tensor per instance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "rtml_sparse_simd"
    rows: int = Field(16, ge=1, le=256, description="SIMD rows (each shares one sparse operand stream)")
    cols: int = Field(12, ge=1, le=256, description="PEs per row")
    pe_input_words: int = Field(512, ge=1, le=2**20, description="private dense-operand (input1) SRAM per PE")
    pe_psum_words: int = Field(512, ge=1, le=2**20, description="private partial-sum SRAM per PE (read-modify-write)")
    row_sram_words: int = Field(16384, ge=1, le=2**24, description="per-row SRAM of the shared sparse operand")
    glb_words: int = Field(524288, ge=1, le=2**30, description="global buffer, all banks together")
    glb_banks: int = Field(16, ge=1, le=256, description="GLB banks, each one port of bank_width_words")
    bank_width_words: int = Field(4, ge=1, le=64, description="words per cycle one GLB bank reads or writes")
    noc_words_per_cycle: float = Field(16.0, gt=0, le=4096, description="NoC bandwidth GLB <-> rows, each way")
    word_bits: int = Field(16, ge=1, le=64, description="operand width (bfloat16: 16)")
    psum_bits: int = Field(16, ge=1, le=64, description="partial-sum width (the report computes in bfloat16)")
    clock_mhz: float = Field(1000.0, gt=0, le=10_000)
    sparse_format: Literal["bitmap", "csr"] = Field("bitmap", description="compressed format of the sparse "
                                                     "operand (docs/sparse.md)")
    offchip_gbps: float = Field(6.4, gt=0, le=10_000, description="off-chip link (the chip's FPGA 'virtual DRAM')")

    @property
    def pes(self) -> int:
        return self.rows * self.cols

    def bytes_of(self, words: int, bits: int) -> float:
        return words * bits / 8

    @property
    def glb_bank_bytes(self) -> float:
        return self.bytes_of(self.glb_words, self.word_bits) / self.glb_banks
