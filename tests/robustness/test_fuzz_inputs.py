"""Seeded fuzzing of every file kind and option within a fixed budget (~1 minute; the larger run is
``python benchmarks/fuzz_inputs.py``): no traceback, hang, NumPy warning, partial output or silently
coerced value, and every accepted mapping file legal by an independent check (see fuzz_cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz_cases import KINDS, Bases, fuzz, make_bases

CASES_PER_KIND = 30
CASES = {**dict.fromkeys(KINDS, CASES_PER_KIND), "sweep-store": 20, "hw-options": 20,
         "run-json": 20, "workload-spec": 20}  # ~0.4 s per case


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return make_bases(tmp_path_factory.mktemp("fuzz"))


@pytest.mark.parametrize("kind", list(KINDS))
def test_fuzz_kind(bases: Bases, kind: str) -> None:
    tally = fuzz(bases, {kind: CASES[kind]}, seed=0)
    assert tally.tried[kind] == CASES[kind]
    report = [f"{' '.join(o.args)} -> {o.problem} ({o.message[:120]})" for o in tally.problems]
    assert not report, "\n".join(report)
    assert tally.slowest_rejection < 5.0  # refusals come at once (< 1 s on an idle machine)
    if kind not in ("options", "hw-options"):  # the mutations must reach both outcomes, or the fuzzer tests nothing
        assert tally.codes[(kind, 2)] > 0
        assert tally.codes[(kind, 0)] + tally.codes[(kind, 1)] > 0


def test_fuzz_self_check(bases: Bases, tmp_path: Path) -> None:
    """The oracles can fail: a coerced value and an illegal mapping are reported."""
    from fuzz_cases import coercion

    assert coercion({"word_bits": True}, {"word_bits": 1}) is not None
    assert coercion({"f": 2.5}, {"f": 2}) is not None
    assert coercion({"f": "2"}, {"f": 2}) is not None
    assert coercion({"keeps": ["input"]}, {"keeps": ("input",)}) is None
