"""A fused MLP whose hidden dimension is tiled: up-projection -> activation -> down-projection, block by block.

When the MLP's weights do not fit the buffer (BERT-base: 2 x 768 x 3072 words), HW-Flow-Fusion's model
cannot fuse it: every non-bottom layer keeps its weights resident (Eq. 5). Tiling the hidden dimension can:
at every token tile, for every block of ``b`` hidden channels,

- each up-projection computes its block's ``b`` channels (its ``b x K`` weight slice streams in),
- the channel-wise activation (GELU, SiLU, SwiGLU) computes the same ``b`` channels,
- the down-projection multiplies them with its ``N x b`` slice and accumulates into the tile's output block,

so the hidden map never leaves the chip, only one block of it is held, and the output block holds partial
sums until the last block (they never leave the chip either: the output is written once). The price: every
weight streams once per token tile (:func:`dnnmap.fusion.volume.weight_fetch_words`), so the search prefers
one token tile when the input and output blocks fit. Eq. 5 holds the token tile's input and output blocks,
one hidden block of every hidden map and one block's weight slices
(:func:`dnnmap.fusion.buffers.resident_weight_words`). The plan is a :class:`TilePlan` with ``hidden_tile``
set (:func:`dnnmap.fusion.tiling.plan_tiles`), costed like every other group by the fused costing.

:class:`HiddenTiledExecutor` runs such a plan literally (the proof by execution of :mod:`dnnmap.fusion.proof`).
"""

from __future__ import annotations

import numpy as np

from dnnmap.fusion.execute import ExecutionResult, FusedExecutor, MapStore, Step
from dnnmap.fusion.geometry import LayerGeometry
from dnnmap.fusion.group import FusedGroup
from dnnmap.fusion.tile_ops import compute_block
from dnnmap.fusion.tiling import CHANNELWISE_KINDS, TilePlan, hidden_chain_problem, powers_of_two_below
from dnnmap.workload.ir import Network


def hidden_tiles(group: FusedGroup) -> list[int]:
    """Hidden blocks the tile search tries: the powers of two below the hidden size that divide it (the whole
    dimension is the untiled plan); none when the group is not an MLP (:func:`hidden_chain_problem`)."""
    if hidden_chain_problem(group):
        return []
    hidden = group.bottom.in_channels
    return [b for b in powers_of_two_below(hidden) if hidden % b == 0]


class HiddenTiledExecutor(FusedExecutor):
    """Runs a plan with ``hidden_tile`` set (module docstring): hidden maps are held one block at a time."""

    def __init__(self, plan: TilePlan, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> None:
        super().__init__(plan, inputs, weights)
        self.chunked = [g for g in self.group.layers if g is not self.group.bottom]
        for g in self.chunked:
            self.stores[g.name] = MapStore(g.name, plan.hidden_tile, g.out_hw)

    def run(self) -> ExecutionResult:
        bottom, steps = self.group.bottom, len(self.group)
        for k, (i, j) in enumerate(self.plan.tiles()):
            self._fetch_inputs(i, j, k)
            box = self.plan.new_box(bottom.name, i, j)
            (y0, y1), (x0, x1) = box
            total = np.zeros((bottom.out_channels, y1 - y0, x1 - x0), dtype=np.int64)
            for n0 in range(0, bottom.in_channels, self.plan.hidden_tile):
                total += self._run_block(box, n0, n0 + self.plan.hidden_tile, total.size)
            self.outputs[bottom.name][:, y0:y1, x0:x1] = total
            self.steps += [Step(k, g.name, tuple((src, k) for src in g.inputs if src in self.writer))
                           for g in self.group.layers]  # 1x1 windows: a layer reads its producers' tile k
            self.counts.dram_write_words += total.size
            self.counts.buffer_drains += total.size
            self._evict(k * steps + steps - 1)
        return ExecutionResult(self.outputs, self.counts, self.steps)

    def _run_block(self, box: tuple[tuple[int, int], tuple[int, int]], n0: int, n1: int, acc_words: int) -> np.ndarray:
        """Hidden channels ``[n0, n1)`` through every layer at one tile; returns the down-projection's partial sum."""
        (y0, y1), (x0, x1) = box
        shape = (y1 - y0, x1 - x0)
        in_flight = acc_words
        for g in self.group.layers:
            weights = self.weights.get(g.name)
            if weights is not None:
                weights = weights[n0:n1] if g is not self.group.bottom else weights[:, n0:n1]
                self.counts.dram_read_words += weights.size
                self.counts.buffer_fills["weight"] += weights.size
                in_flight += weights.size
            block = compute_block(g, [self._window(g, src, box) for src in g.inputs], weights, shape)
            self.counts.buffer_writes += block.size
            macs = _block_macs(g, g is self.group.bottom, n1 - n0, shape)
            self.counts.macs += macs
            self.counts.operations += macs or block.size
            if g is not self.group.bottom:
                self.stores[g.name].write(box, block)
            self._observe(in_flight)
        for g in self.chunked:  # the block's hidden channels are consumed: the next block overwrites them
            self.stores[g.name].held[y0:y1, x0:x1] = False
        return block


def _block_macs(layer: LayerGeometry, down: bool, block: int, shape: tuple[int, int]) -> int:
    """MACs of one hidden block at one tile: an up-projection's ``block x K``, the down-projection's ``N x block``."""
    if not layer.has_macs:
        return 0
    return block * (layer.out_channels if down else layer.in_channels) * shape[0] * shape[1]


def mlp_runs(network: Network) -> list[tuple[str, ...]]:
    """Every MLP of consecutive layers -- up-projection(s), a channel-wise activation reading them, a down-projection
    reading it (``fc1, gelu, fc2``; ``gate_proj, up_proj, swiglu, down_proj``): the MLP groups the fusion search
    considers whole, whatever ``--max-fused`` says."""
    layers, runs = network.layers, []
    for j in range(1, len(layers)):
        act, down = layers[j - 1], layers[j]
        start = j - 1 - len(act.inputs)
        if down.op.kind != "matmul" or down.inputs != (act.name,) or act.op.kind not in CHANNELWISE_KINDS or start < 0:
            continue
        ups = layers[start:j - 1]
        if {u.name for u in ups} == set(act.inputs) and all(u.op.kind == "matmul" for u in ups):
            runs.append(tuple(layer.name for layer in layers[start:j + 1]))
    return runs
