"""B3 at the MAC lanes for sliding-window tensors under a fan-out not yet fixed (docs/search.md, "The lanes'
words per step under an open fan-out").

The bound takes, for a fan-out whose factors are still open, the least distinct words per lane per step over the
fan-out's legal unrollings of what is left (``LowerBound._least_ratio``), and where the lanes' stride is known (the
fan-out's own stages, and the tile bound below it) the exact count of a two-term window axis
(``_lane_box_words``). Checked here:

* the exact count against a literal enumeration of the values;
* soundness against the independent brute force (``brute_force.all_mappings``, no code shared with the mapper): on
  random tpu-shaped architectures whose input buffer has a 2-D fan-out straight above the lanes (so at the root and
  at its tile bound the fan-out is open and the lanes read a windowed input through it), windowed layers
  (convolutions with strides, depthwise, pooling), with and without ``both_axes``, every ancestor node of every
  mapping and every tile bound is at most the mapping's cost, and the certified optimum is the brute force's;
* that these cases exercise the new terms: inflating them (the largest ratio instead of the least, collisions
  ignored in the exact count) makes some ancestor's bound exceed its mapping's cost.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import bounds as lane_bounds
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import LowerBound, _lane_box_words
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_bounds import ancestors
from test_optimal_placement import assert_bounds_below


def lane_arch(rng: np.random.Generator, i: int, registers: bool = False) -> ArchSpec:
    """A tpu-shaped architecture (capacities in bits of 8-bit operands and 16-bit partial sums): an optional
    register file below (weights, maybe outputs; ``registers``: both, as ``tpu_like``'s two register files), the
    buffer keeping the input (and output, maybe weights) with a 2-D fan-out straight above the MAC lanes, and DRAM
    with a bandwidth in words per cycle or a transfer model."""
    levels = []
    if registers or rng.random() < 0.6:
        keeps = ["weight"] + (["output"] if registers or rng.random() < 0.4 else [])
        levels.append({"name": "RF", "capacity": 8 * int(rng.integers(2, 12)), "capacity_unit": "bits",
                       "keeps": keeps, "read_energy": float(rng.integers(1, 3)), "write_energy": 1.0})
    buf_keeps = ["input", "output"] + (["weight"] if not levels or rng.random() < 0.3 else [])
    levels.append({"name": "Buf", "capacity": 8 * int(rng.integers(24, 80)), "capacity_unit": "bits",
                   "keeps": buf_keeps, "read_energy": float(rng.integers(3, 9)),
                   "write_energy": float(rng.integers(3, 9)), "read_modify_write": bool(rng.random() < 0.7),
                   "halo_reuse": [True, False, "innermost"][int(rng.integers(0, 3))],
                   "fanout": {"shape": [int(rng.integers(2, 4)), int(rng.integers(2, 4))],
                              "multicast": bool(rng.random() < 0.8), "reduction": bool(rng.random() < 0.8),
                              "hop_energy": float(rng.integers(0, 2)),
                              "multicast_rule": "union" if rng.random() < 0.7 else "identical"}})
    spec = with_dram(rng, levels, f"lanes{i}", 100.0, [0.25, 1.0, 2.0], 0.5)
    if rng.random() < 0.5:
        spec["vector"] = {"lanes": int(rng.integers(1, 4)), "energy": 0.5, "bandwidth": 2.0}
    return parse_arch(spec)


def with_dram(rng: np.random.Generator, levels: list[dict], name: str, dram_energy: float, bandwidths: list[float],
              final_bits_p: float) -> dict:
    """The spec of ``levels`` under a DRAM of ``dram_energy`` per word, its transfer a random bandwidth of
    ``bandwidths`` or a random volume model, a random overlap, 8-bit final outputs with probability ``final_bits_p``."""
    store: dict = {"name": "DRAM", "read_energy": dram_energy, "write_energy": dram_energy}
    if rng.random() < 0.6:
        store["bandwidth"] = float(rng.choice(bandwidths))
    else:
        store["transfer"] = {"model": "volume", "bandwidth_gbps": float(rng.choice([0.1, 0.8]))}
    spec = {"name": name, "clock_mhz": 100, "overlap": bool(rng.random() < 0.7), "levels": [*levels, store],
            "word_bits": {"input": 8, "weight": 8, "output": 16}}
    if rng.random() < final_bits_p:
        spec["final_output_bits"] = 8
    return spec


def window_layer(rng: np.random.Generator, i: int, conv: bool = False) -> Operator:
    """A small layer whose input has a sliding window: a (strided) convolution, a depthwise one or a pooling
    (``conv``: a convolution over two input channels, whose output word gathers copies over ``C`` and ``R``)."""
    kind = 0 if conv else int(rng.integers(0, 3))
    stride = int(rng.integers(1, 3))
    if kind == 0:
        return ops.conv2d(f"c{i}", 2 if conv else 1, int(rng.integers(1, 3)), (int(rng.integers(3, 6)), 1),
                          (int(rng.integers(2, 4)), 1), stride=stride)
    if kind == 1:
        return ops.depthwise(f"d{i}", 2, (int(rng.integers(3, 6)), 1), (int(rng.integers(2, 4)), 1), stride=stride)
    return ops.pool(f"p{i}", int(rng.integers(1, 3)), (int(rng.integers(4, 7)), 1), (int(rng.integers(2, 4)), 1),
                    stride=stride)


def cases(n: int, seed: int, both: bool, registers: bool = False) -> list[tuple[ArchSpec, Operator]]:
    """Random cases whose windowed input is read by the lanes through the buffer's fan-out, with a brute-force
    space small enough (``both``: one where some mapping splits a dimension over both axes; ``registers``: weights
    and outputs in a register file below the fan-out and convolutions over two channels, where the input's best
    unrolling and the output's most copies differ, so the joint term binds)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = lane_arch(rng, len(out), registers), window_layer(rng, len(out), registers)
        size = len(all_mappings(op, arch, both=both))
        if size > 6_000 or (both and size == len(all_mappings(op, arch))):
            continue
        out.append((arch, op))
    return out


CASES = [(a, op, False) for a, op in cases(8, seed=41, both=False)] + \
        [(a, op, True) for a, op in cases(6, seed=42, both=True)] + \
        [(a, op, b) for b in (False, True) for a, op in cases(3, seed=43 + b, both=b, registers=True)]


def fan_levels(arch: ArchSpec) -> frozenset[int]:
    return frozenset(i for i, lv in enumerate(arch.levels) if lv.fanout is not None)


def space(op: Operator, arch: ArchSpec, both: bool) -> tuple[CostModel, MappingBatch, np.ndarray]:
    model = CostModel(op, arch)
    batch = MappingBatch.from_mappings(op, arch, all_mappings(op, arch, both=both))
    return model, batch, model.evaluate(batch)


@pytest.mark.parametrize("arch,op,both", CASES,
                         ids=[f"{a.name}-{op.name}-{'both' if b else 'one'}-{k}" for k, (a, op, b) in enumerate(CASES)])
def test_lane_bound_never_exceeds_any_completion_and_optimum_is_brute_force(arch: ArchSpec, op: Operator,
                                                                            both: bool) -> None:
    model, batch, cost = space(op, arch, both)
    levels = [arch.levels[m].name for m in fan_levels(arch)] if both else []
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        ok = np.isfinite(truth)
        if not ok.any():
            continue
        bb = BranchAndBound(op, arch, objective, model, both_axes=fan_levels(arch) if both else frozenset())
        assert_bounds_below(bb, batch, truth, ok, ancestors)
        found = optimal_search(op, arch, objective, incumbent=None, both_axes=levels)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)


def violations(objective: str = "energy") -> int:
    """Cases of :data:`CASES` where an ancestor node's bound or a tile bound exceeds its mapping's cost."""
    bad = 0
    for arch, op, both in CASES:
        model, batch, cost = space(op, arch, both)
        truth = cost.objective(objective)
        ok = np.isfinite(truth)
        bb = BranchAndBound(op, arch, objective, model, both_axes=fan_levels(arch) if both else frozenset())
        try:
            assert_bounds_below(bb, batch, truth, ok, ancestors)
        except AssertionError:
            bad += 1
    return bad


def test_the_cases_open_the_fan_out_above_windowed_lane_reads() -> None:
    """In every case the windowed input's lane reads cross a fan-out that is open at the root (the new term's
    path, not the all-fixed one)."""
    for arch, op, _ in CASES:
        bound = LowerBound(op, arch, CostModel(op, arch), MappingBatch.default_keeps(op, arch))
        t = next(j for j, tensor in enumerate(op.tensors) if tensor.role == "input")
        parent = min(i for i in range(len(arch.levels)) if bound.keeps[i, t])
        assert not bound.plain[t] and any(arch.levels[m].fanout is not None for m in range(parent + 1))


def test_inflated_lane_ratio_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: the largest words per lane over the legal unrollings instead of the least is not admissible, and
    the soundness check above sees it."""
    assert violations() == 0

    def largest(self: LowerBound, t: int, unfixed: tuple[int, ...], key: tuple[int, ...],
                stepped: bool = False) -> float:
        D = self.op_dims
        fac, _ = lane_bounds.legal_table(unfixed[0] in self.both_axes)(key[D:2 * D],
                                                                      tuple(self.arch.levels[unfixed[0]].fanout.shape))
        boxes = fac * np.array(key[:D])[None, :]
        return float((lane_bounds._sumset_words(self.op, boxes)[:, t] / boxes.prod(axis=1)).max())

    monkeypatch.setattr(LowerBound, "_least_ratio", largest)
    assert violations() > 0


def test_collisions_ignored_in_the_exact_count_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: a two-term window axis counted as ``a x b`` values (no collisions) where the stride is known."""
    real = lane_bounds._lane_box_words

    def product(op: Operator, box: np.ndarray, step: np.ndarray | None) -> np.ndarray:
        out = real(op, box, None)
        if step is None:
            return out
        for j, tensor in enumerate(op.tensors):
            for axis in tensor.axes:
                if len(axis.terms) == 2:
                    a, b = (box[:, op.dim_names.index(d)] for d, _ in axis.terms)
                    out[:, j] *= a * b / (a + b - 1)
        return out

    monkeypatch.setattr(lane_bounds, "_lane_box_words", product)
    assert violations() > 0


def window_axis(op: Operator) -> tuple[int, int, int, int, int]:
    """(input tensor, dimension 1, coefficient 1, dimension 2, coefficient 2) of the input's window axis
    ``c1 d1 + c2 d2`` whose second dimension is not trivial."""
    t = next(j for j, tensor in enumerate(op.tensors) if tensor.role == "input")
    axis = next(x for x in op.tensors[t].axes if len(x.terms) == 2 and op.bound(x.terms[1][0]) > 1)
    (d1, c1), (d2, c2) = axis.terms
    return t, op.dim_names.index(d1), c1, op.dim_names.index(d2), c2


def test_exact_window_count_is_the_enumerated_one() -> None:
    """``_lane_box_words`` with a known stride gives exactly the values ``c1 (x s1) + c2 (y s2)`` take, and without
    one the sumset bound, which is never above it."""
    for stride, a, b, s1, s2, k in itertools.product((1, 2), range(1, 5), range(1, 4), range(1, 4), range(1, 4),
                                                     (1, 2, 3)):
        op = ops.conv2d("w", 1, 1, (12, 1), (3, 1), stride=stride)  # axis H = stride P + R, W = Q + S (Q, S: 1)
        t, i1, c1, i2, c2 = window_axis(op)
        box = np.ones((1, len(op.dim_names)), dtype=np.int64)
        step = np.ones_like(box)
        box[0, i1], box[0, i2], step[0, i1], step[0, i2] = a, b, s1 * k, s2
        values = {c1 * x * s1 * k + c2 * y * s2 for x in range(a) for y in range(b)}
        assert _lane_box_words(op, box, step)[0, t] == len(values)
        assert _lane_box_words(op, box, None)[0, t] <= len(values)


def test_joint_lanes_term_counted_twice_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: the joint term (one unrolling for all the lanes' pairs, ``_joint_lanes``) added twice."""
    real = LowerBound._joint_lanes

    def twice(self: LowerBound, *args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray | None]:
        extra, lanes = real(self, *args, **kwargs)
        return 2 * extra, lanes

    monkeypatch.setattr(LowerBound, "_joint_lanes", twice)
    assert violations() > 0


def test_joint_edp_with_too_few_lanes_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: EDP's joint bound pricing each Pareto unrolling's compute steps at half its lanes."""
    assert violations("edp") == 0
    real = LowerBound._joint_lanes

    def halved(self: LowerBound, *args: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray | None]:
        extra, lanes = real(self, *args, **kwargs)
        return extra, None if lanes is None else lanes / 2

    monkeypatch.setattr(LowerBound, "_joint_lanes", halved)
    assert violations("edp") > 0
