"""Fused attention (QK^T -> softmax -> AV) as *head maps*, after FLAT (Kao et al., 2023).

A head map is a map of the fusion model with the heads as its rows and the query tokens as its columns
(``(channels, heads, queries)``): the scores ``S[h, q, k]`` and the softmax output have the keys as
channels, Q and the attention output ``O[q, h, d]`` the head dimension. Every layer is a 1x1 window, so
the bottom tile ``(T_oy, T_ox)`` is a band of heads times a block of query rows, and the score block that
lives on chip is ``T_oy x T_ox x keys`` words: per head (``T_oy = 1``, every query) or per query-row block
(``T_ox`` below the sequence, FLAT's row granularity) -- whatever fits the buffer.

- ``scores`` contracts each query's ``d`` channels with its head's K: out channel ``k`` at pixel
  ``(h, q)`` is ``sum_d Q[d, h, q] * K[h // r, k, d]`` (``r`` query heads share one K/V head, grouped-query
  attention); ``values`` likewise with V: ``O[d, h, q] = sum_k P[k, h, q] * V[h // r, d, k]``.
- K and V (the einsums' second operands, role ``weight``) are *banded weights*
  (:attr:`LayerGeometry.banded`): the slice of a head is fetched when the tile row over its head starts,
  held while every query block of that band runs (row-major tile order), and dropped after it. So each K/V
  word crosses the chip boundary once per band that reads it (once, unless a band boundary splits a group
  of heads sharing it); Eq. 5 holds the largest band's slices, Eq. 6 counts every band's.
- softmax is a per-pixel kind over its ``keys`` channels (a pixel's channels are never split), executed by
  its combine rule as the reference simulator runs it (docs/ir.md "What proves them").

Untiled, one head's K and V and one query block of scores must fit the buffer; where they do not, the keys are
tiled with the online softmax of FlashAttention and FuseMax (:mod:`dnnmap.fusion.online_softmax`).
"""

from __future__ import annotations

import numpy as np

from dnnmap.fusion.geometry import AxisWindow, FusionError, LayerGeometry
from dnnmap.workload.ir import Layer, Network, Operator

PARTS = {("Q", "K", "S"): "scores", ("P", "V", "O"): "values"}
# Logical axes of each operator tensor (q query, k key, h query head, g K/V head, d head dimension): the map
# layout of a head map is ``(channel, h, q)``, the weight layout of a head's slice ``(g, out, in)``.
_TENSOR_AXES = {"scores": {"Q": "qhd", "S": "hqk"}, "values": {"P": "hqk", "O": "qhd"},
                "softmax": {"I": "hqk", "O": "hqk"}}
_WEIGHT_AXES = {"K": ("gkd", "kgd"), "V": ("gdk", "kgd")}  # (slice layout, tensor layout)


def attention_part(op: Operator) -> str:
    """``scores``, ``values`` or ``softmax``; :class:`FusionError` for another einsum."""
    if op.kind == "softmax":
        return "softmax"
    part = _part(op) if op.kind == "einsum" else None
    if part is None:
        raise FusionError(f"layer {op.name!r} ({op.kind}) cannot be fused: only attention's scores and values "
                          "einsums and its softmax fuse as head maps")
    return part


def head_geometry(layer: Layer) -> LayerGeometry:
    """An attention layer as a head map (module docstring); :class:`FusionError` when it is not one."""
    op = layer.op
    part, b = attention_part(op), op.bounds
    if part == "softmax":
        batch, heads, queries, keys = b["N"], b["G"], b["P"], b["Q"]
        cin = cout = keys
        weights, per_slice, inputs = 0, 0, layer.inputs
    else:
        batch, queries, keys, dim = b["B"], b["Q"], b["K"], b["D"]
        heads, kv_heads = (b["H"], b["H"]) if "H" in b else (b["G"] * b["R"], b["G"])
        cin, cout = (dim, keys) if part == "scores" else (keys, dim)
        weights, per_slice, inputs = kv_heads * keys * dim, heads // kv_heads, layer.inputs[:1]
    if batch != 1:
        raise FusionError(f"layer {op.name!r}: fusion is modelled at batch size 1 (HW-Flow-Fusion Sec. 5)")
    one = AxisWindow(1, 1, 0)
    return LayerGeometry(op.name, op.kind, inputs, (one, one), cin, cout, (heads, queries), (heads, queries),
                         weights, op.macs, op.iterations, "relu" in layer.fused, per_slice)


def contract_heads(window: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``out[o, y, x] = sum_i window[i, y, x] * weights[y, o, i]``: each row (head) with its own slice."""
    return np.einsum("iyx,yoi->oyx", window, weights)


def random_slices(layer: LayerGeometry, rng: np.random.Generator, low: int, high: int) -> np.ndarray:
    """Random int64 weight slices ``(slices, out, in)`` of a banded layer (K or V of every K/V head)."""
    n = layer.out_hw[0] // layer.rows_per_slice
    return rng.integers(low, high + 1, size=(n, layer.out_channels, layer.in_channels), dtype=np.int64)


def operator_tensor(op: Operator, name: str, data: np.ndarray) -> np.ndarray:
    """A head map ``(channel, h, q)``, or a banded layer's slices, as the operator's tensor ``name``."""
    if name in _WEIGHT_AXES:
        src, dst = _WEIGHT_AXES[name]
        return np.einsum(f"{src}->{dst}", data).reshape(op.tensor_shape(name))
    axes = _TENSOR_AXES[attention_part(op)][name]
    return np.einsum(f"{_map_axes(axes)}->{axes}", data).reshape(op.tensor_shape(name))


def head_map(op: Operator, layer: LayerGeometry, out: np.ndarray) -> np.ndarray:
    """The operator's output tensor as a head map ``(channel, h, q)``."""
    (heads, queries), name = layer.out_hw, op.tensors[-1].name
    axes = _TENSOR_AXES[attention_part(op)][name]
    sizes = {"h": heads, "q": queries, **dict.fromkeys(_map_axes(axes)[0], layer.out_channels)}
    return np.einsum(f"{axes}->{_map_axes(axes)}", out.reshape(tuple(sizes[a] for a in axes)))


def _map_axes(axes: str) -> str:
    """The head-map order of a tensor's axes: its channel letter, then ``h`` and ``q``."""
    (channel,) = (a for a in axes if a not in "hq")
    return f"{channel}hq"


def attention_runs(network: Network) -> list[tuple[str, ...]]:
    """Every ``scores, softmax, values`` run of consecutive layers in which each reads the previous one: the
    attention groups the fusion search considers whole, whatever ``--max-fused`` says."""
    layers, runs = network.layers, []
    for a, b, c in zip(layers, layers[1:], layers[2:]):
        chain = b.inputs[:1] == (a.name,) and c.inputs[:1] == (b.name,) and b.op.kind == "softmax"
        if chain and a.op.kind == c.op.kind == "einsum" and (_part(a.op), _part(c.op)) == ("scores", "values"):
            runs.append((a.name, b.name, c.name))
    return runs


def _part(op: Operator) -> str | None:
    return PARTS.get(tuple(t.name for t in op.tensors))
