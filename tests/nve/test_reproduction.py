"""Slow paper-reproduction checks on full 1280x720 frames (run with ``pytest -m slow tests/nve``)."""

from __future__ import annotations

import pytest

from dnnmap.targets.nve.compiler import compile_layer
from dnnmap.targets.nve.layers import network_layers
from dnnmap.targets.nve.metrics import layer_figures
from dnnmap.targets.nve.simulation import simulate_layer
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.workload import zoo

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("net", "layer", "thesis_auto", "tolerance"), [
    ("nve_face", "L3", 15.53, 0.1),
    ("nve_face", "L4", 4.87, 0.05),
    ("nve_speed", "L3", 15.88, 0.1),
    ("nve_speed", "L4", 4.90, 0.05),
])
def test_layers_matching_table5(net: str, layer: str, thesis_auto: float, tolerance: float, spec: NveSpec) -> None:
    """The layers whose code structure the thesis fully determines reproduce Table 5's automatic figures."""
    ly = next(x for x in network_layers(zoo.get(net), spec)[0] if x.name == layer)
    util = layer_figures(compile_layer(ly, spec, 3), spec).utilization(spec.lanes)
    assert abs(util - thesis_auto) <= tolerance


def test_full_frame_iss_equals_the_whole_frame_figures(spec: NveSpec) -> None:
    ly = network_layers(zoo.get("nve_face"), spec)[0][3]  # L4: 312x172, 11 strips
    cl = compile_layer(ly, spec, 3)
    sim = simulate_layer(ly, [(cp.program, cp.stream) for cp in cl.programs], spec)
    fig = layer_figures(cl, spec)
    assert sim.bit_exact
    assert (sim.stats.issued, sim.stats.mac_ops) == (fig.instructions, fig.mac_ops)
