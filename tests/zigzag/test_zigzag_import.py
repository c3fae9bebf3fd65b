"""`dnnmap import-arch zigzag`: ZigZag's shipped hardware, workload and mapping files (copied unedited into
fixtures/, each citing its source) import or are refused naming the construct; energies per word are ZigZag's
per-access costs at the port's width; imported specs map ResNet-18 layers; bad files exit 2 naming file and field."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dnnmap.arch.spec import load_arch
from dnnmap.arch.zigzag import import_zigzag_arch
from dnnmap.cli.main import app
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import InputFileError
from dnnmap.fileio import load_data
from dnnmap.mapping.io import load_mapping_file
from dnnmap.mapping.zigzag_map import zigzag_mapping
from dnnmap.search.network import map_layer
from dnnmap.workload import zoo
from dnnmap.workload.importers import load_network
from dnnmap.workload.importers.zigzag_workload import (
    common_precision,
    final_output_bits,
    load_zigzag_workload,
)

FIX = Path(__file__).parent / "fixtures"
HW, WL, MP = FIX / "hardware", FIX / "workload", FIX / "mapping"
runner = CliRunner()

SHIPPED = {  # file -> None (imports) or the construct its refusal names
    "tpu_like": None, "eyeriss_like": None, "tesla_npu_like": None, "gemm_l1": None, "gemm_l1_l3": None,
    "generic_array_cacti": None, "edge_tpu_like": None, "meta_prototype": None,
    "ascend_like": None, "aimc": None, "dimc": None,
}


def run(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def test_every_shipped_hardware_file_is_listed() -> None:
    assert {p.stem for p in HW.glob("*.yaml")} == set(SHIPPED)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_hardware_imports_or_names_the_construct(name: str) -> None:
    refusal = SHIPPED[name]
    if refusal is None:
        core = import_zigzag_arch(HW / f"{name}.yaml")
        oa = load_data(HW / f"{name}.yaml", duplicates=[])["operational_array"]
        assert core.spec.num_macs == math.prod(oa["sizes"])
        assert [lv.name for lv in core.spec.levels][-1] in load_data(HW / f"{name}.yaml", duplicates=[])["memories"]
    else:
        with pytest.raises(InputFileError, match=refusal):
            import_zigzag_arch(HW / f"{name}.yaml")


# file, its mapping file, the array sizes of D2 (output register's) and D3 x D4 (weight register's)
PER_OPERAND_REGISTERS = [("edge_tpu_like", "edge_tpu_like", 8, 16), ("meta_prototype", "meta_prototype_like", 2, 16),
                         ("ascend_like", "ascend_like", 16, 4)]


@pytest.mark.parametrize("name, mapping, d2, d34", PER_OPERAND_REGISTERS)
def test_registers_serving_different_dimensions_per_operand(name: str, mapping: str, d2: int, d34: int) -> None:
    """The weight register serves D3 x D4 and the output register D2, neither set within the other: the
    output register goes below with D2's fan-out, the weight register above it stands for the d2 copies
    ZigZag has of it, and under ZigZag's mapping (C over D2, OX x OY over D3 x D4) each ZigZag register is
    read once per step: weight reads are MACs / (D3 x D4), output updates MACs / D2."""
    wl = load_zigzag_workload(WL / "resnet18.yaml")
    core = import_zigzag_arch(HW / f"{name}.yaml", word_bits=common_precision(wl)[0])
    spec = core.spec
    rf_o, rf_w = spec.level_index("rf_2B"), spec.level_index("rf_1B")
    assert (rf_o, rf_w) == (0, 1) and spec.levels[rf_o].fanout.size == d2 and spec.levels[rf_w].fanout.size == d34
    assert spec.levels[rf_w].capacity == 8 * d2 and spec.levels[rf_w].read_bandwidth == d2
    assert any(n.startswith("rf_1B (weight): ZigZag has one per position of D2") for n in core.notes)
    op = wl.network.layers[1].op  # conv2_1
    m = zigzag_mapping(load_data(MP / f"{mapping}.yaml"), mapping, op, core)
    cost = CostModel(op, spec).evaluate(MappingBatch.from_mappings(op, spec, [m]))
    w, o = (next(i for i, t in enumerate(op.tensors) if t.role == r) for r in ("weight", "output"))
    assert bool(cost.valid[0])
    assert cost.counts["reads"][0, rf_w, w] == op.macs // d34 and cost.counts["updates"][0, rf_o, o] == op.macs // d2
    assert bool(map_layer(op, spec, "energy").cost.valid[0])


@pytest.mark.parametrize("name, layer", [("meta_prototype", "conv1"), ("ascend_like", "layer4.0.conv1")])
def test_default_mapper_maps_where_a_one_word_register_idles_the_fan_out_below(name: str, layer: str) -> None:
    """The default mapper (Sunstone on these spaces) maps the layers where its pruning used to leave no
    legal mapping while random sampling found one: meta_prototype's one-word output register over a
    fan-out of 2 that conv1's C 3, R 7, S 7 do not divide (every maximal unrolling overfilled it), and on
    both a level that bypasses a tensor (the input SRAM, the output SRAM) taking a tile of it too large
    for a level two or more up (the input/output SRAM; the weight SRAM)."""
    wl = load_zigzag_workload(WL / "resnet18.yaml")
    spec = import_zigzag_arch(HW / f"{name}.yaml", word_bits=common_precision(wl)[0]).spec
    found = map_layer(zoo.get("resnet18").layer(layer).op, spec)
    assert found.mapper == "sunstone" and bool(found.cost.valid[0])


def test_a_level_shared_by_operands_with_different_dimensions_below_is_refused(tmp_path: Path) -> None:
    """A memory holding weights and outputs whose weights have D2 served below them (by another operand's
    register) but whose outputs do not cannot be one level: refused, naming the memory."""
    port = "[{name: p, type: read_write, bandwidth_min: 8, bandwidth_max: 8}]"
    text = f"""name: split
