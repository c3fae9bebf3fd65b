"""Timeloop tutorial exercises 00-06: dnnmap's model and (up to 05) simulator against Timeloop's reference
statistics (fixtures/reference.yaml). Every count agrees: those both tools define the same way directly,
the others through :func:`timeloop_view`."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import COUNT_KINDS, CostBatch, CostModel
from dnnmap.sim import simulate
from exercises import (
    REFERENCE,
    Exercise,
    exercise,
    reference_rows,
    timeloop_energy,
    timeloop_view,
)

EXERCISES = sorted(REFERENCE)


def _model(ex: Exercise) -> CostBatch:
    return CostModel(ex.op, ex.arch).evaluate(MappingBatch.from_mappings(ex.op, ex.arch, [ex.mapping]))


def _model_counts(ex: Exercise, cost: CostBatch, level: str, tensor: str) -> dict[str, int]:
    i, j = ex.arch.level_index(level), [t.name for t in ex.op.tensors].index(tensor)
    return {k: int(cost.counts[k][0, i, j]) for k in COUNT_KINDS}


def _compare(name: str, counts_of) -> list[str]:
    """Mismatches of the exercise's reference rows."""
    ex = exercise(name)
    bad = []
    for level, space, stat, expected in reference_rows(name):
        role = ex.op.tensor(space).role
        ours = timeloop_view(counts_of(level, space), role)[stat]
        if ours != expected:
            bad.append(f"{level} {space} {stat}: dnnmap {ours}, Timeloop {expected}")
    return bad


@pytest.mark.parametrize("name", EXERCISES)
def test_model_counts_match_timeloop(name: str) -> None:
    ex = exercise(name)
    cost = _model(ex)
    assert cost.valid[0]
    assert _compare(name, lambda lv, t: _model_counts(ex, cost, lv, t)) == []


SIMULATED = [name for name in EXERCISES if exercise(name).op.macs <= 100_000]  # 06 has 59 G MACs


@pytest.mark.parametrize("name", SIMULATED)
def test_simulator_counts_match_timeloop(name: str) -> None:
    ex = exercise(name)
    result = simulate(ex.op, ex.arch, ex.mapping, compute=False)
    assert _compare(name, lambda lv, t: vars(result.count(lv, t))) == []


@pytest.mark.parametrize("name", EXERCISES)
def test_cycles_and_mac_energy_match_timeloop(name: str) -> None:
    ex = exercise(name)
    cost = _model(ex)
    assert cost.compute_cycles[0] == ex.ref["cycles"]
    assert cost.energy_breakdown[0, -1] == pytest.approx(ex.ref["mac_energy"], abs=0.006)


@pytest.mark.parametrize("name", EXERCISES)
def test_level_energies(name: str) -> None:
    """Per level and data space: Timeloop's energy is its words rounded up to whole blocks times the
    vector energy; dnnmap's (energy_by_action) charges each word the vector energy / block size and,
    for outputs, also the psum reloads (its fills), which Timeloop counts once as fills."""
    ex = exercise(name)
    cost = _model(ex)
    by_action = cost.energy_by_action()[0]
    for level, entry in ex.ref["levels"].items():
        i = ex.arch.level_index(level)
        per_word = entry["vector_energy"] / entry["block"]
        for space, stats in entry.items():
            if not isinstance(stats, dict):
                continue
            j = [t.name for t in ex.op.tensors].index(space)
            counts = _model_counts(ex, cost, level, space)
            view = timeloop_view(counts, ex.op.tensor(space).role)
            extra = counts["fills"] if ex.op.tensor(space).role == "output" else 0
            assert by_action[i, j].sum() == pytest.approx((sum(view.values()) + extra) * per_word, rel=1e-9)
            expected = timeloop_energy(sum(view.values()), entry["instances"], entry["block"], entry["vector_energy"])
            assert stats["energy"] * entry["instances"] == pytest.approx(expected, rel=1e-4, abs=0.006), (level, space)


def test_per_action_energies_follow_the_ert() -> None:
    """Without ``max`` the ERT's read and write energies apply per action (MainMemory: 39.878 and
    32.398 pJ per 8-word block), so the outputs' updates at the backing store cost the write energy."""
    ex = exercise("01-ws", "per-action")
    mm = ex.arch.level_index("MainMemory")
    cost = _model(ex)
    out = [t.name for t in ex.op.tensors].index("Outputs")
    assert ex.arch.levels[mm].energy_of("output", "read") == pytest.approx(39.878 / 8)
    assert ex.arch.levels[mm].energy_of("output", "update") == pytest.approx(32.398 / 8)
    np.testing.assert_allclose(cost.energy_by_action()[0, mm, out], [0.0, 0.0, 16 * 32.398 / 8])
