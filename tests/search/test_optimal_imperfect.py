"""The optimal mapper over the padded space (``--mapper optimal --imperfect``; ``optimal_search(imperfect=)``;
docs/search.md "The optimal mapper over the padded space").

Soundness as for the declared space (``test_optimal_bounds.py``): every mapping of the padded space of the
exhaustive mapper (``MapSpace(op, arch, Constraints(waste=))``: every row of every dimension's ceil-split table,
every legal axis assignment, every loop order) is priced, and at every stage of the tree the mapping's ancestor
node (and at the factor stages the tile bound) must be bounded at most the mapping's cost; the certified optimum
must equal the exhaustive mapper's over the same space, on random small layers and architectures (2-3 levels)
with a random padding whose space is strictly larger than the exact one, for every objective. Mutations: a bound
computed for the largest extent the padding allows instead of the node's own is caught by the same check, and
padded splits that are not the space's (a completion off the ceil-split chains offered) change the optimum. The
root's bound over every extent (:meth:`LowerBound.padded_root`) is checked against every mapping of those spaces,
and a stop before the top level's tiles are bounded reports it as a finite gap.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.cost.objective import OBJECTIVES
from dnnmap.errors import DnnmapError
from dnnmap.search.bounds import OptimalSpace, attainable_bounds
from dnnmap.search.constraints import Constraints
from dnnmap.search.mappers import exhaustive_search
from dnnmap.search.network import map_layer
from dnnmap.search.optimal import optimal_search
from dnnmap.search.optimal.bounds import LowerBound
from dnnmap.search.optimal.expand import PaddedSplits
from dnnmap.search.optimal.search import BranchAndBound
from dnnmap.search.options import SearchOptions
from dnnmap.search.space import MapSpace, decode, padded_cap
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from test_imperfect import MINI
from test_optimal_bounds import ancestors, random_arch
from test_optimal_placement import assert_bounds_below, certified_over


def padded_space(op: Operator, arch: ArchSpec, waste: float) -> MappingBatch:
    """Every mapping of the exhaustive mapper's padded space: every combination of table rows whose spatial
    factors are legal, with every loop order (:meth:`MapSpace.expand_orders`)."""
    space = MapSpace(op, arch, Constraints(waste=waste))
    tables = space.tables()
    factors = decode(np.arange(int(np.prod([len(t) for t in tables]))), tables)
    factors = factors[space.spatial_legal(factors)]
    parts = [space.to_batch(f, o) for f, o, _ in space.expand_orders(factors)]
    return MappingBatch(*(np.concatenate([getattr(p, k) for p in parts])
                          for k in ("temporal", "spatial", "order")), parts[0].keeps, parts[0].layouts,
                        np.concatenate([p.axes for p in parts]))


def random_layer(rng: np.random.Generator, i: int) -> Operator:
    """A small matmul, convolution or depthwise layer with bounds that pad (5, 7, ...)."""
    kind = int(rng.integers(0, 3))
    if kind == 0:
        return ops.matmul(f"m{i}", *(int(x) for x in rng.choice([1, 3, 5, 7], size=3)))
    if kind == 1:
        return ops.conv2d(f"c{i}", int(rng.integers(1, 3)), int(rng.choice([3, 5])), (int(rng.choice([3, 5])), 1),
                          (int(rng.integers(1, 3)), 1), stride=1)
    return ops.depthwise(f"d{i}", int(rng.choice([3, 5])), (int(rng.choice([3, 5])), 1), (2, 1), stride=1)


def cases(n: int, seed: int, on_chip: int | None = None) -> list[tuple[ArchSpec, Operator, float]]:
    """Random (architecture, layer, padding) whose padded space is larger than the exact one and small enough to
    price every mapping of."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        arch, op = random_arch(rng, len(out), on_chip), random_layer(rng, len(out))
        waste = float(rng.choice([0.1, 0.2, 0.3, 0.5]))
        space = MapSpace(op, arch, Constraints(waste=waste))
        size = np.prod([len(t) for t in space.tables()])
        if size > 4_000 or size == np.prod([len(t) for t in MapSpace(op, arch).tables()]):
            continue
        batch = padded_space(op, arch, waste)
        padded = (batch.temporal.prod(axis=1) * batch.spatial.prod(axis=1) > np.array(
            [op.bound(d) for d in op.dim_names])).any(axis=1)
        if padded.any() and len(batch) <= 40_000:
            out.append((arch, op, waste))
    return out


