"""The padded space's top-level pass (docs/search.md "The optimal mapper over the padded space", "The top-level pass
one extent at a time"): the top level's tiles built one padded extent at a time
(:meth:`PaddedSplits.top_tiles`) are the tiles of :meth:`PaddedSplits.tiles`, in the same order; an extent is
skipped when the padded root bound built for it is above the incumbent (:meth:`BranchAndBound._extent_above`),
which must hold for every mapping whose extents are at least it; the search with the skip proves the same optimum
as without it, bounding fewer nodes.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.space import padded_cap
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_optimal_imperfect import CASES, _ids, padded_space


def _root(bb: BranchAndBound) -> Nodes:
    """The search's root node (every iteration in level 0's temporal slot)."""
    L, D = bb.L, bb.D
    root = Nodes(np.ones((1, L, D), dtype=np.int64), np.ones((1, L, D), dtype=np.int64),
                 np.zeros((1, L, D), dtype=np.int64), np.tile(np.arange(D), (1, L, 1)))
    root.temporal[0, 0] = [bb.op.bound(d) for d in bb.op.dim_names]
    return root


EYERISS_LAYER = ops.conv2d("c", 13, 29, (9, 9), (3, 3), stride=1)  # 24 padded extents at the top, about half skipped
TOP_CASES = [c for c in CASES if not c[0].levels[-1].fanout] + [
    (load_arch("eyeriss"), EYERISS_LAYER, 0.15), (load_arch("eyeriss"), ops.matmul("mm", 31, 37, 23), 0.15)]


def test_top_tiles_by_extent_are_the_tiles_in_order() -> None:
    """On every case whose top level has no fan-out: every extent's tiles together are :meth:`PaddedSplits.tiles`
    at the top (fit test on), in its order; each tile's child runs the extent it is listed under; skipping an
    extent leaves out exactly its tiles; some case has several extents."""
    several = 0
    for arch, op, waste in TOP_CASES:
        bb = BranchAndBound(op, arch, "energy", CostModel(op, arch), waste=waste)
        root, top = _root(bb), bb.L - 1
        whole = bb.padded.tiles(root, 0, top, bb.fit)
        parts = list(bb.padded.top_tiles(root, 0, bb.fit, lambda extent: False))
        assert np.array_equal(np.concatenate([t for _, t in parts]), whole), (arch.name, op.name)
        for extent, tiles in parts:
            own, spatial, _, _ = bb.padded.splits(root, 0, top, tiles)
            assert (own * tiles * spatial == extent).all()
        dropped = parts[len(parts) // 2][0]
        kept = list(bb.padded.top_tiles(root, 0, bb.fit, lambda extent: bool((extent == dropped).all())))
        rest = [t for e, t in parts if not (e == dropped).all()]
        assert np.array_equal(np.concatenate([t for _, t in kept] or [whole[:0]]), np.concatenate(rest or [whole[:0]]))
        several += len(parts) > 1
    assert several >= 2


@pytest.mark.parametrize("arch,op,waste", CASES, ids=_ids(CASES))
def test_extent_bound_holds_for_every_mapping_of_larger_extents(arch: ArchSpec, op: Operator, waste: float) -> None:
    """The skip's bound: the padded root bound built for an extent ``P0`` (refills' boxes up to the padding's
    largest extents) is at most every mapping of the padded space whose extents are ``>= P0`` per dimension, for
    every extent the space reaches and every objective (the search skips every extent above a skipped one)."""
    model = CostModel(op, arch)
    batch = padded_space(op, arch, waste)
    cost = model.evaluate(batch)
    extents = batch.temporal.prod(axis=1) * batch.spatial.prod(axis=1)
    caps = np.array([padded_cap(n, waste) for _, n in op.dims])
    one = model.evaluate(batch.take([0]))
    for p0 in np.unique(extents, axis=0):
        bound = LowerBound(op, arch, model, batch.keeps, extents=tuple(int(x) for x in p0))
        larger = (extents >= p0).all(axis=1)
        for objective in OBJECTIVES:
            truth = cost.objective(objective)[larger]
            truth = truth[np.isfinite(truth)]
            if len(truth):
                assert bound.padded_root(one, objective, caps) <= truth.min() * (1 + 1e-9), (p0, objective)


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_the_skip_keeps_the_optimum_and_bounds_fewer_nodes(objective: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On an Eyeriss layer with many padded extents, the search that skips extents above the incumbent proves the
    same optimum (same objective, same mapping) as the one bounding every extent's tiles, with fewer nodes; and it
    skipped some extent."""
    op, arch = EYERISS_LAYER, load_arch("eyeriss")
    skipping = optimal_search(op, arch, objective, imperfect=0.15)
    monkeypatch.setattr(BranchAndBound, "_extent_above", lambda self, extent: False)
    every = optimal_search(op, arch, objective, imperfect=0.15)
    assert skipping.certificate.proven and every.certificate.proven
    assert skipping.certificate.incumbent == every.certificate.incumbent
    assert skipping.result.mapping == every.result.mapping
    assert skipping.certificate.nodes < every.certificate.nodes
