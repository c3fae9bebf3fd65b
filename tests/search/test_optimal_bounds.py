"""Soundness of the optimal mapper's lower bounds against an independent brute-force enumeration.

For every mapping of the declared space (``brute_force.all_mappings``, which shares no code with
the mapper) and every stage of the branch-and-bound tree, the mapping's ancestor node at that stage
(its levels below the stage collapsed into the tile, as the search builds nodes) is bounded, and
the bound must not exceed the mapping's own cost: a bound above any completion could prune the
optimum. On random small layers and random architectures (capacities partitioned or not, bypass,
1-D and 2-D fan-outs with and without multicast and reduction, read-modify-write on and off,
halo-reuse rules, operand registers, bandwidths, overlap, final output widths) for every objective; the certified
optimum must then equal the brute-force one.
"""

from __future__ import annotations

import numpy as np
import pytest

from dnnmap.arch.spec import ArchSpec, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.expand import Nodes
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from brute_force import all_mappings

ROLES = ("input", "weight", "output")


def random_arch(rng: np.random.Generator, i: int, on_chip: int | None = None, tpu: bool = False) -> ArchSpec:
    """Two or three levels (``on_chip`` + DRAM), random capacities, bypass, fan-outs and options. ``tpu``: also the
    shape of ``tpu_like`` (capacities in bits of 8-bit operands and 16-bit partial sums, 2-D fan-outs, a backing
    store with a bandwidth in words per cycle instead of or besides a transfer model, a vector unit, MACs of
    several cycles)."""
    n_on_chip = int(rng.integers(1, 3)) if on_chip is None else on_chip
    levels = []
    for k in range(n_on_chip):
        keeps = [r for r in ROLES if rng.random() < 0.75] or ["output"]
        cap: object = int(rng.integers(4, 40))
        if rng.random() < 0.4:
            cap = {r: int(rng.integers(2, 16)) for r in keeps}
        if tpu:  # in bits: 8 per operand word, 16 per partial sum
            cap = {r: 8 * c for r, c in cap.items()} if isinstance(cap, dict) else 8 * cap
        lv: dict = {"name": f"L{k}", "capacity": cap, "keeps": keeps, "read_energy": float(rng.integers(1, 8)),
                    "write_energy": float(rng.integers(1, 8)), "read_modify_write": bool(rng.random() < 0.7),
                    "halo_reuse": [True, False, "innermost"][int(rng.integers(0, 3))]}
        if rng.random() < 0.3:
            lv["bandwidth"] = float(rng.integers(1, 4))
        if tpu:
            lv["capacity_unit"] = "bits"
        if rng.random() < 0.7:
            shape = [int(rng.integers(2, 4))] if rng.random() < 0.6 and not tpu else [2, int(rng.integers(2, 3))]
            lv["fanout"] = {"shape": shape, "multicast": bool(rng.random() < 0.7),
                            "reduction": bool(rng.random() < 0.7), "hop_energy": float(rng.integers(0, 3)),
                            "multicast_rule": "union" if rng.random() < 0.7 else "identical"}
        levels.append(lv)
    levels.append({"name": "DRAM", "read_energy": 100.0, "write_energy": 100.0,
                   "transfer": {"model": "volume", "bandwidth_gbps": float(rng.choice([0.1, 0.8]))}})
    spec = {"name": f"rand{i}", "clock_mhz": 100, "overlap": bool(rng.random() < 0.7), "levels": levels}
    if rng.random() < 0.2:
        spec["mac"] = {"operand_registers": ["weight"]}
    if rng.random() < 0.5:  # final outputs narrower than the 16-bit partial sums (docs/cost-model.md 2b)
        spec["final_output_bits"] = int(rng.choice([4, 8]))
    if tpu:
        spec["word_bits"] = {"input": 8, "weight": 8, "output": 16}
        store = levels[-1]
        if rng.random() < 0.7:  # words per cycle of the backing store, with or without the transfer model
            store["bandwidth" if rng.random() < 0.6 else "read_bandwidth"] = float(rng.choice([0.25, 1.0, 2.0]))
            if rng.random() < 0.6:
                del store["transfer"]
        if rng.random() < 0.7:
            spec["vector"] = {"lanes": int(rng.integers(1, 4)), "energy": 0.5,
                              "bandwidth": float(rng.choice([0.5, 2.0])) if rng.random() < 0.6 else None}
        if rng.random() < 0.4:
            spec.setdefault("mac", {})["cycles"] = int(rng.integers(2, 4))
    return parse_arch(spec)


