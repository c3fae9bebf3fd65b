"""Transformer models: BERT-base, GPT-2 (124M), ViT-B/16 and one decoder layer of Llama-2-7B.

Hidden states are ``[batch, 1, tokens, features]`` (docs/ir.md "Transformer kinds"): projections are
``matmul`` layers, attention's QK^T and AV are ``einsum`` layers (``ops.attention``) that read Q, K, V in
the layout the projections write (the head split and transposes are folded), softmax, norms and
activations are the vector kinds, residual adds are ``add`` layers. Not layers: biases (added in the
matmul's epilogue), the 1/sqrt(d) scale (folded into the Q projection), dropout, and the causal or
padding mask (an additive mask folded into the softmax; Where/Expand/Cast on it are layout).

Decoder models take ``phase`` (``prefill``: ``seq`` tokens attend to each other; ``decode``: one new
token attends to a KV cache of ``seq`` tokens plus itself). In decode each layer reads its cache as the
graph inputs ``NAME.k_cache`` and ``NAME.v_cache`` of ``seq + 1`` tokens - the ``seq`` cached ones and
the one the layer's K and V projections append (their outputs are the appended entries, written to
memory, so those two layers have no consumer in the graph).
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import DnnmapError
from dnnmap.workload import ops
from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network, Phase
from dnnmap.workload.zoo.registry import register

PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class Config:
    """Dimensions of a transformer stack (the published model's)."""

    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    norm: str  # layernorm or rmsnorm
    gated: bool  # SwiGLU MLP (gate, up, down) instead of up -> GELU -> down
    rotary: bool
    pre_norm: bool  # norm before attention and MLP (GPT-2, ViT, Llama) or after the residual add (BERT)

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


BERT_BASE = Config(768, 12, 12, 3072, "layernorm", False, False, False)
GPT2 = Config(768, 12, 12, 3072, "layernorm", False, False, True)
VIT_B16 = Config(768, 12, 12, 3072, "layernorm", False, False, True)
LLAMA2_7B = Config(4096, 32, 32, 11008, "rmsnorm", True, True, True)
GPT2_VOCAB = 50257


class _Stack:
    """Adds transformer layers to a :class:`NetworkBuilder` (hidden states ``[N, 1, tokens, features]``)."""

    def __init__(self, b: NetworkBuilder, cfg: Config, batch: int, tokens: int, kv_len: int, decode: bool) -> None:
        self.b, self.cfg, self.batch, self.tokens, self.kv_len, self.decode = b, cfg, batch, tokens, kv_len, decode

    def matmul(self, name: str, src: str, out_features: int) -> str:
        n, _, t, d = self.b.shape(src)
        return self.b.add_layer(ops.matmul(name, t, d, out_features, n), (src,), (n, 1, t, out_features))

    def vector(self, name: str, kind: str, *srcs: str) -> str:
        n, g, t, q = self.b.shape(srcs[0])
        return self.b.add_layer(ops.vector(name, kind, t, q, g, n), srcs, (n, g, t, q))

    def rotary(self, name: str, src: str, heads: int) -> str:
        n, _, t, d = self.b.shape(src)
        return self.b.add_layer(ops.rotary(name, t, heads, d // heads, n), (src,), (n, 1, t, d))

    def attention(self, p: str, q: str, k: str, v: str) -> str:
        c, n, t, kv = self.cfg, self.batch, self.tokens, self.kv_len
        if self.decode:  # the cache, this step's K/V included (module docstring)
            k = self.b.add_input(f"{p}.k_cache", (n, 1, kv, c.kv_heads * c.head_dim))
            v = self.b.add_input(f"{p}.v_cache", (n, 1, kv, c.kv_heads * c.head_dim))
        scores = ops.attention(f"{p}.scores", "scores", n, c.heads, t, kv, c.head_dim, c.kv_heads)
        s = self.b.add_layer(scores, (q, k), (n, c.heads, t, kv))
        sm = self.vector(f"{p}.softmax", "softmax", s)
        values = ops.attention(f"{p}.values", "values", n, c.heads, t, kv, c.head_dim, c.kv_heads)
        return self.b.add_layer(values, (sm, v), (n, 1, t, c.hidden))

    def layer(self, p: str, x: str) -> str:
        """One encoder/decoder layer reading hidden states ``x``; returns its output's name."""
        c = self.cfg
        h = self.vector(f"{p}.norm1", c.norm, x) if c.pre_norm else x
        q = self.matmul(f"{p}.q_proj", h, c.hidden)
        k = self.matmul(f"{p}.k_proj", h, c.kv_heads * c.head_dim)
        v = self.matmul(f"{p}.v_proj", h, c.kv_heads * c.head_dim)
        if c.rotary:
            q = self.rotary(f"{p}.q_rope", q, c.heads)
            k = self.rotary(f"{p}.k_rope", k, c.kv_heads)
        a = self.matmul(f"{p}.o_proj", self.attention(f"{p}.attn", q, k, v), c.hidden)
        x = self.b.add(f"{p}.add1", x, a)
        if not c.pre_norm:
            x = self.vector(f"{p}.norm1", c.norm, x)
        h = self.vector(f"{p}.norm2", c.norm, x) if c.pre_norm else x
        if c.gated:
            gate = self.matmul(f"{p}.gate_proj", h, c.ffn)
            up = self.matmul(f"{p}.up_proj", h, c.ffn)
            m = self.vector(f"{p}.swiglu", "swiglu", gate, up)
        else:
            m = self.vector(f"{p}.gelu", "gelu", self.matmul(f"{p}.fc1", h, c.ffn))
        x = self.b.add(f"{p}.add2", x, self.matmul(f"{p}.fc2" if not c.gated else f"{p}.down_proj", m, c.hidden))
        return self.vector(f"{p}.norm2", c.norm, x) if not c.pre_norm else x


def _phase(model: str, phase: str, seq: int) -> tuple[int, int, bool]:
    """(tokens, K/V length, decode) of ``phase`` with ``seq`` prompt tokens or cached tokens."""
    if phase not in PHASES:
        raise DnnmapError(f"model {model!r}: phase must be one of {', '.join(PHASES)}, got {phase!r}")
    return (1, seq + 1, True) if phase == "decode" else (seq, seq, False)


def _network(b: NetworkBuilder, phase: str, seq: int) -> Network:
    """The built network with its phase: ``seq`` tokens in prefill, one new token on a cache of ``seq`` in decode."""
    return b.build(phase=Phase("decode", 1, seq) if phase == "decode" else Phase(phase, seq))


@register("bert_base", "BERT-base encoder (Devlin et al. 2019): 12 layers, 768 hidden, 12 heads; seq tokens",
          params=(("seq", 128),))
def bert_base(batch: int = 1, seq: int = 128) -> Network:
    """12 post-norm encoder layers on ``seq`` token embeddings (the embedding lookup is the graph input)."""
    return encoder("bert_base", BERT_BASE, 12, seq, batch)


def encoder(name: str, cfg: Config, layers: int, seq: int, batch: int = 1) -> Network:
    """``layers`` encoder layers of ``cfg`` (named ``layer0``, ...) on ``seq`` token embeddings: BERT's stack, or a
    reduced one for tests (e.g. ``Config(16, 2, 2, 64, "layernorm", False, False, False)``)."""
    b = NetworkBuilder(name, (batch, 1, seq, cfg.hidden))
    s = _Stack(b, cfg, batch, seq, seq, False)
    x = b.last
    for i in range(layers):
        x = s.layer(f"layer{i}", x)
    return _network(b, "prefill", seq)


@register("gpt2", "GPT-2 124M (Radford et al. 2019): 12 layers, 768 hidden; phase=prefill|decode, seq tokens",
          params=(("phase", "prefill"), ("seq", 1024)))
def gpt2(batch: int = 1, phase: str = "prefill", seq: int = 1024) -> Network:
    """12 pre-norm decoder layers, the final norm and the LM head (tied to the token embedding, 50257)."""
    tokens, kv, decode = _phase("gpt2", phase, seq)
    b = NetworkBuilder("gpt2", (batch, 1, tokens, GPT2.hidden))
    s = _Stack(b, GPT2, batch, tokens, kv, decode)
    x = b.last
    for i in range(12):
        x = s.layer(f"h{i}", x)
    s.matmul("lm_head", s.vector("ln_f", "layernorm", x), GPT2_VOCAB)
    return _network(b, phase, seq)


@register("vit_b16", "ViT-B/16 (Dosovitskiy et al. 2021): 16x16 patches of 3 x image x image, 197 tokens at 224",
          params=(("image", 224),))
def vit_b16(batch: int = 1, image: int = 224) -> Network:
    """Patch embedding as a matmul over the unfolded 16x16 patches (the unfold is a layout) plus the
    class-token row (its 768x768 products counted: 0.003% of the MACs; the class token and position
    embedding adds are folded into it), 12 pre-norm encoder layers and the final norm. The 1000-class head
    (768 x 1000 MACs on the class token, 0.004% of the total) is left out: it reads one row of the norm's
    output, a slice the IR does not express between layers."""
    if image % 16:
        raise DnnmapError(f"model 'vit_b16': image must be a multiple of 16, got {image}")
    tokens = (image // 16) ** 2 + 1
    b = NetworkBuilder("vit_b16", (batch, 1, tokens, 3 * 16 * 16), input_name="patches")
    s = _Stack(b, VIT_B16, batch, tokens, tokens, False)
    x = s.matmul("patch_embed", b.last, VIT_B16.hidden)
    for i in range(12):
        x = s.layer(f"blocks{i}", x)
    s.vector("norm", "layernorm", x)
    return _network(b, "prefill", tokens)


@register("llama7b_layer", "one decoder layer of Llama-2-7B (Touvron et al. 2023): 4096 hidden, 32 heads, "
          "SwiGLU 11008, RMSNorm, rotary; phase=prefill|decode, seq tokens, kv_heads (GQA)",
          params=(("phase", "prefill"), ("seq", 2048), ("kv_heads", 32)))
def llama7b_layer(batch: int = 1, phase: str = "prefill", seq: int = 2048, kv_heads: int = 32) -> Network:
    """One Llama-2-7B decoder layer; ``kv_heads`` below 32 makes it grouped-query (Llama-3-8B: 8)."""
    if LLAMA2_7B.heads % kv_heads:
        raise DnnmapError(f"model 'llama7b_layer': kv_heads must divide 32, got {kv_heads}")
    tokens, kv, decode = _phase("llama7b_layer", phase, seq)
    cfg = Config(**{**LLAMA2_7B.__dict__, "kv_heads": kv_heads})
    b = NetworkBuilder("llama7b_layer", (batch, 1, tokens, cfg.hidden))
    _Stack(b, cfg, batch, tokens, kv, decode).layer("layer0", b.last)
    return _network(b, phase, seq)