memories:
  rf_w: {{size: 8, r_cost: 1, w_cost: 1, operands: [I2], ports: {port}, served_dimensions: [D1]}}
  rf_o: {{size: 8, r_cost: 1, w_cost: 1, operands: [O], ports: {port}, served_dimensions: [D2]}}
  shared: {{size: 800, r_cost: 1, w_cost: 1, operands: [I2, O], ports: {port}, served_dimensions: [D1, D3]}}
  dram: {{size: 8000, r_cost: 1, w_cost: 1, operands: [I1, I2, O], ports: {port}, served_dimensions: [D1, D2, D3]}}
operational_array: {{unit_energy: 0.1, dimensions: [D1, D2, D3], sizes: [2, 2, 2]}}
"""
    path = tmp_path / "split.yaml"
    path.write_text(text)
    with pytest.raises(InputFileError, match="memories.shared.served_dimensions.*do not nest for one level"):
        import_zigzag_arch(path)


def test_tpu_like_energies_are_per_access_of_the_ports_width() -> None:
    spec = import_zigzag_arch(HW / "tpu_like.yaml").spec
    sram, dram = spec.levels[spec.level_index("sram_2MB")], spec.dram
    assert sram.energy_of("input", "read") == pytest.approx(416.16 * 8 / 2048)  # not per 64-bit access
    assert sram.energy_of("output", "read") == pytest.approx(416.16 * 16 / 2048)
    assert sram.energy_of("output", "update") == pytest.approx(378.4 * 16 / 2048)
    assert dram.energy_of("weight", "fill") == pytest.approx(750 * 8 / 64)
    assert spec.levels[0].energy_of("weight", "read") == pytest.approx(0.095)
    assert sram.fanout is not None and sram.fanout.shape == (32, 32)
    assert sram.capacity == 16777216 and sram.capacity_unit == "bits"
    assert set(spec.levels[0].keeps) == {"weight"} and set(sram.keeps) == {"input", "output"}


def test_a_single_lane_register_charges_whole_accesses() -> None:
    """Eyeriss-like rf_16B moves one 16-bit partial sum through a 24-bit port: ZigZag charges a whole access."""
    spec = import_zigzag_arch(HW / "eyeriss_like.yaml").spec
    assert spec.levels[spec.level_index("rf_16B")].energy_of("output", "read") == pytest.approx(1.5)
    shared = spec.levels[spec.level_index("sram_8KB")]
    assert shared.energy_of("output", "read") == pytest.approx(10.0 * 16 / 128)
    assert shared.fanout is not None and shared.fanout.shape == (14, 12)


def test_workload_layers_and_precisions() -> None:
    wl = load_zigzag_workload(WL / "resnet18.yaml")
    ops = [layer.op for layer in wl.network.layers]
    assert len(ops) == 21 and len(wl.notes) == 10  # 20 convolutions and the classifier; pooling and adds skipped
    conv1 = ops[0]
    assert conv1.bounds == {"B": 1, "K": 64, "C": 3, "OY": 112, "OX": 112, "FY": 7, "FX": 7}
    assert conv1.tensors[1].shape(conv1.bounds) == (1, 3, 229, 229)  # ix = 2*ox + fx
    assert common_precision(wl)[0] == {"input": 8, "weight": 8, "output": 16} and final_output_bits(wl) == 8
    gemm = load_zigzag_workload(WL / "gemm_layer.yaml").network.layers[0].op
    assert gemm.macs == 128 ** 3 and common_precision(load_zigzag_workload(WL / "gemm_layer.yaml"))[0]["output"] == 32


def test_imported_core_maps_a_resnet18_layer_and_zigzags_mapping_is_valid() -> None:
    wl = load_zigzag_workload(WL / "resnet18.yaml")
    core = import_zigzag_arch(HW / "tpu_like.yaml", word_bits=common_precision(wl)[0])
    op = wl.network.layers[1].op  # conv2_1: 64 -> 64, 56x56, 3x3
    m = zigzag_mapping(load_data(MP / "tpu_like.yaml"), "tpu_like.yaml", op, core)
    sram = core.spec.level_index("sram_2MB")
    assert dict(m.levels[sram].spatial) == {"K": 32, "C": 32}
    assert dict(m.levels[sram].spatial_axis) == {"K": 0, "C": 1}
    theirs = CostModel(op, core.spec).evaluate(MappingBatch.from_mappings(op, core.spec, [m]))
    assert bool(theirs.valid[0])
    ours = map_layer(op, core.spec, "energy")
    assert ours.cost.valid and 0 < ours.cost.energy <= float(theirs.energy[0]) * 1.0001


def test_a_layer_a_small_sample_cannot_map_is_refused_saying_what_to_try(tmp_path: Path) -> None:
    """docs/zigzag.md: on meta_prototype conv1 (its C 3, R 7, S 7 do not divide D2 = 2) few mappings are legal;
    the default mapper maps it from the command line, and a random sample too small to hit one is refused with
    the layer named and what to change, without a traceback."""
    arch = tmp_path / "meta.yaml"
    assert run("import-arch", "zigzag", HW / "meta_prototype.yaml", "-o", arch).exit_code == 0
    mapped = run("map", "resnet18", "--arch", arch, "--layers", "conv1")
    assert mapped.exit_code == 0, mapped.output
    assert "1 layer:" in mapped.stdout
    refused = run("map", "resnet18", "--arch", arch, "--layers", "conv1", "--mapper", "random", "--budget", "1")
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "layer 'conv1': no legal mapping found on 'meta_prototype'" in refused.stderr
    assert "raise --budget" in refused.stderr


def test_unrolling_that_does_not_divide_pads_the_temporal_loop() -> None:
    """ZigZag's conv1 entry unrolls C by 32 on a layer with 3 channels: clipped to 3, as ZigZag clips it."""
    wl = load_zigzag_workload(WL / "resnet18.yaml")
    core = import_zigzag_arch(HW / "eyeriss_like.yaml", word_bits=common_precision(wl)[0])
    data = [{"name": "default", "spatial_mapping": {"D1": ["K, 14"], "D2": ["OY, 12"]}}]
    op = wl.network.layers[1].op  # K 64 = 4.57 x 14, OY 56 = 4.67 x 12
    m = zigzag_mapping(data, "inline", op, core)
    assert m.total("K") == 14 * 5 and m.total("OY") == 12 * 5
    conv1 = zigzag_mapping(load_data(MP / "tpu_like.yaml"), "tpu_like.yaml", wl.network.layers[0].op,
                           import_zigzag_arch(HW / "tpu_like.yaml"))
    assert dict(conv1.levels[2].spatial) == {"C": 3, "K": 32}


