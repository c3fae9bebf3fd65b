"""ZigZag mapping import with ZigZag's per-operand loop allocation (docs/zigzag.md, "Mapping file"): each
operand's loops go where ZigZag's LOMA allocator puts them, expressed as per-tensor placement
(``loops_above``); checked against ZigZag itself where it is installed, priced equal to the reference
simulator, and bad mapping files still exit 2 naming the file and field."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from dnnmap.arch.zigzag import ImportedZigzag, arch_from_zigzag
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.mapping.io import load_mapping_file
from dnnmap.mapping.mapping import Mapping
from dnnmap.mapping.zigzag_map import zigzag_allocation, zigzag_mapping
from dnnmap.sim import sim_metrics, simulate
from dnnmap.workload.importers.zigzag_workload import (
    common_precision,
    final_output_bits,
    load_zigzag_workload,
)
from dnnmap.workload.ir import Operator

FIX = Path(__file__).parent / "fixtures"
ZIGZAG_PYTHON = os.environ.get("DNNMAP_ZIGZAG_PYTHON", "/work/zzvenv/bin/python")
SPATIAL = {"D1": ["D0, 8"], "D2": ["D2, 8"], "D3": ["D1, 8"]}  # gemm_l1_l3's unrolling of the GEMM
# loops left by SPATIAL on a 32^3 GEMM, innermost first, in orders whose l1 cuts differ per operand
ORDERS = [
    [["D0", 2], ["D0", 2], ["D2", 2], ["D1", 2], ["D1", 2], ["D2", 2]],
    [["D0", 2], ["D1", 2], ["D0", 2], ["D1", 2], ["D2", 2], ["D2", 2]],
    [["D0", 2], ["D0", 2], ["D1", 2], ["D1", 2], ["D2", 2], ["D2", 2]],
    [["D2", 2], ["D1", 2], ["D0", 2], ["D2", 2], ["D1", 2], ["D0", 2]],
    [["D1", 2], ["D2", 2], ["D2", 2], ["D0", 2], ["D1", 2], ["D0", 2]],
]

_ZIGZAG_ALLOCATION = r"""
import json, logging, sys
logging.disable(logging.CRITICAL)
from zigzag.api import get_hardware_performance_zigzag
_, _, cmes = get_hardware_performance_zigzag(*sys.argv[1:4], opt="energy", dump_folder=sys.argv[4],
                                             loma_show_progress_bar=False)
json.dump({cme.layer.name: {str(op): [len(level) for level in levels]
                            for op, levels in cme.temporal_mapping.mapping_dic_origin.items()}
           for cme, _ in cmes[0][1]}, sys.stdout)
"""


def _files(tmp_path: Path, l1_bits: int, size: int, orders: list[list[list]],
           double: bool = False) -> tuple[Path, Path, Path]:
    """ZigZag's gemm_l1_l3 hardware with an l1 of ``l1_bits`` (double-buffered as shipped if ``double``), a
    workload of one ``size``^3 GEMM per order and the mapping file giving each its order (and the ``default``
    entry ZigZag requires)."""
    hw = yaml.safe_load((FIX / "hardware" / "gemm_l1_l3.yaml").read_text())
    hw["memories"]["l1"].update(size=l1_bits, force_double_buffering=double)
    layer = yaml.safe_load((FIX / "workload" / "gemm_layer.yaml").read_text())[0]
    layers = [{**layer, "id": i, "name": f"gemm{i}", "loop_sizes": [size] * 3,
               "operand_source": {"I": i, "W": i}} for i in range(len(orders))]
    mapping = [{"name": f"gemm{i}", "spatial_mapping": SPATIAL, "temporal_ordering": order,
                "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}} for i, order in enumerate(orders)]
    mapping.append({"name": "default", "spatial_mapping": SPATIAL})  # ZigZag requires one
    paths = tmp_path / "hw.yaml", tmp_path / "wl.yaml", tmp_path / "mp.yaml"
    for path, data in zip(paths, (hw, layers, mapping)):
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return paths


def _zigzag(hw: Path, wl: Path, mp: Path, tmp_path: Path) -> dict[str, dict[str, list[int]]]:
    """ZigZag's own allocation of each layer (layer -> operand -> loops per memory), or skip without ZigZag."""
    if not Path(ZIGZAG_PYTHON).exists():
        pytest.skip(f"ZigZag is not installed (no Python at {ZIGZAG_PYTHON}; set DNNMAP_ZIGZAG_PYTHON)")
    run = subprocess.run([ZIGZAG_PYTHON, "-c", _ZIGZAG_ALLOCATION, str(wl), str(hw), str(mp), str(tmp_path / "out")],
                         capture_output=True, text=True, check=False, timeout=600)
    if run.returncode != 0 and "No module named 'zigzag'" in run.stderr:
        pytest.skip(f"ZigZag is not installed in {ZIGZAG_PYTHON}")
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def _imported(hw: Path, wl: Path) -> tuple[ImportedZigzag, list[Operator]]:
    work = load_zigzag_workload(wl)
    core = arch_from_zigzag(yaml.safe_load(hw.read_text()), str(hw), word_bits=common_precision(work)[0],
                            final_output_bits=final_output_bits(work))
    return core, [layer.op for layer in work.network.layers]


