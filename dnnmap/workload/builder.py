"""A shape-tracking builder for networks (used by the zoo and the importers)."""

from __future__ import annotations

from dnnmap.workload import ops
from dnnmap.workload.ir import Layer, Network, Operator, Phase


class NetworkBuilder:
    """Adds layers in topological order, tracking each layer's (N, C, H, W) output shape.

    Every method returns the new layer's name, which later layers pass as ``src``.
    """

    def __init__(self, name: str, input_shape: tuple[int, ...], input_name: str = "input") -> None:
        self.name = name
        self._inputs: list[tuple[str, tuple[int, ...]]] = [(input_name, tuple(input_shape))]
        self._layers: list[Layer] = []
        self._shapes: dict[str, tuple[int, ...]] = {input_name: tuple(input_shape)}
        self.last = input_name

    def add_input(self, name: str, shape: tuple[int, ...]) -> str:
        """Declare a further graph input (e.g. a KV cache); returns its name."""
        self._inputs.append((name, tuple(shape)))
        self._shapes[name] = tuple(shape)
        return name

    def shape(self, src: str) -> tuple[int, ...]:
        return self._shapes[src]

    def add_layer(self, op: Operator, inputs: tuple[str, ...], output_shape: tuple[int, ...],
                  fused: tuple[str, ...] = ()) -> str:
        self._layers.append(Layer(op, tuple(inputs), tuple(output_shape), tuple(fused)))
        self._shapes[op.name] = tuple(output_shape)
        self.last = op.name
        return op.name

    def _src(self, src: str | None) -> str:
        return self.last if src is None else src

    def conv(self, name: str, out_channels: int, kernel: int | tuple[int, int], stride: int | tuple[int, int] = 1,
             padding: int | tuple[int, ...] | str = 0, groups: int = 1, dilation: int | tuple[int, int] = 1,
             src: str | None = None, fused: tuple[str, ...] = ("relu",),
             connectivity: tuple[tuple[int, ...], ...] | None = None) -> str:
        """Convolution; ``padding='same'`` pads (kernel-1)//2 on each side (odd kernels)."""
        src = self._src(src)
        n, c, h, w = self._shapes[src]
        if padding == "same":
            kr, ks = (kernel, kernel) if isinstance(kernel, int) else kernel
            padding = ((kr - 1) // 2, (ks - 1) // 2)
        op = ops.conv2d(name, c, out_channels, (h, w), kernel, stride, padding, dilation, groups, n,
                        connectivity)
        b = op.bounds
        return self.add_layer(op, (src,), (n, out_channels, b["P"], b["Q"]), fused)

    def depthwise(self, name: str, kernel: int, stride: int = 1, padding: int | str = "same",
                  src: str | None = None, fused: tuple[str, ...] = ("relu",)) -> str:
        c = self._shapes[self._src(src)][1]
        return self.conv(name, c, kernel, stride, padding, groups=c, src=src, fused=fused)

    def pool(self, name: str, kernel: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
             padding: int | tuple[int, ...] = 0, mode: str = "max", src: str | None = None,
             ceil_mode: bool = False) -> str:
        src = self._src(src)
        n, c, h, w = self._shapes[src]
        op = ops.pool(name, c, (h, w), kernel, stride, padding, mode, n, ceil_mode)
        b = op.bounds
        return self.add_layer(op, (src,), (n, c, b["P"], b["Q"]))

    def global_pool(self, name: str, mode: str = "avg", src: str | None = None) -> str:
        src = self._src(src)
        _, _, h, w = self._shapes[src]
        return self.pool(name, (h, w), 1, 0, mode, src)

    def add(self, name: str, *srcs: str, fused: tuple[str, ...] = ()) -> str:
        shapes = {self._shapes[s] for s in srcs}
        if len(shapes) != 1:
            raise ValueError(f"{name}: element-wise inputs have different shapes {sorted(shapes)}")
        n, c, h, w = self._shapes[srcs[0]]
        op = ops.eltwise(name, c, (h, w), len(srcs), n)
        return self.add_layer(op, tuple(srcs), (n, c, h, w), fused)

    def concat(self, name: str, *srcs: str) -> str:
        hw = {self._shapes[s][2:] for s in srcs}
        if len(hw) != 1:
            raise ValueError(f"{name}: concatenated maps differ in size {sorted(hw)}")
        n = self._shapes[srcs[0]][0]
        c = sum(self._shapes[s][1] for s in srcs)
        h, w = self._shapes[srcs[0]][2:]
        return self.add_layer(ops.concat(name, c, (h, w), n), tuple(srcs), (n, c, h, w))

    def fc(self, name: str, out_features: int, src: str | None = None, fused: tuple[str, ...] = ()) -> str:
        """Fully connected layer on the flattened input."""
        src = self._src(src)
        shape = self._shapes[src]
        n = shape[0]
        features = 1
        for s in shape[1:]:
            features *= s
        op = ops.fully_connected(name, features, out_features, n)
        return self.add_layer(op, (src,), (n, out_features, 1, 1), fused)

    def build(self, notes: tuple[str, ...] = (), source: str = "zoo", phase: Phase | None = None) -> Network:
        return Network(self.name, tuple(self._layers), tuple(self._inputs), source, notes, phase)
