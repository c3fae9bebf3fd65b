"""The RTML sparse SIMD template (seed 003 section 3.1, Figs. 4-6) as an architecture family.

:func:`sparse_simd_spec` turns :class:`~dnnmap.arch.templates.params.SparseSimdParams` into the same
validated :class:`~dnnmap.arch.spec.ArchSpec` that ``dnnmap map --arch`` loads. Levels, innermost first:

* ``PE`` (``rows x cols`` instances): the two private SRAMs of Fig. 6, ``input`` (input1, the dense
  operand) and ``output`` (partial sums, updated read-modify-write); the sparse operand bypasses it.
* ``RowSRAM`` (``rows`` instances): keeps only ``weight``, the operand the row shares (input2); its
  fan-out to the row's ``cols`` PEs multicasts, so one read feeds the whole SIMD row, and it reads one
  word per cycle (``read_bandwidth: 1``, the row's single broadcast port).
* ``GLB``: the multi-banked global buffer (``banks x bank_width_words`` words per cycle), keeping all
  three roles; its fan-out to the rows is the NoC (``noc_words_per_cycle`` each way, a wire hop of half
  the die side per word, no in-network reduction: partial sums are accumulated in the GLB).
* ``DRAM``: the off-chip link (the chip's FPGA "virtual DRAM"); every word crossing it passes the
  (de)compression stage, whose energy is added to the link's.

The per-access energies follow each macro's size (:class:`~dnnmap.arch.technology.Technology`).

Sparsity: the rows hold the sparse operand with its non-zeros contiguous and skip its zeros (section
3.1.2). The spec declares that support (``sparsity``: ``sparse_format`` metadata, weights or activations
as the sparse operand, compressed at every level, ``decompress_below: null`` so the MACs skip zeros);
the densities are the workload's (``--density``, measured weights, docs/sparse.md), priced by the core
cost model (compressed words plus metadata at every level, zero-skipping MACs); layers without densities
are priced dense.
"""

from __future__ import annotations

from typing import Any

from dnnmap.arch.area import die_side_mm
from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.arch.technology import GF12_CLASS, Technology
from dnnmap.arch.templates.params import SparseSimdParams


def _sram_energy(tech: Technology, words: float, word_bits: int) -> float:
    return round(tech.sram_pj_per_word(words * word_bits / 8, word_bits), 4)


def sparse_simd_dict(p: SparseSimdParams, tech: Technology = GF12_CLASS) -> dict[str, Any]:
    """The spec of point ``p`` as plain data (what :func:`sparse_simd_spec` validates and YAML files hold)."""
    wb, pb = p.word_bits, p.psum_bits
    pe_in = _sram_energy(tech, p.pe_input_words, wb)
    pe_ps = _sram_energy(tech, p.pe_psum_words, pb)
    row = _sram_energy(tech, p.row_sram_words, wb)
    glb = _sram_energy(tech, p.glb_words / p.glb_banks, wb)
    link = round(tech.offchip_pj_per_word(wb) + tech.codec_pj(wb), 4)
    noc_hop = round(tech.wire_pj_per_word(wb, die_side_mm(p, tech) / 2), 4)
    return {
        "name": p.name,
        "description": f"RTML sparse SIMD template: {p.rows} x {p.cols} PEs, row SRAM {p.row_sram_words} words, "
                       f"GLB {p.glb_words} words in {p.glb_banks} banks",
        "source": "RTML sparse SIMD chip, section 3.1 (structure); sizes, clock and energies: docs/hwgen.md",
        "clock_mhz": p.clock_mhz,
        "word_bits": {"input": wb, "weight": wb, "output": pb},
        "energy_unit": "pJ",
        "sparsity": {"format": p.sparse_format, "roles": ["weight", "input"], "decompress_below": None},
        "mac": {"energy": round(tech.mac_pj(wb), 4), "precision_bits": wb, "operand_registers": ["weight"]},
        "levels": [
            {"name": "PE", "capacity": {"input": p.pe_input_words, "output": p.pe_psum_words},
             "keeps": ["input", "output"], "read_energy": pe_in, "write_energy": pe_in,
             "energy": {"output": {"read": pe_ps, "fill": pe_ps, "update": pe_ps}},
             "read_modify_write": True},
            {"name": "RowSRAM", "capacity": {"weight": p.row_sram_words}, "keeps": ["weight"],
             "read_energy": row, "write_energy": row, "read_bandwidth": 1.0,
             "fanout": {"shape": [p.cols], "multicast": True, "reduction": False}},
            {"name": "GLB", "capacity": p.glb_words, "keeps": ["input", "weight", "output"],
             "read_energy": glb, "write_energy": glb, "bandwidth": float(p.glb_banks * p.bank_width_words),
             "read_modify_write": True,
             "fanout": {"shape": [p.rows], "multicast": True, "reduction": False, "hop_energy": noc_hop,
                        "ingress_bandwidth": p.noc_words_per_cycle, "egress_bandwidth": p.noc_words_per_cycle}},
            {"name": "DRAM", "keeps": ["input", "weight", "output"], "read_energy": link, "write_energy": link,
             "transfer": {"model": "volume", "bandwidth_gbps": p.offchip_gbps}},
        ],
    }


def sparse_simd_spec(p: SparseSimdParams, tech: Technology = GF12_CLASS) -> ArchSpec:
    """The validated architecture spec of template point ``p``."""
    return parse_arch(sparse_simd_dict(p, tech), f"sparse SIMD template point {p.name!r}")
