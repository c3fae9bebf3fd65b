"""The sparse SIMD template (seed 003 section 3.1) as a spec family: structure, energies against the
published anchors, the 192-PE preset, and mappings on a template point proven by the simulator."""

from __future__ import annotations

import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.arch.technology import GF12_CLASS
from dnnmap.arch.templates.params import SparseSimdParams
from dnnmap.arch.templates.sparse_simd import sparse_simd_spec
from dnnmap.search.network import map_layer
from dnnmap.sim import sim_metrics, simulate
from dnnmap.workload import ops


def test_structure_rows_share_the_sparse_operand_pes_keep_two_private_srams() -> None:
    p = SparseSimdParams(rows=5, cols=3)
    spec = sparse_simd_spec(p)
    assert [lv.name for lv in spec.levels] == ["PE", "RowSRAM", "GLB", "DRAM"]
    assert spec.num_macs == 15
    assert spec.instances(0) == 15 and spec.instances(1) == 5 and spec.instances(2) == 1
    pe, row, glb, _ = spec.levels
    assert set(pe.keeps) == {"input", "output"} and pe.read_modify_write
    assert pe.capacity == {"input": p.pe_input_words, "output": p.pe_psum_words}
    assert row.keeps == ("weight",) and row.fanout.shape == (3,) and row.fanout.multicast
    assert row.read_bandwidth == 1.0  # one broadcast word per cycle per SIMD row
    assert glb.fanout.shape == (5,) and glb.bandwidth == p.glb_banks * p.bank_width_words
    assert glb.fanout.ingress_bandwidth == glb.fanout.egress_bandwidth == p.noc_words_per_cycle


def test_sram_energy_reproduces_horowitz_anchors_and_grows_with_size() -> None:
    """Horowitz (ISSCC 2014), 45 nm, 64-bit reads: 8 KB 10 pJ, 32 KB 20 pJ, 1 MB 100 pJ (fit within 15%)."""
    unscaled = [GF12_CLASS.sram_pj_per_word(kb * 1024, 64) / GF12_CLASS.energy_scale for kb in (8, 32, 1024)]
    assert unscaled[0] == pytest.approx(10) and unscaled[1] == pytest.approx(20)
    assert unscaled[2] == pytest.approx(100, rel=0.15)
    small, big = (sparse_simd_spec(SparseSimdParams(glb_words=w)) for w in (65536, 1048576))
    assert small.levels[2].read_energy < big.levels[2].read_energy
    banked = sparse_simd_spec(SparseSimdParams(glb_banks=32))
    assert banked.levels[2].read_energy < sparse_simd_spec(SparseSimdParams(glb_banks=4)).levels[2].read_energy


def test_192_pe_preset_is_the_template_reference_point() -> None:
    preset = load_arch("rtml_192pe")
    assert preset.num_macs == 192 and preset.levels[2].fanout.shape == (16,) and preset.levels[1].fanout.shape == (12,)
    generated = sparse_simd_spec(SparseSimdParams(name="rtml_192pe"))
    assert preset.model_dump(exclude={"description", "source"}) == generated.model_dump(
        exclude={"description", "source"})


@pytest.mark.parametrize("mapper", ["auto", "sunstone"])
def test_best_mappings_on_a_template_point_equal_the_simulator(mapper: str) -> None:
    """A 2 x 3 point with tiny SRAMs; the mappers' best mapping of a small conv, executed literally."""
    p = SparseSimdParams(rows=2, cols=3, pe_input_words=16, pe_psum_words=8, row_sram_words=64, glb_words=512,
                         glb_banks=4, noc_words_per_cycle=2.0)
    spec = sparse_simd_spec(p)
    op = ops.conv2d("c", 4, 6, (6, 6), 3)
    found = map_layer(op, spec, "edp", mapper)
    sim = simulate(op, spec, found.mapping)
    assert sim.output_matches and sim.iterations_exact
    metrics = sim_metrics(sim, op, spec, found.mapping)
    assert metrics.valid
    assert found.cost.energy[0] == pytest.approx(metrics.energy, rel=1e-9)
    assert found.cost.cycles[0] == pytest.approx(metrics.cycles, rel=1e-9)
