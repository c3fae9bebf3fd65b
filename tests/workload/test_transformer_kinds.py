"""The transformer kinds: the NumPy forward pass equals PyTorch's modules, the reference simulator runs them
bit-exact under random mappings, and the vector unit prices their operations (docs/ir.md "Transformer kinds")."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from random_cases import random_arch, random_mapping

from dnnmap.arch.spec import load_arch, parse_arch
from dnnmap.arch.units import compute_unit
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.model import CostModel
from dnnmap.errors import InputFileError
from dnnmap.sim import sim_metrics, simulate
from dnnmap.sim.functions import forward
from dnnmap.workload import ops
from dnnmap.workload.ir import Operator


def _inputs(op: Operator, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {t.name: rng.standard_normal(op.tensor_shape(t.name)) for t in op.inputs}


def _torch(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(x).double()


TORCH = {
    "softmax": lambda x, t: F.softmax(x, dim=-1),
    "layernorm": lambda x, t: F.layer_norm(x, (12,), _torch(t["gamma"]), _torch(t["beta"]), eps=1e-5),
    "rmsnorm": lambda x, t: F.rms_norm(x, (12,), _torch(t["gamma"]), eps=1e-5),
    "gelu": lambda x, t: F.gelu(x),
    "silu": lambda x, t: F.silu(x),
    "swiglu": lambda x, t: F.silu(x) * _torch(t["I1"]),
}


@pytest.mark.parametrize("kind", list(TORCH))
def test_norms_softmax_and_activations_equal_torch(kind: str) -> None:
    rng = np.random.default_rng(0)
    op = ops.vector(kind, kind, rows=5, cols=12, groups=3, batch=2)
    t = _inputs(op, rng) | {"beta": rng.standard_normal(12)}  # layernorm's epilogue shift
    expected = TORCH[kind](_torch(t["I"]), t)
    np.testing.assert_allclose(forward(op, t), expected.numpy(), rtol=1e-10, atol=1e-12)


def test_rotary_equals_llamas_apply_rotary_pos_emb() -> None:
    rng = np.random.default_rng(1)
    tokens, heads, dim, base = 6, 4, 8, 10000.0
    op = ops.rotary("rope", tokens, heads, dim, batch=2)
    inv = 1.0 / base ** (np.arange(0, dim, 2) / dim)
    angles = np.outer(np.arange(tokens), inv)
    emb = np.concatenate([angles, angles], axis=-1)  # [P, Q], as HF Llama builds cos/sin
    x = rng.standard_normal(op.tensor_shape("I"))  # [N, P, G, Q]: the projection's layout
    got = forward(op, {"I": x, "rot": np.concatenate([np.cos(angles), np.sin(angles)], axis=-1)})
    xt = _torch(x).transpose(1, 2)  # HF: [b, heads, tokens, dim]
    cos, sin = _torch(np.cos(emb)), _torch(np.sin(emb))
    half = torch.cat([-xt[..., dim // 2:], xt[..., :dim // 2]], dim=-1)
    expected = (xt * cos + half * sin).transpose(1, 2)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_attention_einsums_equal_torch_attention_with_shared_kv_heads(kv_heads: int) -> None:
    """QK^T, softmax and AV in the IR's layouts equal torch's scaled_dot_product_attention (GQA: K/V repeated)."""
    rng = np.random.default_rng(2)
    b, heads, q_len, kv_len, d = 2, 4, 3, 5, 6
    scores = ops.attention("qk", "scores", b, heads, q_len, kv_len, d, kv_heads)
    values = ops.attention("av", "values", b, heads, q_len, kv_len, d, kv_heads)
    q = rng.standard_normal((b, q_len, heads, d))
    k = rng.standard_normal((b, kv_len, kv_heads, d))
    v = rng.standard_normal((b, kv_len, kv_heads, d))
    split = (b, q_len, kv_heads, heads // kv_heads, d)  # the head split is a layout: a reshape, no copy
    s = forward(scores, {"Q": q.reshape(split) if kv_heads != heads else q, "K": k}) / np.sqrt(d)
    soft = ops.vector("sm", "softmax", q_len, kv_len, heads, b)
    p = forward(soft, {"I": s.reshape(soft.tensor_shape("I"))})
    o = forward(values, {"P": p.reshape(values.tensor_shape("P")), "V": v}).reshape(b, q_len, heads, d)
    rep = heads // kv_heads
    kt, vt = (_torch(a).transpose(1, 2).repeat_interleave(rep, dim=1) for a in (k, v))
    expected = F.scaled_dot_product_attention(_torch(q).transpose(1, 2), kt, vt).transpose(1, 2)
    np.testing.assert_allclose(o, expected.numpy(), rtol=1e-10, atol=1e-12)
    assert scores.macs == b * heads * q_len * kv_len * d == values.macs
    assert scores.tensor_shape("K") == (b, kv_len, kv_heads, d)  # K/V stored once per K/V head


def test_every_transformer_kind_simulates_bit_exact_under_random_mappings() -> None:
    rng = np.random.default_rng(3)
    built = [ops.vector(k, k, 3, 4, 2, 2) for k in ("softmax", "layernorm", "rmsnorm", "gelu", "silu", "swiglu")]
    built += [ops.rotary("rope", 3, 2, 4, 2), ops.attention("qk", "scores", 1, 4, 3, 5, 2, 2),
              ops.attention("av", "values", 2, 2, 3, 4, 3)]
    for op in built:
        for k in range(6):
            arch = random_arch(rng)
            m = random_mapping(rng, op, arch)
            r = simulate(op, arch, m, seed=k)
            assert r.output_matches and r.iterations_exact, (op.kind, m)


def test_operations_are_priced_on_the_vector_unit() -> None:
    """softmax's 5 operations per element run on the declared vector unit: its lanes bound the compute cycles,
    its energy prices them; without one the MAC array runs them (lanes = MACs, MAC energy)."""
    rng = np.random.default_rng(4)
    op = ops.vector("sm", "softmax", 8, 16, 2)
    base = random_arch(rng)
    arch = base.model_copy(update={"vector": parse_arch({**base.model_dump(), "vector": {
        "lanes": 4, "energy": 0.5, "bandwidth": 2.0}}).vector})
    m = random_mapping(rng, op, arch)
    cost = CostModel(op, arch).evaluate(MappingBatch.from_mappings(op, arch, [m]))
    metrics = sim_metrics(simulate(op, arch, m, compute=False), op, arch, m)
    assert op.operations == 5 * 2 * 8 * 16
    words = 2 * (2 * 8 * 16)  # input read once, output written once
    assert cost.compute_cycles[0] == metrics.compute_cycles >= max(op.operations / 4, words / 2.0)
    assert cost.energy_breakdown[0, -1] == pytest.approx(op.operations * 0.5) == metrics.mac_energy
    plain = compute_unit(op, base)
    assert (plain.name, plain.lanes, plain.energy) == ("MAC array", base.num_macs, base.mac.energy)
    assert compute_unit(ops.matmul("mm", 2, 2, 2), arch).name == "MAC array"


def test_vector_unit_fields_are_checked() -> None:
    data = load_arch("eyeriss").model_dump()
    with pytest.raises(InputFileError, match="vector.lanes"):
        parse_arch({**data, "vector": {"lanes": 0, "energy": 1.0}}, "x.yaml")
    with pytest.raises(InputFileError, match="vector.energy"):
        parse_arch({**data, "vector": {"lanes": 4}}, "x.yaml")