def _tile(m: Mapping, level: int, tensor: str, dims: tuple[str, ...]) -> dict[str, int]:
    """The factors of ``tensor``'s tile at ``level`` in ``m``: everything below the level, the level's fan-out
    and its loops below the tensor's boundary."""
    lm = m.levels[level]
    inside = lm.loops(dims)[lm.above(tensor):]
    return {d: m.coverage(d, level - 1) * lm.s(d) * (lm.t(d) if d in inside else 1) for d in dims}


def test_the_allocation_is_zigzags_rule_on_a_gemm_by_hand(tmp_path: Path) -> None:
    """A 256^3 GEMM on gemm_l1_l3 (l1: 943,718 bits shared by I, W and O; outputs 32-bit partial sums, 8-bit
    final), order D2 8, D1 8, D0 32, D2 4, D1 4 innermost first, 8 x 8 x 8 unrolled. The output register
    takes D2 8 (one word). In l1, of the prefix combinations that fit together, the fewest bits moved from
    l3 (tile x iterations of the loops left above) is I up to D0 32 (256 x 64 words, 131,072 bits, x 16),
    W up to D2 4 (256 x 64, 131,072 bits, x 4) and O up to D2 4 (256 x 64 partial sums, 524,288 bits, x 4):
    4.7 M bits in 786,432 of l1; the whole input (nothing moved for it) leaves the output room for D1 8
    only (8 x 64 x 32 bits x 512 = 8.4 M). ZigZag 3.9.1 gives the same cuts (and does on the orders below,
    tested against ZigZag itself); dnnmap's l1 keeps D2 4, D0 32, D1 8 with I placed below D2 4."""
    order = [["D2", 8], ["D1", 8], ["D0", 32], ["D2", 4], ["D1", 4]]
    hw, wl, mp = _files(tmp_path, 943_718, 256, [order])
    core, (op,) = _imported(hw, wl)
    data = yaml.safe_load(mp.read_text())
    assert zigzag_allocation(data, str(mp), op, core) == {"I": [3, 2], "W": [4, 1], "O": [1, 3, 1]}
    m = zigzag_mapping(data, str(mp), op, core)
    l1 = core.spec.level_index("l1")
    assert m.levels[l1].order == ("D2", "D0", "D1") and dict(m.levels[l1].loops_above) == {"I": 1}
    assert _tile(m, l1, "I", op.dim_names) == {"D0": 256, "D1": 64, "D2": 64}
    assert _tile(m, l1, "W", op.dim_names) == _tile(m, l1, "O", op.dim_names) == {"D0": 256, "D1": 64, "D2": 256}
    shared = zigzag_mapping(data, str(mp), op, core, shared_boundary=True)
    assert not shared.placed and m.placed


def test_force_double_buffering_counts_a_tile_twice_unless_it_is_whole(tmp_path: Path) -> None:
    """The same 256^3 GEMM and order on the shipped gemm_l1_l3 (l1 943,718 bits, ``force_double_buffering:
    True``). ZigZag counts an l1 tile twice unless it is the operand's whole remaining tensor there, in the fit
    and in the bits moved. The output may take D1 8 at most (64 x 64 partial sums, 131,072 bits, x 2; with
    D0 32 it would need 1,048,576): it moves 262,144 x 64 = 16.8 M either way and the tie goes to the larger
    prefix. The whole input (524,288 bits, counted once, nothing left above it) and the weights up to D2 4
    (256 x 64 words, 131,072 bits, x 2) move 0.5 M + 4 x 262,144 = 1.6 M bits in 819,200 bits of l1; the
    whole weights beside the whole input would need 1,081,344. Counting the whole input twice would not fit
    it either. The spec is unchanged (the whole capacity), and the mapping fits it."""
    order = [["D2", 8], ["D1", 8], ["D0", 32], ["D2", 4], ["D1", 4]]
    allocations = {}
    for double in (False, True):
        (tmp_path / str(double)).mkdir()
        hw, wl, mp = _files(tmp_path / str(double), 943_718, 256, [order], double=double)
        core, (op,) = _imported(hw, wl)
        assert core.double_buffered == ({"l1"} if double else set())
        assert core.spec.levels[core.spec.level_index("l1")].capacity_for("input") == 943_718
        assert any("force_double_buffering" in n for n in core.notes) is double
        data = yaml.safe_load(mp.read_text())
        allocations[double] = zigzag_allocation(data, str(mp), op, core)
        m = zigzag_mapping(data, str(mp), op, core)
        assert CostModel(op, core.spec).evaluate(MappingBatch.from_mappings(op, core.spec, [m])).valid.all()
    assert allocations == {False: {"I": [3, 2], "W": [4, 1], "O": [1, 3, 1]},
                           True: {"I": [5, 0], "W": [4, 1], "O": [1, 1, 3]}}