def test_cli_writes_spec_network_and_mappings(tmp_path: Path) -> None:
    out = tmp_path / "arch.yaml"
    result = run("import-arch", "zigzag", HW / "tpu_like.yaml", "--workload", WL / "resnet18.yaml",
                 "--mapping", MP / "tpu_like.yaml", "-o", out, "--clock-mhz", "700")
    assert result.exit_code == 0, result.output
    assert "duplicate key 'ports'" in result.output  # the published file gives the SRAM's ports twice
    spec = load_arch(out)
    assert spec.levels == import_zigzag_arch(HW / "tpu_like.yaml", word_bits={
        "input": 8, "weight": 8, "output": 16}, final_output_bits=8).spec.levels
    # final outputs move at O_final (8 bits) as ZigZag moves them (the spec's final_output_bits scales the
    # words that carry them); energies per word are those of 16-bit partial sums
    assert spec.final_output_bits == 8 and spec.bits_of("output") == 16
    assert spec.dram.energy_of("output", "update") == pytest.approx(750 * 16 / 64)
    assert spec.dram.energy_of("output", "read") == pytest.approx(700 * 16 / 64)
    assert "final outputs (O_final) move at 8 bits" in result.output
    net = load_network(tmp_path / "resnet18.net.yaml")
    files = sorted((tmp_path / "tpu_like.mappings").glob("*.yaml"))
    assert len(files) == len(net.layers) == 21
    m, op, _ = load_mapping_file(files[1])
    assert op is not None and op.name == net.layers[1].name and m.total("K") == 64


