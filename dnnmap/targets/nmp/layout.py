"""The DRAM memory map: where every tensor, weight and bias array lives (NCHW, row-major, TSO Section III).

Activations come first, then the packed weights segment (the ``weights.bin`` file: per convolution its
weights M x N x Kh x Kw in ``bits``-bit words, then its biases as 32-bit words). Every region starts on a
burst boundary. An activation tensor is stored with a zero border as wide as the largest padding its
consumers read (the IR's padded coordinates are then plain DRAM coordinates); its producer stores into
the interior and the border stays zero. A consumer with less padding reads a window of the buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import MappingError
from dnnmap.targets.nmp.layers import NmpLayer
from dnnmap.workload.ir import Network

BIAS_BYTES = 4


@dataclass(frozen=True)
class Region:
    """One DRAM array: byte address, element size, buffer shape (C x Hb x Wb) and the border (top, left)."""

    name: str
    kind: str  # input | activation | weights | bias
    addr: int
    elem_bytes: int
    shape: tuple[int, int, int]
    border: tuple[int, int] = (0, 0)

    @property
    def nbytes(self) -> int:
        c, h, w = self.shape
        return c * h * w * self.elem_bytes

    @property
    def end(self) -> int:
        return self.addr + self.nbytes

    def element(self, c: int, h: int, w: int) -> int:
        """Byte address of buffer element (c, h, w)."""
        _, hb, wb = self.shape
        return self.addr + ((c * hb + h) * wb + w) * self.elem_bytes

    def strides(self) -> tuple[int, int, int]:
        """Element strides of the C, H and W axes."""
        _, hb, wb = self.shape
        return hb * wb, wb, 1


@dataclass(frozen=True)
class MemoryMap:
    regions: tuple[Region, ...]
    weights_base: int  # the weights segment is [weights_base, size): the weights.bin file
    size: int

    def region(self, name: str) -> Region:
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def tensor(self, name: str) -> Region:
        return self.region(name)

    def weights(self, layer: str) -> Region:
        return self.region(f"{layer}.weight")

    def bias(self, layer: str) -> Region:
        return self.region(f"{layer}.bias")


def _align(addr: int, to: int) -> int:
    return -(-addr // to) * to


def memory_map(network: Network, layers: tuple[NmpLayer, ...], elem_bytes: int, align: int) -> MemoryMap:
    """Regions for the network input, every layer output and every convolution's weights and biases."""
    shapes: dict[str, tuple[int, int, int]] = {}
    (in_name, in_shape), = network.inputs
    shapes[in_name] = tuple(in_shape[-3:]) if len(in_shape) >= 4 else (in_shape[-1], 1, 1)
    for ly in layers:
        shapes[ly.name] = ly.out_shape
    border: dict[str, list[int]] = {name: [0, 0, 0, 0] for name in shapes}
    for ly in layers:
        for src in ly.inputs:
            border[src] = [max(a, b) for a, b in zip(border[src], ly.padding, strict=True)]
    for ly in layers:
        if ly.kind == "fc" and any(border[ly.inputs[0]]):
            raise MappingError(f"layer {ly.name!r}: an FC layer reads its input flattened, but {ly.inputs[0]!r} is "
                               "stored with a padding border for another consumer")
    regions, addr = [], 0
    for name, (c, h, w) in shapes.items():
        t, lft, b, r = border[name]
        reg = Region(name, "input" if name == in_name else "activation", addr, elem_bytes, (c, h + t + b, w + lft + r),
                     (t, lft))
        regions.append(reg)
        addr = _align(reg.end, align)
    weights_base = addr
    for ly in layers:
        if not ly.is_conv:
            continue
        m, n, kh, kw = ly.weight_shape
        wr = Region(f"{ly.name}.weight", "weights", addr, elem_bytes, (m, n, kh * kw))
        addr = _align(wr.end, align)
        br = Region(f"{ly.name}.bias", "bias", addr, BIAS_BYTES, (m, 1, 1))
        addr = _align(br.end, align)
        regions += [wr, br]
    return MemoryMap(tuple(regions), weights_base, addr)
