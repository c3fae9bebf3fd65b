"""Sunstone's factor descent, every tile of a level without a capacity limit, and Observation 5's ``always``
reading (docs/search.md "The Sunstone mapper", items 3, 4 and 8):
the cases the walk lost by more than 1% (``benchmarks/sunstone_placement.py --why``, issue 28) now within 1% of
the optimum, which each test computes with the exhaustive or the optimal mapper; every neighbour of the descent is
a legal mapping of the walk's space, and the descent never returns a worse mapping than the walk."""

from __future__ import annotations

import pytest

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.mapping import validate_mapping
from dnnmap.search.constraints import Constraints
from dnnmap.search.mappers import exhaustive_search
from dnnmap.search.optimal import optimal_search
from dnnmap.search.space import MapSpace
from dnnmap.search.sunstone import descent, walk
from dnnmap.search.sunstone.mapper import sunstone_search
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator
from archs import eyeriss_without_hops

# random 9 and random 78 of the benchmark (seed 0): an on-chip level without a capacity limit, whose maximal tile is
# the whole layer; the optimum leaves one dimension to DRAM (per-level bandwidths and buffering)
UNBOUNDED_L0 = {
    "name": "unbounded_l0", "clock_mhz": 100.0, "word_bits": {"input": 24, "weight": 8, "output": 16},
    "final_output_bits": 6, "mac": {"energy": 2.2, "precision_bits": 16, "cycles": 1,
                                    "operand_registers": ["weight", "output"]},
    "levels": [
        {"name": "L0", "keeps": ["input", "output"], "read_energy": 1.16, "write_energy": 2.11, "bandwidth": 0.5,
         "buffers": 2, "halo_reuse": "innermost"},
        {"name": "DRAM", "capacity": 3364, "read_energy": 0.7, "write_energy": 1.54,
         "energy": {"input": {"read": 2.72, "fill": 3.86, "update": 0.74}, "weight": {"update": 6.51},
                    "output": {"fill": 3.52, "update": 0.11}},
         "write_bandwidth": 2.0, "buffers": 3, "halo_reuse": True}]}
UNBOUNDED_BITS_L0 = {
    "name": "unbounded_bits_l0", "clock_mhz": 100.0, "word_bits": {"input": 24, "weight": 16, "output": 24},
    "final_output_bits": 4, "mac": {"energy": 1.61, "precision_bits": 16, "cycles": 1,
                                    "operand_registers": ["weight", "output"]},
    "vector": {"lanes": 4, "energy": 0.9},
    "levels": [
        {"name": "L0", "capacity_unit": "bits", "keeps": ["weight", "output"], "read_energy": 0.65,
         "write_energy": 1.94, "bandwidth": 2.0, "read_bandwidth": 1.0, "buffers": 3, "halo_reuse": "innermost"},
        {"name": "DRAM", "read_energy": 2.86, "write_energy": 2.83,
         "energy": {"input": {"fill": 1.85, "update": 0.46}, "output": {"read": 4.62, "update": 1.01}},
         "transfer": {"model": "volume", "bandwidth_gbps": 1.0, "burst_bytes": 16, "cas_ns": 0.0}, "buffers": 3,
         "halo_reuse": "innermost"}]}
# random 48: a 3x3 fan-out without multicast under DRAM; for DRAM traffic the optimum leaves it idle (maximal
# unrollings fill it, and each instance reads its own copy)
NO_MULTICAST_3X3 = {
    "name": "no_multicast_3x3", "clock_mhz": 100.0, "word_bits": {"input": 32, "weight": 8, "output": 16},
    "mac": {"energy": 0.74, "precision_bits": 16, "cycles": 1, "operand_registers": ["input", "weight"]},
    "overlap": True,
    "levels": [
        {"name": "L0", "keeps": ["input", "weight"], "read_energy": 0.4, "write_energy": 0.5, "read_bandwidth": 2.0,
         "buffers": 3, "halo_reuse": False},
        {"name": "DRAM", "read_energy": 0.73, "write_energy": 1.4, "energy": {"output": {"update": 4.04}},
         "bandwidth": 2.0, "write_bandwidth": 1.0,
         "fanout": {"shape": [3, 3], "multicast": False, "reduction": False, "hop_energy": 0.0},
         "buffers": 2, "halo_reuse": False, "read_modify_write": False}]}