@pytest.mark.parametrize("l1_bits, size, orders", [(943_718, 256, [[["D2", 8], ["D1", 8], ["D0", 32], ["D2", 4],
                                                                    ["D1", 4]]]),
                                                   (8_000, 32, ORDERS), (20_000, 32, ORDERS)])
def test_the_double_buffered_allocation_equals_zigzags_own(tmp_path: Path, l1_bits: int, size: int,
                                                           orders: list) -> None:
    """With ``force_double_buffering`` on l1 (as shipped), the importer's cuts equal ZigZag's own, and differ
    from those of the same files without it on every order (20,000 bits: ORDERS[1] and [2] keep the whole
    input, counted once)."""
    hw, wl, mp = _files(tmp_path, l1_bits, size, orders, double=True)
    theirs = _zigzag(hw, wl, mp, tmp_path)
    core, ops = _imported(hw, wl)
    (tmp_path / "single").mkdir()
    single, _ = _imported(*_files(tmp_path / "single", l1_bits, size, orders)[:2])
    data = yaml.safe_load(mp.read_text())
    for op in ops:
        ours = zigzag_allocation(data, str(mp), op, core)
        assert ours == theirs[op.name]
        assert ours != zigzag_allocation(data, str(mp), op, single)


def test_the_allocation_equals_zigzags_own(tmp_path: Path) -> None:
    """ZigZag (its Python at $DNNMAP_ZIGZAG_PYTHON, default /work/zzvenv) allocates each order of ORDERS on a
    small l1; the importer's per-operand cuts are ZigZag's, and the imported mapping's tile of every operand
    at every memory is the product of the loops ZigZag puts at or below that memory, except where the mapping
    notes that a dimension looped on both sides of the operand's cut within one level became one loop
    (ORDERS[1] and ORDERS[2]: the weights' cut in l1 falls between two D1 2 loops)."""
    hw, wl, mp = _files(tmp_path, 8_000, 32, ORDERS)
    theirs = _zigzag(hw, wl, mp, tmp_path)
    core, ops = _imported(hw, wl)
    data = yaml.safe_load(mp.read_text())
    uneven = straddled = 0
    for op, order in zip(ops, ORDERS):
        ours = zigzag_allocation(data, str(mp), op, core)
        assert ours == theirs[op.name], (op.name, order)
        m = zigzag_mapping(data, str(mp), op, core)
        uneven += m.placed
        for tensor, counts in ours.items():
            kept = [i for i, lv in enumerate(core.spec.levels[:-1]) if op.tensor(tensor).role in lv.keeps]
            for level, cut in zip(kept, [sum(counts[:k + 1]) for k in range(len(counts))]):
                want = {d: math.prod(f for x, f in order[:cut] if x == d) * math.prod(
                    lm.s(d) for lm in m.levels[:level + 1]) for d in op.dim_names}
                noted = any(n.startswith(f"{tensor} in {core.spec.levels[level].name}:") for n in m.notes)
                assert (_tile(m, level, tensor, op.dim_names) == want) is not noted, (op.name, tensor, level)
                straddled += noted
    assert uneven == len(ORDERS) and straddled == 2


