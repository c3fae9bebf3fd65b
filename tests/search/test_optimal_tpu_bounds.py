"""B15, B16 and B17 (docs/search.md, "Closing tpu_like's gaps"): the refills of two adjacent child levels through one
innermost loop, the output pair's parent side when its tile is drained at every event, and the lanes' words of a
windowed input under an open fan-out whose strides are not known yet.

Checked on random architectures shaped like ``tpu_like`` (a weight register file, under it nothing, above it a
register file of output partial sums, a buffer keeping inputs and outputs with a 2-D fan-out right above both, and a
backing store; capacities in bits of 8-bit operands and 16-bit partial sums) against the independent brute force
(``brute_force.all_mappings``): every ancestor node and tile bound of every mapping at most its cost for every
objective, the certified optimum the brute force's; the terms bind on these cases (without them some bound is lower,
never higher), and each inflated by 3% puts some bound above a mapping's cost. B17's count equals a literal
enumeration's least over the strides, and on the lanes' cases of ``test_optimal_lane_bounds`` (windowed layers, strided
ones among them, under a fan-out open at the root) its increase over the sumset count inflated by 3% is caught.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal import bounds as lane_bounds
from dnnmap.search.optimal.bounds import LowerBound, _open_stride_words, _sumset_words
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_bounds import ancestors
from test_optimal_placement import assert_bounds_below
import test_optimal_lane_bounds


def two_register_arch(rng: np.random.Generator, i: int) -> ArchSpec:
    """``tpu_like``'s shape: weights in a register file, output partial sums in the one above it (1-3 words), the
    buffer (inputs, outputs, maybe read-modify-write) with a 2-D fan-out above both, and DRAM with a bandwidth in
    words per cycle or a transfer model."""
    levels = [{"name": "RFw", "capacity": 8 * int(rng.integers(2, 10)), "capacity_unit": "bits", "keeps": ["weight"],
               "read_energy": float(rng.integers(1, 3)) / 10, "write_energy": 0.1},
              {"name": "RFo", "capacity": 16 * int(rng.integers(1, 4)), "capacity_unit": "bits", "keeps": ["output"],
               "read_energy": float(rng.integers(1, 3)) / 40, "write_energy": 0.02},
              {"name": "Buf", "capacity": 8 * int(rng.integers(24, 80)), "capacity_unit": "bits",
               "keeps": ["input", "output"], "read_energy": float(rng.integers(1, 4)),
               "write_energy": float(rng.integers(1, 4)), "read_modify_write": bool(rng.random() < 0.4),
               "halo_reuse": [True, False, "innermost"][int(rng.integers(0, 3))],
               "fanout": {"shape": [int(rng.integers(2, 4)), int(rng.integers(2, 4))],
                          "multicast": bool(rng.random() < 0.8), "reduction": bool(rng.random() < 0.8),
                          "hop_energy": float(rng.integers(0, 2)) / 10}}]
    return parse_arch(test_optimal_lane_bounds.with_dram(rng, levels, f"regs{i}", 90.0, [0.25, 1.0, 4.0], 0.6))


def small_layer(rng: np.random.Generator, i: int) -> Operator:
    """A convolution over two or three input channels (strided or not), or a matmul: a reduction loop that can keep
    the output's register and a loop that can keep the weights' compete for the innermost place."""
    if rng.random() < 0.7:
        return ops.conv2d(f"c{i}", int(rng.integers(2, 4)), int(rng.integers(1, 3)), (int(rng.integers(2, 5)), 1),
                          (int(rng.integers(1, 3)), 1), stride=int(rng.integers(1, 3)))
    return ops.matmul(f"m{i}", int(rng.integers(2, 4)), int(rng.integers(1, 3)), int(rng.integers(2, 5)))


def cases(n: int, seed: int) -> list[tuple[ArchSpec, Operator]]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = two_register_arch(rng, len(out)), small_layer(rng, len(out))
        if 50 <= len(all_mappings(op, arch)) <= 6_000:
            out.append((arch, op))
    return out


CASES = cases(14, seed=61)


def space(op: Operator, arch: ArchSpec) -> tuple[CostModel, MappingBatch, np.ndarray]:
    model = CostModel(op, arch)
    batch = MappingBatch.from_mappings(op, arch, all_mappings(op, arch))
    return model, batch, model.evaluate(batch)


@pytest.mark.parametrize("arch,op", CASES, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(CASES)])
def test_drain_bounds_never_exceed_any_completion_and_optimum_is_brute_force(arch: ArchSpec, op: Operator) -> None:
    model, batch, cost = space(op, arch)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        ok = np.isfinite(truth)
        if not ok.any():
            continue
        assert_bounds_below(BranchAndBound(op, arch, objective, model), batch, truth, ok, ancestors)
        found = optimal_search(op, arch, objective, incumbent=None)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)


def ancestor_bounds(objective: str = "energy") -> list[np.ndarray]:
    """Per case, the bounds of every mapping's ancestors at every stage and every tile bound, concatenated."""
    out = []
    for arch, op in CASES:
        model, batch, _ = space(op, arch)
        bb = BranchAndBound(op, arch, objective, model)
        parts = []
        for stage, (kind, j) in enumerate(bb.stages[:-1]):
            parts.append(bb._bound(ancestors(batch, kind, j), stage))
            if kind == "F" and 1 <= j < bb.L - 1:
                tiles = batch.temporal[:, :j].prod(axis=1) * batch.spatial[:, :j].prod(axis=1)
                parts.append(bb.tile_bound(ancestors(batch, "O", j + 1), tiles, j))
        out.append(np.concatenate(parts))
    return out