# random 91 of the benchmark's generator before final output widths (docs/search.md): a 3x3 fan-out under 19-word
# registers that keep nothing, EDP (1.40x: the optimum is two redistributions away from the walk's best)
SMALL_REGISTERS_3X3 = {
    "name": "small_registers_3x3", "clock_mhz": 100.0, "word_bits": {"input": 32, "weight": 24, "output": 8},
    "mac": {"energy": 0.9, "operand_registers": ["weight", "output"]}, "overlap": False,
    "vector": {"lanes": 8, "energy": 0.15, "bandwidth": 1.0},
    "levels": [
        {"name": "L0", "capacity": 19, "keeps": [], "read_energy": 2.01, "write_energy": 1.54, "write_bandwidth": 1.0,
         "fanout": {"shape": [3, 3], "reduction": False, "hop_energy": 1.67, "egress_bandwidth": 0.25},
         "buffers": 2},
        {"name": "L1", "capacity": 26, "read_energy": 3.57, "write_energy": 2.18, "bandwidth": 4.0,
         "read_modify_write": False},
        {"name": "DRAM", "capacity_unit": "bits", "read_energy": 2.65, "write_energy": 2.04,
         "transfer": {"bandwidth_gbps": 0.05, "burst_bytes": 16}, "buffers": 3, "halo_reuse": False}]}
# random 220 of ``--random 300 --seed 1``: fan-outs under a register level and under DRAM, EDP (1.09x after the
# single redistributions: the optimum moves B, M and N at once)
TWO_FANOUTS = {
    "name": "two_fanouts", "clock_mhz": 100.0, "word_bits": {"input": 24, "weight": 24, "output": 16},
    "mac": {"energy": 1.35}, "vector": {"lanes": 7, "energy": 1.52, "bandwidth": 1.0},
    "levels": [
        {"name": "L0", "read_energy": 2.86, "write_energy": 0.26, "bandwidth": 2.0, "write_bandwidth": 0.5,
         "buffers": 3, "read_modify_write": False},
        {"name": "L1", "keeps": ["input", "output"], "read_energy": 0.09, "write_energy": 3.1, "bandwidth": 0.5,
         "fanout": {"shape": [1, 3], "multicast": False, "multicast_rule": "identical", "no_multicast": ["weight"],
                    "egress_bandwidth": 0.5},
         "buffers": 2, "halo_reuse": "innermost", "read_modify_write": False},
        {"name": "DRAM", "read_energy": 0.19, "write_energy": 0.4,
         "energy": {"input": {"read": 4.53, "fill": 3.38, "update": 0.8}, "weight": {"fill": 6.73, "update": 7.17},
                    "output": {"update": 2.37}},
         "bandwidth": 2.0, "write_bandwidth": 0.5,
         "fanout": {"shape": [2, 3], "multicast_rule": "identical", "hop_energy": 0.01, "ingress_bandwidth": 4.0,
                    "egress_bandwidth": 0.5},
         "halo_reuse": "innermost"}]}

FORMER_LOSSES = [  # (case, layer, architecture, objective): the walk alone was 1.59x, 2.47x, 1.06x, 1.40x, 1.51x above
    ("attention values, latency", ops.attention("attn", "values", 2, 4, 4, 4, 2, 2), UNBOUNDED_L0, "latency"),
    ("mttkrp, edp", ops.einsum("mttkrp", "ikl,kj,lj->ij", dict(i=4, k=4, l=4, j=2)), UNBOUNDED_BITS_L0, "edp"),
    ("mttkrp, dram", ops.einsum("mttkrp", "ikl,kj,lj->ij", dict(i=4, k=2, l=4, j=4)), NO_MULTICAST_3X3, "dram"),
    ("pointwise, edp", ops.pointwise("conv", 3, 3, (5, 6)), SMALL_REGISTERS_3X3, "edp"),
    ("batched matmul, edp", ops.matmul("mm", 2, 3, 6, batch=2), TWO_FANOUTS, "edp"),
]


