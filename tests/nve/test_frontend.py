"""XML DSL parsing, layer fitting, encoding round trips, output directory handling and fusion outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnnmap.errors import DnnmapError, InputFileError, MappingError
from dnnmap.targets.nve import CompileResult, compile_network, load_nve_network, run_compiled
from dnnmap.targets.nve.compiler import CompiledLayer, build_program, compile_layer
from dnnmap.targets.nve.encoding import decode_program, encode_program
from dnnmap.targets.nve.layers import ConvLayer, network_layers
from dnnmap.targets.nve.spec import NveSpec, load_spec
from dnnmap.targets.nve.xml_dsl import parse_xml
from dnnmap.workload import zoo
from dnnmap.workload.builder import NetworkBuilder

NETWORKS = Path(__file__).parents[2] / "dnnmap" / "targets" / "nve" / "networks"

LISTING1 = """<?xml version="1.0" encoding="UTF-8"?>
<convNetDescriptor name="Face Detector" layerCount="1">
  <layerDescriptor idx="0">
    <outHeight>358</outHeight>
    <outWidth>638</outWidth>
    <kernelHeight>6</kernelHeight>
    <kernelWidth>6</kernelWidth>
    <subHeight>2</subHeight>
    <subWidth>2</subWidth>
    <outCount>4</outCount>
    <outNet idx="0" cnt="1">0</outNet>
    <outNet idx="1" cnt="1">0</outNet>
    <outNet idx="2" cnt="1">0</outNet>
    <outNet idx="3" cnt="1">0</outNet>
  </layerDescriptor>
