"""The area model (docs/hwgen.md): SRAM macros against hand-computed areas, monotonicity, and the
192-PE reference point against the report's 3 mm^2 (seed 003 section 4.1)."""

from __future__ import annotations

import pytest

from dnnmap.arch.area import area_of
from dnnmap.arch.technology import GF12_CLASS
from dnnmap.arch.templates.params import SparseSimdParams


def test_sram_macro_area_by_hand() -> None:
    """1 KB: 8192 bits x 0.0588 um^2 / 0.7 = 688.1 um^2 of cells + 7.6 x sqrt(8192) = 687.9 um^2 periphery."""
    assert GF12_CLASS.sram_um2(1024) == pytest.approx(1376.0, abs=0.5)
    per_kb = [GF12_CLASS.sram_um2(kb * 1024) / kb for kb in (0.25, 1, 8, 64, 512)]
    assert per_kb == sorted(per_kb, reverse=True)  # larger macros are cheaper per KB


def test_components_add_up_and_grow_with_their_parameters() -> None:
    base = area_of(SparseSimdParams())
    assert base.total == pytest.approx(sum(v for k, v in base.as_dict().items() if k != "total"))
    assert area_of(SparseSimdParams(rows=32)).pe_logic == pytest.approx(2 * base.pe_logic)
    assert area_of(SparseSimdParams(rows=32)).row_sram == pytest.approx(2 * base.row_sram)
    assert area_of(SparseSimdParams(glb_banks=32)).glb > base.glb  # more, smaller macros: more periphery
    assert area_of(SparseSimdParams(noc_words_per_cycle=32)).noc == pytest.approx(2 * base.noc)


def test_the_192_pe_point_is_about_the_chips_3_mm2() -> None:
    """The report's chip is 3 mm^2 for 16 x 12 PEs; our unknown sizes were chosen to land near it."""
    assert area_of(SparseSimdParams()).total == pytest.approx(3.0, rel=0.05)