CASES = cases(10, seed=41) + cases(6, seed=42, on_chip=2)


def _ids(cases_: list) -> list[str]:
    return [f"{a.name}-{op.name}-w{w}-{k}" for k, (a, op, w) in enumerate(cases_)]


@pytest.mark.parametrize("arch,op,waste", CASES, ids=_ids(CASES))
def test_padded_bound_never_exceeds_any_completion_and_optimum_is_the_exhaustive_one(arch: ArchSpec, op: Operator,
                                                                                    waste: float) -> None:
    space = MapSpace(op, arch, Constraints(waste=waste))
    for _, found in certified_over(op, arch, padded_space(op, arch, waste), space, ancestors, {"waste": waste},
                                   {"imperfect": waste}):
        for d, n in op.dims:  # the optimum is a mapping of the padded space
            assert n <= found.result.mapping.total(d) <= padded_cap(n, waste)


@pytest.mark.parametrize("arch,op,waste", CASES[:8], ids=_ids(CASES[:8]))
def test_padded_optimum_with_placement_is_the_exhaustive_one(arch: ArchSpec, op: Operator, waste: float) -> None:
    """With per-tensor placement too, the proven optimum equals the exhaustive mapper's over
    ``Constraints(waste=, placement=True)`` for every objective."""
    space = MapSpace(op, arch, Constraints(waste=waste, placement=True))
    for objective in OBJECTIVES:
        try:
            best = exhaustive_search(op, arch, objective, space=space)
        except DnnmapError:
            with pytest.raises(DnnmapError):
                optimal_search(op, arch, objective, imperfect=waste, placement=True)
            continue
        found = optimal_search(op, arch, objective, incumbent=None, imperfect=waste, placement=True)
        assert found.certificate.proven
        assert found.result.cost.objective(objective)[0] == pytest.approx(best.cost.objective(objective)[0], rel=1e-9)


def test_padding_beats_the_exact_optimum_on_a_prime_layer() -> None:
    """A matmul of prime bounds on a 4x3 array: with divisors only nothing but 1 fits an axis; padded, the proven
    optimum (equal to the exhaustive mapper's) runs several times fewer cycles than the exact proven optimum."""
    op = ops.matmul("mm", 5, 7, 3)
    exact = optimal_search(op, MINI, "latency")
    padded = optimal_search(op, MINI, "latency", imperfect=0.3)
    exhaustive = exhaustive_search(op, MINI, "latency", space=MapSpace(op, MINI, Constraints(waste=0.3)))
    assert exact.certificate.proven and padded.certificate.proven
    assert padded.result.cost.cycles[0] == pytest.approx(exhaustive.cost.cycles[0])
    assert padded.result.cost.cycles[0] * 2 < exact.result.cost.cycles[0]


