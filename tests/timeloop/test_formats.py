"""The Timeloop readers on their own: v0.2 and v0.4 architectures, ERT layouts, problems, mapping
directives, and the errors that name file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dnnmap.arch.timeloop import PASS_THROUGH, import_timeloop_arch
from dnnmap.errors import InputFileError
from dnnmap.mapping.timeloop_map import load_timeloop_mapping
from dnnmap.workload.importers.timeloop_problem import load_timeloop_problem
from exercises import FIXTURES, exercise


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_v04_node_list_gives_the_v02_design() -> None:
    v2 = import_timeloop_arch([FIXTURES / "3levelspatial.arch.yaml", FIXTURES / "3level.ert.yaml"]).spec
    v4 = import_timeloop_arch([FIXTURES / "3levelspatial.v4.arch.yaml", FIXTURES / "3levelspatial.v4.ert.yaml"]).spec
    # v0.4: the PE container's fan-out sits on Timeloop's placeholder level above it, which keeps nothing
    placeholder = v4.levels[v4.level_index("inter_PE_spatial")]
    assert placeholder.keeps == () and placeholder.capacity == 0
    assert placeholder.fanout == v2.levels[v2.level_index("GlobalBuffer")].fanout
    rest = [lv for lv in v4.levels if lv.name != "inter_PE_spatial"]
    assert [lv.model_copy(update={"fanout": None}) for lv in rest] == [
        lv.model_copy(update={"fanout": None}) for lv in v2.levels]
    assert v4.mac == v2.mac


def test_imported_levels() -> None:
    spec = exercise("06-eyeriss").arch
    assert [lv.name for lv in spec.levels] == ["PsumRegFile", "WeightRegFile", "InputRegFile", "DummyBuffer",
                                               "GlobalBuffer", "DRAM"]
    glb = spec.levels[spec.level_index("GlobalBuffer")]
    assert (glb.capacity, glb.keeps, glb.read_bandwidth, glb.fanout.shape) == (65536, ("input", "output"), 16, (16,))
    assert glb.fanout.multicast_rule == "identical"
    assert glb.read_energy == pytest.approx(26.493 / 4)  # per word of a 4-word block
    dummy = spec.levels[spec.level_index("DummyBuffer")]
    assert dummy.keeps == () and dummy.fanout.shape == (1, 16)
    assert spec.dram.capacity is None and spec.num_macs == 256


def test_one_level_design_gets_an_empty_inner_level() -> None:
    imported = import_timeloop_arch([FIXTURES / "1level.arch.yaml", FIXTURES / "1level.ert.yaml"])
    assert [lv.name for lv in imported.spec.levels] == [PASS_THROUGH, "Buffer"]
    assert imported.spec.levels[0].keeps == ()
    assert any(PASS_THROUGH in note for note in imported.notes)


def test_ert_update_action_and_missing_energies(tmp_path: Path) -> None:
    tables = {"System.PE.Buffer": {"read": {"energy": 1.0}, "write": {"energy": 2.0}, "update": {"energy": 3.0}},
              "System.MainMemory": {"read": {"energy": 10.0}, "write": {"energy": 10.0}},
              "System.PE.MACC": {"mac_random": {"energy": 0.5}}}
    ert = _write(tmp_path, "ert.yaml", {"ERT": {"tables": tables}})
    imported = import_timeloop_arch([FIXTURES / "2level.arch.yaml", ert])
    buf = imported.spec.levels[0]
    assert [buf.energy_of("output", a) for a in ("read", "fill", "update")] == [1.0, 2.0, 3.0]
    assert buf.energy_of("input", "update") == 2.0
    maxed = import_timeloop_arch([FIXTURES / "2level.arch.yaml", ert], "max").spec.levels[0]
    assert {buf_action: maxed.energy_of("output", buf_action) for buf_action in ("read", "fill", "update")} == \
        dict.fromkeys(("read", "fill", "update"), 3.0)
    for missing in ("System.MainMemory", "System.PE.MACC"):  # a truncated ERT is refused, not priced at 0
        partial = _write(tmp_path, "partial.yaml", {"ERT": {"tables": {k: v for k, v in tables.items() if k != missing}}})
        with pytest.raises(InputFileError, match=f"partial.yaml: .*no table for .*{missing.split('.')[-1]}"):
            import_timeloop_arch([FIXTURES / "2level.arch.yaml", partial])
    without = import_timeloop_arch([FIXTURES / "2level.arch.yaml"])  # no ERT at all: notes say what costs 0
    assert any("MainMemory" in n for n in without.notes) and any("MACC" in n for n in without.notes)


def test_problem_coefficients_and_string_projections(tmp_path: Path) -> None:
    prob = _write(tmp_path, "p.yaml", """
