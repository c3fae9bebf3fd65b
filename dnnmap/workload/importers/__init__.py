"""Model import: ONNX, Keras and TensorFlow SavedModel front ends, graph clean-up, and the project's network file.

``load_network(path)`` dispatches on the suffix: ``.onnx`` (ONNX), ``.keras``/``.h5`` (Keras)
or a SavedModel directory (TensorFlow graph; both need the optional extra ``dnnmap[keras]``),
``.yaml``/``.yml``/``.json`` (the project's network file written by :func:`save_network`). ``import_model`` returns
the network together with its :class:`ImportReport`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from dnnmap.errors import InputFileError
from dnnmap.workload.importers.graph import InputShapes, SourceGraph
from dnnmap.workload.importers.graph_cleanup import clean_up
from dnnmap.workload.importers.lowering import lower
from dnnmap.workload.importers.netfile import NETFILE_SUFFIXES, load_netfile, save_network
from dnnmap.workload.importers.report import ImportReport, UnsupportedOperatorsError
from dnnmap.workload.ir import Network
from dnnmap.workload.validate import validate_network

ONNX_SUFFIXES = (".onnx",)
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")


@dataclass(frozen=True)
class ImportResult:
    network: Network
    report: ImportReport


def _is_savedmodel(path: Path) -> bool:
    return path.is_dir() and (path / "saved_model.pb").exists()


def import_model(path: str | os.PathLike[str], input_shapes: InputShapes | None = None,
                 skip_unsupported: bool = False) -> ImportResult:
    """Import a model file; the network's ``notes`` repeat the report's lines."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.exists():
        raise InputFileError(f"{path}: no such file or directory")
    if suffix in NETFILE_SUFFIXES:
        if input_shapes:
            raise InputFileError(f"{path}: --input-shape applies to model files (ONNX, Keras, SavedModel), not to "
                                 "a network file, whose shapes are fixed")
        return ImportResult(load_netfile(path), ImportReport(str(path)))
    if suffix in ONNX_SUFFIXES:
        from dnnmap.workload.importers.onnx_import import SUPPORTED_OPS, load_onnx_graph

        graph, supported, kind = load_onnx_graph(path, input_shapes), SUPPORTED_OPS, "onnx"
    elif suffix in KERAS_SUFFIXES:
        from dnnmap.workload.importers.keras_import import SUPPORTED_LAYERS, load_keras_graph

        graph, supported, kind = load_keras_graph(path, input_shapes), SUPPORTED_LAYERS, "keras"
    elif _is_savedmodel(path):
        from dnnmap.workload.importers.tf_import import SUPPORTED_TF_OPS, load_savedmodel_graph

        graph, supported, kind = load_savedmodel_graph(path, input_shapes), SUPPORTED_TF_OPS, "savedmodel"
    elif path.is_dir():
        raise InputFileError(f"{path}: a directory without saved_model.pb; expected a TensorFlow SavedModel "
                             "directory (keras: model.export(dir)) or a model file")
    else:
        raise InputFileError(
            f"{path}: unknown model format {suffix or '(no suffix)'!r}; expected .onnx, .keras, .h5, a TensorFlow "
            f"SavedModel directory, or a dnnmap network file ({', '.join(NETFILE_SUFFIXES)})")
    return _finish(graph, supported, kind, skip_unsupported)


def _finish(graph: SourceGraph, supported: tuple[str, ...], kind: str, skip_unsupported: bool) -> ImportResult:
    cleaned = clean_up(graph, supported, skip_unsupported)
    network = lower(cleaned.graph, f"{kind}:{Path(graph.path).name}")
    network = replace(network, notes=cleaned.report.lines())
    return ImportResult(validate_network(network, str(graph.path)), cleaned.report)


def import_keras_model(model: object, input_shapes: InputShapes | None = None, skip_unsupported: bool = False,
                       label: str = "keras-model") -> ImportResult:
    """Import an in-memory ``keras.Model`` (``label`` names it in messages and in ``Network.source``)."""
    from dnnmap.workload.importers.keras_import import SUPPORTED_LAYERS, keras_graph

    return _finish(keras_graph(model, label, input_shapes), SUPPORTED_LAYERS, "keras", skip_unsupported)


def load_network(path: str | os.PathLike[str], input_shapes: InputShapes | None = None,
                 skip_unsupported: bool = False) -> Network:
    """The network in ``path`` (model or network file); see :func:`import_model` for the report."""
    return import_model(path, input_shapes, skip_unsupported).network


__all__ = ["ImportReport", "ImportResult", "InputShapes", "UnsupportedOperatorsError", "import_keras_model",
           "import_model", "load_network", "save_network"]
