"""Convolution layers as the NVE sees them, and the check whether an IR layer fits the engine.

A layer is a set of output maps, each accumulating ``kernel`` windows over its input maps
(NVE §2.1.1, Eq. 2.1; merged convolution+pooling is a strided convolution, §2.1.2, Fig. 5).
The 16 lanes are 16 vertically neighbouring outputs of one column (Fig. 6); one loop
iteration produces one output column (Fig. 12).

Vertical subsampling is served by *phases* [choice, docs/nve.md §Stride]: with
subsample ``sv`` the input column is split into ``sv`` row phases (rows ``φ, φ+sv, ...``),
each stored in its own words, so the lanes of one phase are contiguous pixels; kernel
rows ``r ≡ φ (mod sv)`` are served by one image-register load of phase ``φ`` followed
by set-shift/shift operations. This doubles the set-image-register operations for
subsample 2, as NVE §4.2 states.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dnnmap.errors import MappingError
from dnnmap.targets.nve.spec import NveSpec
from dnnmap.workload.ir import Layer, Network
from dnnmap.workload.kinds import ConvGeometry, kind_of


@dataclass(frozen=True)
class ConvLayer:
    """One NVE convolution layer: output maps with their input maps, kernel, subsample, output size."""

    name: str
    in_maps: int
    connections: tuple[tuple[int, ...], ...]  # per output map: the input maps it accumulates
    kernel: tuple[int, int]  # (rows, columns)
    subsample: tuple[int, int]  # (vertical, horizontal) stride
    out_hw: tuple[int, int]  # (rows, columns) of every output map
    batch: int = 1

    @property
    def out_maps(self) -> int:
        return len(self.connections)

    @property
    def in_hw(self) -> tuple[int, int]:
        """Input extent the outputs need: (out-1)*sub + kernel (NVE §2.1.2, Fig. 5; e.g. face L1, Table 1)."""
        (p, q), (kh, kw), (sv, sw) = self.out_hw, self.kernel, self.subsample
        return ((p - 1) * sv + kh, (q - 1) * sw + kw)

    @property
    def macs(self) -> int:
        """Σ_maps #inputs · outW · outH · kH · kW (reproduces NVE Table 1)."""
        (p, q), (kh, kw) = self.out_hw, self.kernel
        return self.batch * p * q * kh * kw * sum(len(c) for c in self.connections)

    def with_out_hw(self, rows: int, cols: int) -> ConvLayer:
        """The same layer on a smaller frame (reduced frames for simulation)."""
        return ConvLayer(self.name, self.in_maps, self.connections, self.kernel, self.subsample, (rows, cols),
                         self.batch)

    @cached_property
    def phases(self) -> tuple[tuple[int, ...], ...]:
        """Kernel rows per non-empty vertical phase, in MAC order (phase 0 rows first)."""
        kh, sv = self.kernel[0], self.subsample[0]
        return tuple(tuple(range(phi, kh, sv)) for phi in range(min(sv, kh)))

    def phase_words(self) -> tuple[int, ...]:
        """Words per column per phase: 2 for ri[0-15], +1 set-shift word if the phase has >1 row."""
        return tuple(2 if len(rows) == 1 else 3 for rows in self.phases)

    def coefficients(self, out_map: int) -> int:
        """Bias plus one weight per MAC of the output map's accumulation chain."""
        kh, kw = self.kernel
        return 1 + len(self.connections[out_map]) * kh * kw

    def misfit(self, spec: NveSpec) -> str | None:
        """Why this layer cannot run on the engine, or None if it fits."""
        (kh, kw), (sv, sw) = self.kernel, self.subsample
        if sv > spec.max_subsample or sw > spec.max_subsample:
            return f"subsample {sv}x{sw} exceeds the engine's maximum {spec.max_subsample} (spec.max_subsample)"
        if sw > kw:
            return f"horizontal subsample {sw} is larger than the kernel width {kw} (columns would be skipped)"
        rows = max(len(r) for r in self.phases)
        if rows > spec.max_rows_per_phase:
            return (f"kernel height {kh} at subsample {sv} needs {rows} rows per phase; the image register "
                    f"serves at most {spec.max_rows_per_phase} (1 + {spec.extra_image_registers} extra registers)")
        for k, conn in enumerate(self.connections):
            if not conn or any(not 0 <= m < self.in_maps for m in conn):
                return f"output map {k} has invalid input maps {conn} (layer has {self.in_maps} input maps)"
        return None


def _connections(layer: Layer, geometry: ConvGeometry) -> tuple[tuple[int, ...], ...]:
    if layer.op.connectivity is not None:
        return tuple(tuple(int(m) for m in conn) for conn in layer.op.connectivity)
    c_per = geometry.in_per_group
    return tuple(tuple(range(g * c_per, (g + 1) * c_per)) for g in range(geometry.groups)
                 for _ in range(geometry.out_per_group))


def from_ir(layer: Layer) -> ConvLayer | str:
    """The NVE view of an IR layer, or a message why it is not a convolution the engine runs."""
    op = layer.op
    kind = kind_of(op)
    if kind is None or not kind.conv:
        return f"operator kind {op.kind!r} is not a convolution (the NVE runs conv2d/pointwise/depthwise/fc)"
    g = ConvGeometry.of(op)
    if g.dilation != (1, 1):
        return f"dilation {g.dilation} is not supported (the image register shifts by one row)"
    return ConvLayer(layer.name, g.in_channels, _connections(layer, g), g.kernel, g.stride, g.out_hw, g.batch)


def network_layers(network: Network, spec: NveSpec) -> tuple[list[ConvLayer], list[tuple[str, str]]]:
    """The layers of ``network`` that fit the engine, and (layer, reason) for those that do not."""
    fitting: list[ConvLayer] = []
    misfits: list[tuple[str, str]] = []
    for layer in network.layers:
        conv = from_ir(layer)
        reason = conv if isinstance(conv, str) else conv.misfit(spec)
        if reason is None:
            fitting.append(conv)  # type: ignore[arg-type]
        else:
            misfits.append((layer.name, reason))
    return fitting, misfits


def misfit_error(network: str, misfits: list[tuple[str, str]]) -> MappingError:
    lines = "; ".join(f"layer {n!r}: {r}" for n, r in misfits)
    return MappingError(f"network {network!r} has {len(misfits)} layer(s) that do not fit the NVE: {lines}")
