"""Paper reproduction on full 1280x720 frames, simulated on the ISS (NVE §7.2, Table 5)."""

from __future__ import annotations

import pytest

from dnnmap.targets.nve import CompileResult
from dnnmap.targets.nve.compiler import CompiledLayer
from dnnmap.targets.nve.host import strips
from dnnmap.targets.nve.metrics import layer_figures, program_run
from dnnmap.targets.nve.simulation import LayerSim, simulate_layer
from dnnmap.targets.nve.spec import NveSpec


def _simulate(cl: CompiledLayer, spec: NveSpec, every: int = 1) -> LayerSim:
    """Every ``every``-th program of ``cl`` over every strip of the full frame: the maps these programs
    write are bit-exact (only the others' outputs count as mismatches) and the counts equal the formula."""
    programs = cl.programs[::every]
    sim = simulate_layer(cl.layer, [(cp.program, cp.stream) for cp in programs], spec)
    p, q = cl.layer.out_hw
    assert sim.mismatches == (cl.layer.out_maps - sum(len(cp.out_maps) for cp in programs)) * p * q
    counted = [program_run(cp, q)[:2] for cp in programs]
    n = strips(cl.layer, spec)
    assert (sim.stats.issued, sim.stats.mac_ops) == (n * sum(c[0] for c in counted), n * sum(c[1] for c in counted))
    return sim


@pytest.fixture(scope="module")
def compiled(face: CompileResult, speed: list[CompiledLayer]) -> dict[str, list[CompiledLayer]]:
    return {"face": list(face.layers), "speed": speed}


@pytest.mark.parametrize(("net", "layer", "thesis_auto", "tolerance", "every"), [
    ("face", 2, 15.53, 0.1, 1),
    ("face", 3, 4.87, 0.05, 1),
    ("speed", 2, 15.88, 0.1, 40),  # programs 0 and 40 of 80 of equal size, one per input group
    ("speed", 3, 4.90, 0.05, 1),
])
def test_layers_matching_table5(net: str, layer: int, thesis_auto: float, tolerance: float, every: int,
                                spec: NveSpec, compiled: dict[str, list[CompiledLayer]]) -> None:
    """The layers whose code structure the thesis fully determines reproduce Table 5's automatic figures."""
    cl = compiled[net][layer]
    util = _simulate(cl, spec, every).macs_per_instruction(spec.lanes)
    assert util == pytest.approx(layer_figures(cl, spec).utilization(spec.lanes), rel=1e-12)
    assert abs(util - thesis_auto) <= tolerance


def test_fused_face_layers_run_bit_exact_at_full_frame(face: CompileResult, spec: NveSpec) -> None:
    """The fused programs (L1: 4 maps in one, L2: 14 in one, docs/nve.md §5) over the whole frame."""
    for cl, fused_maps in zip(face.layers[:2], (4, 14), strict=True):
        assert [len(cp.out_maps) for cp in cl.programs] == [fused_maps]
        sim = _simulate(cl, spec)
        assert sim.bit_exact and sim.outputs == fused_maps * cl.layer.out_hw[0] * cl.layer.out_hw[1]
