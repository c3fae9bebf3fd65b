"""Layer counts of transformer blocks in closed form from their dimensions, and the same counts measured on an
imported network, for the ONNX import tests of transformer blocks.

Expected counts are written from the blocks' dimensions (``Dims``), not from dnnmap: a projection is
tokens x in x out MACs, QK^T and AV are batch x heads x queries x keys x head_dim each, and a vector layer is
its elements times the operations per element docs/ir.md states (softmax 5, layer norm 7, RMS norm 4, GELU 5,
SwiGLU 4, rotary 3).
"""

from __future__ import annotations

from pathlib import Path

from torch_transformers import Dims

from dnnmap.workload.importers import load_network

SOFTMAX, LAYERNORM, RMSNORM, GELU, SWIGLU, ROTARY = 5, 7, 4, 5, 4, 3  # operations per element, docs/ir.md
GROUPS = {"matmul": "projections", "fc": "projections", "einsum": "einsum", "softmax": "softmax",
          "layernorm": "norm", "rmsnorm": "norm", "gelu": "activation", "swiglu": "activation", "add": "add"}


def layer_counts(d: Dims, tokens: int, gated: bool, norm_ops: int) -> dict[str, tuple[int, int]]:
    """kind -> (layers, MACs or operations) of one encoder/decoder layer with these dimensions."""
    n, t, h, kv = d.batch, tokens, d.hidden, d.kv_heads * d.head_dim
    projections = n * t * h * (2 * h + 2 * kv) + n * t * h * d.ffn * (3 if gated else 2)
    attention = 2 * n * d.heads * t * t * d.head_dim
    mlp_act = n * t * d.ffn * (SWIGLU if gated else GELU)
    return {"projections": (4 + (3 if gated else 2), projections), "einsum": (2, attention),
            "softmax": (1, n * d.heads * t * t * SOFTMAX), "norm": (2, 2 * n * t * h * norm_ops),
            "activation": (1, mlp_act), "add": (2, 2 * n * t * h)}


def measured(path: Path) -> dict[str, tuple[int, int]]:
    """The same grouping of the network imported from ``path``: group -> (layers, MACs or operations)."""
    net = load_network(path)
    out: dict[str, list[int]] = {}
    for layer in net.layers:
        entry = out.setdefault(GROUPS.get(layer.op.kind, layer.op.kind), [0, 0])
        entry[0] += 1
        entry[1] += layer.op.operations
    return {k: (v[0], v[1]) for k, v in out.items()}
