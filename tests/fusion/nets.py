"""Reduced networks for the execution proof: a VGG16-E prefix and ResNet-18 basic blocks, small channels and maps."""

from __future__ import annotations

from dnnmap.workload.builder import NetworkBuilder
from dnnmap.workload.ir import Network
from dnnmap.workload.zoo.transformers import Config, encoder


def vgg16_e_prefix(size: int = 18, widths: tuple[int, int, int] = (4, 6, 8)) -> Network:
    """The first seven layers of VGG16-E (CONV1-CONV2-POOL1-CONV3-CONV4-POOL2-CONV5, Sec. 5.1), reduced."""
    b = NetworkBuilder("vgg16_e_prefix", (1, 3, size, size))
    b.conv("conv1", widths[0], 3, padding=1)
    b.conv("conv2", widths[0], 3, padding=1)
    b.pool("pool1", 2, 2)
    b.conv("conv3", widths[1], 3, padding=1)
    b.conv("conv4", widths[1], 3, padding=1)
    b.pool("pool2", 2, 2)
    b.conv("conv5", widths[2], 3, padding=1)
    return b.build()


def resnet_blocks(size: int = 20, width: int = 4) -> Network:
    """ResNet-18's stem (7x7/2 conv, 3x3/2 max-pool with padding), an identity basic block and a
    strided basic block with its 1x1 projection shortcut, reduced."""
    b = NetworkBuilder("resnet_blocks", (1, 3, size, size))
    b.conv("conv1", width, 7, 2, 3)
    stem = b.pool("maxpool", 3, 2, 1)
    b.conv("l1.conv1", width, 3, 1, 1)
    main = b.conv("l1.conv2", width, 3, 1, 1, fused=())
    block1 = b.add("l1.add", main, stem, fused=("relu",))
    b.conv("l2.conv1", 2 * width, 3, 2, 1)
    main = b.conv("l2.conv2", 2 * width, 3, 1, 1, fused=())
    short = b.conv("l2.downsample", 2 * width, 1, 2, 0, src=block1, fused=())
    b.add("l2.add", main, short, fused=("relu",))
    return b.build()


def tiny_bert(seq: int = 8, hidden: int = 16, heads: int = 2, layers: int = 1) -> Network:
    """A BERT-style post-norm encoder reduced to ``seq`` tokens, ``hidden`` features, ``heads`` heads, MLP 4x."""
    return encoder("tiny_bert", Config(hidden, heads, heads, 4 * hidden, "layernorm", False, False, False), layers, seq)


def tiny_llama(seq: int = 6, hidden: int = 16, heads: int = 4, kv_heads: int = 2) -> Network:
    """A Llama-style layer (RMSNorm, rotary, SwiGLU) reduced to ``seq`` tokens with grouped-query attention."""
    return encoder("tiny_llama", Config(hidden, heads, kv_heads, 2 * hidden, "rmsnorm", True, True, True), 1, seq)


def inception_blocks(size: int = 9, width: int = 2) -> Network:
    """InceptionV3's two module shapes, reduced: an Inception-A module (1x1 | 1x1-5x5 | 1x1-3x3-3x3 | 3x3 avg-pool-1x1,
    joined by a channel concat) after a stem convolution, then a reduction module (3x3/2 | 1x1-3x3-3x3/2 | 3x3/2
    max-pool, unpadded) joined by a second concat."""
    b = NetworkBuilder("inception_blocks", (1, 3, size, size))
    src = b.conv("stem", 2 * width, 3, 1, 1)
    b1 = b.conv("a/branch1x1", width, 1, src=src)
    b5 = b.conv("a/branch5x5_1", width, 1, src=src)
    b5 = b.conv("a/branch5x5_2", width + 1, 5, 1, 2, src=b5)
    b3 = b.conv("a/branch3x3dbl_1", width, 1, src=src)
    b3 = b.conv("a/branch3x3dbl_2", width + 1, 3, 1, 1, src=b3)
    b3 = b.conv("a/branch3x3dbl_3", width + 1, 3, 1, 1, src=b3)
    pool = b.pool("a/avgpool", 3, 1, 1, mode="avg", src=src)
    a = b.concat("a", b1, b5, b3, b.conv("a/branch_pool", width, 1, src=pool))
    r3 = b.conv("b/branch3x3", width, 3, 2, 0, src=a)
    d = b.conv("b/branch3x3dbl_1", width, 1, src=a)
    d = b.conv("b/branch3x3dbl_2", width, 3, 1, 1, src=d)
    d = b.conv("b/branch3x3dbl_3", width, 3, 2, 0, src=d)
    b.concat("b", r3, d, b.pool("b/maxpool", 3, 2, src=a))
    return b.build()
