"""Transformer zoo: MACs against published figures, weights against published parameter counts, the phases,
the parameters of a zoo name, and every network validates (docs/zoo.md "Transformers")."""

from __future__ import annotations

import pytest

from dnnmap.errors import DnnmapError
from dnnmap.workload import zoo
from dnnmap.workload.ir import Network
from dnnmap.workload.validate import network_problem

NAMES = ("bert_base", "bert_base:seq=512", "gpt2", "gpt2:phase=decode,seq=1024", "vit_b16", "vit_b16:image=384",
         "llama7b_layer", "llama7b_layer:phase=decode", "llama7b_layer:kv_heads=8,phase=decode,seq=4096")


def _weights(net: Network) -> int:
    """Words of the trained weights: matmul weights and norm scales (rotary tables excluded)."""
    return sum(t.size(layer.op.bounds) for layer in net.layers for t in layer.op.tensors
               if t.role == "weight" and layer.op.kind in ("matmul", "layernorm", "rmsnorm"))


def _kind_macs(net: Network, kind: str) -> int:
    return sum(layer.op.macs for layer in net.layers if layer.op.kind == kind)


@pytest.mark.parametrize("name", NAMES)
def test_every_transformer_validates(name: str) -> None:
    assert network_problem(zoo.get(name)) is None


@pytest.mark.parametrize("name, published", [
    ("bert_base", 22.5e9 / 2),  # 22.5 GFLOPs at 128 tokens (TinyBERT, Jiao et al. 2020, Table 1), 2 FLOPs a MAC
    ("vit_b16", 17.5e9),  # DeiT-B = ViT-B/16 at 224: 17.5 G multiply-adds (Swin Transformer, Liu et al. 2021, Tab. 1)
    ("vit_b16:image=384", 55.4e9),  # ViT-B/16 at 384 (same table)
])
def test_macs_within_two_percent_of_published(name: str, published: float) -> None:
    assert zoo.get(name).macs == pytest.approx(published, rel=0.02)


def test_weights_add_up_to_the_published_parameter_counts() -> None:
    """The layers' weights, plus what the IR does not carry (embeddings; biases and layer-norm shifts, which
    are epilogue adds), equal the published totals."""
    d = 768
    bias_per_layer = 3 * d + d + 4 * d + d + 2 * d  # QKV, output, MLP up and down biases; two norms' shifts
    bert = _weights(zoo.get("bert_base")) + 12 * bias_per_layer
    embeddings = (30522 + 512 + 2) * d + 2 * d + d * d + d  # tokens, positions, segments, their norm, pooler
    assert bert + embeddings == 109_482_240  # bert-base-uncased
    gpt2 = _weights(zoo.get("gpt2")) + 12 * bias_per_layer + d + 1024 * d  # final norm's shift, positions; the
    # LM head is the tied token embedding
    assert gpt2 == 124_439_808  # GPT-2 small ("124M")
    layer = _weights(zoo.get("llama7b_layer"))
    assert 32 * layer + 2 * 32000 * 4096 + 4096 == 6_738_415_616  # Llama-2-7B: 32 layers, embed + head, final norm


def test_prefill_and_decode_macs_follow_the_model_dimensions() -> None:
    """Decode: one token through the weights plus attention over seq + 1 cached tokens; prefill: seq tokens
    through the weights plus seq x seq attention. The KV cache is a graph input of seq + 1 tokens."""
    seq, d, layers = 1024, 768, 12
    weights = layers * 12 * d * d + d * 50257
    decode = zoo.get(f"gpt2:phase=decode,seq={seq}")
    assert decode.macs == weights + layers * 2 * (seq + 1) * d
    assert dict(decode.inputs)["h0.attn.k_cache"] == (1, 1, seq + 1, d)
    assert not decode.consumers("h0.k_proj")  # its output is the appended cache entry
    prefill = zoo.get(f"gpt2:seq={seq}")
    assert prefill.macs == seq * weights + layers * 2 * seq * seq * d
    llama = zoo.get("llama7b_layer:phase=decode,seq=2048,kv_heads=8")
    assert _kind_macs(llama, "einsum") == 2 * 32 * 128 * 2049  # 32 query heads of 128 over 2049 keys
    assert llama.layer("layer0.k_proj").op.bounds["N"] == 8 * 128  # grouped-query: 8 K/V heads
    assert dict(llama.inputs)["layer0.attn.k_cache"] == (1, 1, 2049, 1024)


def test_non_mac_operations_per_kind() -> None:
    net = zoo.get("bert_base")
    count = {k: sum(layer.op.iterations for layer in net.layers if layer.op.kind == k) for k in
             ("softmax", "layernorm", "gelu", "add")}
    assert count == {"softmax": 12 * 12 * 128 * 128, "layernorm": 12 * 2 * 128 * 768, "gelu": 12 * 128 * 3072,
                     "add": 12 * 2 * 128 * 768}


def test_batch_is_a_dimension() -> None:
    one, four = zoo.get("gpt2:phase=decode,seq=64"), zoo.get("gpt2:phase=decode,seq=64", batch=4)
    assert four.macs == 4 * one.macs


@pytest.mark.parametrize("name, message", [
    ("gpt2:phase=train", "phase must be one of prefill, decode"),
    ("gpt2:seq=0", "seq must be an integer"),
    ("bert_base:phase=decode", "'phase=decode' is not a parameter of bert_base"),
    ("llama7b_layer:kv_heads=5", "kv_heads must divide 32"),
])
def test_bad_parameters_are_refused_with_the_reason(name: str, message: str) -> None:
    with pytest.raises(DnnmapError, match=message):
        zoo.get(name)