def _value(op: Operator, arch: ArchSpec, objective: str, **options) -> float:  # noqa: ANN003
    return float(sunstone_search(op, arch, objective, **options).cost.objective(objective)[0])


@pytest.mark.parametrize("case,op,arch_data,objective", FORMER_LOSSES, ids=[c[0] for c in FORMER_LOSSES])
def test_former_small_case_losses_within_one_percent(case: str, op: Operator, arch_data: dict, objective: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Within 1% of the exhaustive optimum; more than 1% above it with the descent and the unbounded-level tile rule
    off (the walk's earlier rules)."""
    arch = ArchSpec.model_validate(arch_data)
    best = exhaustive_search(op, arch, objective).cost.objective(objective)[0]
    assert best * (1 - 1e-9) <= _value(op, arch, objective) <= best * 1.01
    monkeypatch.setattr(descent, "ROUNDS", 0)
    monkeypatch.setattr(walk, "EVERY_UNBOUNDED_TILE", walk.EVERY_TILE)
    assert _value(op, arch, objective) > best * 1.01


# bounds 41 of the optimal mapper's soundness generator (docs/search.md): a register level with ``halo_reuse: false``
# under which the placed optimum keeps R2 in the registers with the input below the R loop (1.11x: the placed walk
# unrolled R2, and the placement stage changes placements only)
NO_HALO_REGISTERS = {
    "name": "no_halo_registers", "clock_mhz": 100.0, "word_bits": 16, "overlap": True,
    "mac": {"energy": 1.0, "precision_bits": 16, "cycles": 1, "operand_registers": []},
    "levels": [
        {"name": "L0", "capacity": {"input": 6, "weight": 9, "output": 2}, "read_energy": 4.0, "write_energy": 1.0,
         "fanout": {"shape": [3], "multicast_rule": "identical", "hop_energy": 0.0}, "buffers": 1,
         "halo_reuse": False},
        {"name": "L1", "capacity": {"input": 3, "weight": 9, "output": 11}, "read_energy": 6.0, "write_energy": 5.0,
         "bandwidth": 2.0, "fanout": {"shape": [3], "reduction": False, "hop_energy": 1.0}, "buffers": 1},
        {"name": "DRAM", "read_energy": 100.0, "write_energy": 100.0, "buffers": 1,
         "transfer": {"model": "volume", "bandwidth_gbps": 0.8, "burst_bytes": 64, "cas_ns": 14.0}}]}


def test_former_placed_loss_within_one_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The placed descent's neighbours also place one tensor: ``R2`` moves from the array into the registers with
    the input placed below it (more than 1% above the placed optimum without the descent)."""
    op, arch = ops.conv2d("d41", 2, 2, (4, 1), (2, 1), groups=2), ArchSpec.model_validate(NO_HALO_REGISTERS)
    best = exhaustive_search(op, arch, "latency", space=MapSpace(op, arch, Constraints(placement=True)))
    found = sunstone_search(op, arch, "latency", placement=True)
    assert found.cost.cycles[0] <= best.cost.cycles[0] * 1.01 and found.mapping.placed
    monkeypatch.setattr(descent, "ROUNDS", 0)
    assert sunstone_search(op, arch, "latency", placement=True).cost.cycles[0] > best.cost.cycles[0] * 1.01


QUERY = ops.matmul("q", 128, 768, 768)  # BERT-base's query projection


@pytest.mark.parametrize("space", ["shared", "both axes", "placement"])
def test_bert_query_projection_within_one_percent_of_the_proven_optimum(space: str) -> None:
    """The issue's shared architecture (Eyeriss, hop energy 0), energy: 1.0-1.2% above the proven optimum before
    (its optimum unrolls ``N12 K4`` on 48 of the 168 PEs, not a maximal unrolling)."""
    arch = eyeriss_without_hops()
    options = {"both_axes": ["GLB"] if space == "both axes" else [], "placement": space == "placement"}
    proof = optimal_search(QUERY, arch, "energy", budget_seconds=120, **options)
    assert proof.certificate.proven
    best = proof.result.cost.energy[0]
    assert best * (1 - 1e-9) <= _value(QUERY, arch, "energy", **options) <= best * 1.01


def test_bert_query_projection_edp_on_eyeriss_needs_observation5_off() -> None:
    """EDP on the Eyeriss preset: the optimum unrolls ``M2 N12 K6``, ``M`` being a dimension the register file
    reuses the weights across (Observation 5 excluded it: 4.2% above); ``escape="always"`` (the default) keeps it."""
    arch = load_arch("eyeriss")
    proof = optimal_search(QUERY, arch, "edp", budget_seconds=120)
    assert proof.certificate.proven
    best = proof.result.cost.edp[0]
    assert best * (1 - 1e-9) <= _value(QUERY, arch, "edp") <= best * 1.01


def test_neighbours_are_legal_and_the_descent_never_worse() -> None:
    """Every neighbour of a Sunstone mapping on Eyeriss (a 14x12 array; with and without both-axis splits) is a
    legal mapping; the descent's result is at most the walk's."""
    op = ops.conv2d("c", 16, 32, (14, 14), 3, 1, 1, 1, 1)
    arch = load_arch("eyeriss")
    model = CostModel(op, arch)
    for both in (frozenset(), frozenset({1})):
        found = sunstone_search(op, arch, "edp", both_axes=["GLB"] if both else [])
        start = MappingBatch.from_mappings(op, arch, [found.mapping])
        cands = descent.neighbours(arch, start, both)
        assert len(cands) >= 20
        for j in range(len(cands)):
            validate_mapping(cands.mapping(j, op, arch), op, arch)
        down = descent.descend(arch, "edp", model, start, both)
        assert down.score <= found.cost.edp[0]


def test_strided_3x3_within_one_percent_of_the_proven_optimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """ResNet-50's ``layer3.0.conv2`` (K256 C256, 28x28 input, 3x3 stride 2) on Eyeriss, energy: the optimum unrolls
    ``K8 R3`` (24 of 168 PEs, not a maximal unrolling) and keeps every output in the global buffer; the walk's best
    unrolls ``C8`` too and is two redistributions away (``C8`` off the array to DRAM, then ``K`` in from DRAM), the
    first of them 5.5% worse: 1.2% above the optimum without the second redistribution from an emptied fan-out."""
    op, arch = ops.conv2d("layer3.0.conv2", 256, 256, 28, 3, 2, 1), load_arch("eyeriss")
    proof = optimal_search(op, arch, "energy", budget_seconds=120)
    assert proof.certificate.proven
    best = proof.result.cost.energy[0]
    assert best * (1 - 1e-9) <= _value(op, arch, "energy") <= best * 1.01
    monkeypatch.setattr(descent, "_off_the_array", lambda *_: [])
    assert _value(op, arch, "energy") > best * 1.01


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_depthwise_on_tpu_like_leaves_the_weight_register_empty(objective: str) -> None:
    """MobileNetV2's ``block_14_depthwise`` (G960, 7x7, 3x3) on the TPU-like array: the optimum unrolls ``P7 Q7 R3
    S3`` with nothing in the one-operand weight register; the maximal tiles (Observation 4) put ``R3`` or ``R3 S3``
    there and the walk ended 1.07% above (descent included). The walk now also takes the empty tile of a level
    that keeps one operand in a grouped convolution."""
    op, arch = ops.depthwise("block_14_depthwise", 960, 7, 3, 1, 1), load_arch("tpu_like")
    proof = optimal_search(op, arch, objective, budget_seconds=60)
    assert proof.certificate.proven
    best = proof.result.cost.objective(objective)[0]
    assert best * (1 - 1e-9) <= _value(op, arch, objective) <= best * 1.01
