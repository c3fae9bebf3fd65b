"""The branch-and-bound mapper returns the exhaustive optimum with a sound certificate."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.mappers import exhaustive_search
from dnnmap.search.optimal import optimal_search
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_oracle import ARCHS


def random_layers(n: int, seed: int) -> list[Operator]:
    """Small convolutions and matmuls with random bounds and strides (exhaustive mapper tractable)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.5:
            k, c = (int(x) for x in rng.choice([1, 2, 3, 4], size=2))
            hw = int(rng.choice([3, 4, 5]))
            kern = int(rng.choice([1, 2, 3]))
            out.append(ops.conv2d(f"c{i}", c, k, (hw, 1), (kern, 1), stride=int(rng.choice([1, 2]))))
        else:
            m, k, nn = (int(x) for x in rng.choice([1, 2, 3, 4, 6], size=3))
            out.append(ops.matmul(f"m{i}", m, k, nn))
    return out


CASES = [(a, op) for i, a in enumerate(ARCHS) for op in random_layers(3, seed=i)]


@pytest.mark.parametrize("arch_name,op", CASES, ids=[f"{a}-{op.name}-{op.dims}" for a, op in CASES])
def test_optimal_agrees_with_exhaustive(arch_name: str, op: Operator) -> None:
    arch = ARCHS[arch_name]
    for objective in OBJECTIVES:
        best = exhaustive_search(op, arch, objective).cost.objective(objective)[0]
        found = optimal_search(op, arch, objective)
        assert found.certificate.proven and found.certificate.gap == 0
        assert found.result.cost.objective(objective)[0] == pytest.approx(best, rel=1e-9)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_certificate_bound_is_admissible_when_the_budget_runs_out(objective: str) -> None:
    op = ops.conv2d("c", 2, 4, (4, 4), (3, 1))
    arch = ARCHS["three_level_1d"]
    best = exhaustive_search(op, arch, objective).cost.objective(objective)[0]
    cert = optimal_search(op, arch, objective, budget_seconds=0.0).certificate
    assert cert.lower_bound <= best * (1 + 1e-9) <= cert.incumbent * (1 + 2e-9)
    assert cert.gap >= 0
