"""Concat on token axes, Slice and runtime masks in exported transformer blocks (docs/import.md
"Transformer blocks"): ViT's class token, Llama's rotary embedding (rotate_half) and GPT-NeoX's partial rotary,
a decode step appending K/V to its caches ([batch, heads, tokens, d] and [batch, tokens, heads, d]), GPT-2's
fused QKV split by slicing, masks computed from inputs when the model runs (Where, and the Hugging Face
additive masks: BERT's (1 - mask) * -10000, masked_fill to the dtype's minimum, where(mask, 0, -inf)).

Expected shapes, MACs and non-MAC operations come from the blocks' dimensions (``transformer_counts``);
each block is exported by the TorchScript exporter and, where the onnxscript package is installed, by the
``torch.export`` (dynamo) one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch not installed; run: pip install torch==2.13.0")

import onnx  # noqa: E402
from torch_transformers import (  # noqa: E402
    DecodeStep,
    Dims,
    Gpt2Block,
    LlamaLayer,
    MaskedAttention,
    VitBlock,
    export_block,
    partial_rotary,
    rotary_tables,
)
from transformer_counts import LAYERNORM, ROTARY, RMSNORM, SOFTMAX, layer_counts, measured  # noqa: E402
from cli_runs import assert_imports_and_maps  # noqa: E402

from dnnmap.workload.importers import import_model, load_network  # noqa: E402
from dnnmap.workload.importers.report import UnsupportedOperatorsError  # noqa: E402

D = Dims()
GQA = Dims(kv_heads=2)
IMAGE, PATCH = 16, 4
CACHED = 7  # tokens in the decode step's caches before this step
ROTARY_DIMS = 4  # partial rotary: the first 4 of each head's 8 dims
MASKS = {"additive": "add_mask", "masked_fill": "add_mask", "where_add": "add_mask", "fill_scores": "mask"}
EXPORTERS = ["torchscript", "dynamo"]  # dynamo: skipped without the onnxscript package
Block = Callable[[], tuple[torch.nn.Module, tuple[torch.Tensor, ...], tuple[str, ...]]]
BLOCKS: dict[str, Block] = {
    "vit_cls": lambda: (VitBlock(D, IMAGE, PATCH, class_token=True), (torch.randn(D.batch, 3, IMAGE, IMAGE),),
                        ("img",)),
    "llama_rotary": lambda: (LlamaLayer(GQA, rotary=True), (torch.randn(GQA.batch, GQA.tokens, GQA.hidden),),
                             ("input",)),
    "decode": lambda: (DecodeStep(D), (torch.randn(D.batch, 1, D.hidden),
                                       torch.randn(D.batch, D.heads, CACHED, D.head_dim),
                                       torch.randn(D.batch, D.heads, CACHED, D.head_dim)),
                       ("input", "past_k", "past_v")),
    "gpt2_slices": lambda: (Gpt2Block(D, qkv_slices=True), (torch.randint(0, D.vocab, (D.batch, D.tokens)),),
                            ("ids",)),
    "runtime_mask": lambda: _masked("where"),
    **{f"mask_{mask}": (lambda mask=mask: _masked(mask)) for mask in MASKS},
    "decode_bthd": lambda: (DecodeStep(D, cache_layout="bthd"), (torch.randn(D.batch, 1, D.hidden),
                                                                 torch.randn(D.batch, CACHED, D.heads, D.head_dim),
                                                                 torch.randn(D.batch, CACHED, D.heads, D.head_dim)),
                            ("input", "past_k", "past_v")),
    "llama_partial_rotary": lambda: (LlamaLayer(GQA, rotary_dims=ROTARY_DIMS),
                                     (torch.randn(GQA.batch, GQA.tokens, GQA.hidden),), ("input",)),
}


def _masked(mask: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], tuple[str, ...]]:
    """MaskedAttention building its mask the ``mask`` way from positions and a [batch, tokens] padding mask."""
    return (MaskedAttention(D, mask), (torch.randn(D.batch, D.tokens, D.hidden),
                                       torch.arange(D.tokens).expand(D.batch, -1),
                                       torch.ones(D.batch, D.tokens, dtype=torch.long)),
            ("input", "positions", "attention_mask"))


def _export(tmp_path: Path, name: str, exporter: str = "torchscript") -> Path:
    if exporter == "dynamo":
        pytest.importorskip("onnxscript", reason="torch.onnx.export(dynamo=True) needs: pip install onnxscript")
    model, examples, names = BLOCKS[name]()
    path = tmp_path / f"{name}_{exporter}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated; torch.export is chatty
        export_block(model, examples, str(path), names, dynamo=exporter == "dynamo")
    return path


def _ops_on_activations(path: Path, op_type: str) -> int:
    """How many ``op_type`` nodes the export has (to be sure the test exercises them)."""
    return sum(node.op_type == op_type for node in onnx.load(str(path)).graph.node)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_vit_class_token_concat_is_a_network_input(tmp_path: Path, exporter: str) -> None:
    path = _export(tmp_path, "vit_cls", exporter)
    patches = (IMAGE // PATCH) ** 2
    tokens = patches + 1  # the class token
    counts = layer_counts(D, tokens, gated=False, norm_ops=LAYERNORM)
    counts["projections"] = (4, counts["projections"][1])  # one fused QKV projection
    counts["conv2d"] = (1, D.batch * patches * 3 * PATCH * PATCH * D.hidden)  # patch embedding, patches only
    counts["identity"] = (1, D.batch * tokens * D.hidden)  # the position embedding added to all rows
    assert measured(path) == counts
    result = import_model(path)
    net = result.network
    conv = next(layer for layer in net.layers if layer.op.kind == "conv2d")
    name, shape = net.inputs[-1]
    assert shape == (D.batch, 1, tokens, D.hidden)  # class token + patches: one network input
    assert net.consumers(conv.name) == []  # the patch embedding writes its rows into that input
    pos = next(layer for layer in net.layers if layer.op.kind == "identity")
    assert pos.inputs == (name,) and pos.fused == ("add_const",)
    assert any(f"concat {name!r}" in line and "constant" in line for line in result.report.lines())


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_llama_rotary_rotate_half_is_one_rotary_layer(tmp_path: Path, exporter: str) -> None:
    path = _export(tmp_path, "llama_rotary", exporter)
    assert _ops_on_activations(path, "Slice") >= 4 and _ops_on_activations(path, "Concat") >= 2
    counts = layer_counts(GQA, GQA.tokens, gated=True, norm_ops=RMSNORM)
    q_and_k = GQA.batch * GQA.tokens * (GQA.heads + GQA.kv_heads) * GQA.head_dim  # rotated elements
    counts["rotary"] = (2, q_and_k * ROTARY)
    assert measured(path) == counts
    net = load_network(path)
    q_rot, k_rot = (layer for layer in net.layers if layer.op.kind == "rotary")
    assert q_rot.output_shape == (GQA.batch, GQA.heads, GQA.tokens, GQA.head_dim)
    assert k_rot.output_shape == (GQA.batch, GQA.kv_heads, GQA.tokens, GQA.head_dim)
    scores = next(layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.inputs == (q_rot.name, k_rot.name)
    assert scores.op.bound("G") == GQA.kv_heads  # grouped-query attention still seen through the rotary


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_decode_step_appends_kv_to_the_cache_inputs(tmp_path: Path, exporter: str) -> None:
    path = _export(tmp_path, "decode", exporter)
    kv = CACHED + 1
    n, h, d = D.batch, D.heads, D.head_dim
    assert measured(path) == {"projections": (4, 4 * n * D.hidden * D.hidden),
                              "einsum": (2, 2 * n * h * kv * d), "softmax": (1, n * h * kv * SOFTMAX)}
    result = import_model(path)
    net = result.network
    caches = [(name, shape) for name, shape in net.inputs if name != "input"]
    assert [shape for _, shape in caches] == [(n, h, kv, d)] * 2  # the caches with this token appended
    scores, values = (layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.inputs[1] == caches[0][0] and values.inputs[1] == caches[1][0]
    assert (scores.op.bound("Q"), scores.op.bound("K")) == (1, kv) and scores.output_shape == (n, h, 1, kv)
    appended = [layer.name for layer in net.layers if not net.consumers(layer.name)]
    assert len(appended) == 3  # the K and V projections write to the caches; the output projection is the result
    assert sum("input 'past_k'" in line or "input 'past_v'" in line for line in result.report.lines()) == 2


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_gpt2_qkv_split_by_slicing(tmp_path: Path, exporter: str) -> None:
    path = _export(tmp_path, "gpt2_slices", exporter)
    assert _ops_on_activations(path, "Slice") >= 3
    counts = layer_counts(D, D.tokens, gated=False, norm_ops=LAYERNORM)
    counts["projections"] = (4, counts["projections"][1])  # one fused QKV projection, sliced in three
    counts["identity"] = (1, D.batch * D.tokens * D.hidden)  # the position-embedding add
    assert measured(path) == counts
    net = load_network(path)
    qkv = next(layer for layer in net.layers if layer.op.macs == D.batch * D.tokens * D.hidden * 3 * D.hidden)
    scores, values = (layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.inputs == (qkv.name, qkv.name) and values.inputs[1] == qkv.name
    assert scores.fused[-1] == "mask"  # the causal mask sliced from a buffer: a constant mask, fused


def test_gpt2_batch_one_causal_mask_slice_is_shaped(tmp_path: Path) -> None:
    """With batch 1 ONNX shape inference shapes the masked scores only if it knows the shape of the mask sliced
    from the buffer: the slice bounds are computed by the graph (Unsqueeze of Constant) and the import evaluates
    them (before, the scores' Softmax and AV were listed unsupported)."""
    d = Dims(batch=1, tokens=16)
    path = tmp_path / "gpt2_batch1.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_block(Gpt2Block(d), torch.randint(0, d.vocab, (d.batch, d.tokens)), str(path), "ids")
    counts = layer_counts(d, d.tokens, gated=False, norm_ops=LAYERNORM)
    counts["projections"] = (4, counts["projections"][1])
    counts["identity"] = (1, d.batch * d.tokens * d.hidden)
    assert measured(path) == counts


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_mask_computed_at_runtime_is_fused(tmp_path: Path, exporter: str) -> None:
    path = _export(tmp_path, "runtime_mask", exporter)
    assert _ops_on_activations(path, "GreaterOrEqual") == 1 and _ops_on_activations(path, "And") == 1
    n, t, h = D.batch, D.tokens, D.hidden
    assert measured(path) == {"projections": (4, 4 * n * t * h * h), "einsum": (2, 2 * n * D.heads * t * t * D.head_dim),
                              "softmax": (1, n * D.heads * t * t * SOFTMAX)}
    result = import_model(path)
    scores = next(layer for layer in result.network.layers if layer.op.kind == "einsum")
    assert scores.fused[-1] == "mask" and scores.output_shape == (n, D.heads, t, t)
    assert [name for name, _ in result.network.inputs] == ["input"]  # positions and mask build the mask only
    assert any("computed at runtime from input(s) attention_mask, positions" in line
               for line in result.report.lines())


class ScoresGate(torch.nn.Module):
    """Two operators this import does not take: a Where whose condition is a layer's result, and a slice of
    three of eight tokens (not an equal part)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(D.hidden, D.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        return torch.where(y > 0, y, 0.0)[:, :3]


def _unsupported_listing(block: torch.nn.Module, path: Path) -> str:
    """The import error of ``block`` exported to ``path`` (hidden states in): its list of unsupported operators."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_block(block, torch.randn(D.batch, D.tokens, D.hidden), str(path))
    with pytest.raises(UnsupportedOperatorsError) as err:
        load_network(path)
    return str(err.value)


def test_unsupported_where_and_slice_are_listed_at_once(tmp_path: Path) -> None:
    message = _unsupported_listing(ScoresGate(), tmp_path / "gate.onnx")
    assert "Where (condition computed from layer results, or fill computed)" in message
    assert f"Slice (takes {D.batch * 3 * D.hidden} of {D.batch * D.tokens * D.hidden} elements" in message
    assert "Greater" in message  # the comparison of a layer's result is listed too


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("mask", list(MASKS))
def test_additive_and_masked_fill_masks_computed_at_runtime_are_fused(tmp_path: Path, mask: str,
                                                                      exporter: str) -> None:
    path = _export(tmp_path, f"mask_{mask}", exporter)
    n, t, h = D.batch, D.tokens, D.hidden
    attention = {"projections": (4, 4 * n * t * h * h), "einsum": (2, 2 * n * D.heads * t * t * D.head_dim),
                 "softmax": (1, n * D.heads * t * t * SOFTMAX)}
    assert measured(path) == attention  # no layer builds the mask, none adds it: fused as a constant mask is
    result = import_model(path)
    scores = next(layer for layer in result.network.layers if layer.op.kind == "einsum")
    assert scores.fused == ("div_const", MASKS[mask]) and scores.output_shape == (n, D.heads, t, t)
    assert [name for name, _ in result.network.inputs] == ["input"]  # the mask's inputs are read by it only
    kind = "additive mask(s)" if MASKS[mask] == "add_mask" else "Where condition(s)"
    assert any(f"1 {kind} computed at runtime from input(s) attention_mask" in line for line in result.report.lines())


class SharedMaskLayers(torch.nn.Module):
    """Two attention layers adding the one extended mask BERT builds once per model from ``attention_mask``."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(MaskedAttention(D) for _ in range(2))

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        extended = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.layers:
            x = x + layer.attend(x, lambda w: w + extended)
        return x


def test_one_additive_mask_shared_by_layers_is_fused_in_each(tmp_path: Path) -> None:
    path = tmp_path / "shared.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export_block(SharedMaskLayers(), (torch.randn(D.batch, D.tokens, D.hidden),
                                          torch.ones(D.batch, D.tokens, dtype=torch.long)),
                     str(path), ("input", "attention_mask"))
    n, t, h = D.batch, D.tokens, D.hidden
    assert measured(path) == {"projections": (8, 8 * n * t * h * h), "einsum": (4, 4 * n * D.heads * t * t * D.head_dim),
                              "softmax": (2, 2 * n * D.heads * t * t * SOFTMAX), "add": (2, 2 * n * t * h)}
    net = load_network(path)
    assert [layer.fused for layer in net.layers if layer.op.kind == "einsum"][::2] == [("div_const", "add_mask")] * 2
    assert [name for name, _ in net.inputs] == ["input"]


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_decode_step_with_token_major_caches_appends_kv(tmp_path: Path, exporter: str) -> None:
    """Caches [batch, tokens, heads, head_dim] appended on axis 1 (not a channel concat: K and V reach
    attention through a transpose) are cache inputs, as the [batch, heads, tokens, head_dim] ones are."""
    path = _export(tmp_path, "decode_bthd", exporter)
    kv = CACHED + 1
    n, h, d = D.batch, D.heads, D.head_dim
    assert measured(path) == {"projections": (4, 4 * n * D.hidden * D.hidden),
                              "einsum": (2, 2 * n * h * kv * d), "softmax": (1, n * h * kv * SOFTMAX)}
    net = load_network(path)
    caches = [(name, shape) for name, shape in net.inputs if name != "input"]
    assert [shape for _, shape in caches] == [(n, kv, h, d)] * 2
    scores, values = (layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.inputs[1] == caches[0][0] and values.inputs[1] == caches[1][0]
    assert (scores.op.bound("Q"), scores.op.bound("K")) == (1, kv)
    assert not any(layer.op.kind == "concat" for layer in net.layers)


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_partial_rotary_is_a_rotary_layer_on_its_dims(tmp_path: Path, exporter: str) -> None:
    path = _export(tmp_path, "llama_partial_rotary", exporter)
    assert _ops_on_activations(path, "Slice") >= 8 and _ops_on_activations(path, "Concat") >= 4
    counts = layer_counts(GQA, GQA.tokens, gated=True, norm_ops=RMSNORM)
    rotated = GQA.batch * GQA.tokens * (GQA.heads + GQA.kv_heads) * ROTARY_DIMS  # the pass-through dims: none
    counts["rotary"] = (2, rotated * ROTARY)
    assert measured(path) == counts
    result = import_model(path)
    net = result.network
    q_rot, k_rot = (layer for layer in net.layers if layer.op.kind == "rotary")
    assert q_rot.output_shape == (GQA.batch, GQA.heads, GQA.tokens, ROTARY_DIMS)
    assert k_rot.output_shape == (GQA.batch, GQA.kv_heads, GQA.tokens, ROTARY_DIMS)
    assert net.consumers(q_rot.name) == [] and net.consumers(k_rot.name) == []  # written in place
    scores = next(layer for layer in net.layers if layer.op.kind == "einsum")
    assert scores.inputs == (q_rot.inputs[0], k_rot.inputs[0])  # the projections' tensors, rotated in place
    assert scores.op.bound("G") == GQA.kv_heads
    assert sum(f"first {ROTARY_DIMS} of {GQA.head_dim} dims" in line for line in result.report.lines()) == 2


class TokenConcat(torch.nn.Module):
    """Rows all computed here joined on the token axis, and a partial rotary whose dims do not divide the head's."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(D.hidden, D.hidden), torch.nn.Linear(D.hidden, D.hidden)
        self.cos, self.sin = rotary_tables(D.tokens, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = self.b(x).view(D.batch, D.tokens, D.heads, D.head_dim).transpose(1, 2)
        return torch.cat([self.a(x), self.b(x)], dim=1), partial_rotary(q, self.cos, self.sin, 6)


def test_concat_of_computed_rows_and_partial_rotary_not_dividing_are_listed(tmp_path: Path) -> None:
    message = _unsupported_listing(TokenConcat(), tmp_path / "cat.onnx")
    assert "Concat (axis 1 of a rank-3 tensor joins tensors all computed here" in message
    assert f"Concat (partial rotary on 6 of {D.head_dim} dims: the rotated dims must divide the head dim)" in message


@pytest.mark.parametrize("exporter", EXPORTERS)
@pytest.mark.parametrize("name", list(BLOCKS))
def test_import_then_map_without_skipping(tmp_path: Path, name: str, exporter: str) -> None:
    """``dnnmap import`` then ``dnnmap map`` (no --skip-unsupported): every layer mapped with its MACs."""
    path = _export(tmp_path, name, exporter)
    assert_imports_and_maps(path, tmp_path)
