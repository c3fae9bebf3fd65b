"""Hostile input: random YAML documents built from Timeloop's vocabulary either import or raise
InputFileError, never another exception."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dnnmap.arch.timeloop import import_timeloop_arch
from dnnmap.errors import InputFileError
from dnnmap.mapping.timeloop_map import load_timeloop_mapping
from dnnmap.workload.importers.timeloop_problem import load_timeloop_problem
from exercises import exercise

KEYS = ["architecture", "version", "subtree", "local", "nodes", "name", "class", "attributes", "depth", "width",
        "word-bits", "datawidth", "n_words", "instances", "meshX", "meshY", "spatial", "entries", "sizeKB",
        "read_bandwidth", "multiple-buffering", "ERT", "tables", "read", "write", "energy", "actions",
        "architecture_constraints", "targets", "target", "type", "keep", "bypass", "factors", "permutation",
        "split", "problem", "shape", "dimensions", "data-spaces", "projection", "read-write", "instance",
        "coefficients", "mapping", "R", "P", "Buffer", "MACC", "Weights", "Inputs", "Outputs"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=True),
                    st.sampled_from(KEYS + ["R3 P16", "RP", "0.2", "depth * 2", "x[0..3]", "1/0", "DRAM", "intmac"]),
                    st.text(max_size=8))
DOCS = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)), max_leaves=25)


def _run(path: Path) -> None:
    ex = exercise("01-ws")
    for attempt in (lambda: import_timeloop_arch([path]), lambda: load_timeloop_problem(path),
                    lambda: load_timeloop_mapping([path], ex.op, ex.arch)):
        try:
            attempt()
        except InputFileError:
            pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.dictionaries(st.sampled_from(["architecture", "problem", "mapping", "ERT", "architecture_constraints",
                                            "mapspace_constraints"]), DOCS, min_size=1, max_size=3))
def test_random_documents_fail_cleanly(tmp_path: Path, doc: dict) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(yaml.safe_dump(doc))
    _run(path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_random_text_fails_cleanly(tmp_path: Path, text: str) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(text)
    _run(path)


def _leaves(node: object, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))] + [path]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))] + [path]
    return [path]


def _replace(node: object, path: tuple, value: object) -> object:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {k: (_replace(v, rest, value) if k == head else v) for k, v in node.items()}
    return [(_replace(v, rest, value) if i == head else v) for i, v in enumerate(node)]  # type: ignore[union-attr]


VALID = {name: yaml.safe_load((Path(__file__).parent / "fixtures" / name).read_text())
         for name in ("eyeriss.arch.yaml", "cnn-layer.prob.yaml", "06-eyeriss.map.yaml", "eyeriss.ert.yaml")}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), name=st.sampled_from(sorted(VALID)))
def test_mutated_fixtures_fail_cleanly(tmp_path: Path, data: st.DataObject, name: str) -> None:
    """A valid file with one field replaced by random data (the eyeriss design, problem and mapping)."""
    doc = VALID[name]
    path = data.draw(st.sampled_from(_leaves(doc)))
    mutated = _replace(doc, path, data.draw(DOCS))
    target = tmp_path / "doc.yaml"
    target.write_text(yaml.safe_dump(mutated))
    ex = exercise("06-eyeriss")
    try:
        if name == "eyeriss.arch.yaml":
            import_timeloop_arch([target, Path(__file__).parent / "fixtures" / "eyeriss.ert.yaml"])
        elif name == "eyeriss.ert.yaml":
            import_timeloop_arch([Path(__file__).parent / "fixtures" / "eyeriss.arch.yaml", target])
        elif name == "cnn-layer.prob.yaml":
            load_timeloop_problem(target)
        else:
            load_timeloop_mapping([target], ex.op, ex.arch)
    except InputFileError:
        pass
