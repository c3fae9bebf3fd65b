"""The optimal mapper's walk hands on a factor stage's children in pieces (docs/search.md "Nodes per CPU second"):
consecutive nodes whose children all fit in the chunk being filled go in one piece, made for several nodes at once
(``expand.FactorSplits``), the others tile by tile. The pieces must only regroup the children: the same children, in
the same order, with the same inherited bounds, as handing every node on tile by tile, and the chunks the caller
closes (every ``chunk`` children) must be the same, since only a full chunk is bounded and may move the incumbent.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch
from dnnmap.cost.model import CostModel
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops


def stage_nodes(bb: BranchAndBound, stage: int) -> Nodes:
    """Every node the walk can reach at ``stage`` (nothing pruned: no incumbent), expanded from the root."""
    L, D = bb.L, bb.D
    nodes = Nodes(np.ones((1, L, D), dtype=np.int64), np.ones((1, L, D), dtype=np.int64),
                  np.zeros((1, L, D), dtype=np.int64), np.tile(np.arange(D), (1, L, 1)), None)
    nodes.temporal[0, 0] = [bb.op.bound(d) for d in bb.op.dim_names]
    for s in range(stage):
        nodes = Nodes.concat([piece for piece, _, _ in bb._children(nodes, s, np.zeros(len(nodes)))])
    return nodes


def walk(bb: BranchAndBound, nodes: Nodes, stage: int, lb: np.ndarray, merge: bool
         ) -> tuple[list[tuple[np.ndarray, ...]], list[int]]:
    """The children of ``nodes`` at ``stage`` as :meth:`BranchAndBound._survivors` receives them (``merge``: telling
    the walk the room left in the chunk, as it does), and the sizes of the chunks it would close."""
    room = [bb.chunk] if merge else None
    got, chunks, size = [], [], 0
    for piece, inherited, _ in bb._children(nodes, stage, lb, math.inf, room):
        got.append((piece.temporal, piece.spatial, piece.axes, piece.order, inherited))
        size += len(piece)
        if size >= bb.chunk:
            chunks.append(size)
            size = 0
        if room is not None:
            room[0] = bb.chunk - size
    return got, chunks + [size]


@pytest.mark.parametrize("arch_name", ["eyeriss", "tpu_like"])
def test_whole_node_pieces_only_regroup_the_children(arch_name: str) -> None:
    arch = load_arch(arch_name)
    op = ops.conv2d("c", 8, 4, (4, 4), (3, 3))
    bb = BranchAndBound(op, arch, "energy", CostModel(op, arch), chunk=200)
    stage = next(s for s, (kind, j) in enumerate(bb.stages) if kind == "F" and 1 <= j < bb.L - 1)  # tile bounds
    nodes = stage_nodes(bb, stage)
    by_left = np.argsort(nodes.temporal[:, 0].prod(axis=1), kind="stable")  # nodes with little and much left
    nodes = nodes.take(np.sort(by_left[np.linspace(0, len(nodes) - 1, 60).astype(int)]))
    lb = np.random.default_rng(0).random(len(nodes))
    merged, merged_chunks = walk(bb, nodes, stage, lb, merge=True)
    single, single_chunks = walk(bb, nodes, stage, lb, merge=False)
    assert len(merged) < len(single)  # whole nodes did go in one piece
    for field in range(5):
        assert np.array_equal(np.concatenate([p[field] for p in merged]), np.concatenate([p[field] for p in single]))
    assert merged_chunks == single_chunks
    assert sum(merged_chunks) > 2 * bb.chunk  # the chunk boundaries were exercised
