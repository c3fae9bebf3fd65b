"""The layers the NMP target runs, in the geometry the generator, the references and the simulator share.

Supported (docs/nmp.md "Layers"): ``conv2d``, ``pointwise`` and ``fc`` (a 1x1 convolution on a 1x1 map
reading its producer's C x H x W output flattened, which is the same NCHW memory), ``depthwise`` (channel
multiplier 1), ``pool_max`` (padded only where its input is non-negative: after relu/relu6, so the zero
border never wins), ``pool_avg``, a two-input ``add`` and ``concat``; fused activations ``relu`` and
``relu6``. Everything else (grouped convolutions, matmul/einsum, other activations) is refused with a
message naming the layer, before anything is generated.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnmap.errors import MappingError
from dnnmap.search.tso.layer import TSO_KINDS
from dnnmap.workload.ir import Layer, Network
from dnnmap.workload.kinds import KINDS, ConvGeometry

SUPPORTED_KINDS = TSO_KINDS  # the NMP target runs what the TSO mapper schedules (its programs follow TSO's tiles)
SUPPORTED_ACTIVATIONS = ("relu", "relu6")


@dataclass(frozen=True)
class NmpLayer:
    """One layer: CHW shapes (batch 1), window geometry and the padding of its input (top, left, bottom, right)."""

    name: str
    kind: str
    inputs: tuple[str, ...]
    in_shape: tuple[int, int, int]  # C, H, W of each input as produced (unpadded)
    out_shape: tuple[int, int, int]  # M, R, C
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    activation: str = ""  # "", "relu" or "relu6"
    in_channels: tuple[int, ...] = ()  # concat: channels of each input, in order

    @property
    def is_conv(self) -> bool:
        """A convolution of any kind (weights, bias, requantization)."""
        return KINDS[self.kind].conv

    @property
    def channelwise(self) -> bool:
        """Output channel m reads input channel m only (no multicast; docs/tso.md)."""
        return KINDS[self.kind].channelwise

    @property
    def padded_hw(self) -> tuple[int, int]:
        """The input extent the layer reads, padded coordinates (TSO Eq. 1 with T_R = R)."""
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.stride, self.dilation
        return (self.out_shape[1] - 1) * sh + dh * (kh - 1) + 1, (self.out_shape[2] - 1) * sw + dw * (kw - 1) + 1

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        """M x N x Kh x Kw (FC: N = the flattened input features)."""
        return (self.out_shape[0], self.in_features, *self.kernel)

    @property
    def in_features(self) -> int:
        c, h, w = self.in_shape
        return c * h * w if self.kind == "fc" else 1 if self.kind == "depthwise" else c


def _refuse(layer: Layer, why: str) -> MappingError:
    return MappingError(f"layer {layer.name!r} ({layer.op.kind}): {why}; the NMP target supports "
                        f"{', '.join(sorted(SUPPORTED_KINDS))} (add with two inputs) and the fused activations "
                        f"{' and '.join(SUPPORTED_ACTIVATIONS)} (docs/nmp.md)")


def nmp_layer(layer: Layer, shapes: dict[str, tuple[int, ...]], nonnegative: frozenset[str] = frozenset()
              ) -> NmpLayer:
    """The NMP view of one network layer; :class:`MappingError` naming the layer when the target cannot run it.
    ``nonnegative``: the tensors known to be >= 0 (a padded max pool must read one)."""
    op = layer.op
    if op.kind not in SUPPORTED_KINDS:
        raise _refuse(layer, "this layer kind is not supported by the NMP generator and simulator")
    g = ConvGeometry.of(op)
    if g.batch != 1:
        raise _refuse(layer, f"batch {g.batch}; the NMP target runs batch 1")
    extra = set(layer.fused) - set(SUPPORTED_ACTIVATIONS)
    if extra or len(layer.fused) > 1:
        raise _refuse(layer, f"fused activation(s) {', '.join(layer.fused)}: one of "
                      f"{', '.join(SUPPORTED_ACTIVATIONS)} is supported")
    ins = [tuple(shapes[s][-3:]) if len(shapes[s]) >= 4 else (shapes[s][-1], 1, 1) for s in layer.inputs]
    out = tuple(layer.output_shape[-3:]) if len(layer.output_shape) >= 4 else (layer.output_shape[-1], 1, 1)
    if min(g.padding) < 0:
        raise _refuse(layer, "negative padding (cropping) is not supported")
    common = dict(name=layer.name, kind=op.kind, inputs=tuple(layer.inputs), in_shape=ins[0], out_shape=out,
                  kernel=g.kernel, stride=g.stride, dilation=g.dilation, padding=g.padding,
                  activation=layer.fused[0] if layer.fused else "")
    if KINDS[op.kind].conv:
        depthwise = op.kind == "depthwise" and g.out_per_group == 1
        if (g.groups != 1 and not depthwise) or op.connectivity is not None:
            raise _refuse(layer, "grouped (other than depthwise with multiplier 1) or sparsely connected "
                          "convolutions are not supported")
        return NmpLayer(**common)
    if op.kind in ("pool_max", "pool_avg"):
        if op.kind == "pool_max" and any(g.padding) and layer.inputs[0] not in nonnegative:
            raise _refuse(layer, "padded max pooling of a tensor that may be negative is not supported (the "
                          "zero border would need to be -inf); it is supported after relu or relu6")
        return NmpLayer(**common)
    if op.kind == "concat":
        if len({s[1:] for s in ins}) != 1 or any(g.padding):
            raise _refuse(layer, "concatenated maps must have equal height and width")
        return NmpLayer(in_channels=tuple(s[0] for s in ins), **common)
    if len(layer.inputs) != 2 or len(set(ins)) != 1:
        raise _refuse(layer, f"add of {len(layer.inputs)} inputs; the NMP's vector add takes two equal shapes")
    return NmpLayer(**common)


def nmp_layers(network: Network) -> tuple[NmpLayer, ...]:
    """Every layer of ``network`` in the NMP view (one input; refuses what the target cannot run)."""
    if len(network.inputs) != 1:
        raise MappingError(f"network {network.name!r}: the NMP target runs networks with one input, "
                           f"not {len(network.inputs)}")
    shapes: dict[str, tuple[int, ...]] = dict(network.inputs)
    nonnegative: set[str] = set()
    out = []
    for layer in network.layers:
        ly = nmp_layer(layer, shapes, frozenset(nonnegative))
        out.append(ly)
        shapes[layer.name] = layer.output_shape
        if ly.activation or (ly.kind in ("pool_max", "pool_avg", "concat") and nonnegative.issuperset(ly.inputs)):
            nonnegative.add(ly.name)
    return tuple(out)