BAD_HW = """name: bad
memories:
  rf:
    size: 8
    r_cost: 0.1
    w_cost: 0.1
    operands: [I2]
    ports:
      - {name: p, type: read_write, bandwidth_min: 8, bandwidth_max: 8, allocation: [I2, tl]}
    served_dimensions: [D9]
  dram:
    size: 100
    r_cost: 1
    w_cost: 1
    operands: [I1, I2, O]
    ports: [{name: p, type: read_write, bandwidth_min: 8, bandwidth_max: 8}]
    served_dimensions: [D1]
operational_array: {unit_energy: 0.1, dimensions: [D1], sizes: [4]}
"""


@pytest.mark.parametrize("text, words", [
    (BAD_HW.replace("[D9]", "[]"), ["memories.rf.ports[0].allocation[0]", "OPERAND, DIRECTION"]),
    (BAD_HW.replace("[I2, tl]", "['I2, tl']"), ["memories.rf.served_dimensions", "D9"]),
    (BAD_HW.replace("r_cost: 0.1", "r_cost: -1").replace("[I2, tl]", "['I2, tl']").replace("[D9]", "[]"),
     ["memories.rf", "r_cost and w_cost must be >= 0"]),
    (BAD_HW.replace("operational_array: {", "operational_array: {is_imc: true, "), ["imc_type", "analog"]),
    *[(BAD_HW.replace("[I2, tl]", "['I2, tl']").replace("[D9]", "[]\n    force_double_buffering: " + value),
       ["memories.rf.force_double_buffering", f"must be true or false, got {shown}"])
      for value, shown in (('"yes"', "'yes'"), ("-1", "-1"), ("null", "null"), ("1", "1"))],
    ("memories: [1, 2]\n", ["operational_array", "expected a mapping"]),
    ("a: &a [1]\nb: *a\nc: {x: 1, x: 2}\n", ["operational_array"]),
    ("\xff\xfe", ["UTF-8"]),
])
def test_bad_hardware_files_exit_2_naming_file_and_field(tmp_path: Path, text: str, words: list[str]) -> None:
    path = tmp_path / "hw.yaml"
    path.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode())
    result = run("import-arch", "zigzag", path, "-o", tmp_path / "out.yaml")
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and str(path) in result.output and "Traceback" not in result.output
    for w in words:
        assert w in result.output


def test_bad_workload_and_option_misuse_exit_2(tmp_path: Path) -> None:
    wl = tmp_path / "wl.yaml"
    wl.write_text("- {id: 0, equation: 'O[k]+=W[k][q]*I[q]', loop_dims: [K, C], loop_sizes: [4, 4],\n"
                  "   operand_precision: {W: 8, I: 8, O: 16}}\n")
    result = run("import-arch", "zigzag", HW / "tpu_like.yaml", "--workload", wl, "-o", tmp_path / "a.yaml")
    assert result.exit_code == 2 and "[0].equation" in result.output and "'q'" in result.output, result.output
    result = run("import-arch", "zigzag", HW / "tpu_like.yaml", "--mapping", MP / "tpu_like.yaml",
                 "-o", tmp_path / "a.yaml")
    assert result.exit_code == 2 and "--mapping needs --workload" in result.output


def test_tpu_like_preset_is_the_import_of_zigzags_file() -> None:
    """The preset claims ZigZag's tpu_like.yaml as its source: it is that file imported (700 MHz our choice)."""
    preset = load_arch("tpu_like")
    imported = import_zigzag_arch(HW / "tpu_like.yaml", word_bits={"input": 8, "weight": 8, "output": 16},
                                  clock_mhz=700, final_output_bits=8).spec
    assert preset.levels == imported.levels and preset.mac == imported.mac
    assert preset.word_bits == imported.word_bits and preset.clock_mhz == 700
    assert preset.final_output_bits == imported.final_output_bits == 8  # resnet18.yaml's O_final