def test_a_bound_for_the_largest_padding_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: bounding every node as if its completions ran the largest extent the padding allows (not the
    node's own padded extent) overestimates; the soundness check above finds a node bounded above a completion."""
    real = BranchAndBound.lower

    def largest(self: BranchAndBound, extent: np.ndarray):  # noqa: ANN202 - the method's own type
        return real(self, np.array([padded_cap(self.op.bound(d), 0.5) for d in self.op.dim_names]))

    monkeypatch.setattr(BranchAndBound, "lower", largest)
    caught = 0
    for arch, op, waste in CASES[:6]:
        model = CostModel(op, arch)
        batch = padded_space(op, arch, waste)
        truth = model.evaluate(batch).objective("energy")
        try:
            assert_bounds_below(BranchAndBound(op, arch, "energy", model, waste=waste), batch, truth,
                                np.isfinite(truth), ancestors)
        except AssertionError:
            caught += 1
    assert caught > 0


def test_divisor_splits_alone_miss_the_padded_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutation: factor stages reading the exact (divisor) tables instead of the padded ones still prove an
    optimum, but above the exhaustive mapper's padded optimum on some case: the check above sees the padding."""
    real = PaddedSplits.__init__
    monkeypatch.setattr(PaddedSplits, "__init__", lambda self, space: real(self, MapSpace(space.op, space.arch)))
    differs = 0
    for arch, op, waste in CASES[:8]:
        for objective in ("latency", "edp"):
            try:
                found = optimal_search(op, arch, objective, imperfect=waste)
            except DnnmapError:
                continue
            best = exhaustive_search(op, arch, objective, space=MapSpace(op, arch, Constraints(waste=waste)))
            differs += found.result.cost.objective(objective)[0] > best.cost.objective(objective)[0] * (1 + 1e-9)
    assert differs > 0


def in_tables(space: MapSpace, batch: MappingBatch) -> np.ndarray:
    """(n,) whether every dimension's slot factors of each mapping are a row of its table (one axis per dimension
    on each fan-out level), checked with Python sets."""
    L = len(space.arch.levels)
    ok = np.ones(len(batch), dtype=bool)
    for d, table in enumerate(space.tables()):
        rows = {tuple(r) for r in table.tolist()}
        for b in range(len(batch)):
            slots = [int(batch.temporal[b, m, d]) for m in range(L)]
            slots += [int(batch.spatial[b, s.level, d]) if batch.spatial[b, s.level, d] > 1
                      and batch.axes[b, s.level, d] == s.axis else 1 for s in space.spatial_slots]
            ok[b] &= tuple(slots) in rows
    return ok


def test_members_are_the_table_rows() -> None:
    """:meth:`PaddedSplits.members` agrees with the tables read as Python sets on every mapping of a padded
    space and on the same mappings with the top level's temporal factors folded into level 0's (some no
    ceil-split chain of the space)."""
    outside = 0
    for arch, op, waste in CASES[:6]:
        space = MapSpace(op, arch, Constraints(waste=waste))
        splits = PaddedSplits(space)
        batch = padded_space(op, arch, waste)
        assert splits.members(batch.temporal, batch.spatial, batch.axes).all()
        swapped = batch.temporal.copy()  # the top level's temporal factors folded into level 0's
        swapped[:, 0] *= swapped[:, -1]
        swapped[:, -1] = 1
        moved = MappingBatch(swapped, batch.spatial, batch.order, batch.keeps, batch.layouts, batch.axes)
        expect = in_tables(space, moved)
        assert (splits.members(swapped, batch.spatial, batch.axes) == expect).all()
        outside += int((~expect).sum())
    assert outside > 0


def test_options_reach_the_padded_optimum_and_both_axes_is_refused() -> None:
    """``map_layer(..., "optimal", SearchOptions(imperfect=))`` proves the padded optimum; together with both-axis
    unrolling the optimal mapper refuses the request with an error naming both."""
    op = ops.matmul("mm", 5, 7, 3)
    found = map_layer(op, MINI, "latency", "optimal", SearchOptions(imperfect=0.3, budget_seconds=None))
    best = exhaustive_search(op, MINI, "latency", space=MapSpace(op, MINI, Constraints(waste=0.3)))
    assert found.mapper == "optimal (proven)"
    assert found.cost.cycles[0] == pytest.approx(best.cost.cycles[0])
    with pytest.raises(DnnmapError, match="imperfect factorization together with both-axis"):
        optimal_search(op, MINI, "latency", imperfect=0.3, both_axes=["GLB"])


def test_map_command_proves_a_padded_optimum(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    """``dnnmap map --mapper optimal --imperfect`` runs and proves (LeNet-5's fc3 on Eyeriss: C=84 pads)."""
    out = tmp_path / "out.json"
    res = CliRunner().invoke(app, ["map", "lenet5", "--arch", "eyeriss", "--layers", "fc3", "--objective",
                                   "energy", "--mapper", "optimal", "--imperfect", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "optimal (proven)" in out.read_text()


def test_padded_curve_is_the_exhaustive_padded_optimum_and_never_above_the_exact_one() -> None:
    """``attainable_bounds(space=OptimalSpace(imperfect=))``: every point proven and equal to the exhaustive
    mapper's optimum over the padded space of that capacity variant, at or below the exact curve (strictly at
    some capacity: a padded tile of the prime bounds fits the buffer where no larger exact one does)."""
    op = ops.matmul("mm", 5, 7, 3)
    space = OptimalSpace(imperfect=0.3)
    caps = [4, 8, 16, 32]  # at 8 and 16 words a padded GLB tile of the prime bounds fits, no exact one larger
    padded = attainable_bounds(op, MINI, caps, "energy", space=space)
    exact = attainable_bounds(op, MINI, caps, "energy")
    for p, e in zip(padded, exact):
        best = exhaustive_search(op, p.arch, "energy", space=MapSpace(op, p.arch, space.constraints()))
        assert p.proven and p.value == pytest.approx(best.cost.objective("energy")[0], rel=1e-9)
        assert p.value <= e.value * (1 + 1e-9)
    assert any(p.value < e.value * (1 - 1e-9) for p, e in zip(padded, exact))
    assert space.label == "space with padding up to 30%"
    assert OptimalSpace.of(space.constraints()) == space


def test_bounds_command_takes_imperfect(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    """``dnnmap bounds --imperfect``: the JSON names the padding, every point is proven and at or below the exact
    curve's."""
    base = ["bounds", "lenet5", "--layers", "fc3", "--capacities", "64,1k", "--objective", "energy"]
    docs = {}
    for name, extra in (("exact", []), ("padded", ["--imperfect"])):
        out = tmp_path / f"{name}.json"
        result = CliRunner().invoke(app, [*base, *extra, "--json", str(out)])
        assert result.exit_code == 0, result.output
        docs[name] = json.loads(out.read_text())
    assert docs["padded"]["space"]["imperfect"] == 0.15 and docs["exact"]["space"]["imperfect"] is None
    padded, exact = (docs[n]["layers"][0]["points"] for n in ("padded", "exact"))
    assert all(p["proven"] for p in padded)
    assert all(p["value"] <= e["value"] * (1 + 1e-9) for p, e in zip(padded, exact))


def root_bound(model: CostModel, objective: str, one: MappingBatch, waste: float,
               extents: tuple[int, ...] | None = None) -> float:
    """The padded root bound (:meth:`LowerBound.padded_root`) as the search computes it: built for the layer's
    bounds (``extents``: for other extents, the mutation below), with ``one`` mapping of the layer."""
    largest = np.array([padded_cap(n, waste) for _, n in model.op.dims])
    return LowerBound(model.op, model.arch, model, one.keeps, extents=extents).padded_root(model.evaluate(one),
                                                                                           objective, largest)


def test_root_bound_holds_for_every_padded_mapping_and_binds() -> None:
    """The padded root bound is at most every mapping of the padded space (every extent the padding reaches), for
    every objective, on every case; it is positive everywhere, its energy above the MAC energy (the trivial bound)
    on every case, its latency above the unit's least cycles on some, it reaches the padded optimum on some, and its
    refills (:meth:`LowerBound._padded_refills`) add to it on some."""
    above_mac = above_cycles = reached = refilled = 0
    for arch, op, waste in CASES:
        model = CostModel(op, arch)
        batch = padded_space(op, arch, waste)
        cost = model.evaluate(batch)
        largest = np.array([padded_cap(n, waste) for _, n in op.dims])
        refilled += LowerBound(op, arch, model, batch.keeps)._padded_refills(largest) > 0
        bounds = {}
        for objective in OBJECTIVES:
            truth = cost.objective(objective)
            least = truth[np.isfinite(truth)].min()
            bounds[objective] = root_bound(model, objective, batch.take([0]), waste)
            assert 0 < bounds[objective] <= least * (1 + 1e-9), (arch.name, op.name, objective)
            reached += bounds[objective] >= least * (1 - 1e-9)
        above_mac += bounds["energy"] > model.ops_count * model.unit.energy * (1 + 1e-6)
        above_cycles += bounds["latency"] > model.unit.least_cycles(model.ops_count) * (1 + 1e-6)
    assert above_mac == len(CASES) and above_cycles > 0 and reached > 0 and refilled > 0


def test_a_root_bound_for_the_largest_padding_is_caught() -> None:
    """Mutation: the padded root bound built for the largest extents the padding allows (not the layer's bounds)
    exceeds the cost of some mapping of the padded space: the check above would catch it."""
    caught = 0
    for arch, op, waste in CASES[:8]:
        model = CostModel(op, arch)
        batch = padded_space(op, arch, waste)
        truth = model.evaluate(batch).objective("energy")
        largest = tuple(padded_cap(n, waste) for _, n in op.dims)
        least = truth[np.isfinite(truth)].min()
        caught += root_bound(model, "energy", batch.take([0]), waste, largest) > least * (1 + 1e-9)
    assert caught > 0


def test_a_stop_before_the_top_pass_ends_has_a_finite_gap() -> None:
    """With no budget (the top level's padded tiles not bounded at all) the certificate's lower bound is the padded
    root bound: positive, at most the proven optimum, so the gap is finite and the label names it."""
    op = ops.conv2d("c", 12, 10, (7, 7), (3, 3), stride=1)
    arch = load_arch("eyeriss")
    for objective in ("energy", "edp"):
        stopped = optimal_search(op, arch, objective, budget_seconds=0.0, imperfect=0.15)
        cert = stopped.certificate
        assert not cert.proven and math.isfinite(cert.gap)
        one = MappingBatch.from_mappings(op, arch, [stopped.result.mapping])
        assert cert.lower_bound == pytest.approx(root_bound(CostModel(op, arch), objective, one, 0.15), rel=1e-12)
        assert "gap" in stopped.result.mapper
        proven = optimal_search(op, arch, objective, imperfect=0.15).certificate
        assert proven.proven and cert.lower_bound <= proven.incumbent * (1 + 1e-9)


def refill_cases(n: int, seed: int = 5) -> list[tuple[ArchSpec, Operator, float]]:
    """Random matmuls (bounds 2-9) on random 2-3-level architectures, padded 20-50%, whose root bound's refills
    (:meth:`LowerBound._padded_refills`) add at least 5% of the padded energy optimum: the cases where that term
    decides the bound (the cases above seldom have it)."""
    rng = np.random.default_rng(seed)
    out: list[tuple[ArchSpec, Operator, float]] = []
    for i in range(400):
        arch = random_arch(rng, i, int(rng.integers(1, 3)))
        op = ops.matmul(f"m{i}", *(int(x) for x in rng.choice([2, 3, 4, 5, 6, 7, 9], size=3)))
        waste = float(rng.choice([0.2, 0.3, 0.5]))
        if np.prod([len(t) for t in MapSpace(op, arch, Constraints(waste=waste)).tables()]) > 1_500:
            continue
        model = CostModel(op, arch)
        batch = padded_space(op, arch, waste)
        energy = model.evaluate(batch).objective("energy")
        largest = np.array([padded_cap(b, waste) for _, b in op.dims])
        if np.isfinite(energy).any() and LowerBound(op, arch, model, batch.keeps)._padded_refills(largest) > \
                0.05 * energy[np.isfinite(energy)].min():
            out.append((arch, op, waste))
            if len(out) == n:
                break
    return out


REFILL_CASES = refill_cases(8)


def test_root_refills_hold_where_they_decide_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """On cases whose refills add at least 5% of the optimum, the root bound is at most every mapping of the padded
    space for every objective; mutation: refills 1.5 times as large exceed some mapping's energy."""
    assert len(REFILL_CASES) == 8
    for arch, op, waste in REFILL_CASES:
        model = CostModel(op, arch)
        batch = padded_space(op, arch, waste)
        cost = model.evaluate(batch)
        for objective in OBJECTIVES:
            truth = cost.objective(objective)
            assert root_bound(model, objective, batch.take([0]), waste) <= truth[np.isfinite(truth)].min() * (1 + 1e-9)
    real = LowerBound._padded_refills
    monkeypatch.setattr(LowerBound, "_padded_refills", lambda self, largest: 1.5 * real(self, largest))
    caught = 0
    for arch, op, waste in REFILL_CASES:
        model = CostModel(op, arch)
        batch = padded_space(op, arch, waste)
        truth = model.evaluate(batch).objective("energy")
        caught += root_bound(model, "energy", batch.take([0]), waste) > truth[np.isfinite(truth)].min() * (1 + 1e-9)
    assert caught > 0