def random_layer(rng: np.random.Generator, i: int, tpu: bool = False) -> Operator:
    """A small convolution, matmul or depthwise layer; ``tpu``: also element-wise adds and poolings (layers the
    vector unit runs)."""
    kind = int(rng.integers(0, 5 if tpu else 3))
    if kind == 3:
        return ops.eltwise(f"e{i}", int(rng.integers(1, 4)), (int(rng.integers(2, 5)), 1))
    if kind == 4:
        return ops.pool(f"p{i}", int(rng.integers(1, 3)), (int(rng.integers(3, 6)), 1), (2, 1), stride=1)
    if kind == 0:
        return ops.conv2d(f"c{i}", int(rng.integers(1, 3)), int(rng.integers(1, 4)), (int(rng.integers(3, 5)), 1),
                          (int(rng.integers(1, 3)), 1), stride=int(rng.integers(1, 3)))
    if kind == 1:
        return ops.matmul(f"m{i}", *(int(x) for x in rng.choice([1, 2, 3, 4], size=3)))
    return ops.depthwise(f"d{i}", 2, (int(rng.integers(3, 5)), 1), (2, 1), stride=1)


def ancestors(batch: MappingBatch, kind: str, j: int) -> Nodes:
    """Each mapping's node at stage (``kind``, ``j``): levels below ``j`` folded into level 0's slot."""
    t, s, a, o = (x.copy() for x in (batch.temporal, batch.spatial, batch.axes, batch.order))
    D = t.shape[2]
    if j > 0:  # at level 0's stages the node is the mapping itself (level 0's order open at "F")
        tile = t[:, :j].prod(axis=1) * s[:, :j].prod(axis=1)
        t[:, 1:j], s[:, :j], a[:, :j] = 1, 1, 0
        t[:, 0] = tile
        o[:, :j] = np.arange(D)
    if kind == "F":
        o[:, j] = np.arange(D)
    return Nodes(t, s, a, o)


def cases(n: int, seed: int, on_chip: int | None = None, tpu: bool = False) -> list[tuple[ArchSpec, Operator]]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = random_arch(rng, len(out), on_chip, tpu), random_layer(rng, len(out), tpu)
        if len(all_mappings(op, arch)) <= 20_000:
            out.append((arch, op))
    return out


# three levels: B9 and the tile bound apply; the tpu_like shape: the latency's backing-store and vector-unit
# terms and the lanes' multicast bound (B6, B3) bind
CASES = cases(24, seed=11) + cases(12, seed=12, on_chip=2) + cases(16, seed=13, tpu=True)


@pytest.mark.parametrize("arch,op", CASES, ids=[f"{a.name}-{op.name}-{k}" for k, (a, op) in enumerate(CASES)])
def test_bound_never_exceeds_any_completion_and_certified_optimum_is_brute_force(arch: ArchSpec,
                                                                                 op: Operator) -> None:
    model = CostModel(op, arch)
    batch = MappingBatch.from_mappings(op, arch, all_mappings(op, arch))
    cost = model.evaluate(batch)
    for objective in OBJECTIVES:
        truth = cost.objective(objective)  # inf where invalid
        if not np.isfinite(truth).any():
            with pytest.raises(Exception):
                optimal_search(op, arch, objective)
            continue
        bb = BranchAndBound(op, arch, objective, model)
        for stage, (kind, j) in enumerate(bb.stages[:-1]):
            lb = bb._bound(ancestors(batch, kind, j), stage)
            ok = np.isfinite(truth)
            bad = np.nonzero(ok & (lb > truth * (1 + 1e-9)))[0]
            assert len(bad) == 0, (objective, kind, j, batch.mapping(int(bad[0]), op, arch), lb[bad[0]],
                                   truth[bad[0]])
            if kind == "F" and 1 <= j < bb.L - 1:  # the tile bound: parent node plus the level-(j-1) tile
                tiles = batch.temporal[:, :j].prod(axis=1) * batch.spatial[:, :j].prod(axis=1)
                parents = ancestors(batch, "O", j + 1)
                lb = bb.tile_bound(parents, tiles, j)
                bad = np.nonzero(ok & (lb > truth * (1 + 1e-9)))[0]
                assert len(bad) == 0, (objective, "tile", j, batch.mapping(int(bad[0]), op, arch), lb[bad[0]],
                                       truth[bad[0]])
                # each distinct parent priced once for all its tiles (``owner``, as the walk calls it): the same bounds
                flat = np.concatenate([a.reshape(len(tiles), -1) for a in (parents.temporal, parents.spatial,
                                                                           parents.axes, parents.order)], axis=1)
                _, first, owner = np.unique(flat, axis=0, return_index=True, return_inverse=True)
                assert len(first) < len(tiles)
                np.testing.assert_array_equal(bb.tile_bound(parents.take(first), tiles, j, owner=owner.reshape(-1)),
                                              lb)
        found = optimal_search(op, arch, objective, incumbent=None)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(truth.min(), rel=1e-9)
