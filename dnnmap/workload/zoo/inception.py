"""InceptionV3 (Szegedy et al. 2016) as in Keras ``applications.InceptionV3`` / torchvision.

94 convolutions (no auxiliary classifier), 3x299x299 input, factorised 1x7/7x1 and
1x3/3x1 kernels. Batch normalisation is folded into the convolutions, every
convolution has a ReLU epilogue. Layer names are torchvision's module names,
lower-cased, with ``/`` between module and branch (``mixed_6b/branch7x7_2``); each
module's concatenation carries the module name (``mixed_7c``). The pooling branch
is an explicit 3x3/1 average pool (``mixed_5b/avgpool``) followed by the 1x1
``branch_pool`` convolution; the reduction modules use a 3x3/2 max-pool
(``mixed_6a/maxpool``). In ``mixed_7b``/``mixed_7c`` the 1x3 and 3x1 branches go
straight into the module's single concatenation (Keras first concatenates them
pairwise, which only regroups the same channels).
"""

from __future__ import annotations

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.registry import register


def _conv(b: NetworkBuilder, name: str, out: int, kernel: int | tuple[int, int], src: str,
          stride: int = 1, padding: str | int = "same") -> str:
    return b.conv(name, out, kernel, stride, padding, src=src)


def _pool_branch(b: NetworkBuilder, m: str, src: str, out: int) -> str:
    pooled = b.pool(f"{m}/avgpool", 3, 1, 1, mode="avg", src=src)
    return _conv(b, f"{m}/branch_pool", out, 1, pooled)


def _inception_a(b: NetworkBuilder, m: str, src: str, pool_features: int) -> str:
    """Mixed_5b/5c/5d (35x35): 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1."""
    b1 = _conv(b, f"{m}/branch1x1", 64, 1, src)
    b5 = _conv(b, f"{m}/branch5x5_1", 48, 1, src)
    b5 = _conv(b, f"{m}/branch5x5_2", 64, 5, b5)
    b3 = _conv(b, f"{m}/branch3x3dbl_1", 64, 1, src)
    b3 = _conv(b, f"{m}/branch3x3dbl_2", 96, 3, b3)
    b3 = _conv(b, f"{m}/branch3x3dbl_3", 96, 3, b3)
    return b.concat(m, b1, b5, b3, _pool_branch(b, m, src, pool_features))


def _inception_b(b: NetworkBuilder, m: str, src: str) -> str:
    """Mixed_6a (35 -> 17): 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2."""
    b3 = _conv(b, f"{m}/branch3x3", 384, 3, src, 2, 0)
    d = _conv(b, f"{m}/branch3x3dbl_1", 64, 1, src)
    d = _conv(b, f"{m}/branch3x3dbl_2", 96, 3, d)
    d = _conv(b, f"{m}/branch3x3dbl_3", 96, 3, d, 2, 0)
    return b.concat(m, b3, d, b.pool(f"{m}/maxpool", 3, 2, src=src))


def _inception_c(b: NetworkBuilder, m: str, src: str, c7: int) -> str:
    """Mixed_6b..6e (17x17): 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avgpool-1x1."""
    b1 = _conv(b, f"{m}/branch1x1", 192, 1, src)
    s = _conv(b, f"{m}/branch7x7_1", c7, 1, src)
    s = _conv(b, f"{m}/branch7x7_2", c7, (1, 7), s)
    s = _conv(b, f"{m}/branch7x7_3", 192, (7, 1), s)
    d = _conv(b, f"{m}/branch7x7dbl_1", c7, 1, src)
    for i, (out, kernel) in enumerate(((c7, (7, 1)), (c7, (1, 7)), (c7, (7, 1)), (192, (1, 7))), start=2):
        d = _conv(b, f"{m}/branch7x7dbl_{i}", out, kernel, d)
    return b.concat(m, b1, s, d, _pool_branch(b, m, src, 192))


def _inception_d(b: NetworkBuilder, m: str, src: str) -> str:
    """Mixed_7a (17 -> 8): 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool/2."""
    b3 = _conv(b, f"{m}/branch3x3_1", 192, 1, src)
    b3 = _conv(b, f"{m}/branch3x3_2", 320, 3, b3, 2, 0)
    b7 = _conv(b, f"{m}/branch7x7x3_1", 192, 1, src)
    b7 = _conv(b, f"{m}/branch7x7x3_2", 192, (1, 7), b7)
    b7 = _conv(b, f"{m}/branch7x7x3_3", 192, (7, 1), b7)
    b7 = _conv(b, f"{m}/branch7x7x3_4", 192, 3, b7, 2, 0)
    return b.concat(m, b3, b7, b.pool(f"{m}/maxpool", 3, 2, src=src))


def _inception_e(b: NetworkBuilder, m: str, src: str) -> str:
    """Mixed_7b/7c (8x8): 1x1 | 1x1-(1x3, 3x1) | 1x1-3x3-(1x3, 3x1) | avgpool-1x1."""
    b1 = _conv(b, f"{m}/branch1x1", 320, 1, src)
    s = _conv(b, f"{m}/branch3x3_1", 384, 1, src)
    s_a = _conv(b, f"{m}/branch3x3_2a", 384, (1, 3), s)
    s_b = _conv(b, f"{m}/branch3x3_2b", 384, (3, 1), s)
    d = _conv(b, f"{m}/branch3x3dbl_1", 448, 1, src)
    d = _conv(b, f"{m}/branch3x3dbl_2", 384, 3, d)
    d_a = _conv(b, f"{m}/branch3x3dbl_3a", 384, (1, 3), d)
    d_b = _conv(b, f"{m}/branch3x3dbl_3b", 384, (3, 1), d)
    return b.concat(m, b1, s_a, s_b, d_a, d_b, _pool_branch(b, m, src, 192))


@register("inceptionv3", "InceptionV3 (Szegedy et al. 2016): 94 convs, factorised 7x1/1x7 kernels, 3x299x299")
def inceptionv3(batch: int = 1) -> Network:
    b = NetworkBuilder("inceptionv3", (batch, 3, 299, 299))
    x = _conv(b, "conv2d_1a_3x3", 32, 3, "input", 2, 0)
    x = _conv(b, "conv2d_2a_3x3", 32, 3, x, 1, 0)
    x = _conv(b, "conv2d_2b_3x3", 64, 3, x)
    x = b.pool("maxpool_3a_3x3", 3, 2, src=x)
    x = _conv(b, "conv2d_3b_1x1", 80, 1, x, 1, 0)
    x = _conv(b, "conv2d_4a_3x3", 192, 3, x, 1, 0)
    x = b.pool("maxpool_5a_3x3", 3, 2, src=x)
    for m, pool_features in (("mixed_5b", 32), ("mixed_5c", 64), ("mixed_5d", 64)):
        x = _inception_a(b, m, x, pool_features)
    x = _inception_b(b, "mixed_6a", x)
    for m, c7 in (("mixed_6b", 128), ("mixed_6c", 160), ("mixed_6d", 160), ("mixed_6e", 192)):
        x = _inception_c(b, m, x, c7)
    x = _inception_d(b, "mixed_7a", x)
    for m in ("mixed_7b", "mixed_7c"):
        x = _inception_e(b, m, x)
    b.global_pool("avgpool", src=x)
    b.fc("fc", 1000)
    return b.build(notes=("no auxiliary classifier; BN folded",))
