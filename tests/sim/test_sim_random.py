"""The simulator on random (operator, architecture, mapping) cases: exact outputs, invariants, cross-check."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from sim_cases import arch_of, level, mapping_of
from sim_naive import naive_counts

from dnnmap.arch.spec import ArchSpec
from dnnmap.errors import MappingError
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.sim import dram_transfers, simulate, verify
from random_cases import random_case
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator


def cases(seed: int, n: int):
    rng = np.random.default_rng(seed)
    return [random_case(rng) for _ in range(n)]


def is_imperfect(op: Operator, mapping: Mapping) -> bool:
    return any(mapping.total(d) > b for d, b in op.dims)


def used_words(op: Operator, tensor: str) -> int:
    """Distinct words of ``tensor`` touched by the operator's iteration space (np.indices, not the nest)."""
    idx = dict(zip(op.dim_names, np.indices([b for _, b in op.dims]).reshape(len(op.dims), -1)))
    coords = [sum(c * idx[d] for d, c in a.terms) for a in op.tensor(tensor).axes]
    return len(np.unique(np.ravel_multi_index(coords, op.tensor_shape(tensor))))


def test_output_is_bit_exact_on_250_random_cases() -> None:
    kinds: Counter[str] = Counter()
    imperfect = 0
    for k, (op, arch, m) in enumerate(cases(seed=11, n=250)):
        r = simulate(op, arch, m, seed=k)
        assert r.output_matches, (k, op, m)
        assert r.iterations_exact, (k, op, m)
        kinds[op.kind] += 1
        imperfect += is_imperfect(op, m)
    assert imperfect >= 25
    assert {"conv2d", "depthwise", "pointwise", "matmul", "pool_max", "pool_avg", "add", "concat",
            "einsum"} <= set(kinds)


KINDS = ("reads", "fills", "updates", "drains", "accumulate_reads")


def assert_matches_naive(op: Operator, arch: ArchSpec, m: Mapping) -> None:
    """Counts, tiles and per-instance read/write words equal the sequential re-implementation's."""
    r = simulate(op, arch, m, compute=False)
    naive = naive_counts(op, arch, m)
    got = {(lv, t, kind): getattr(c, kind) for (lv, t), c in r.counts.items() for kind in KINDS if getattr(c, kind)}
    assert got == naive.counts, (op, arch, m)
    assert {k: v for k, v in r.tile_words.items() if k[0] != arch.levels[-1].name} == naive.tile_words
    for lv in arch.levels:
        assert sorted(int(v) for v in r.instance_reads[lv.name] if v) == naive.instance_reads[lv.name]
        assert sorted(int(v) for v in r.instance_writes[lv.name] if v) == naive.instance_writes[lv.name]


def test_counts_match_a_naive_sequential_simulation() -> None:
    for op, arch, m in cases(seed=12, n=80):
        assert_matches_naive(op, arch, m)


def test_count_invariants_on_random_cases() -> None:
    for op, arch, m in cases(seed=13, n=200):
        r = simulate(op, arch, m, compute=False)
        names = [lv.name for lv in arch.levels]
        assert r.macs == op.iterations
        assert r.temporal_steps == math.prod(lm.t(d) for lm in m.levels for d in op.dim_names)
        for t in op.tensors:
            dram = r.count("DRAM", t.name)
            if t.role == "output":
                assert dram.updates >= t.size(op.bounds)
            else:
                assert dram.reads >= used_words(op, t.name)
            chain = [i for i in range(len(names)) if t.name in m.kept_tensors(i, op, arch)]
            for child, parent in zip([-1] + chain[:-1], chain):
                between = [arch.levels[k].fanout for k in range(child + 1, parent + 1)]
                spread = math.prod(m.levels[k].s(d) for k in range(child + 1, parent + 1) for d in op.dim_names)
                merge_reads = all(f is None or f.multicast for f in between) and spread > 1
                merge_updates = all(f is None or f.reduction for f in between) and spread > 1
                up = r.count(names[parent], t.name)
                if child == -1:  # MAC lanes: one word per lane-step unless merged
                    sent = r.macs
                    if t.role == "output":
                        assert up.updates == sent if not merge_updates else up.updates <= sent
                    else:
                        assert up.reads == sent if not merge_reads else up.reads <= sent
                    continue
                down = r.count(names[child], t.name)
                assert up.reads == down.fills if not merge_reads else up.reads <= down.fills
                assert up.updates == down.drains if not merge_updates else up.updates <= down.drains
                if t.role == "output":
                    # every output word enters some instance once without a reload, then drains
                    assert down.drains >= down.fills + t.size(op.bounds)
        for lv in arch.levels:  # per-instance words add up to the level totals
            mine = [c for (name, _), c in r.counts.items() if name == lv.name]
            assert r.instance_reads[lv.name].sum() == sum(c.reads + c.drains + c.accumulate_reads for c in mine)
            assert r.instance_writes[lv.name].sum() == sum(c.fills + c.updates for c in mine)
            assert len(r.instance_words(lv.name)) <= arch.instances(arch.level_index(lv.name))


