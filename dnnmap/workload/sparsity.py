"""Tensor densities of a workload (docs/sparse.md): the share of non-zero elements of a layer's sparse operand.

A density is a workload property carried on the operator (``Operator.attrs["densities"]``, tensor name ->
density in (0, 1]), so every consumer of an operator - the cost model, the mappers, the simulator - sees the
same value without new arguments. Densities come from ``dnnmap map --density KEY=VALUE`` (KEY a tensor name
or a role), from real weight tensors (:func:`measured_density`, e.g. an ONNX model's initializers), or from
an architecture's default per role (``sparsity.density``, resolved in :mod:`dnnmap.arch.sparsity`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from dnnmap.errors import DnnmapError
from dnnmap.workload.ir import Network, Operator

if TYPE_CHECKING:  # numpy loads with the first measured tensor, not with the density options
    import numpy as np

DENSITIES = "densities"  # the Operator.attrs key
FORWARD_WEIGHTS = "W"  # the weights' tensor name in the zoo's, the importers' and the derived passes' layers
ROLE_ALIASES = {"weight": "weight", "weights": "weight", "input": "input", "inputs": "input",
                "activations": "input"}


def op_densities(op: Operator) -> dict[str, float]:
    """Tensor name -> density given for ``op`` (tensors not listed are dense)."""
    return dict(op.attr(DENSITIES, ()))  # type: ignore[arg-type]


def check_density(value: float, where: str) -> float:
    """``value`` if it is a density (0 < d <= 1), else a DnnmapError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise DnnmapError(f"{where}: a density must be a number in (0, 1] (the share of non-zero elements), "
                          f"got {value!r}")
    return float(value)


def check_tensor_density(op: Operator, name: str, value: float, where: str) -> float:
    """``value`` if it is a density (:func:`check_density`) leaving input tensor ``name`` of ``op`` at least one
    non-zero element (``value >= 1 / elements``), else a DnnmapError naming ``where``."""
    density = check_density(value, where)
    elements = op.tensor(name).size(op.bounds)
    if density < 1.0 / elements:
        raise DnnmapError(f"{where}: density {density!r} leaves fewer than one non-zero of the tensor's {elements} "
                          f"elements; allowed: 1/{elements} ({1.0 / elements:.3g}) to 1")
    return density


def with_densities(op: Operator, densities: Mapping[str, float]) -> Operator:
    """``op`` with ``densities`` (tensor name -> density) added to (overriding) the ones it carries.
    Names must be input tensors of ``op``."""
    inputs = {t.name for t in op.inputs}
    for name, d in densities.items():
        if name not in inputs:
            raise DnnmapError(f"layer {op.name!r}: no input tensor {name!r} to give a density (its inputs: "
                              f"{', '.join(sorted(inputs))}; the output cannot be sparse)")
        check_tensor_density(op, name, d, f"layer {op.name!r}, tensor {name!r}")
    merged = {**op_densities(op), **densities}
    attrs = tuple((k, v) for k, v in op.attrs if k != DENSITIES)
    return replace(op, attrs=(*attrs, (DENSITIES, tuple(sorted(merged.items())))))


def parse_density_options(options: Iterable[str]) -> dict[str, float]:
    """``["weights=0.1", "dO=0.5"]`` -> ``{"weights": 0.1, "dO": 0.5}`` (``--density`` values)."""
    out: dict[str, float] = {}
    for text in options:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise DnnmapError(f"--density {text!r}: expected KEY=VALUE, KEY a tensor name (W, I, dO, ...) or a "
                              f"role ({', '.join(ROLE_ALIASES)}), VALUE in (0, 1]")
        try:
            number = float(value)
        except ValueError:
            raise DnnmapError(f"--density {text!r}: {value!r} is not a number") from None
        density = check_density(number, f"--density {text!r}")
        if out.get(key.strip(), density) != density:
            raise DnnmapError(f"--density {text!r}: {key.strip()} is given twice with different values "
                              f"({out[key.strip()]} and {density})")
        out[key.strip()] = density
    return out


def _alias_targets(op: Operator, role: str) -> list[str]:
    """The input tensors a role alias names in ``op``: those of that role in a forward layer; in a derived
    training pass (docs/ir.md), whose roles are exchanged, only the forward weights ``W`` for ``weight``
    (backward-data keeps them; weight-update's role-weight tensor is the gradient ``dO``, named explicitly)."""
    if op.attr("pass") in (None, "forward"):
        return [t.name for t in op.inputs if t.role == role]
    return [t.name for t in op.inputs if role == "weight" and t.name == FORWARD_WEIGHTS]


def _check_one_key_per_role(densities: Mapping[str, float]) -> None:
    """Refuse two aliases of one role (``weights=0.5`` and ``weight=0.3``) with different values, as a key
    given twice is refused (:func:`parse_density_options`): neither silently wins."""
    seen: dict[str, str] = {}
    for key, d in densities.items():
        role = ROLE_ALIASES.get(key)
        if role is None:
            continue
        first = seen.setdefault(role, key)
        if densities[first] != d:
            raise DnnmapError(f"--density: {first}={densities[first]} and {key}={d} both give the {role} role's "
                              f"density; give it once")


def apply_densities(network: Network, densities: Mapping[str, float]) -> Network:
    """Every layer with the given densities: a key is a tensor name (applied to every layer with such an
    input tensor) or a role alias (``weights``, ``activations``, ...: the layer's input tensor of that role;
    in derived training passes only ``weights``, for the forward weights ``W``: :func:`_alias_targets`).
    A key that names no input tensor of any layer and no role is an error listing the names allowed."""
    if not densities:
        return network
    _check_one_key_per_role(densities)
    names = {t.name for layer in network.layers for t in layer.op.inputs}
    unknown = [k for k in densities if k not in names and k not in ROLE_ALIASES]
    if unknown:
        raise DnnmapError(f"--density: {', '.join(unknown)} names no input tensor of {network.name!r} (its input "
                          f"tensors: {', '.join(sorted(names))}) and no role ({', '.join(ROLE_ALIASES)})")
    layers = []
    for layer in network.layers:
        given: dict[str, float] = {}
        for key, d in densities.items():  # roles first, tensor names override them
            if key in ROLE_ALIASES:
                given.update({name: d for name in _alias_targets(layer.op, ROLE_ALIASES[key])})
        given.update({k: d for k, d in densities.items() if any(t.name == k for t in layer.op.inputs)})
        layers.append(replace(layer, op=with_densities(layer.op, given)) if given else layer)
    return replace(network, layers=tuple(layers))


def measured_density(values: np.ndarray) -> float:
    """Share of non-zero elements of a real tensor (a model file's weights), at least one element's worth
    so that an all-zero tensor stays a valid density."""
    import numpy as np

    arr = np.asarray(values)
    if arr.size == 0:
        return 1.0
    return max(float(np.count_nonzero(arr)) / arr.size, 1.0 / arr.size)
