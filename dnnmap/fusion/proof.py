"""Proof by execution: run a fused schedule literally and hold it against plain NumPy and the model.

For a group and a tile plan, :func:`prove` draws random integer inputs and weights, runs the
:class:`~dnnmap.fusion.execute.FusedExecutor`, computes the same maps layer by layer with the
operator reference of :mod:`dnnmap.sim.reference` (whole maps, no tiling), and reports:

- the fused outputs equal the reference bit for bit (attention with its keys tiled: the float64 forward pass
  within a tolerance, :mod:`dnnmap.fusion.online_softmax`);
- the MACs executed equal the unfused network's (HW-Flow-Fusion Eq. 13: zero recomputation);
- the peak buffer occupancy is within Eq. 5 + the Eq. 8 reuse buffers;
- the DRAM words moved equal the model's Eq. 6 volume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.fusion.buffers import FusionBuffer, fusion_buffer
from dnnmap.fusion.execute import ExecutionCounts, ExecutionResult, FusedExecutor
from dnnmap.fusion.attention import head_map, operator_tensor, random_slices
from dnnmap.fusion.geometry import LayerGeometry, group_layout
from dnnmap.fusion.group import FusedGroup
from dnnmap.fusion.mlp import HiddenTiledExecutor
from dnnmap.fusion.online_softmax import TOLERANCE, KeyTiledExecutor, float_reference
from dnnmap.fusion.tile_ops import LOWEST
from dnnmap.fusion.tiling import TilePlan
from dnnmap.fusion.volume import OffChipVolume, offchip_volume
from dnnmap.sim.reference import reference_output
from dnnmap.workload.ir import Network, Operator
from dnnmap.workload.kinds import ConvGeometry


@dataclass(frozen=True)
class ProofReport:
    """The executor's counts beside the model's predictions."""

    exact: bool
    counts: ExecutionCounts
    unfused_macs: int
    buffer: FusionBuffer
    volume: OffChipVolume

    @property
    def zero_recomputation(self) -> bool:
        return self.counts.macs == self.unfused_macs

    @property
    def within_buffer(self) -> bool:
        return self.counts.peak_words <= self.buffer.total_words

    @property
    def dram_matches(self) -> bool:
        return self.counts.dram_words == self.volume.total_words

    @property
    def holds(self) -> bool:
        return self.exact and self.zero_recomputation and self.within_buffer and self.dram_matches


def random_operands(network: Network, group: FusedGroup, seed: int = 0,
                    low: int = -3, high: int = 3) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Random int64 external input maps ``(C, H, W)`` and weights of the group: ``(K, C, R, S)`` for a convolution
    or projection (``(N, K, 1, 1)``), one scale per channel for a norm, ``(slices, out, in)`` for attention's
    K/V (:mod:`dnnmap.fusion.attention`)."""
    rng = np.random.default_rng(seed)
    inputs = {m: rng.integers(low, high + 1, size=(group.maps[m].channels, *group.maps[m].hw), dtype=np.int64)
              for m in group.external_inputs}
    weights = {}
    for g in group.layers:
        if g.banded:
            weights[g.name] = random_slices(g, rng, low, high)
        elif g.has_weights:
            shape = ((g.out_channels, g.in_channels, *(w.kernel for w in g.windows)) if g.has_macs
                     else (g.out_channels,))
            weights[g.name] = rng.integers(low, high + 1, size=shape, dtype=np.int64)
    return inputs, weights


