"""Issue 25, second part: inputs that load but mean something impossible, over generated cases. A mapping that
does not fit (``show`` says so first, ``verify`` fails it), Timeloop files whose fields are wrong in kind or range,
``--input-shape`` values a model cannot take, names that are both a preset and a folder, and the outputs of
``generate-hw`` and ``compile``."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml

from dnnmap.arch.spec import load_arch
from dnnmap.mapping.io import load_mapping_file
from dnnmap.sim import sim_metrics, verify
from dnnmap.mapping.io import mapping_from_dict
from fuzz_cases import Bases, make_bases, run_case


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    return make_bases(tmp_path_factory.mktemp("issue25b"))


# ---- 1. show and verify on a mapping that does not fit ----------------------------------------------------------
def _move_factors(doc: dict, rng: random.Random) -> dict:
    """``doc`` (a mapping file) with a few temporal factors moved from the outer levels to the inner ones, so
    tiles grow and often overfill a level."""
    doc = copy.deepcopy(doc)
    levels = doc["levels"]
    names = list(levels)
    for _ in range(rng.randrange(1, 4)):
        src = rng.choice(names[1:])
        temporal = levels[src].get("temporal") or {}
        if not temporal:
            continue
        dim = rng.choice(sorted(temporal))
        dst = rng.choice(names[:names.index(src)])
        target = levels[dst].setdefault("temporal", {})
        target[dim] = target.get(dim, 1) * temporal.pop(dim)
        levels[dst]["order"] = sorted(target)
        levels[src]["order"] = sorted(temporal)
    return doc


def _independent_excess(path: Path) -> dict[str, float]:
    """Per level, words over capacity of the simulator's literal tiles (not the analytical model's)."""
    _, op, raw = load_mapping_file(path)
    arch = load_arch(raw["arch"])
    mapping = mapping_from_dict(raw, [lv.name for lv in arch.levels], str(path), op)
    report = verify(op, arch, mapping)
    return sim_metrics(report.result, op, arch, mapping).capacity_excess


def test_mappings_that_do_not_fit(b: Bases, tmp_path: Path) -> None:
    rng = random.Random(251)
    seen = {True: 0, False: 0}
    for i in range(12):
        path = tmp_path / f"m{i}.yaml"
        path.write_text(yaml.safe_dump(_move_factors(b.mapping, rng), sort_keys=False))
        shown = run_case("show", ["show", str(path)], tmp_path)
        assert shown.problem is None and shown.exit_code == 0, f"{path}: {shown.problem} {shown.message}"
        over = {level: words for level, words in _independent_excess(path).items() if words > 0}
        seen[bool(over)] += 1
        verified = run_case("verify", ["verify", str(path)], tmp_path, allowed=(0, 1))
        assert verified.problem is None, f"{path}: {verified.problem}"
        if over:
            for o in (shown, verified):
                assert o.message.startswith("DOES NOT FIT: layer 'conv1'"), o.message
                assert any(f"level {level}:" in o.message for level in over), (over, o.message)
                assert "capacity" in o.message and "words" in o.message, o.message
            assert verified.exit_code == 1
        else:
            assert "DOES NOT FIT" not in shown.message and verified.exit_code == 0, verified.message
    assert seen[True] and seen[False], seen  # both outcomes generated
