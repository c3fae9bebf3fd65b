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
