"""The Sunstone mapper (RTML Sec. 3.2): reuse table, loop-order trie, maximal tiles, unrolling, whole walk."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dnnmap.arch.spec import load_arch, parse_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.search.mappers import OBJECTIVES, exhaustive_search, random_search
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.search.sunstone.orders import build_trie
from dnnmap.search.sunstone.reuse import ReuseKind, reuse_table, table1_rows
from dnnmap.search.sunstone.stats import SunstoneStats
from dnnmap.search.sunstone.tiles import maximal_tiles
from dnnmap.search.sunstone.unroll import legal_unrollings, unrolling_candidates
from dnnmap.workload import zoo
from dnnmap.workload.ir import Axis, Operator, Tensor


def conv1d(R: int = 3, P: int = 14, K: int = 4, C: int = 4) -> Operator:
    """The report's running example (eq. 1'): ofmap[k,p] = sum_c sum_r ifmap[c, p+r] * weight[c,k,r]."""
    return Operator("ex", "conv1d", (("K", K), ("P", P), ("C", C), ("R", R)), (
        Tensor("ofmap", "output", (Axis("k", (("K", 1),)), Axis("p", (("P", 1),)))),
        Tensor("ifmap", "input", (Axis("c", (("C", 1),)), Axis("h", (("P", 1), ("R", 1))))),
        Tensor("weight", "weight", (Axis("c", (("C", 1),)), Axis("k", (("K", 1),)), Axis("r", (("R", 1),))))))


def batched_conv() -> Operator:
    """The 7-loop batched convolution (N K C P Q R S) of the report's 5040-order claim."""
    a = Axis
    return Operator("bconv", "conv2d", (("N", 2), ("K", 4), ("C", 4), ("P", 4), ("Q", 4), ("R", 3), ("S", 3)), (
        Tensor("O", "output", (a("n", (("N", 1),)), a("k", (("K", 1),)), a("p", (("P", 1),)), a("q", (("Q", 1),)))),
        Tensor("I", "input", (a("n", (("N", 1),)), a("c", (("C", 1),)), a("h", (("P", 1), ("R", 1))),
                              a("w", (("Q", 1), ("S", 1))))),
        Tensor("W", "weight", (a("k", (("K", 1),)), a("c", (("C", 1),)), a("r", (("R", 1),)), a("s", (("S", 1),))))))


def test_table1_reuse_inference() -> None:
    rows = table1_rows(conv1d())
    assert rows["ofmap"] == ({"K", "P"}, {"C", "R"}, set())
    assert rows["ifmap"] == ({"C", "P", "R"}, {"K"}, {"P", "R"})
    assert rows["weight"] == ({"C", "K", "R"}, {"P"}, set())
    assert reuse_table(conv1d())["ifmap"]["P"] is ReuseKind.PARTIAL


def test_trie_running_example_pruned_and_kept_nodes() -> None:
    trie = build_trie(conv1d())
    kept = {n.label(4): n.reused() for n in trie.kept}
    assert set(kept) == {"xxCR", "xxRK", "xxPK", "xxxP"}
    assert kept["xxCR"] == {"ofmap": {"C", "R"}, "ifmap": {"R"}}
    assert kept["xxRK"] == {"ifmap": {"K", "R"}} and kept["xxPK"] == {"ifmap": {"K", "P"}}  # kept: bound-dependent
    rule1 = {"x" * (4 - len(s)) + "".join(reversed(s)) for s in trie.pruned_no_reuse}
    assert {"xxCK", "xxKR", "xxPR"} <= rule1  # the report's rule-1 examples
    assert [n.label(4) for n in trie.pruned_dominated] == ["xxRC"]  # the subtree of xxxC, dominated by xxCR


def test_trie_batched_conv_5040_orders() -> None:
    """What our rules give: 16 leaves; rule 2(i) leaves 10 distinct signatures (the report's figure);
    rule 2(ii) drops 2 more whose reuse is contained in a sibling's."""
    trie = build_trie(batched_conv())
    assert math.factorial(7) == 5040
    leaves = len(trie.kept) + len(trie.pruned_dominated) + len(trie.pruned_duplicate)
    assert (leaves, leaves - len(trie.pruned_duplicate), len(trie.kept)) == (16, 10, 8)
    for a, b in itertools.combinations(trie.kept, 2):
        assert not (a.signature <= b.signature or b.signature <= a.signature)


