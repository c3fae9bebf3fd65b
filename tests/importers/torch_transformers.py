"""Small torch transformer blocks written the way their reference implementations are, for ONNX export tests.

- :class:`BertLayer`: post-norm encoder layer with a hand-written LayerNorm and the erf GELU (the original
  BERT code), so the export carries their decomposed forms;
- :class:`Gpt2Block`: pre-norm decoder layer with GPT-2's Conv1D (``addmm``: a Gemm), one fused QKV
  projection split in three, a causal mask from a buffer (``Where``) and the tanh GELU, preceded by the
  token and position embeddings (``Gather``);
- :class:`VitBlock`: patch embedding (a convolution with kernel = stride), position embedding and a pre-norm
  encoder layer with ``nn.LayerNorm``, ``nn.GELU`` and a fused QKV projection unbound per head;
- :class:`LlamaLayer`: RMSNorm (decomposed, as Llama's code), SwiGLU MLP and grouped-query attention whose
  K/V heads are repeated with ``repeat_kv`` (expand + reshape), as Hugging Face's Llama; optionally rotary
  embeddings of Q and K with Hugging Face's ``rotate_half`` (two slices, a negation and ``torch.cat``);
- :class:`DecodeStep`: one decode step of multi-head attention: this token's K/V appended to the caches
  given as inputs with ``torch.cat`` along the tokens, the updated caches returned;
- :class:`MaskedAttention`: attention whose causal and padding mask is computed at runtime from position and
  attention-mask inputs (comparisons, ``&``) and applied with ``torch.where``.

Options of the blocks above: ``VitBlock(class_token=True)`` prepends a class token with ``torch.cat``;
``Gpt2Block(qkv_slices=True)`` splits the fused QKV by slicing instead of ``.split``;
``LlamaLayer(rotary_dims=r)`` rotates the first ``r`` of each head's dims only (GPT-NeoX's and Phi's partial
rotary: the rotated part concatenated with the pass-through part); ``DecodeStep(cache_layout="bthd")`` keeps
its caches ``[batch, tokens, heads, head_dim]`` (appended along axis 1, transposed for attention);
``MaskedAttention(mask=...)`` builds the mask the Hugging Face ways: ``"where"`` (above), ``"additive"``
(BERT: ``(1 - attention_mask[:, None, None, :]) * -10000`` added to the scores), ``"masked_fill"`` (a
``[batch, 1, q, k]`` mask of zeros ``masked_fill``-ed with the dtype's minimum, added), ``"where_add"``
(``torch.where(mask, 0, -inf)`` added), ``"fill_scores"`` (``scores.masked_fill(~mask, min)``).

Only imported inside tests that have torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Dims:
    batch: int = 2
    tokens: int = 8
    hidden: int = 32
    heads: int = 4
    ffn: int = 64
    kv_heads: int = 4
    vocab: int = 50

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, t, _ = x.shape
    return x.view(b, t, heads, -1).transpose(1, 2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


class BertLayerNorm(nn.Module):
    """The original BERT code's LayerNorm (exported as ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add)."""

    def __init__(self, hidden: int, eps: float = 1e-12) -> None:
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(hidden)), nn.Parameter(torch.zeros(hidden)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        return self.weight * ((x - u) / torch.sqrt(s + self.eps)) + self.bias


def erf_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def tanh_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class BertLayer(nn.Module):
    def __init__(self, d: Dims) -> None:
        super().__init__()
        self.d = d
        self.q, self.k, self.v, self.o = (nn.Linear(d.hidden, d.hidden) for _ in range(4))
        self.ln1, self.ln2 = BertLayerNorm(d.hidden), BertLayerNorm(d.hidden)
        self.fc1, self.fc2 = nn.Linear(d.hidden, d.ffn), nn.Linear(d.ffn, d.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.d.heads
        q, k, v = _split_heads(self.q(x), h), _split_heads(self.k(x), h), _split_heads(self.v(x), h)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d.head_dim)
        a = _merge_heads(scores.softmax(-1) @ v)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.fc2(erf_gelu(self.fc1(x))))


