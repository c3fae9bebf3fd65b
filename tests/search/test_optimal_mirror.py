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
from dnnmap.search.optimal.mirror import _hashes, _images_equal, mirror_dims, mirror_keep
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


def _rows(nodes: Nodes, s: np.ndarray | None, decided: np.ndarray) -> np.ndarray:
    """The NumPy form of the rows :func:`.mirror._images_equal` compares (each node, ``s``: its mirror image, as one
    row: the factors, axes and placements of every level and, on the ``decided`` levels, the order of the non-trivial
    loops, -1 past them)."""
    t, sp, ax, order = nodes.temporal, nodes.spatial, nodes.axes, nodes.order[:, decided]
    live = np.take_along_axis(t[:, decided], order, axis=2) > 1
    first = np.argsort(~live, axis=2, kind="stable")
    loops = np.where(np.take_along_axis(live, first, axis=2), np.take_along_axis(order, first, axis=2), -1)
    if s is not None:
        t, sp, ax = t[:, :, s], sp[:, :, s], ax[:, :, s]
        loops = np.where(loops >= 0, s[np.maximum(loops, 0)], -1)
    parts = [t, sp, ax, loops] + ([] if nodes.above is None else [nodes.above])
    return np.concatenate([p.reshape(len(t), -1).astype(np.int64) for p in parts], axis=1)


@pytest.mark.parametrize("seed", range(6))
def test_compiled_image_check_matches_the_rows(seed: int) -> None:
    """:func:`.mirror._images_equal` (compiled) says what comparing the NumPy rows says, on random nodes and pairs: a
    node against its exact image, against images with one entry changed (a factor, an axis, a placement, the order of
    a decided or an undecided level), and against unrelated nodes."""
    rng = np.random.default_rng(seed)
    n, L, D, T = 300, 3, 8, 3
    s = np.array([0, 1, 2, 3, 5, 4, 7, 6])
    t = rng.integers(1, 3, (n, L, D))
    nodes = Nodes(t, rng.integers(1, 3, (n, L, D)), rng.integers(0, 2, (n, L, D)),
                  np.array([[rng.permutation(D) for _ in range(L)] for _ in range(n)]),
                  rng.integers(0, 2, (n, L, T)) if seed % 2 else None)
    images = Nodes(t[:, :, s], nodes.spatial[:, :, s], nodes.axes[:, :, s], s[nodes.order],
                   None if nodes.above is None else nodes.above.copy())
    for k in range(n):  # a change in one of a third of them
        what = k % 9
        if what == 0:
            images.temporal[k, rng.integers(L), rng.integers(D)] += 1
        elif what == 1:
            images.axes[k, rng.integers(L), rng.integers(D)] ^= 1
        elif what == 2:
            images.order[k, rng.integers(L)] = rng.permutation(D)
        elif what == 3 and images.above is not None:
            images.above[k, rng.integers(L), rng.integers(T)] += 1
    both = Nodes.concat([nodes, images])
    decided = np.array([False, True, True])
    own = np.concatenate([np.arange(n), rng.integers(0, 2 * n, n)])
    mirrored = np.concatenate([np.arange(n, 2 * n), rng.integers(0, 2 * n, n)])
    arrays = [both.temporal, both.spatial, both.axes, both.order,
              both.above if both.above is not None else np.zeros((2 * n, L, 0), dtype=np.int64)]
    got = _images_equal(*(np.ascontiguousarray(a, dtype=np.int64) for a in arrays), s, decided, own, mirrored)
    want = (_rows(both.take(own), None, decided) == _rows(both.take(mirrored), s, decided)).all(axis=1)
    assert np.array_equal(got, want) and 0 < got.sum() < len(got)


def _hashes_numpy(nodes: Nodes, s: np.ndarray, decided: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The NumPy form of :func:`.mirror._hashes` (its compiled pass, :func:`.mirror._hash_rows`)."""
    n, L, D = nodes.temporal.shape
    rng = np.random.default_rng(0)
    own, image = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for part in (nodes.temporal, nodes.spatial, nodes.axes):
        w = rng.integers(1, 2**62, (L, D))
        own += part.reshape(n, -1) @ w.reshape(-1)
        image += part.reshape(n, -1) @ w[:, s].reshape(-1)
    if nodes.above is not None:
        above = nodes.above.reshape(n, -1) @ rng.integers(1, 2**62, nodes.above[0].size)
        own, image = own + above, image + above
    order = nodes.order[:, decided]
    live = np.take_along_axis(nodes.temporal[:, decided], order, axis=2) > 1
    rank = np.cumsum(live, axis=2) - 1
    table = rng.integers(1, 2**62, (len(order[0]), D, D))
    level = np.arange(len(order[0]))[None, :, None]
    own += np.where(live, table[level, rank, order], 0).sum(axis=(1, 2))
    image += np.where(live, table[level, rank, s[order]], 0).sum(axis=(1, 2))
    return own, image


@pytest.mark.parametrize("seed", range(4))
def test_compiled_hashes_match_numpy(seed: int) -> None:
    """:func:`.mirror._hashes` (compiled) gives the NumPy form's hashes, bit for bit (wrapping int64 sums), with and
    without placements."""
    rng = np.random.default_rng(seed)
    n, L, D, T = 500, 3, 8, 3
    s = np.array([0, 1, 2, 3, 5, 4, 7, 6])
    nodes = Nodes(rng.integers(1, 9, (n, L, D)), rng.integers(1, 5, (n, L, D)), rng.integers(0, 2, (n, L, D)),
                  np.array([[rng.permutation(D) for _ in range(L)] for _ in range(n)]),
                  rng.integers(0, 3, (n, L, T)) if seed % 2 else None)
    decided = np.array([False, True, True]) if seed < 2 else np.ones(L, dtype=bool)
    above = nodes.above if nodes.above is not None else np.zeros((n, L, 0), dtype=np.int64)
    arrays = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (nodes.temporal, nodes.spatial, nodes.axes,
                                                                     nodes.order, above))
    got, want = _hashes(arrays, s, decided), _hashes_numpy(nodes, s, decided)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