def test_strided_windows_are_sized_as_zigzag_sizes_them(tmp_path: Path) -> None:
    """Stride-2 3x3 convolutions (ResNet-18's Layer8 shape) on tpu_like with a 16,384-bit SRAM: ZigZag sizes an
    input tile by its distinct rows and columns (4 outputs at stride 2 and 1 tap: 4 rows, the interval hull
    7); with the hull two of these three orders would cut the input elsewhere. The cuts equal ZigZag's."""
    orders = [[["OX", 4], ["OY", 7], ["FX", 3], ["OY", 4], ["FY", 3], ["OX", 7], ["C", 2], ["K", 4]],
              [["OX", 4], ["OY", 4], ["FX", 3], ["FY", 3], ["OX", 7], ["OY", 7], ["C", 2], ["K", 4]],
              [["OX", 7], ["FX", 3], ["OY", 7], ["FY", 3], ["OX", 4], ["OY", 4], ["C", 2], ["K", 4]]]
    hw = yaml.safe_load((FIX / "hardware" / "tpu_like.yaml").read_text())
    hw["memories"]["sram_2MB"]["size"] = 16_384
    layer = {"operator_type": "Conv", "equation": "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
             "dimension_relations": ["ix=2*ox+1*fx", "iy=2*oy+1*fy"],
             "loop_dims": ["B", "K", "C", "OY", "OX", "FY", "FX"], "loop_sizes": [1, 128, 64, 28, 28, 3, 3],
             "operand_precision": {"W": 8, "I": 8, "O": 16, "O_final": 8}}
    spatial = {"D1": ["K, 32"], "D2": ["C, 32"]}
    data = [{"name": f"conv{i}", "spatial_mapping": spatial, "temporal_ordering": o} for i, o in enumerate(orders)]
    paths = tmp_path / "hw.yaml", tmp_path / "wl.yaml", tmp_path / "mp.yaml"
    layers = [{**layer, "id": i, "name": f"conv{i}", "operand_source": {"I": i}} for i in range(len(orders))]
    for path, content in zip(paths, (hw, layers, [*data, {"name": "default", "spatial_mapping": spatial}])):
        path.write_text(yaml.safe_dump(content, sort_keys=False))
    theirs = _zigzag(*paths, tmp_path)
    core, ops = _imported(*paths[:2])
    assert {op.name: zigzag_allocation(data, "inline", op, core) for op in ops} == theirs


@pytest.mark.parametrize("order", [ORDERS[0], ORDERS[3], ORDERS[4]])
def test_an_imported_placed_mapping_costs_what_the_simulator_counts(tmp_path: Path, order: list) -> None:
    """The per-operand reading of a 32^3 GEMM on a 12,000-bit l1 is a placed mapping whose every count and
    energy equal the reference simulator's; the one-boundary reading of the same file is another mapping, and
    costs more here (its l1 boundary must fit all three tiles, so it sits at the smallest operand's cut)."""
    hw, wl, mp = _files(tmp_path, 12_000, 32, [order])
    core, (op,) = _imported(hw, wl)
    data = yaml.safe_load(mp.read_text())
    m = zigzag_mapping(data, str(mp), op, core)
    shared = zigzag_mapping(data, str(mp), op, core, shared_boundary=True)
    assert m.placed and m.levels != shared.levels
    cost = CostModel(op, core.spec).evaluate(MappingBatch.from_mappings(op, core.spec, [m, shared]))
    sim = simulate(op, core.spec, m)
    assert sim.output_matches
    for li, lv in enumerate(core.spec.levels):
        for ti, t in enumerate(op.tensors):
            got = sim.count(lv.name, t.name)
            assert [cost.counts[k][0, li, ti] for k in ("reads", "fills", "updates", "drains")] == \
                [got.reads, got.fills, got.updates, got.drains], (lv.name, t.name)
    assert cost.energy[0] == pytest.approx(sim_metrics(sim, op, core.spec, m).energy, rel=1e-12)
    assert cost.valid.all() and cost.energy[0] < cost.energy[1]