def _brute_maximal(R: int) -> set[tuple[int, ...]]:
    """Fig. 9 by hand: (P, K, C, R) tiles of divisors with C*K*R + (P+R-1)*C + P*K <= 8, none growable."""
    bounds = (14, 4, 4, R)
    divs = [[d for d in range(1, n + 1) if n % d == 0] for n in bounds]
    foot = lambda p, k, c, r: c * k * r + (p + r - 1) * c + p * k  # noqa: E731
    fits = {t for t in itertools.product(*divs) if foot(*t) <= 8}
    def grown(t: tuple[int, ...]) -> list[tuple[int, ...]]:
        out = []
        for d in range(4):
            bigger = [x for x in divs[d] if x > t[d]]
            if bigger:
                out.append(t[:d] + (bigger[0],) + t[d + 1:])
        return out
    return {t for t in fits if not any(g in fits for g in grown(t))}


@pytest.mark.parametrize("R", [3, 4])  # the caption says R=3, the text R=4
def test_fig9_maximal_tiles(R: int) -> None:
    base = conv1d(R)
    op = Operator("ex", "conv1d", (("P", 14), ("K", 4), ("C", 4), ("R", R)), base.tensors)
    arch = parse_arch({"name": "fig9", "clock_mhz": 100, "levels": [{"name": "L1", "capacity": 8}, {"name": "DRAM"}]})
    tiles, fitting = maximal_tiles(op, arch, 0, MappingBatch.default_keeps(op, arch), np.ones(4, dtype=np.int64),
                                   (14, 4, 4, R))
    assert {tuple(t) for t in tiles.tolist()} == _brute_maximal(R)
    assert (fitting, len(tiles)) == ((8, 4) if R == 3 else (10, 5))
    assert (2, 1, 2, 1) in {tuple(t) for t in tiles.tolist()}  # node 2 of the figure survives


def test_unrolling_observation5_and_escape() -> None:
    limits = (1, 64, 64, 56, 56, 3, 3)  # N K C P Q R S
    fac, _ = legal_unrollings(limits, (14, 12))
    free = unrolling_candidates(limits, (14, 12))
    assert len(free.factors) < len(fac) and free.utilization.max() == 168
    # excluding C, R, S: K, P, Q alone cannot fill 14x12, so the best mixed unrollings are kept too
    ex = unrolling_candidates(limits, (14, 12), frozenset({2, 5, 6}))
    permitted = (ex.factors[:, [2, 5, 6]] == 1).all(axis=1)
    assert permitted.any() and (~permitted).any()
    assert ex.utilization[~permitted].min() == 168 > ex.utilization[permitted].max()
    # excluding only R: K and C fill the array, no escape needed
    only_r = unrolling_candidates(limits, (14, 12), frozenset({5}))
    assert (only_r.factors[:, 5] == 1).all()


ORACLE_ARCH = parse_arch({"name": "small", "clock_mhz": 100, "levels": [
    {"name": "RF", "capacity": 6, "read_energy": 1, "write_energy": 1},
    {"name": "GLB", "capacity": 48, "read_energy": 6, "write_energy": 6, "fanout": {"shape": [4], "hop_energy": 2}},
    {"name": "DRAM", "read_energy": 200, "write_energy": 200}]})


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_sunstone_near_exhaustive_on_a_small_conv(objective: str) -> None:
    op = conv1d(R=2, P=4, K=2, C=2)
    best = exhaustive_search(op, ORACLE_ARCH, objective).cost.objective(objective)[0]
    found = sunstone_search(op, ORACLE_ARCH, objective)
    assert found.cost.valid[0]
    assert best <= found.cost.objective(objective)[0] <= 1.25 * best


def test_sunstone_beats_random_on_resnet_layers() -> None:
    arch = load_arch("eyeriss")
    net = zoo.get("resnet18")
    stats = SunstoneStats()
    for name in ("layer1.0.conv1", "layer3.0.conv2"):
        op = net.layer(name).op
        s = sunstone_search(op, arch, "edp", stats).cost.objective("edp")[0]
        r = random_search(op, arch, "edp", budget=20_000, seed=1).cost.objective("edp")[0]
        assert s <= r
    ratios = stats.ratios()
    assert 0 < ratios["orders_kept_fraction"] < 0.2
    assert ratios["l1_tiles_pruned"] > 0.5 and ratios["unrollings_pruned"] > 0.5
    assert stats.level_cut[0] > 0  # alpha-beta cut some level-0 candidates
