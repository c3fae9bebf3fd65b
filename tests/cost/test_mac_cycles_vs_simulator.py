"""``mac.cycles`` (a bit-serial MAC array: every temporal step lasts that many cycles, docs/arch-spec.md): the
model's compute cycles, latency and utilization against the simulator's on random cases with random
architecture options, and each with ``mac.cycles`` drawn from 1-8."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.sim import sim_metrics, simulate
from random_cases import random_case


def _with_cycles(arch: ArchSpec, cycles: int) -> ArchSpec:
    return arch.model_copy(update={"mac": arch.mac.model_copy(update={"cycles": cycles})})


def test_compute_cycles_latency_and_utilization_equal_the_simulators() -> None:
    rng, draw = np.random.default_rng(4242), np.random.default_rng(7)
    bound_by_compute = on_mac_array = 0
    for _ in range(120):
        op, arch, m = random_case(rng, options=True)
        if any(m.total(d) != b for d, b in op.dims):
            continue
        arch = _with_cycles(arch, int(draw.choice([1, 2, 3, 4, 8])))
        cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
        sim = simulate(op, arch, m, compute=False)
        metrics = sim_metrics(sim, op, arch, m)
        where = f"{op.kind} {op.dims}, mac.cycles {arch.mac.cycles}: {m}"
        assert float(cost.compute_cycles[0]) == pytest.approx(metrics.compute_cycles), where
        assert float(cost.cycles[0]) == pytest.approx(metrics.cycles), where
        assert float(cost.utilization[0]) == pytest.approx(metrics.utilization), where
        assert float(cost.energy[0]) == pytest.approx(metrics.energy), where
        if op.macs and arch.mac.cycles > 1:
            on_mac_array += 1
            assert metrics.compute_cycles == sim.temporal_steps * arch.mac.cycles, where
            bound_by_compute += metrics.cycles == metrics.compute_cycles
    assert on_mac_array > 20 and bound_by_compute > 5


def test_a_bit_serial_array_takes_its_cycles_per_step() -> None:
    """The same mapping with ``mac.cycles`` 4: compute cycles 4x, energy unchanged."""
    rng = np.random.default_rng(11)
    while True:
        op, arch, m = random_case(rng)
        if op.macs and all(m.total(d) == b for d, b in op.dims):
            break
    one, four = (CostModel(op, a).evaluate(MappingBatch.from_mappings(op, a, [m]))
                 for a in (arch, _with_cycles(arch, 4)))
    assert float(four.compute_cycles[0]) == 4 * float(one.compute_cycles[0])
    assert float(four.energy[0]) == float(one.energy[0])
    with pytest.raises(ValueError, match="cycles"):
        ArchSpec.model_validate({**arch.model_dump(), "mac": {**arch.mac.model_dump(), "cycles": 0}})