</convNetDescriptor>
"""


def test_listing1_is_face_layer1() -> None:
    net = parse_xml(LISTING1, "listing1.xml")
    assert net.layers[0] == zoo.get("nve_face").layers[0]
    assert net.inputs == (("input", (1, 1, 720, 1280)),)


def test_thesis_xml_files_parse_to_the_zoo_networks() -> None:
    face = load_nve_network(NETWORKS / "face.xml")
    speed = load_nve_network(NETWORKS / "speed.xml", frame_hw=(720, 1280))
    assert face.layers == zoo.get("nve_face").layers
    assert speed.layers == zoo.get("nve_speed").layers


@pytest.mark.parametrize(("mutation", "message"), [
    (lambda s: s.replace("</convNetDescriptor>", ""), "malformed XML"),
    (lambda s: s.replace("<kernelWidth>6</kernelWidth>", ""), "missing <kernelWidth>"),
    (lambda s: s.replace('cnt="1">0</outNet>\n    <outNet idx="1"', 'cnt="2">0</outNet>\n    <outNet idx="1"'),
     "cnt=2 but 1 input maps"),
    (lambda s: s.replace('<outNet idx="3" cnt="1">0', '<outNet idx="3" cnt="1">1'), "input map 1 does not exist"),
    (lambda s: s.replace("<outCount>4</outCount>", "<outCount>5</outCount>"), "outCount=5"),
    (lambda s: s.replace("<subHeight>2</subHeight>", "<subHeight>two</subHeight>"), "<subHeight>: expected"),
    (lambda s: s.replace('layerCount="1"', 'layerCount="2"'), "layerCount=2"),
])
def test_malformed_xml_names_the_problem(mutation, message: str) -> None:
    with pytest.raises(InputFileError, match=message) as e:
        parse_xml(mutation(LISTING1), "bad.xml")
    assert "bad.xml" in str(e.value)


def test_layers_that_do_not_fit_are_named_with_the_reason(tmp_path: Path) -> None:
    b = NetworkBuilder("mixed", (1, 3, 40, 40))
    b.conv("ok", 4, 3)
    b.conv("tall", 4, (9, 3))
    b.conv("stride3", 4, 3, stride=3)
    b.pool("pool", 2)
    b.conv("dilated", 4, 3, dilation=2)
    net = b.build()
    with pytest.raises(MappingError) as e:
        compile_network(net, tmp_path / "out")
    msg = str(e.value)
    for name, why in [("tall", "kernel height 9"), ("stride3", "subsample 3x3"), ("pool", "pool_max"),
                      ("dilated", "dilation")]:
        assert f"'{name}'" in msg and why in msg
    assert "'ok'" not in msg
    assert not (tmp_path / "out").exists()  # nothing written half-way
    result = compile_network(net, tmp_path / "out", skip_unsupported=True)
    assert [c.layer.name for c in result.layers] == ["ok"] and len(result.skipped) == 4
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["skipped"][0]["layer"] == "tall"
    assert run_compiled(tmp_path / "out").bit_exact


def test_dense_and_depthwise_convolutions_map_to_connections(spec: NveSpec) -> None:
    b = NetworkBuilder("dw", (1, 4, 20, 20))
    b.conv("dense", 3, 3, padding=1)
    b.depthwise("dw", 3)
    layers, _ = network_layers(b.build(), spec)
    assert layers[0].connections == ((0, 1, 2, 3),) * 3
    assert layers[1].connections == ((0,), (1,), (2,))


def test_output_directory_is_replaced_atomically(tmp_path: Path) -> None:
    out = tmp_path / "o"
    compile_network(_listing1_file(tmp_path), out, opt_level=2)
    first = (out / "manifest.json").read_text()
    compile_network(_listing1_file(tmp_path), out, opt_level=3)
    assert json.loads((out / "manifest.json").read_text())["opt_level"] == 3 and first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l1.xml", "o"]  # no temporary directories left
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(DnnmapError, match="refusing to overwrite"):
        compile_network(_listing1_file(tmp_path), foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"


def _listing1_file(tmp: Path) -> Path:
    p = tmp / "l1.xml"
    p.write_text(LISTING1)
    return p


def test_encoding_round_trip_and_errors(filter3x3: ConvLayer, spec: NveSpec) -> None:
    cp = build_program(filter3x3, (0,), spec, 2)
    data = encode_program(cp.program, spec)
    assert decode_program(data) == cp.program
    assert len(data) == 33 + 8 + cp.program.size * 11  # 33-byte header, one mode, 88-bit instructions
    with pytest.raises(InputFileError, match="not an NVE program"):
        decode_program(b"XXXX" + data[4:], "p.nveb")
    with pytest.raises(InputFileError, match="expected 19 instructions"):
        decode_program(data[:-3], "p.nveb")


def test_spec_file_errors(tmp_path: Path) -> None:
    p = tmp_path / "spec.yaml"
    p.write_text("instruction_buffer_size: 300\n")
    assert load_spec(p).instruction_buffer_size == 300
    p.write_text("instruction_bufer_size: 300\n")
    with pytest.raises(InputFileError, match="instruction_bufer_size"):
        load_spec(p)


def test_fusion_outcome_matches_the_thesis(face: CompileResult, speed: list[CompiledLayer], spec: NveSpec) -> None:
    """Speed L3 cannot be fused under the instruction buffer, L1/L2 can; face L3 has no shared inputs."""
    l1, l2, l3, _ = speed
    assert len(l3.programs) == 80
    pair = build_program(l3.layer.with_out_hw(16, 4), (0, 1), spec, 2)
    assert pair.program.size > spec.instruction_buffer_size >= l3.programs[0].program.size
    assert len(l1.programs) == 1
    assert len(l2.programs) < 16
    assert len(face.layers[2].programs) == 14
    for cl in (l3, l2):
        assert all(cp.program.size <= spec.instruction_buffer_size for cp in cl.programs)


def test_capacity_errors(filter3x3: ConvLayer) -> None:
    with pytest.raises(MappingError, match="instruction buffer holds 10"):
        compile_layer(filter3x3, NveSpec(instruction_buffer_size=10), 2)
    with pytest.raises(MappingError, match="local_buffer_words"):
        compile_layer(ConvLayer("big", 80, (tuple(range(80)),), (3, 3), (1, 1), (16, 4)),
                      NveSpec(local_buffer_words=256), 0)


def test_zoo_network_partly_fits(tmp_path: Path) -> None:
    """LeNet-5: pooling does not fit, fc1 (400 inputs) exceeds the instruction buffer; the rest runs."""
    res = compile_network("lenet5", tmp_path / "l", skip_unsupported=True)
    skipped = dict(res.skipped)
    assert list(skipped) == ["pool1", "pool2", "fc1"]
    assert "pool_avg" in skipped["pool1"] and "instruction buffer holds 512" in skipped["fc1"]
    assert [c.layer.name for c in res.layers] == ["conv1", "conv2", "fc2", "fc3"]
    sim = run_compiled(tmp_path / "l", cols=4)
    assert sim.bit_exact, sim.summary()