def violations(objective: str = "energy") -> int:
    """Cases of :data:`CASES` where an ancestor node's bound or a tile bound exceeds its mapping's cost."""
    bad = 0
    for arch, op in CASES:
        model, batch, cost = space(op, arch)
        truth = cost.objective(objective)
        bb = BranchAndBound(op, arch, objective, model)
        try:
            assert_bounds_below(bb, batch, truth, np.isfinite(truth), ancestors)
        except AssertionError:
            bad += 1
    return bad


def test_both_terms_bind_on_these_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without B15 or without B16 some ancestor's bound is lower, and none is higher: the cases exercise both."""
    with_terms = ancestor_bounds()
    for name, off in (("_coupled_refills", lambda self, innermost, temporal, *a: np.zeros(temporal.shape[0])),
                      ("_drained_pair", lambda self, words, *a: np.zeros(len(words)))):
        with monkeypatch.context() as patch:
            patch.setattr(LowerBound, name, off)
            without = ancestor_bounds()
        assert all((w <= b * (1 + 1e-12)).all() for w, b in zip(without, with_terms)), name
        assert any((w < b * (1 - 1e-6)).any() for w, b in zip(without, with_terms)), name


def test_inflated_drained_pair_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: B16's pair energy x 1.03 puts some bound above a mapping's cost."""
    assert violations() == 0
    real = LowerBound._drained_pair
    monkeypatch.setattr(LowerBound, "_drained_pair", lambda self, *a: 1.03 * real(self, *a))
    assert violations() > 0


def test_inflated_coupled_refills_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: B15's term x 1.03 puts some bound above a mapping's cost."""
    real = LowerBound._coupled_refills
    monkeypatch.setattr(LowerBound, "_coupled_refills", lambda self, *a: 1.03 * real(self, *a))
    assert violations() > 0


def test_open_stride_count_is_the_least_enumerated() -> None:
    """``_open_stride_words`` is the least, over the strides ``L1``, ``L2`` dividing ``limits / box``, of the values
    ``c1 L1 x + c2 L2 y`` take (``x < a``, ``y < b``): enumerated literally."""
    for stride, a, b, m1, m2 in itertools.product((1, 2, 3), range(1, 5), range(1, 4), (1, 2, 3, 4, 6), (1, 2, 3)):
        op = ops.conv2d("w", 1, 1, (48, 1), (9, 1), stride=stride)  # axis H = stride P + R
        t, i1, c1, i2, c2 = test_optimal_lane_bounds.window_axis(op)
        box = np.ones((1, len(op.dim_names)), dtype=np.int64)
        limits = np.ones_like(box)
        box[0, i1], box[0, i2], limits[0, i1], limits[0, i2] = a, b, a * m1, b * m2
        least = min(len({c1 * l1 * x + c2 * l2 * y for x in range(a) for y in range(b)})
                    for l1 in range(1, m1 + 1) if m1 % l1 == 0 for l2 in range(1, m2 + 1) if m2 % l2 == 0)
        assert _open_stride_words(op, box, limits)[0, t] == least
        assert _sumset_words(op, box)[0, t] <= least


def test_inflated_open_stride_count_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: B17's count x 1.03 where it exceeds the sumset count puts some lanes' case's bound above a mapping's
    cost (energy or EDP)."""
    real = lane_bounds._open_stride_words

    def inflated(op: Operator, box: np.ndarray, limits: np.ndarray) -> np.ndarray:
        out = real(op, box, limits)
        return np.where(out > _sumset_words(op, box) * (1 + 1e-12), 1.03 * out, out)

    monkeypatch.setattr(lane_bounds, "_open_stride_words", inflated)
    assert test_optimal_lane_bounds.violations() + test_optimal_lane_bounds.violations("edp") > 0