def test_dram_transfers_are_exact_disjoint_boxes() -> None:
    for op, arch, m in cases(seed=14, n=120):
        r = simulate(op, arch, m, compute=False)
        transfers = dram_transfers(r)
        assert [tr.step for tr in transfers] == sorted(tr.step for tr in transfers)
        for t in op.tensors:
            mine = [tr for tr in transfers if tr.tensor == t.name]
            assert sum(tr.words for tr in mine if tr.direction == "read") == r.count("DRAM", t.name).reads
            assert sum(tr.words for tr in mine if tr.direction == "update") == r.count("DRAM", t.name).updates
            for log in (lg for lg in r.dram_log if lg.tensor == t.name):
                for tr in (x for x in mine if x.direction == log.direction):
                    expected = set(log.word[(log.step == tr.step) & (log.group == tr.group)].tolist())
                    covered = [int(np.ravel_multi_index(point, tr.shape)) for box in tr.boxes
                               for point in np.ndindex(*(hi - lo for lo, hi in box))
                               for point in [tuple(lo + p for (lo, _), p in zip(box, point))]]
                    assert len(covered) == len(set(covered)) == len(expected) and set(covered) == expected
                    assert sum(tr.runs(tuple(reversed(tr.axis_names)))) == tr.words


def test_runs_follow_the_layout() -> None:
    """A 2 x 3 box of the 4 x 3 input: one run of 6 row-major, three runs of 2 with K outermost."""
    op = ops.matmul("mm", 4, 3, 1)  # I[b, m, k] with shape (1, 4, 3)
    arch = arch_of(level("RF"), level("DRAM"))
    r = simulate(op, arch, mapping_of({"temporal": {"M": 2, "K": 3}}, {"temporal": {"M": 2}}))
    first = next(tr for tr in dram_transfers(r) if tr.tensor == "I")
    assert first.boxes == (((0, 1), (0, 2), (0, 3)),)
    assert first.runs() == [6]
    assert first.runs(("B", "K", "M")) == [2, 2, 2]


def test_random_cases_are_reproducible_and_legal() -> None:
    a, b = cases(seed=15, n=20), cases(seed=15, n=20)
    assert a == b
    assert any(len(arch.levels) == 4 for _, arch, _ in cases(seed=16, n=40))


def test_illegal_and_oversized_mappings_are_refused() -> None:
    op = ops.matmul("mm", 4, 4, 4)
    arch = arch_of(level("RF"), level("DRAM"))
    with pytest.raises(MappingError, match="less than its bound"):
        simulate(op, arch, Mapping(levels=(LevelMapping(), LevelMapping(temporal=(("M", 2),)))))
    big = ops.matmul("big", 300, 300, 300)
    with pytest.raises(ValueError, match="too large"):
        simulate(big, arch, Mapping(levels=(LevelMapping(), LevelMapping(temporal=(("M", 300), ("K", 300),
                                                                                    ("N", 300))))))


def test_verify_report_names_the_check_and_the_table() -> None:
    op, arch, m = cases(seed=17, n=1)[0]
    report = verify(op, arch, m)
    assert report.ok
    assert "bit-exact" in report.text and "DRAM" in report.text and "reads" in report.text