def reference_maps(network: Network, group: FusedGroup, inputs: dict[str, np.ndarray],
                   weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every map of the group computed whole, layer after layer, with :func:`reference_output`."""
    maps = dict(inputs)
    layout = group_layout([network.layer(n) for n in group.names])
    tokens = layout == "tokens"
    for g in group.layers:
        op = network.layer(g.name).op
        if layout == "heads":
            maps[g.name] = _head_layer(op, g, maps, weights)
            continue
        sources = [np.concatenate([maps[s] for s in g.inputs])] if g.kind == "concat" else [maps[s] for s in g.inputs]
        tensors = {t.name: _token_tensor(op, t.name, fmap) if tokens else
                   _as_tensor(op, t.name, fmap, g.kind == "pool_max")
                   for t, fmap in zip(op.inputs, sources) if t.role == "input"}
        if g.has_weights:
            (name,) = (t.name for t in op.inputs if t.role == "weight")
            w = weights[g.name]
            tensors[name] = w[:, :, 0, 0].T if tokens and g.has_macs else w if tokens else w[None]
        out = reference_output(op, tensors)
        out = out.reshape(-1, g.out_channels).T[:, :, None] if tokens else out.reshape(g.out_channels, *out.shape[-2:])
        maps[g.name] = np.maximum(out, 0) if g.relu else out
    return maps


def _head_layer(op: Operator, g: LayerGeometry, maps: dict[str, np.ndarray],
                weights: dict[str, np.ndarray]) -> np.ndarray:
    """An attention layer's output head map, computed whole by :func:`reference_output`."""
    (src, *_), tensors = op.inputs, {}
    tensors[src.name] = operator_tensor(op, src.name, maps[g.inputs[0]])
    for t in op.inputs[1:]:
        tensors[t.name] = operator_tensor(op, t.name, weights[g.name])
    return head_map(op, g, reference_output(op, tensors))


def _token_tensor(op: Operator, name: str, fmap: np.ndarray) -> np.ndarray:
    """A token map ``(features, tokens, 1)`` as the operator's hidden-state tensor (``[.., tokens, features]``)."""
    return fmap[:, :, 0].T.reshape(op.tensor_shape(name))


def _as_tensor(op: Operator, name: str, fmap: np.ndarray, max_pool: bool) -> np.ndarray:
    """``fmap`` (C, H, W) placed in the operator's padded input tensor (padding: 0, or the lowest value)."""
    shape = op.tensor_shape(name)
    pt, pl = ConvGeometry.of(op).padding[:2]
    padded = np.full((fmap.shape[0], *shape[-2:]), LOWEST if max_pool else 0, dtype=np.int64)
    h = min(fmap.shape[1], shape[-2] - pt)
    w = min(fmap.shape[2], shape[-1] - pl)
    padded[:, pt:pt + h, pl:pl + w] = fmap[:, :h, :w]
    return padded.reshape(shape)


def execute_plan(plan: TilePlan, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> ExecutionResult:
    """Run ``plan`` literally: :class:`HiddenTiledExecutor` when it tiles an MLP's hidden dimension,
    :class:`KeyTiledExecutor` when it tiles attention's keys, else :class:`FusedExecutor`."""
    executor = HiddenTiledExecutor if plan.hidden_tile else KeyTiledExecutor if plan.key_tile else FusedExecutor
    return executor(plan, inputs, weights).run()


def prove(network: Network, plan: TilePlan, seed: int = 0) -> ProofReport:
    """Execute ``plan`` on random operands and compare with the reference and the model. A plan that tiles
    attention's keys runs the real softmax in float64 (operands scaled by 1/4 to keep it from saturating) and must
    match the float64 forward pass within :data:`~dnnmap.fusion.online_softmax.TOLERANCE`; every other plan
    must match the operator reference bit for bit."""
    group = plan.group
    inputs, weights = random_operands(network, group, seed)
    if plan.key_tile:
        inputs, weights = ({m: a * 0.25 for m, a in d.items()} for d in (inputs, weights))
    result = execute_plan(plan, inputs, weights)
    if plan.key_tile:
        expected = float_reference(network, group, inputs, weights)
        exact = all(np.allclose(result.outputs[m], expected[m], **TOLERANCE) for m in group.outputs)
    else:
        expected = reference_maps(network, group, inputs, weights)
        exact = all(np.array_equal(result.outputs[m], expected[m]) for m in group.outputs)
    unfused = sum(network.layer(g.name).op.macs for g in group.layers)
    return ProofReport(exact, result.counts, unfused, fusion_buffer(plan), offchip_volume(plan))
