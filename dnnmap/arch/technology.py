"""Technology constants for generated hardware: per-access energies and silicon areas as functions of size.

One :class:`Technology` holds every constant the hardware template (``dnnmap/arch/templates``) and the
area model (``dnnmap/arch/area.py``) use, each with its source in ``docs/hwgen.md`` ("Technology
constants"). The published figures are 45 nm (Horowitz, ISSCC 2014, "Computing's energy problem") and
are brought to a 12 nm-class node (the RTML chip's GF12, seed 003 section 4.1) by two factors: logic
area by the transistor-density ratio, energy by ``energy_scale``. SRAM area uses a 14 nm high-density
bitcell directly. Constants we had to choose are marked "our choice" in the docs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Technology:
    """Energy and area constants of one process node (defaults: a 12 nm-class node, docs/hwgen.md)."""

    name: str = "12nm-class"
    # ---- energy (45 nm figures, times energy_scale) ----
    sram_pj_64b_8kb: float = 10.0  # Horowitz 2014: 64-bit read of an 8 KB SRAM (32 KB: 20 pJ, 1 MB: 100 pJ)
    mac_pj_bf16: float = 1.5  # Horowitz 2014: 16-bit FP multiply 1.1 pJ + 16-bit FP add 0.4 pJ
    energy_scale: float = 0.3  # 45 nm -> 12/14 nm energy per operation (Stillmaker & Baas 2017, rounded)
    offchip_pj_per_bit: float = 20.0  # Horowitz 2014: DRAM 1.3-2.6 nJ per 64 bits (low end); not scaled
    wire_pj_per_bit_mm: float = 0.1  # on-chip wire, 45 nm (our choice after Horowitz 2014 / Keckler 2011)
    codec_pj_per_word: float = 0.5  # (de)compression stage per word crossing it, 45 nm (our choice)
    # ---- area ----
    mac_um2_45nm: float = 3000.0  # Horowitz 2014: 16-bit FP multiplier 1640 um^2 + 16-bit FP adder 1360 um^2
    logic_scale: float = 0.091  # transistor density 45 nm (3.3 MTr/mm^2) -> 12 nm class (36.7 MTr/mm^2)
    pe_logic_factor: float = 1.0  # PE pipeline, coordinate generation, control: this times the MAC (our choice)
    bitcell_um2: float = 0.0588  # 14 nm high-density 6T SRAM bitcell (Natarajan et al., IEDM 2014)
    array_efficiency: float = 0.7  # bitcell area / macro core area of a large SRAM macro (our choice)
    periphery_um2_per_sqrt_bit: float = 7.6  # decoders and sense amplifiers grow with sqrt(bits) (our choice)
    noc_um2_per_bit_port: float = 1.0  # one flop + mux per wire bit per NoC port (our choice)
    codec_um2: float = 20_000.0  # the (de)compression stage (our choice)
    uncore_um2: float = 1_000_000.0  # off-chip interface, pads, control (our choice; calibrated, docs/hwgen.md)

    # ---- derived ------------------------------------------------------------------
    def sram_pj_per_word(self, size_bytes: float, word_bits: int) -> float:
        """Energy of one ``word_bits`` access to an SRAM macro of ``size_bytes``: Horowitz's 64-bit figures
        fit ``10 pJ * sqrt(KB / 8)`` (8 KB 10, 32 KB 20, 1 MB 113 against 100 pJ), scaled to the word width
        and the node."""
        kb = max(size_bytes, 1.0) / 1024
        return self.sram_pj_64b_8kb * math.sqrt(kb / 8) * word_bits / 64 * self.energy_scale

    def mac_pj(self, precision_bits: int) -> float:
        """One multiply-accumulate, scaled from the bf16 figure by operand width (our choice)."""
        return self.mac_pj_bf16 * precision_bits / 16 * self.energy_scale

    def offchip_pj_per_word(self, word_bits: int) -> float:
        return self.offchip_pj_per_bit * word_bits

    def wire_pj_per_word(self, word_bits: int, mm: float) -> float:
        return self.wire_pj_per_bit_mm * word_bits * mm * self.energy_scale

    def codec_pj(self, word_bits: int) -> float:
        return self.codec_pj_per_word * word_bits / 16 * self.energy_scale

    def sram_um2(self, size_bytes: float) -> float:
        """Area of one SRAM macro: bitcells over the array efficiency plus a periphery growing with the
        square root of the bit count, so small macros cost more per KB than large ones."""
        bits = size_bytes * 8
        return bits * self.bitcell_um2 / self.array_efficiency + self.periphery_um2_per_sqrt_bit * math.sqrt(bits)

    def pe_logic_um2(self, precision_bits: int) -> float:
        """One PE's MAC (area grows with the square of the operand width, as a multiplier's does; our choice)
        plus its pipeline and coordinate logic."""
        mac = self.mac_um2_45nm * self.logic_scale * (precision_bits / 16) ** 2
        return mac * (1 + self.pe_logic_factor)


GF12_CLASS = Technology()
