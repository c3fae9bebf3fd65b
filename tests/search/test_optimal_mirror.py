"""B42: one of each pair of mirror-image nodes (docs/search.md, "B42: mirror-image nodes")."""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.mirror import mirror_dims, mirror_keep
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings
from test_optimal_bounds import random_arch
from test_optimal_placement import placed_space
from test_placement_space import placements


def square_cases(n: int, seed: int) -> list[tuple[ArchSpec, Operator]]:
    """Small square convolutions (and one square pooling) on random architectures, brute-force sized."""
    rng = np.random.default_rng(seed)
    out: list[tuple[ArchSpec, Operator]] = []
    while len(out) < n:
        arch = random_arch(rng, len(out))
        if rng.random() < 0.2:
            op = ops.pool(f"p{len(out)}", 1, (3, 3), (2, 2), stride=1)
        else:
            op = ops.conv2d(f"c{len(out)}", 1, int(rng.integers(1, 3)), (3, 3), (2, 2), stride=1)
        mappings = all_mappings(op, arch)
        if len(mappings) <= 3_000 and sum(len(placements(m, op, arch)) for m in mappings) <= 40_000:
            out.append((arch, op))
    return out


CASES = square_cases(4, seed=42)


def image(batch: MappingBatch, s: np.ndarray) -> MappingBatch:
    """Every mapping of ``batch`` relabeled by the mirror ``s`` (factors, axes and loop orders)."""
    return MappingBatch(batch.temporal[:, :, s], batch.spatial[:, :, s], s[batch.order], batch.keeps, batch.layouts,
                        batch.axes[:, :, s], batch.above)


def test_the_mirror_of_square_layers_only() -> None:
    arch = load_arch("eyeriss")
    conv = ops.conv2d("c", 64, 64, (56, 56), (3, 3), padding=1)
    s = mirror_dims(conv, arch)
    names = conv.dim_names
    assert s is not None and {(names[d], names[s[d]]) for d in range(len(names)) if s[d] != d} >= {("P", "Q"), ("R", "S")}
    assert mirror_dims(ops.conv2d("c", 64, 64, (56, 28), (3, 3)), arch) is None
    assert mirror_dims(ops.conv2d("c", 64, 64, (56, 56), (3, 1)), arch) is None
    assert mirror_dims(ops.conv2d("c", 64, 64, (56, 56), (3, 3), stride=(1, 2)), arch) is None
    assert mirror_dims(ops.matmul("m", 8, 8, 8), arch) is None


@pytest.mark.parametrize("arch,op", [pytest.param(a, op, id=f"{a.name}-{op.name}-{k}") for k, (a, op) in enumerate(CASES)])
def test_a_mapping_and_its_mirror_image_cost_the_same(arch: ArchSpec, op: Operator) -> None:
    s = mirror_dims(op, arch)
    assert s is not None
    model = CostModel(op, arch)
    for both in (False, True):
        batch = placed_space(op, arch, both=both)
        own, mirrored = model.evaluate(batch), model.evaluate(image(batch, s))
        for objective in OBJECTIVES:
            assert np.array_equal(own.objective(objective), mirrored.objective(objective))
        assert np.array_equal(own.capacity_excess, mirrored.capacity_excess)


@pytest.mark.parametrize("arch,op", [pytest.param(a, op, id=f"{a.name}-{op.name}-{k}") for k, (a, op) in enumerate(CASES)])
def test_the_search_with_mirrors_proves_the_brute_force_optimum(arch: ArchSpec, op: Operator) -> None:
    model = CostModel(op, arch)
    wide = [lv.name for lv in arch.levels if lv.fanout is not None and len(lv.fanout.shape) == 2]
    cost = model.evaluate(placed_space(op, arch, both=bool(wide)))
    for objective in OBJECTIVES:
        truth = cost.objective(objective)
        if not np.isfinite(truth).any():
            continue
        found = optimal_search(op, arch, objective, placement=True, both_axes=wide)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)
    plain = model.evaluate(placed_space(op, arch, placement=False))  # the default space (level 0's order not searched)
    for objective in OBJECTIVES:
        truth = plain.objective(objective)
        if np.isfinite(truth).any():
            found = optimal_search(op, arch, objective)
            assert found.certificate.proven
            assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)


def root_children(op: Operator, arch: ArchSpec, mirror: bool) -> int:
    """How many children of the root the walk bounds (with or without B42)."""
    bb = BranchAndBound(op, arch, "energy", CostModel(op, arch), placement=True)
    if not mirror:
        bb.mirror = None
    D, L = bb.D, bb.L
    t = np.ones((1, L, D), dtype=np.int64)
    t[0, 0] = [op.bound(d) for d in op.dim_names]
    root = Nodes(t, np.ones_like(t), np.zeros_like(t), np.tile(np.arange(D), (1, L, 1)),
                 np.zeros((1, L, len(op.tensors)), dtype=np.int64))
    before = bb.nodes
    for _ in bb._survivors(root, 0, np.array([0.0])):
        pass
    return bb.nodes - before


def test_the_rule_drops_mirror_images_among_the_root_children() -> None:
    arch = load_arch("eyeriss")
    op = ops.conv2d("c", 8, 8, (16, 16), (3, 3), padding=1)
    assert root_children(op, arch, mirror=True) < root_children(op, arch, mirror=False)


def test_one_of_each_pair_of_mirror_images_is_kept() -> None:
    rng = np.random.default_rng(3)
    n, L, D = 400, 3, 8
    s = np.array([0, 1, 2, 3, 5, 4, 7, 6])
    t = rng.integers(1, 4, (n, L, D))
    t[:, :, 4] += 4  # P's factors differ from Q's: no node is its own image
    nodes = Nodes(t, rng.integers(1, 3, (n, L, D)), rng.integers(0, 2, (n, L, D)),
                  np.array([[rng.permutation(D) for _ in range(L)] for _ in range(n)]), rng.integers(0, 3, (n, L, 3)))
    images = Nodes(t[:, :, s], nodes.spatial[:, :, s], nodes.axes[:, :, s], s[nodes.order], nodes.above.copy())
    decided = np.array([False, True, True])
    images.order[:, 0] = rng.permutation(D)  # an order not chosen yet: any placeholder
    keep = mirror_keep(Nodes.concat([nodes, images]), s, decided)
    assert len(keep) == n and np.array_equal(np.sort(keep % n), np.arange(n))
    assert len(mirror_keep(nodes, s, decided)) == n  # no image among them: all kept