class Conv1D(nn.Module):
    """GPT-2's projection: ``addmm`` on the flattened tokens (a Gemm), viewed back to [batch, tokens, out]."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.randn(n_in, n_out)), nn.Parameter(torch.zeros(n_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return out.view(*x.shape[:-1], -1)


class Gpt2Block(nn.Module):
    def __init__(self, d: Dims, qkv_slices: bool = False) -> None:
        super().__init__()
        self.d, self.qkv_slices = d, qkv_slices
        self.wte, self.wpe = nn.Embedding(d.vocab, d.hidden), nn.Embedding(d.tokens, d.hidden)
        self.ln_1, self.ln_2 = nn.LayerNorm(d.hidden), nn.LayerNorm(d.hidden)
        self.c_attn, self.c_proj = Conv1D(d.hidden, 3 * d.hidden), Conv1D(d.hidden, d.hidden)
        self.c_fc, self.mlp_proj = Conv1D(d.hidden, d.ffn), Conv1D(d.ffn, d.hidden)
        self.register_buffer("bias", torch.tril(torch.ones(d.tokens, d.tokens, dtype=torch.bool))
                             .view(1, 1, d.tokens, d.tokens))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.size(1)
        x = self.wte(ids) + self.wpe(torch.arange(t))
        qkv, h = self.c_attn(self.ln_1(x)), self.d.hidden
        q, k, v = (qkv[..., :h], qkv[..., h:2 * h], qkv[..., 2 * h:]) if self.qkv_slices else qkv.split(h, dim=2)
        q, k, v = (_split_heads(z, self.d.heads) for z in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(self.d.head_dim)
        w = torch.where(self.bias[:, :, :t, :t], w, torch.tensor(torch.finfo(w.dtype).min))
        x = x + self.c_proj(_merge_heads(w.softmax(-1) @ v))
        return x + self.mlp_proj(tanh_gelu(self.c_fc(self.ln_2(x))))


class VitBlock(nn.Module):
    def __init__(self, d: Dims, image: int, patch: int, class_token: bool = False) -> None:
        super().__init__()
        self.d = d
        self.patch_embed = nn.Conv2d(3, d.hidden, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d.hidden)) if class_token else None
        self.pos_embed = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + class_token, d.hidden))
        self.norm1, self.norm2 = nn.LayerNorm(d.hidden), nn.LayerNorm(d.hidden)
        self.qkv, self.proj = nn.Linear(d.hidden, 3 * d.hidden), nn.Linear(d.hidden, d.hidden)
        self.fc1, self.fc2, self.act = nn.Linear(d.hidden, d.ffn), nn.Linear(d.ffn, d.hidden), nn.GELU()

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(img).flatten(2).transpose(1, 2)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.pos_embed
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.d.heads, self.d.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.d.head_dim ** -0.5) @ k.transpose(-2, -1)
        x = x + self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps)).to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Hugging Face's: the second half negated, then the first."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary_tables(tokens: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of Llama's rotary angles, ``[tokens, head_dim]`` (each angle twice)."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(tokens).float(), inv_freq)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    b, kvh, t, d = x.shape
    return x[:, :, None, :, :].expand(b, kvh, n_rep, t, d).reshape(b, kvh * n_rep, t, d)


def partial_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, dims: int) -> torch.Tensor:
    """GPT-NeoX's: rotary on the first ``dims`` of the last axis, the rest passed through, then concatenated."""
    x_rot, x_pass = x[..., :dims], x[..., dims:]
    return torch.cat((x_rot * cos + rotate_half(x_rot) * sin, x_pass), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, d: Dims, rotary: bool = False, rotary_dims: int | None = None) -> None:
        super().__init__()
        self.d, self.rotary, self.rotary_dims = d, rotary, rotary_dims
        kv = d.kv_heads * d.head_dim
        self.q_proj, self.o_proj = nn.Linear(d.hidden, d.hidden, bias=False), nn.Linear(d.hidden, d.hidden, bias=False)
        self.k_proj, self.v_proj = nn.Linear(d.hidden, kv, bias=False), nn.Linear(d.hidden, kv, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d.hidden, d.ffn, bias=False), nn.Linear(d.hidden, d.ffn, bias=False)
        self.down_proj = nn.Linear(d.ffn, d.hidden, bias=False)
        self.input_layernorm, self.post_attention_layernorm = LlamaRMSNorm(d.hidden), LlamaRMSNorm(d.hidden)
        self.register_buffer("causal", torch.triu(torch.full((d.tokens, d.tokens), float("-inf")), 1))
        cos, sin = rotary_tables(d.tokens, rotary_dims or d.head_dim)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d, rep = self.d, self.d.heads // self.d.kv_heads
        h = self.input_layernorm(x)
        q, k = _split_heads(self.q_proj(h), d.heads), _split_heads(self.k_proj(h), d.kv_heads)
        if self.rotary_dims is not None:
            q, k = (partial_rotary(z, self.cos, self.sin, self.rotary_dims) for z in (q, k))
        elif self.rotary:  # apply_rotary_pos_emb
            q, k = (z * self.cos + rotate_half(z) * self.sin for z in (q, k))
        k = repeat_kv(k, rep)
        v = repeat_kv(_split_heads(self.v_proj(h), d.kv_heads), rep)
        w = q @ k.transpose(2, 3) / math.sqrt(d.head_dim) + self.causal
        x = x + self.o_proj(_merge_heads(nn.functional.softmax(w, dim=-1, dtype=torch.float32) @ v))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class DecodeStep(nn.Module):
    """One new token's attention over the caches ``past_k``, ``past_v`` ``[batch, heads, cached, head_dim]`` (or
    ``[batch, cached, heads, head_dim]`` with ``cache_layout="bthd"``)."""

    def __init__(self, d: Dims, cache_layout: str = "bhtd") -> None:
        super().__init__()
        self.d, self.cache_layout = d, cache_layout
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d.hidden, d.hidden) for _ in range(4))

    def forward(self, x: torch.Tensor, past_k: torch.Tensor,
                past_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        d = self.d
        if self.cache_layout == "bthd":
            b, t, _ = x.shape
            q = _split_heads(self.q_proj(x), d.heads)
            k, v = (p(x).view(b, t, d.heads, d.head_dim) for p in (self.k_proj, self.v_proj))
            k, v = torch.cat([past_k, k], dim=1), torch.cat([past_v, v], dim=1)
            w = (q @ k.permute(0, 2, 3, 1) / math.sqrt(d.head_dim)).softmax(-1)
            return self.o_proj(_merge_heads(w @ v.transpose(1, 2))), k, v
        q, k, v = (_split_heads(p(x), d.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        w = (q @ k.transpose(2, 3) / math.sqrt(d.head_dim)).softmax(-1)
        return self.o_proj(_merge_heads(w @ v)), k, v


class MaskedAttention(nn.Module):
    """Attention masked where a key is after the query (by the ``positions`` input) or padding (``attention_mask``
    0): the mask is computed when the model runs, not a constant."""

    def __init__(self, d: Dims, mask: str = "where") -> None:
        super().__init__()
        self.d, self.mask = d, mask
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d.hidden, d.hidden) for _ in range(4))

    def forward(self, x: torch.Tensor, positions: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self.mask == "additive":  # BERT's extended attention mask: [batch, 1, 1, keys]
            extended = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
            return self.attend(x, lambda w: w + extended)
        causal = positions[:, :, None] >= positions[:, None, :]
        mask = causal[:, None] & attention_mask[:, None, None, :].bool()
        lowest, (b, t) = torch.finfo(x.dtype).min, attention_mask.shape
        masks: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
            "where": lambda w: torch.where(mask, w, lowest),
            "masked_fill": lambda w: w + torch.zeros(b, 1, t, t).masked_fill(~mask, lowest),  # [b, 1, q, k]
            "where_add": lambda w: w + torch.where(mask, 0.0, float("-inf")),
            "fill_scores": lambda w: w.masked_fill(~mask, lowest),
        }
        return self.attend(x, masks[self.mask])

    def attend(self, x: torch.Tensor, apply: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """Attention over ``x`` whose scaled scores are masked by ``apply``."""
        q, k, v = (_split_heads(p(x), self.d.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        w = apply(q @ k.transpose(-1, -2) / math.sqrt(self.d.head_dim))
        return self.o_proj(_merge_heads(w.softmax(-1) @ v))


def export_block(model: nn.Module, example: torch.Tensor | tuple[torch.Tensor, ...], path: str,
                 input_name: str | tuple[str, ...] = "input", dynamo: bool = False) -> str:
    """Export ``model`` (eval mode), constants not folded (as export_module): with the TorchScript exporter, or
    with ``dynamo`` the ``torch.export`` one (it needs the onnxscript package)."""
    examples = example if isinstance(example, tuple) else (example,)
    names = list(input_name) if isinstance(input_name, tuple) else [input_name]
    torch.onnx.export(model.eval(), examples, path, dynamo=dynamo, input_names=names, do_constant_folding=False)
    return path
