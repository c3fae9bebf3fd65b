"""Lower a cleaned :class:`SourceGraph` to the workload IR, checking shapes against the source model."""

from __future__ import annotations

import math

from dnnmap.errors import InputFileError
from dnnmap.workload import ops
from dnnmap.workload.importers.graph import SourceGraph, SourceNode
from dnnmap.workload.sparsity import with_densities
from dnnmap.workload.ir import Layer, Network, Operator


def as_nchw(shape: tuple[int, ...], where: str) -> tuple[int, int, int, int]:
    """Feature maps are (N, C, H, W); vectors (N, F) are (N, F, 1, 1) as in the zoo's FC layers."""
    if len(shape) == 4:
        return tuple(shape)  # type: ignore[return-value]
    if len(shape) == 2:
        return (shape[0], shape[1], 1, 1)
    raise InputFileError(f"{where}: expected a 2-D (N, features) or 4-D (N, C, H, W) tensor, got shape {shape}")


def lower(graph: SourceGraph, source: str) -> Network:
    """Build the network; every operator's output shape must equal the one the source file declares."""
    layers = []
    for node in graph.nodes:
        where = f"{graph.path}: node {node.name!r} ({node.source_op})"
        unknown = [src for src, shape in zip(node.inputs, node.input_shapes) if not shape]
        if unknown:
            raise InputFileError(f"{where}: the shape of its input {', '.join(map(repr, unknown))} is unknown (shape "
                                 "inference could not determine it, e.g. behind an unsupported operator)")
        try:
            op = _operator(node, where)
        except ValueError as exc:  # raised by the op constructors for impossible attributes
            raise InputFileError(f"{where}: {exc}") from exc
        if node.attrs.get("weight_density", 1.0) < 1:  # measured from the model's weights (docs/sparse.md)
            op = with_densities(op, {"W": node.attrs["weight_density"]})
        shape = _output_shape(node, op)
        declared = node.output_shape
        if node.op in ("vector", "einsum"):  # layouts folded: the same elements, in the IR's order
            mismatch = bool(declared) and math.prod(declared) != math.prod(shape)
        else:
            mismatch = bool(declared) and _normalized(declared) != _normalized(shape)
        if mismatch:
            raise InputFileError(f"{where}: inconsistent shapes: the file declares output {declared}, "
                                 f"but inputs {list(node.input_shapes)} and the attributes give {shape}")
        fused = ((node.attrs["function"],) if node.op == "eltwise_unary" else ()) + node.fused
        layers.append(Layer(op, node.inputs, shape, fused))
    if not layers:
        raise InputFileError(f"{graph.path}: no layer with a loop nest is left after the import (every node was "
                             "removed, folded or skipped)")
    try:
        inputs = tuple((name, hidden_states(shape)) for name, shape in graph.inputs)
        return Network(graph.name, tuple(layers), inputs, source)
    except ValueError as exc:
        raise InputFileError(f"{graph.path}: {exc}") from exc


def _normalized(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape, 1, 1) if len(shape) == 2 else hidden_states(shape)


def hidden_states(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A rank-3 ``[batch, tokens, features]`` tensor as the zoo's ``[batch, 1, tokens, features]``; a rank-4 one
    as is (``[batch, heads, tokens, row]``); higher ranks merge their middle axes into the heads axis."""
    if len(shape) == 3:
        return (shape[0], 1, shape[1], shape[2])
    if len(shape) > 4:
        return (shape[0], math.prod(shape[1:-2]), shape[-2], shape[-1])
    return tuple(shape)


def _operator(node: SourceNode, where: str) -> Operator:
    a = node.attrs
    if node.op == "conv":
        n, c, h, w = as_nchw(node.input_shapes[0], where)
        h, w = a.get("stuffed_hw", (h, w))  # a transposed convolution reads its zero-stuffed input
        return ops.conv2d(node.name, c, a["out_channels"], (h, w), a["kernel"], a["stride"], a["padding"],
                          a["dilation"], a["groups"], n)
    if node.op == "fc":
        shape = node.input_shapes[0]
        return ops.fully_connected(node.name, math.prod(shape[1:]), a["out_features"], shape[0])
    if node.op == "vector":
        shapes = [hidden_states(s) if len(s) > 2 else (1, 1, *s) for s in node.input_shapes]
        if len(shapes[0]) != 4:
            raise InputFileError(f"{where}: expected a tensor of rank 2 or more, got shape {node.input_shapes[0]}")
        n, g, p, q = shapes[0]
        if a["kind"] == "rotary":  # [batch, heads, tokens, head_dim] as Llama applies it
            return ops.rotary(node.name, p, g, q, n)
        return ops.vector(node.name, a["kind"], p, q, g, n)
    if node.op == "einsum":
        if "attention" in a:
            return ops.attention(node.name, a["attention"], a["batch"], a["heads"], a["q_len"], a["kv_len"],
                                 a["head_dim"], a["kv_heads"])
        return ops.einsum(node.name, a["expr"], a["sizes"])
    if node.op == "matmul":
        shape = hidden_states(node.input_shapes[0])
        if len(shape) < 2:
            raise InputFileError(f"{where}: matrix product needs an input of rank >= 2, got shape {shape}")
        return ops.matmul(node.name, shape[-2], shape[-1], a["out_features"], math.prod(shape[:-2]))
    if node.op in ("pool", "global_pool"):
        n, c, h, w = as_nchw(node.input_shapes[0], where)
        if node.op == "global_pool":
            return ops.pool(node.name, c, (h, w), (h, w), 1, 0, a["mode"], n)
        return ops.pool(node.name, c, (h, w), a["kernel"], a["stride"], a["padding"], a["mode"], n, a["ceil_mode"])
    if node.op in ("add", "mul", "eltwise_unary"):
        shapes = {as_nchw(hidden_states(s), where) for s in node.input_shapes}
        n, c, h, w = max(shapes, key=math.prod)  # broadcast operands (e.g. a per-channel scale) read less
        kind = node.op if node.op != "eltwise_unary" else "identity"
        return ops.eltwise(node.name, c, (h, w), len(node.inputs), n, kind)
    if node.op == "concat":
        shapes = [as_nchw(s, where) for s in node.input_shapes]
        if len({s[2:] for s in shapes} | {s[:1] for s in shapes}) != 2:
            raise InputFileError(f"{where}: inconsistent shapes: concatenated inputs {shapes} differ in N, H or W")
        n, _, h, w = shapes[0]
        return ops.concat(node.name, sum(s[1] for s in shapes), (h, w), n)
    raise InputFileError(f"{where}: operator kind {node.op!r} left after clean-up")  # front-end bug guard


def _output_shape(node: SourceNode, op: Operator) -> tuple[int, ...]:
    b = op.bounds
    if node.op == "conv":
        return (b["N"], b["G"] * b["K"], b["P"], b["Q"])
    if node.op == "fc":
        return (b["N"], b["K"], 1, 1)
    if node.op == "matmul":
        lead = hidden_states(node.input_shapes[0])[:-2]
        return (*lead, b["M"], b["N"])
    if node.op == "vector":
        return (b["N"], b["G"], b["P"], b["Q"])
    if node.op == "einsum":
        if node.attrs.get("attention") == "values":  # [b, token, head, d] read as [b, 1, token, features]
            return (b["B"], 1, b["Q"], math.prod(op.output.shape(b)) // (b["B"] * b["Q"]))
        return hidden_states(node.output_shape) if node.output_shape else op.output.shape(b)
    return (b["N"], b["G"], b["P"], b["Q"])  # pool, global_pool, element-wise, concat