problem:
  version: 0.4
  shape:
    name: strided
    dimensions: [C, R, P]
    coefficients: [{name: Wstride, default: 1}]
    data_spaces:
    - {name: Filter, projection: "[ C, R ]"}
    - {name: Act, projection: "[ C, R + Wstride*P ]"}
    - {name: Out, projection: "[ P ]", read_write: true}
  instance: {C: 4, R: 3, P: 5, Wstride: 2}
""")
    op = load_timeloop_problem(prob)
    roles = {t.name: t.role for t in op.tensors}
    assert roles == {"Filter": "weight", "Act": "input", "Out": "output"}
    assert op.tensor("Act").axes[1].terms == (("R", 1), ("P", 2))
    assert op.tensor("Act").shape(op.bounds) == (4, 11)


def test_mapping_split_sends_dimensions_to_y() -> None:
    ex = exercise("06-eyeriss")
    dummy = ex.mapping.levels[ex.arch.level_index("DummyBuffer")]
    assert {d: f for d, f in dummy.spatial if f > 1} == {"K": 2, "C": 2, "S": 3}
    assert dict(dummy.spatial_axis) == {"K": 1, "C": 1, "S": 1}
    glb = ex.mapping.levels[ex.arch.level_index("GlobalBuffer")]
    assert [d for d in glb.full_order(ex.op.dim_names) if glb.t(d) > 1] == ["K", "N", "P"]


@pytest.mark.parametrize("text, fragment", [
    ("architecture: {version: 0.2}", "field 'architecture': expected 'nodes'"),
    ("architecture: {subtree: [{name: S, local: [{name: X, class: XY_NoC}]}]}", "neither storage nor compute"),
    ("architecture: {subtree: [{name: S, local: [{name: B, class: SRAM, attributes: {depth: lots}}, "
     "{name: M, class: intmac}]}]}", "field 'architecture.subtree[0].local[0].attributes.depth'"),
    ("architecture: {subtree: [{name: S, local: [{name: B, class: SRAM, attributes: {depth: 8, "
     "multiple-buffering: 1.5}}, {name: M, class: intmac}]}]}", "whole buffering depths"),
    ("architecture: {nodes: [!Parallel {nodes: [!Container {name: C, spatial: {meshX: 2}}]}]}",
     "field 'architecture.nodes[0].nodes[0]': a !Parallel branch that is a !Container"),
])
def test_arch_errors_name_file_and_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = _write(tmp_path, "arch.yaml", text)
    with pytest.raises(InputFileError) as err:
        import_timeloop_arch([path])
    assert str(path) in str(err.value) and fragment in str(err.value)


@pytest.mark.parametrize("directive, fragment", [
    ({"target": "Nowhere", "type": "temporal", "factors": "R3"}, "has no level 'Nowhere'"),
    ({"target": "Buffer", "type": "temporal", "factors": "X3"}, "cannot read factor 'X3'"),
    ({"target": "Buffer", "type": "temporal", "factors": "R=0"}, "factors >= 1"),
    ({"target": "Buffer", "type": "temporal", "factors": "R3", "permutation": "RR"}, "distinct dimensions"),
    ({"target": "Buffer", "type": "bypass", "keep": ["Psums"]}, "unknown data space"),
    ({"target": "Buffer", "type": "skewed"}, "unknown directive type"),
])
def test_mapping_errors_name_file_and_field(tmp_path: Path, directive: dict, fragment: str) -> None:
    ex = exercise("01-ws")
    path = _write(tmp_path, "map.yaml", {"mapping": [directive]})
    with pytest.raises(InputFileError) as err:
        load_timeloop_mapping([path], ex.op, ex.arch)
    assert f"{path}: field 'mapping[0]" in str(err.value) and fragment in str(err.value)


def test_problem_errors(tmp_path: Path) -> None:
    path = _write(tmp_path, "p.yaml", {"problem": {"shape": "cnn-layer"}})
    with pytest.raises(InputFileError, match="built-in shape"):
        load_timeloop_problem(path)
    path = _write(tmp_path, "q.yaml", {"problem": {"shape": {"dimensions": ["P"], "data-spaces": [
        {"name": "A", "projection": [[["P"]]]}]}, "P": 4}})
    with pytest.raises(InputFileError, match="exactly one data space must be read-write"):
        load_timeloop_problem(path)
