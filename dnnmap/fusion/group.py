"""A fused group: layers of the network DAG that run tile by tile with their maps on chip.

HW-Flow-Fusion (Sec. 3.4-4.2) fuses chains: layer ``m`` (top ``M`` .. bottom 0) reads layer
``m+1``'s output. Here a group is any set of consecutive layers of the topological order whose
maps connect them, so residual blocks fuse too: a map read inside the group is an on-chip map;
a map read by a group layer but produced outside is an *external input* (fetched from DRAM
once, Eq. 6's ``Input^top`` term); a map produced inside and read outside the group (or a
network output) is a *group output* (written once, Eq. 6's ``Output^bottom`` term). Every
group output must have the same spatial size, because one bottom tile grid drives the group
(Eq. 4 propagates it upward).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from dnnmap.fusion.attention import head_geometry
from dnnmap.fusion.geometry import FusionError, LayerGeometry, group_layout, layer_geometry, token_geometry
from dnnmap.workload.ir import Network


@dataclass(frozen=True)
class MapInfo:
    """A feature map touched by the group: channels, size, and whether it comes from outside (DRAM)."""

    name: str
    channels: int
    hw: tuple[int, int]
    external: bool

    @property
    def words(self) -> int:
        return self.channels * self.hw[0] * self.hw[1]


@dataclass(frozen=True)
class FusedGroup:
    """Layers (topological order) plus the maps they read and write; see the module docstring."""

    layers: tuple[LayerGeometry, ...]
    outputs: tuple[str, ...]  # maps written to DRAM
    layout: str = "maps"  # maps (CNN), tokens (transformer hidden states) or heads (attention)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(g.name for g in self.layers)

    @cached_property
    def maps(self) -> dict[str, MapInfo]:
        """Every map read or written by the group, external inputs first."""
        own = {g.name: g for g in self.layers}
        maps: dict[str, MapInfo] = {}
        for g in self.layers:
            for index, src in enumerate(g.inputs):
                if src not in own and src not in maps:
                    maps[src] = MapInfo(src, g.channels_of(index), g.in_hw, True)
        for g in self.layers:
            maps[g.name] = MapInfo(g.name, g.out_channels, g.out_hw, False)
        return maps

    @cached_property
    def external_inputs(self) -> tuple[str, ...]:
        return tuple(m for m, info in self.maps.items() if info.external)

    def consumers(self, map_name: str) -> tuple[LayerGeometry, ...]:
        """Group layers that read ``map_name``."""
        return tuple(g for g in self.layers if map_name in g.inputs)

    @property
    def bottom(self) -> LayerGeometry:
        """The last layer: the only one allowed to tile its output channels (G5)."""
        return self.layers[-1]

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.layers)

    @property
    def out_hw(self) -> tuple[int, int]:
        return self.maps[self.outputs[0]].hw

    def __len__(self) -> int:
        return len(self.layers)


def build_group(network: Network, names: list[str] | tuple[str, ...]) -> FusedGroup:
    """The group of ``names`` (in network order); :class:`FusionError` when they cannot run fused."""
    order = {layer.name: i for i, layer in enumerate(network.layers)}
    missing = [n for n in names if n not in order]
    if missing:
        raise FusionError(f"network {network.name!r} has no layer(s) {missing}")
    ordered = sorted(names, key=order.__getitem__)
    layout = group_layout([network.layer(n) for n in ordered])
    geometry = {"heads": head_geometry, "tokens": token_geometry, "maps": layer_geometry}[layout]
    layers = tuple(_with_input_channels(network, geometry(network.layer(n))) for n in ordered)
    inside = set(ordered)
    outputs = tuple(n for n in ordered if _read_outside(network, n, inside))
    group = FusedGroup(layers, outputs, layout)
    _check_connected(group)
    sizes = {group.maps[m].hw for m in outputs}
    if len(sizes) != 1:
        raise FusionError(f"group {list(ordered)}: outputs {list(outputs)} differ in size {sorted(sizes)}; "
                          "one bottom tile grid must drive the whole group")
    return group


def _with_input_channels(network: Network, layer: LayerGeometry) -> LayerGeometry:
    """A concat with the channels of each input it stacks (from the producers' output shapes)."""
    if layer.kind != "concat":
        return layer
    shapes = dict(network.inputs) | {g.name: g.output_shape for g in network.layers}
    return replace(layer, input_channels=tuple(shapes[src][1] for src in layer.inputs))


def _read_outside(network: Network, name: str, inside: set[str]) -> bool:
    consumers = network.consumers(name)
    return not consumers or any(c not in inside for c in consumers)


def _check_connected(group: FusedGroup) -> None:
    """The layers form one weakly connected graph through the maps they share: on-chip maps, or an external
    input several of them read (Inception's branches: fetched once for all of them). Else fusing gains nothing."""
    parent = {m: m for m in group.maps}

    def root(n: str) -> str:
        while parent[n] != n:
            n = parent[n]
        return n

    for g in group.layers:
        for src in g.inputs:
            parent[root(g.name)] = root(src)
    if len({root(g.name) for g in group.layers}) > 1:
        raise FusionError(f"group {list(group.names)}: its layers do not form one connected graph")
