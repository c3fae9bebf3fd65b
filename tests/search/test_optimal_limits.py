"""The optimal mapper's limits in the wide space (per-tensor placement and both-axis unrolling): the budget is
honoured, memory stays bounded however many children a node has, and nothing fitting raises (docs/search.md "The
optimal mapper with placement", "Memory and the budget").

The large layer runs in a child process so that its peak resident memory is its own (``VmHWM`` of its address
space: ``ru_maxrss`` would carry over the test runner's own peak through fork and exec); an address space limit
there makes a regression fail with ``MemoryError`` instead of taking the machine down. Before the
children were made in chunks this layer allocated millions of nodes at once (over 8 GB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dnnmap.arch.spec import parse_arch
from dnnmap.cost.model import CostModel
from dnnmap.errors import MappingError
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops

from test_optimal_placement import _wide, cases, placed_space

BUDGET = 8.0  # seconds given to the search (its start, Sunstone in the same wide space, takes about 3.5 s of them)
SLACK = 2.0  # seconds past the budget allowed: one bounding step (about 0.1 s of CPU) on a shared, loaded machine
PEAK_GB = 2.0  # peak resident memory of the child: the interpreter and the numba kernel plus bounded chunks
GUARD_GB = 6  # the child's address space limit

CHILD = f"""
import json, resource, time
resource.setrlimit(resource.RLIMIT_AS, ({GUARD_GB} << 30, {GUARD_GB} << 30))
from dnnmap.arch.spec import load_arch
from dnnmap.cost.model import CostModel
from dnnmap.cost.batch import MappingBatch
from dnnmap.workload import zoo
from dnnmap.search.optimal import optimal_search
arch = load_arch("eyeriss")
op = next(layer.op for layer in zoo.get("resnet18").layers if layer.name == "layer2.0.conv2")
CostModel(op, arch)  # the kernel's first load belongs to no search
t0 = time.perf_counter()
found = optimal_search(op, arch, "energy", budget_seconds={BUDGET}, placement=True, both_axes=["GLB"])
wall = time.perf_counter() - t0
c = found.certificate
priced = float(CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [found.result.mapping])).energy[0])
hwm_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps(dict(wall=wall, seconds=c.seconds, lower=c.lower_bound, incumbent=c.incumbent, gap=c.gap,
                      proven=c.proven, priced=priced, peak_gb=hwm_kb / 2**20)))
"""


def test_large_wide_layer_keeps_budget_memory_and_a_sound_certificate() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH")] if p))
    ran = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert got["wall"] <= BUDGET + SLACK, got
    assert got["peak_gb"] <= PEAK_GB, got
    assert 0 < got["lower"] <= got["incumbent"] * (1 + 1e-9), got
    assert got["priced"] == pytest.approx(got["incumbent"], rel=1e-9)  # the incumbent is the returned mapping's value
    if not got["proven"]:
        assert got["gap"] == pytest.approx(got["incumbent"] / got["lower"] - 1, rel=1e-9)


# a global buffer of one word that must hold an input and an output word: no mapping fits, with or without placement
TINY = parse_arch({"name": "tiny", "clock_mhz": 200, "levels": [
    {"name": "RF", "capacity": {"input": 2, "weight": 16, "output": 4}, "read_energy": 1, "write_energy": 1},
    {"name": "GLB", "capacity": 1, "read_energy": 6, "write_energy": 6, "keeps": ["input", "output"],
     "fanout": {"shape": [2, 2], "hop_energy": 0}},
    {"name": "DRAM", "read_energy": 200, "write_energy": 200}]})


@pytest.mark.parametrize("space", [{}, {"placement": True}, {"placement": True, "both_axes": ["GLB"]}],
                         ids=["shared", "placement", "placement-both-axes"])
def test_nothing_fits_raises(space: dict) -> None:
    with pytest.raises(MappingError, match="no mapping fits"):
        optimal_search(ops.pointwise("pw", 8, 4, (2, 1)), TINY, "energy", **space)


def test_root_bound_holds_in_the_widened_exact_space() -> None:
    """The root's bound over every mapping (``padded_root``, which an exact search's unbounded root children inherit
    since session 15) is at most the least cost of the placed space, with and without both-axis unrolling, on random
    small layers and architectures and every objective (against the independent brute force), and not trivially low."""
    ratios = []
    for arch, op in cases(12, 7):
        for both in (False, True) if _wide(arch, True) else (False,):
            model = CostModel(op, arch)
            truth = model.evaluate(placed_space(op, arch, both=both))
            for objective in ("energy", "edp", "latency", "dram"):
                bb = BranchAndBound(op, arch, objective, model, placement=True, both_axes=_wide(arch, both))
                bb.run(0.0)  # prices the root (the deadline passed: no child bounded), as the search starts
                lower = bb.bound.padded_root(bb.root_cost, objective, bb.bound.bounds)
                least = truth.objective(objective)[np.isfinite(truth.objective(objective))].min()
                assert lower <= least * (1 + 1e-9), (arch.name, op.name, objective, both)
                ratios.append(lower / least)
    assert np.median(ratios) > 0.5