def test_an_operand_memory_below_another_operands_keeps_the_loops_under_its_cut() -> None:
    """tpu_like's weight register rf_128B lies below the output register rf_2B in dnnmap's chain. Under ZigZag's
    own LOMA mapping of ResNet-18's Layer2 (K 32 x C 32 unrolled; C 2, FY 3, FX 3, OY 56, OX 56, K 2) ZigZag
    gives the weights all six loops in rf_128B and the outputs C, FY, FX in rf_2B (as the benchmark's ZigZag
    run reports it); dnnmap's rf_128B keeps the three under rf_2B's cut, and the mapping notes it. OY and OX
    do not index the weights, so each weight is still read from DRAM once."""
    work = load_zigzag_workload(FIX / "workload" / "resnet18.yaml")
    core = arch_from_zigzag(yaml.safe_load((FIX / "hardware" / "tpu_like.yaml").read_text()), "tpu_like.yaml",
                            word_bits=common_precision(work)[0], final_output_bits=final_output_bits(work))
    op = work.network.layers[1].op
    data = [{"name": "default", "spatial_mapping": {"D1": ["K, 32"], "D2": ["C, 32"]},
             "temporal_ordering": [["C", 2], ["FY", 3], ["FX", 3], ["OY", 56], ["OX", 56], ["K", 2]]}]
    assert zigzag_allocation(data, "inline", op, core) == {"W": [6, 0], "I": [6, 0], "O": [3, 3, 0]}
    m = zigzag_mapping(data, "inline", op, core)
    assert m.levels[0].order == ("FX", "FY", "C") and not m.placed
    assert m.notes[1:] == ("W in rf_128B: ZigZag keeps the 6 innermost loops there, dnnmap 3: rf_2B lies above it "
                           "and keeps 3 for its operands",)
    cost = CostModel(op, core.spec).evaluate(MappingBatch.from_mappings(op, core.spec, [m]))
    w = next(i for i, t in enumerate(op.tensors) if t.name == "W")
    assert cost.counts["reads"][0, core.spec.level_index("dram"), w] == math.prod(op.tensor_shape("W"))


def test_cli_writes_placed_mappings_and_shared_boundary_switch(tmp_path: Path) -> None:
    """`import-arch zigzag --mapping` writes the per-operand placement into the mapping files; with
    `--shared-boundary` the same files without it; misuse of the switch exits 2."""
    hw, wl, mp = _files(tmp_path, 12_000, 32, ORDERS[:1])
    runner = CliRunner()
    for flag, placed in (([], True), (["--shared-boundary"], False)):
        out = tmp_path / ("shared" if flag else "placed")
        result = runner.invoke(app, ["import-arch", "zigzag", str(hw), "--workload", str(wl), "--mapping", str(mp),
                                     "-o", str(out / "arch.yaml"), *flag])
        assert result.exit_code == 0, result.output
        m, _, _ = load_mapping_file(next((out / "mp.mappings").glob("*.yaml")))
        assert m.placed is placed
    misuse = runner.invoke(app, ["import-arch", "zigzag", str(hw), "--shared-boundary", "-o", str(tmp_path / "a.yaml")])
    assert misuse.exit_code == 2 and "--shared-boundary applies to the mappings of --mapping" in misuse.output
    timeloop = runner.invoke(app, ["import-arch", "timeloop", str(hw), "--shared-boundary", "-o", str(tmp_path / "t")])
    assert timeloop.exit_code == 2 and "--shared-boundary is an option of zigzag" in timeloop.output


@pytest.mark.parametrize("edit, words", [
    (lambda e: e.update(temporal_ordering=[["D0", 2], ["D9", 2]]), ["[0].temporal_ordering[1]", "[DIM, size]"]),
    (lambda e: e.update(temporal_ordering=[["D0", -2], ["D0", -2], ["D1", 4], ["D2", 4]]),
     ["[0].temporal_ordering[0]", "a loop's size must be >= 1, got -2"]),
    (lambda e: e.update(temporal_ordering=[["D0", "x"]] * 3), ["[0].temporal_ordering[0]", "cannot evaluate 'x'"]),
    (lambda e: e.update(temporal_ordering=[["D0", 2]]), ["[0].temporal_ordering", "its D0 loops cover 2 x 8 (unrolled) of 32"]),
    (lambda e: e.update(spatial_mapping={"D1": ["D0 8"]}), ["[0].spatial_mapping.D1[0]", "'DIM, factor'"]),
    (lambda e: e.update(memory_operand_links={"O": "O", "W": "I1", "I": "I1"}), ["memory_operand_links"]),
    (lambda e: e.update(name="other"), ["no entry named 'gemm0' or 'default'"]),
])
def test_bad_mapping_files_exit_2_naming_file_and_field(tmp_path: Path, edit, words: list[str]) -> None:
    hw, wl, mp = _files(tmp_path, 12_000, 32, ORDERS[:1])
    entry = yaml.safe_load(mp.read_text())
    edit(entry[0])
    mp.write_text(yaml.safe_dump(entry[:1]))
    for flag in ([], ["--shared-boundary"]):
        result = CliRunner().invoke(app, ["import-arch", "zigzag", str(hw), "--workload", str(wl), "--mapping",
                                          str(mp), "-o", str(tmp_path / "a.yaml"), *flag])
        assert result.exit_code == 2, result.output
        assert "error:" in result.output and str(mp) in result.output and "Traceback" not in result.output
        for w in words:
            assert w in result.output, result.output
