"""Constructors for the operator kinds of the IR (conv, depthwise, FC/matmul, pool, add, einsum, the transformer kinds).

Dimension names follow Timeloop: N batch, G groups, K output channels per group,
C input channels per group, P/Q output rows/columns, R/S filter rows/columns.
(TSO writes R x C for the output and K x K for the kernel; Marvel uses the same
letters as here. ``docs/ir.md`` has the correspondence.)
"""

from __future__ import annotations

import re

from dnnmap.workload.ir import Axis, Operator, Tensor
from dnnmap.workload.kinds import KINDS


def _ax(name: str, *terms: tuple[str, int]) -> Axis:
    return Axis(name, tuple(terms))


def conv_output_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1) -> int:
    """Output extent of a convolution/pooling window along one axis (floor mode)."""
    out = (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1
    if out < 1:
        raise ValueError(
            f"window {kernel} (dilation {dilation}) does not fit input {size} with padding {pad_begin}+{pad_end}"
        )
    return out


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _pads(v: int | tuple[int, int] | tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right)."""
    if isinstance(v, int):
        return (v, v, v, v)
    if len(v) == 2:
        return (v[0], v[1], v[0], v[1])
    return tuple(int(x) for x in v)  # type: ignore[return-value]


def conv2d(
    name: str,
    in_channels: int,
    out_channels: int,
    in_hw: int | tuple[int, int],
    kernel: int | tuple[int, int],
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] | tuple[int, int, int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    batch: int = 1,
    connectivity: tuple[tuple[int, ...], ...] | None = None,
) -> Operator:
    """2-D convolution, grouped when ``groups > 1``; depthwise when groups == in == out channels.

    A negative bottom/right padding crops: that many trailing input rows/columns are not
    read (used by the NVE networks, whose layers read a fixed window of their input).
    """
    h, w = _pair(in_hw)
    kr, ks = _pair(kernel)
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pads(padding)
    if in_channels % groups or out_channels % groups:
        raise ValueError(f"{name}: channels {in_channels}->{out_channels} not divisible by groups={groups}")
    p = conv_output_size(h, kr, sh, pt, pb, dh)
    q = conv_output_size(w, ks, sw, pl, pr, dw)
    c, k = in_channels // groups, out_channels // groups
    dims = (("N", batch), ("G", groups), ("K", k), ("C", c), ("P", p), ("Q", q), ("R", kr), ("S", ks))
    inp = Tensor("I", "input", (_ax("N", ("N", 1)), _ax("G", ("G", 1)), _ax("C", ("C", 1)),
                               _ax("H", ("P", sh), ("R", dh)), _ax("W", ("Q", sw), ("S", dw))))
    wgt = Tensor("W", "weight", (_ax("G", ("G", 1)), _ax("K", ("K", 1)), _ax("C", ("C", 1)),
                                _ax("R", ("R", 1)), _ax("S", ("S", 1))))
    out = Tensor("O", "output", (_ax("N", ("N", 1)), _ax("G", ("G", 1)), _ax("K", ("K", 1)),
                                _ax("P", ("P", 1)), _ax("Q", ("Q", 1))))
    if groups == 1:
        kind = "pointwise" if (kr, ks) == (1, 1) else "conv2d"
    elif groups == in_channels and out_channels == in_channels:
        kind = "depthwise"
    else:
        kind = "conv2d"
    attrs = (("stride", (sh, sw)), ("padding", (pt, pl, pb, pr)), ("dilation", (dh, dw)), ("groups", groups),
             ("in_hw", (h, w)), ("in_channels", in_channels), ("out_channels", out_channels))
    return Operator(name, kind, dims, (inp, wgt, out), attrs, connectivity)


def depthwise(name: str, channels: int, in_hw: int | tuple[int, int], kernel: int | tuple[int, int],
              stride: int | tuple[int, int] = 1, padding: int | tuple[int, ...] = 0, batch: int = 1,
              multiplier: int = 1) -> Operator:
    """Depthwise convolution (``groups = channels``)."""
    return conv2d(name, channels, channels * multiplier, in_hw, kernel, stride, padding, 1, channels, batch)


def pointwise(name: str, in_channels: int, out_channels: int, in_hw: int | tuple[int, int],
              stride: int | tuple[int, int] = 1, batch: int = 1) -> Operator:
    """1x1 convolution."""
    return conv2d(name, in_channels, out_channels, in_hw, 1, stride, 0, 1, 1, batch)


def matmul(name: str, m: int, k: int, n: int, batch: int = 1, kind: str = "matmul") -> Operator:
    """``O[b, m, n] += A[b, m, k] * B[k, n]`` (B is the weight operand). FC layers use m = batch rows."""
    dims = (("B", batch), ("M", m), ("N", n), ("K", k))
    a = Tensor("I", "input", (_ax("B", ("B", 1)), _ax("M", ("M", 1)), _ax("K", ("K", 1))))
    b = Tensor("W", "weight", (_ax("K", ("K", 1)), _ax("N", ("N", 1))))
    o = Tensor("O", "output", (_ax("B", ("B", 1)), _ax("M", ("M", 1)), _ax("N", ("N", 1))))
    return Operator(name, kind, dims, (a, b, o), (("in_features", k), ("out_features", n)))


def fully_connected(name: str, in_features: int, out_features: int, batch: int = 1) -> Operator:
    """Fully connected layer as a 1x1 convolution on a 1x1 map (the form Marvel uses for FC)."""
    op = conv2d(name, in_features, out_features, 1, 1, batch=batch)
    return Operator(op.name, "fc", op.dims, op.tensors, op.attrs)


def pool(name: str, channels: int, in_hw: int | tuple[int, int], kernel: int | tuple[int, int],
         stride: int | tuple[int, int] | None = None, padding: int | tuple[int, ...] = 0,
         mode: str = "max", batch: int = 1, ceil_mode: bool = False) -> Operator:
    """Max/average pooling: a depthwise window without weights."""
    h, w = _pair(in_hw)
    kr, ks = _pair(kernel)
    sh, sw = _pair(stride if stride is not None else kernel)
    pt, pl, pb, pr = _pads(padding)  # type: ignore[arg-type]
    if ceil_mode:  # extend the bottom/right padding so the last partial window is kept
        pb += (-(h + pt + pb - kr)) % sh
        pr += (-(w + pl + pr - ks)) % sw
        # ... unless that window would start in the bottom/right padding (PyTorch/ONNX rule)
        if (h + pt + pb - kr) // sh * sh >= h + pt:
            pb -= sh
        if (w + pl + pr - ks) // sw * sw >= w + pl:
            pr -= sw
    p = conv_output_size(h, kr, sh, pt, pb)
    q = conv_output_size(w, ks, sw, pl, pr)
    dims = (("N", batch), ("G", channels), ("P", p), ("Q", q), ("R", kr), ("S", ks))
    inp = Tensor("I", "input", (_ax("N", ("N", 1)), _ax("G", ("G", 1)),
                               _ax("H", ("P", sh), ("R", 1)), _ax("W", ("Q", sw), ("S", 1))))
    out = Tensor("O", "output", (_ax("N", ("N", 1)), _ax("G", ("G", 1)), _ax("P", ("P", 1)), _ax("Q", ("Q", 1))))
    if mode not in ("max", "avg"):
        raise ValueError(f"{name}: pooling mode must be 'max' or 'avg', got {mode!r}")
    attrs = (("stride", (sh, sw)), ("padding", (pt, pl, pb, pr)), ("in_hw", (h, w)), ("kernel", (kr, ks)))
    return Operator(name, f"pool_{mode}", dims, (inp, out), attrs)


def eltwise(name: str, channels: int, hw: int | tuple[int, int], n_inputs: int = 2, batch: int = 1,
            kind: str = "add") -> Operator:
    """Element-wise add/mul of ``n_inputs`` equally shaped feature maps (residual add)."""
    h, w = _pair(hw)
    dims = (("N", batch), ("G", channels), ("P", h), ("Q", w))
    axes = (_ax("N", ("N", 1)), _ax("G", ("G", 1)), _ax("P", ("P", 1)), _ax("Q", ("Q", 1)))
    ins = tuple(Tensor(f"I{i}" if i else "I", "input", axes) for i in range(n_inputs))
    return Operator(name, kind, dims, (*ins, Tensor("O", "output", axes)))


def concat(name: str, channels: int, hw: int | tuple[int, int], batch: int = 1) -> Operator:
    """Channel concatenation: a copy of the stacked inputs into one output (no arithmetic)."""
    h, w = _pair(hw)
    dims = (("N", batch), ("G", channels), ("P", h), ("Q", w))
    axes = (_ax("N", ("N", 1)), _ax("G", ("G", 1)), _ax("P", ("P", 1)), _ax("Q", ("Q", 1)))
    return Operator(name, "concat", dims, (Tensor("I", "input", axes), Tensor("O", "output", axes)))


_EINSUM = re.compile(r"^\s*([A-Za-z]+)\s*((?:,\s*[A-Za-z]+\s*)*)->\s*([A-Za-z]+)\s*$")


def einsum(name: str, expr: str, sizes: dict[str, int], tensor_names: tuple[str, ...] | None = None) -> Operator:
    """Generic tensor contraction, e.g. MTTKRP ``"ikl,kj,lj->ij"`` or TTMC ``"ijk,jr,ks->irs"``.

    Each letter is a loop dimension (upper-cased in the IR); the first operand has role
    ``input``, the others ``weight`` (capacity partitions are shared per role).
    """
    m = _EINSUM.match(expr)
    if not m:
        raise ValueError(f"{name}: cannot parse einsum {expr!r}; expected like 'ik,kj->ij'")
    operands = [m.group(1)] + [s.strip() for s in m.group(2).split(",") if s.strip()]
    out = m.group(3)
    letters = sorted(set("".join(operands) + out), key=lambda c: ("".join(operands) + out).index(c))
    missing = [c for c in letters if c not in sizes and c.upper() not in sizes]
    if missing:
        raise ValueError(f"{name}: einsum {expr!r} needs sizes for {missing}")
    dims = tuple((c.upper(), int(sizes.get(c, sizes.get(c.upper(), 0)))) for c in letters)
    names = tensor_names or tuple(f"T{i}" for i in range(len(operands))) + ("O",)
    tensors = []
    for i, spec in enumerate(operands):
        role = "input" if i == 0 else "weight"
        tensors.append(Tensor(names[i], role, tuple(_ax(c.upper(), (c.upper(), 1)) for c in spec)))
    tensors.append(Tensor(names[-1], "output", tuple(_ax(c.upper(), (c.upper(), 1)) for c in out)))
    return Operator(name, "einsum", dims, tuple(tensors), (("expr", expr),))


_MAP_AXES = (("N", "N"), ("G", "G"), ("P", "P"), ("Q", "Q"))
# per-feature scale, axis [Q]; layernorm's shift beta is added in the epilogue, like a matmul's bias (not moved)
_VECTOR_WEIGHTS = {"layernorm": ("gamma",), "rmsnorm": ("gamma",)}


def vector(name: str, kind: str, rows: int, cols: int, groups: int = 1, batch: int = 1) -> Operator:
    """A transformer element-wise kind (softmax, layernorm, rmsnorm, gelu, silu, swiglu) on a
    ``batch x groups x rows x cols`` tensor: N batch, G heads (1 for hidden states), P tokens, Q the row
    that softmax and the norms reduce over (keys or features). ``I[N, G, P, Q] -> O[N, G, P, Q]``; swiglu
    reads the gate ``I`` and the up-projection ``I1``; the norms read their scale ``gamma[Q]`` (layernorm's
    shift ``beta`` is an epilogue add, as a matmul's bias)."""
    if kind not in KINDS or KINDS[kind].constructor != "vector":
        raise ValueError(f"{name}: {kind!r} is not a vector kind "
                         f"({', '.join(k.name for k in KINDS.values() if k.constructor == 'vector')})")
    dims = (("N", batch), ("G", groups), ("P", rows), ("Q", cols))
    axes = tuple(_ax(a, (d, 1)) for a, d in _MAP_AXES)
    ins = tuple(Tensor(f"I{i}" if i else "I", "input", axes) for i in range(KINDS[kind].inputs or 1))
    weights = tuple(Tensor(w, "weight", (_ax("Q", ("Q", 1)),)) for w in _VECTOR_WEIGHTS.get(kind, ()))
    return Operator(name, kind, dims, (*ins, *weights, Tensor("O", "output", axes)))


def rotary(name: str, tokens: int, heads: int, head_dim: int, batch: int = 1) -> Operator:
    """Rotary position embedding of queries or keys, element-wise: ``O = I * cos + rotate_half(I) * sin``.

    ``I[N, P, G, Q]`` and ``O`` keep the layout the projections write (token, then head, then the head's
    ``Q = head_dim`` features); ``rot[P, Q]`` is the position table of these tokens: ``cos(theta_j)`` in
    word ``j`` and ``sin(theta_j)`` in word ``Q/2 + j`` (features ``j`` and ``Q/2 + j`` rotate by the same
    angle). The partner element and table word an output reads lie in the same head row ``[Q]``."""
    if head_dim % 2:
        raise ValueError(f"{name}: rotary embedding needs an even head dimension, got {head_dim}")
    dims = (("N", batch), ("G", heads), ("P", tokens), ("Q", head_dim))
    axes = (_ax("N", ("N", 1)), _ax("P", ("P", 1)), _ax("G", ("G", 1)), _ax("Q", ("Q", 1)))
    table = (_ax("P", ("P", 1)), _ax("Q", ("Q", 1)))
    return Operator(name, "rotary", dims, (Tensor("I", "input", axes), Tensor("rot", "weight", table),
                                           Tensor("O", "output", axes)))


def attention(name: str, part: str, batch: int, heads: int, q_len: int, kv_len: int, head_dim: int,
              kv_heads: int | None = None) -> Operator:
    """Multi-head attention's two batched matmuls as einsums, the head split and transposes folded into
    the operands' axis orders (the layouts the projections write, ``[b, token, head, d]``):

    - ``part="scores"``: ``S[b,h,q,k] = sum_d Q[b,q,h,d] * K[b,k,h,d]`` (``bqhd,bkhd->bhqk``);
    - ``part="values"``: ``O[b,q,h,d] = sum_k P[b,h,q,k] * V[b,k,h,d]`` (``bhqk,bkhd->bqhd``).

    Grouped-query attention (``kv_heads < heads``): query head ``h = g*r_n + r`` shares K/V head ``g``,
    written with the group ``g`` and the rank ``r`` within it (``bqgrd,bkgd->bgrqk``, ``bgrqk,bkgd->bqgrd``):
    K and V do not depend on ``r``, so each K/V word is reused by ``heads / kv_heads`` query heads.
    """
    kv_heads = heads if kv_heads is None else kv_heads
    if kv_heads < 1 or heads % kv_heads:
        raise ValueError(f"{name}: {heads} query heads are not a multiple of {kv_heads} K/V heads")
    sizes = {"b": batch, "q": q_len, "k": kv_len, "d": head_dim, "h": heads, "g": kv_heads, "r": heads // kv_heads}
    exprs = {("scores", False): ("bqhd,bkhd->bhqk", ("Q", "K", "S")),
             ("values", False): ("bhqk,bkhd->bqhd", ("P", "V", "O")),
             ("scores", True): ("bqgrd,bkgd->bgrqk", ("Q", "K", "S")),
             ("values", True): ("bgrqk,bkgd->bqgrd", ("P", "V", "O"))}
    key = (part, kv_heads != heads)
    if key not in exprs:
        raise ValueError(f"{name}: attention part must be 'scores' or 'values', got {part!r}")
    expr, tensor_names = exprs[key]
    return einsum(name, expr, sizes, tensor_names)
