"""NumPy forward pass of the transformer kinds: the values a layer computes, not only its data movement.

The reference simulator (:mod:`dnnmap.sim.reference`) proves where every word of a layer goes under a
mapping with the kind's combine rule; for the kinds whose arithmetic is not a product or a sum (softmax,
norms, activations, rotary embeddings) :func:`forward` computes their actual values from the tensors the
IR gives them, so the tests can compare a network's operators with PyTorch's modules element for element.
Einsum layers (attention's batched matmuls) are plain contractions: ``np.einsum`` of their expression.
"""

from __future__ import annotations

import math

import numpy as np

from dnnmap.workload.ir import Operator

_erf = np.vectorize(math.erf, otypes=[np.float64])
EPS = 1e-5  # the norms' epsilon (PyTorch's LayerNorm default; RMSNorm layers give theirs in ``eps``)


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def _rotate_half(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def forward(op: Operator, tensors: dict[str, np.ndarray], eps: float = EPS) -> np.ndarray:
    """The output of ``op`` (float64) for the input and weight ``tensors`` named as in the IR.

    softmax, layernorm, rmsnorm reduce over the last axis ``Q``; layernorm adds ``tensors["beta"]`` when given
    (its epilogue shift, not an IR tensor); rotary's table ``rot[P, Q]`` holds ``cos(theta_j)`` then
    ``sin(theta_j)`` (Llama's ``apply_rotary_pos_emb`` with rotate_half)."""
    x = np.asarray(tensors[op.inputs[0].name], dtype=np.float64)
    if op.kind == "einsum":
        return np.einsum(str(op.attr("expr")), *(np.asarray(tensors[t.name], np.float64) for t in op.inputs))
    if op.kind == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if op.kind == "layernorm":
        centred = x - x.mean(axis=-1, keepdims=True)
        normed = centred / np.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + eps)
        return normed * tensors["gamma"] + tensors.get("beta", 0.0)
    if op.kind == "rmsnorm":
        return x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps) * tensors["gamma"]
    if op.kind == "gelu":
        return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))
    if op.kind == "silu":
        return _silu(x)
    if op.kind == "swiglu":
        return _silu(x) * np.asarray(tensors["I1"], dtype=np.float64)
    if op.kind == "rotary":  # I[N, P, G, Q], rot[P, Q]
        rot = np.asarray(tensors["rot"], np.float64)
        half = rot.shape[-1] // 2
        cos, sin = (np.concatenate([t, t], axis=-1)[None, :, None, :] for t in (rot[:, :half], rot[:, half:]))
        return x * cos + _rotate_half(x) * sin
    raise ValueError(f"layer {op.name!r}: no NumPy forward pass for kind {op.kind!r}")
