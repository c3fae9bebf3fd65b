"""Transformer blocks exported by torch.onnx.export and imported back (docs/import.md "Transformer blocks").

Expected layer kinds, shapes, MACs and non-MAC operations are written in closed form from the
blocks' dimensions (``transformer_counts``), not from dnnmap.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch not installed; run: pip install torch==2.13.0")

from torch_transformers import BertLayer, Dims, Gpt2Block, LlamaLayer, VitBlock, export_block  # noqa: E402
from transformer_counts import LAYERNORM, RMSNORM, layer_counts, measured  # noqa: E402
from cli_runs import assert_imports_and_maps  # noqa: E402


from dnnmap.workload.importers import import_model, load_network  # noqa: E402

D = Dims()
GQA = Dims(kv_heads=2)
IMAGE, PATCH = 16, 4


def _export(tmp_path: Path, name: str) -> Path:
    blocks: dict[str, Callable[[], tuple[torch.nn.Module, torch.Tensor, str]]] = {
        "bert": lambda: (BertLayer(D), torch.randn(D.batch, D.tokens, D.hidden), "input"),
        "gpt2": lambda: (Gpt2Block(D), torch.randint(0, D.vocab, (D.batch, D.tokens)), "ids"),
        "vit": lambda: (VitBlock(D, IMAGE, PATCH), torch.randn(D.batch, 3, IMAGE, IMAGE), "input"),
        "llama": lambda: (LlamaLayer(GQA), torch.randn(GQA.batch, GQA.tokens, GQA.hidden), "input"),
    }
    model, example, input_name = blocks[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated
        return Path(export_block(model, example, str(tmp_path / f"{name}.onnx"), input_name))


def test_bert_encoder_layer_with_decomposed_layernorm_and_erf_gelu(tmp_path: Path) -> None:
    path = _export(tmp_path, "bert")
    assert measured(path) == layer_counts(D, D.tokens, gated=False, norm_ops=LAYERNORM)
    result = import_model(path)
    scores = next(layer for layer in result.network.layers if layer.op.kind == "einsum")
    assert scores.op.attr("expr") == "bqhd,bkhd->bhqk" and scores.fused == ("div_const",)  # 1/sqrt(d) folded
    assert scores.output_shape == (D.batch, D.heads, D.tokens, D.tokens)
    assert any("layernorm x2" in line and "gelu x1" in line for line in result.report.lines())


def test_gpt2_decoder_layer_with_causal_mask_gemm_split_and_embedding(tmp_path: Path) -> None:
    path = _export(tmp_path, "gpt2")
    counts = layer_counts(D, D.tokens, gated=False, norm_ops=LAYERNORM)
    counts["projections"] = (4, counts["projections"][1])  # one fused QKV Conv1D (a Gemm) instead of three
    counts["identity"] = (1, D.batch * D.tokens * D.hidden)  # the position-embedding add on the looked-up tokens
    assert measured(path) == counts
    net = load_network(path)
    assert net.inputs == (("/wte/Gather", (D.batch, 1, D.tokens, D.hidden)),)  # the lookup is the input, no MACs
    scores = next(layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.fused == ("div_const", "mask")  # Where(causal, w, -inf) on a constant mask: fused, not a layer
    qkv = net.layers[2]
    assert qkv.op.kind == "fc" and qkv.op.macs == D.batch * D.tokens * D.hidden * 3 * D.hidden
    assert scores.inputs == (qkv.name, qkv.name)  # Q and K are parts of the split QKV projection


def test_vit_patch_embedding_and_encoder_layer(tmp_path: Path) -> None:
    path = _export(tmp_path, "vit")
    patches = (IMAGE // PATCH) ** 2
    counts = layer_counts(D, patches, gated=False, norm_ops=LAYERNORM)
    counts["projections"] = (4, counts["projections"][1])  # one fused QKV projection
    counts["conv2d"] = (1, D.batch * patches * 3 * PATCH * PATCH * D.hidden)  # patch embedding
    assert measured(path) == counts
    net = load_network(path)
    assert net.layers[0].fused == ("add_const",)  # the position embedding is added in the conv's epilogue
    scores = next(layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.fused == ("mul_const",)  # q * scale before QK^T moves onto the product


def test_llama_layer_with_rmsnorm_swiglu_and_grouped_query_attention(tmp_path: Path) -> None:
    path = _export(tmp_path, "llama")
    assert measured(path) == layer_counts(GQA, GQA.tokens, gated=True, norm_ops=RMSNORM)
    net = load_network(path)
    scores, values = (layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.op.attr("expr") == "bqgrd,bkgd->bgrqk" and values.op.attr("expr") == "bgrqk,bkgd->bqgrd"
    assert scores.op.bound("G") == GQA.kv_heads and scores.op.bound("R") == GQA.heads // GQA.kv_heads
    k_words = GQA.batch * GQA.tokens * GQA.kv_heads * GQA.head_dim  # K is read as written, not repeated
    assert scores.op.tensor("K").size(scores.op.bounds) == k_words
    swiglu = next(layer for layer in net.layers if layer.op.kind == "swiglu")
    assert [net.layer(src).name.split("/")[1] for src in swiglu.inputs] == ["gate_proj", "up_proj"]


@pytest.mark.parametrize("name", ["bert", "gpt2", "vit", "llama"])
def test_import_then_map_without_skipping(tmp_path: Path, name: str) -> None:
    path = _export(tmp_path, name)
    assert_imports_and_maps(path, tmp_path)
