"""What hardware generation writes: the chosen point as an architecture YAML (``dnnmap map --arch``) and
as a Verilog parameter header for the template's RTL (``include`` it inside the top module)."""

from __future__ import annotations

import math

import yaml

from dnnmap.arch.area import area_of
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.arch.templates.sparse_simd import sparse_simd_dict


def arch_yaml(p: SparseSimdParams, note: str) -> str:
    """The point's architecture spec as YAML, with ``note`` (how it was chosen) and its area as comments."""
    area = area_of(p)
    lines = [f"# {line}" for line in note.splitlines()]
    lines.append(f"# model area {area.total:.3f} mm^2 (" + ", ".join(
        f"{k} {v:.3f}" for k, v in area.as_dict().items() if k != "total") + "); docs/hwgen.md")
    lines.append("# template parameters: " + ", ".join(f"{k}={v}" for k, v in p.model_dump().items()))
    return "\n".join(lines) + "\n" + yaml.safe_dump(sparse_simd_dict(p), sort_keys=False, default_flow_style=None)


def _addr_bits(words: int) -> int:
    return max(1, math.ceil(math.log2(words)))


def verilog_parameters(p: SparseSimdParams) -> dict[str, int]:
    """The integer parameters the template's RTL takes (sizes in words, widths in bits)."""
    bank_words = p.glb_words // p.glb_banks
    return {
        "PE_ROWS": p.rows, "PE_COLS": p.cols, "NUM_PES": p.pes,
        "WORD_BITS": p.word_bits, "PSUM_BITS": p.psum_bits,
        "PE_INPUT_WORDS": p.pe_input_words, "PE_INPUT_ADDR_BITS": _addr_bits(p.pe_input_words),
        "PE_PSUM_WORDS": p.pe_psum_words, "PE_PSUM_ADDR_BITS": _addr_bits(p.pe_psum_words),
        "ROW_SRAM_WORDS": p.row_sram_words, "ROW_SRAM_ADDR_BITS": _addr_bits(p.row_sram_words),
        "GLB_BANKS": p.glb_banks, "GLB_BANK_WORDS": bank_words, "GLB_BANK_ADDR_BITS": _addr_bits(bank_words),
        "GLB_BANK_WIDTH_WORDS": p.bank_width_words,
        "NOC_WORDS_PER_CYCLE": math.ceil(p.noc_words_per_cycle),
        "CLOCK_KHZ": round(p.clock_mhz * 1000),
    }


def verilog_header(p: SparseSimdParams, note: str) -> str:
    """``localparam integer NAME = VALUE;`` lines, to be included inside the template's top module."""
    params = verilog_parameters(p)
    width = max(map(len, params))
    lines = [f"// {line}" for line in note.splitlines()]
    lines += [f"// sparse SIMD template parameters (dnnmap/arch/templates, docs/hwgen.md); model area "
              f"{area_of(p).total:.3f} mm^2", "// include inside the top module: `include \"<this file>\""]
    lines += [f"localparam integer {name:<{width}} = {value};" for name, value in params.items()]
    return "\n".join(lines) + "\n"
