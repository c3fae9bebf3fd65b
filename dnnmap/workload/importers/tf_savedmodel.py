"""Read a TensorFlow SavedModel directory: pick its serving signature and freeze the variables into constants.

The signature is ``serving_default`` when the model has it (``keras.Model.export`` and
``tf.saved_model.save`` write it), otherwise the model's only signature; with several
and no default, the error names them. Freezing does what
``tensorflow.python.framework.convert_to_constants.convert_variables_to_constants_v2`` does
(inline the function, replace each variable read by a constant) but stops at the
GraphDef: that function's last step, wrapping the GraphDef into a new concrete function,
takes 7 of its 7.5 seconds on ResNet-50 and the importer does not need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnnmap.errors import InputFileError

DEFAULT_SIGNATURE = "serving_default"


@dataclass(frozen=True)
class FrozenSignature:
    """One signature of a SavedModel as a GraphDef whose variables are constants."""

    path: str
    signature: str
    graph_def: Any  # tensorflow GraphDef
    outputs: tuple[str, ...]  # output tensor names ("Identity:0") in graph_def


def first_line(exc: Exception) -> str:
    """The first 300 characters of an exception's message, on one line, for an error message."""
    text = " ".join(str(exc).split())
    return text[:300] if text else type(exc).__name__


def read_savedmodel(tf: Any, path: Path) -> FrozenSignature:
    """Load ``path`` and freeze its serving signature; any failure is an :class:`InputFileError` naming it."""
    if not (path / "saved_model.pb").stat().st_size:
        raise InputFileError(f"{path}: saved_model.pb is empty; expected a TensorFlow SavedModel")
    try:
        loaded = tf.saved_model.load(str(path))
    except Exception as exc:  # tensorflow raises OSError, DecodeError, ValueError... for broken directories
        raise InputFileError(f"{path}: cannot load the TensorFlow SavedModel (empty, truncated or not a "
                             f"SavedModel?): {first_line(exc)}") from exc
    name = _signature_name(path, sorted(getattr(loaded, "signatures", {}) or {}))
    function = loaded.signatures[name]
    try:
        graph_def = _frozen_graph_def(function)
    except Exception as exc:  # tensorflow raises for functions it cannot inline (e.g. unsupported control flow)
        raise InputFileError(f"{path}: cannot freeze the variables of signature {name!r}: {first_line(exc)}") from exc
    return FrozenSignature(str(path), name, graph_def, tuple(t.name for t in function.outputs))


def _signature_name(path: Path, names: list[str]) -> str:
    if DEFAULT_SIGNATURE in names:
        return DEFAULT_SIGNATURE
    if len(names) == 1:
        return names[0]
    if not names:
        raise InputFileError(f"{path}: the SavedModel has no signatures; export it with one (Keras: "
                             "model.export(dir); TensorFlow: tf.saved_model.save(module, dir, signatures=fn))")
    raise InputFileError(f"{path}: the SavedModel has {len(names)} signatures ({', '.join(names)}) and none named "
                         f"{DEFAULT_SIGNATURE!r}; export it with the one to import as {DEFAULT_SIGNATURE!r}")


def _frozen_graph_def(function: Any) -> Any:
    """The first two steps of ``convert_variables_to_constants_v2(function)``: its GraphDef with constants."""
    from tensorflow.python.framework import convert_to_constants

    data = convert_to_constants._FunctionConverterDataInEager(func=function, lower_control_flow=True,
                                                               aggressive_inlining=False)
    graph_def, _ = convert_to_constants._replace_variables_by_constants(converter_data=data)
    return graph_def
