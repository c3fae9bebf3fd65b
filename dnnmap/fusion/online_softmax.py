"""Fused attention whose keys are tiled: the online (streaming) softmax of FlashAttention and FuseMax.

Untiled, attention's fused group holds one head band's K and V whole (:mod:`dnnmap.fusion.attention`); at GPT-2's
1024 tokens that is 2 x 1024 x 64 words per head, more than Eyeriss's buffer. Tiling the keys removes that bound:
at every tile (a band of heads x a block of query rows), for every block of ``b`` keys,

- the band's K and V key blocks stream in (``b x d`` words per K/V head each),
- ``scores`` computes the block's ``b`` scores of every query row (``b x rows x queries`` on chip),
- the softmax updates each row's running max ``m`` and running sum ``l``: with ``m' = max(m, max_k S)``, the
  rescale factor is ``exp(m - m')``, the block's probabilities ``P = exp(S - m')`` and ``l' = l exp(m - m') +
  sum_k P``,
- ``values`` multiplies ``P`` with the V block and adds it to the row's unnormalised output, first rescaled by the
  same factor,

and after the last block each output row is divided by its ``l``. Only one score and probability block, the K/V
blocks, the output block and two words per query row (``m``, ``l``) are on chip
(:func:`dnnmap.fusion.buffers.resident_weight_words`, ``_output_words``). The price: K and V are streamed once per
query block (:func:`dnnmap.fusion.volume.weight_fetch_words`) -- once per band only when the query block covers
every query row -- and the rescaling adds vector operations to the softmax
(:func:`dnnmap.fusion.volume.online_softmax_operations`, priced on the vector unit by the fused costing). The plan
is a :class:`TilePlan` with ``key_tile`` set; the tile search offers it beside the untiled plan and keeps the
least volume, so it wins where the untiled one does not fit.

:class:`KeyTiledExecutor` runs such a plan literally in float64 with the real ``exp`` (the integer executor's
softmax is its combine rule, a copy, under which tiling the keys would prove nothing); reordering the sum over
keys changes the rounding, so its output equals the NumPy forward pass (:func:`float_reference`) within
:data:`TOLERANCE`, not bit for bit. Masks are folded into the softmax by the importers and the zoo (no
operations), so there is no mask to tile.
"""

from __future__ import annotations

import numpy as np

from dnnmap.fusion.attention import contract_heads, head_map, operator_tensor
from dnnmap.fusion.execute import Box, ExecutionResult, FusedExecutor, MapStore, Step
from dnnmap.fusion.geometry import LayerGeometry
from dnnmap.fusion.group import FusedGroup
from dnnmap.fusion.tiling import Interval, TilePlan, key_tile_problem, powers_of_two_below
from dnnmap.sim.functions import forward
from dnnmap.workload.ir import Network

TOLERANCE = {"rtol": 1e-12, "atol": 1e-12}
"""How close the key-tiled output must be to the float64 forward pass: the online softmax only reorders a sum of
``keys / b`` block terms and multiplies by factors ``exp(m - m') <= 1``, so its error is a few float64 roundings
(about 1e-16 relative per term), far inside 1e-12."""


def key_tiles(group: FusedGroup) -> list[int]:
    """Key blocks the tile search tries: the powers of two below the keys (the last block of a cache of 1025 keys
    holds the remainder); none when the group is not a whole attention
    (:func:`dnnmap.fusion.tiling.key_tile_problem`)."""
    if key_tile_problem(group, 1):
        return []
    return powers_of_two_below(group.bottom.in_channels)


class KeyTiledExecutor(FusedExecutor):
    """Runs a plan with ``key_tile`` set (module docstring) in float64, counting as :class:`FusedExecutor` does."""

    def __init__(self, plan: TilePlan, inputs: dict[str, np.ndarray], weights: dict[str, np.ndarray]) -> None:
        super().__init__(plan, inputs, weights)
        self.stores = {m: MapStore(m, plan.map_channels(m), self.group.maps[m].hw, np.float64) for m in self.stores}
        self.outputs = {m: out.astype(np.float64) for m, out in self.outputs.items()}

    def run(self) -> ExecutionResult:
        values = self.group.bottom
        steps, keys, dim = len(self.group), values.in_channels, values.out_channels
        for k, (i, j) in enumerate(self.plan.tiles()):
            self._fetch_inputs(i, j, k)
            box = self.plan.new_box(values.name, i, j)
            (y0, y1), (x0, x1) = box
            shape = (y1 - y0, x1 - x0)
            state = (np.full(shape, -np.inf), np.zeros(shape), np.zeros((dim, *shape)))  # m, l, accumulator
            for k0 in range(0, keys, self.plan.key_tile):
                state = self._run_key_block(box, k0, min(k0 + self.plan.key_tile, keys), state)
            out = state[2] / state[1]
            self.counts.extra_operations += out.size
            self.outputs[values.name][:, y0:y1, x0:x1] = out
            self.steps += [Step(k, g.name, tuple((src, k) for src in g.inputs if src in self.writer))
                           for g in self.group.layers]  # head maps: a layer reads its producers' tile k
            self.counts.dram_write_words += out.size
            self.counts.buffer_drains += out.size
            self._evict(k * steps + steps - 1)
        return ExecutionResult(self.outputs, self.counts, self.steps)

    def _run_key_block(self, box: Box, k0: int, k1: int,
                       state: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Keys ``[k0, k1)`` through scores, softmax and values at one tile; returns the rows' updated state."""
        scores, softmax, values = self.group.layers
        (y0, y1), (x0, x1) = box
        row_max, total, acc = state
        k_held, k_rows = self._stream(scores, (y0, y1), np.s_[:, k0:k1, :])
        v_held, v_rows = self._stream(values, (y0, y1), np.s_[:, :, k0:k1])
        s = contract_heads(self._window(scores, scores.inputs[0], box), k_rows)
        self._store(scores, box, s, scores.in_channels)
        s = self._window(softmax, scores.name, box)
        new_max = np.maximum(row_max, s.max(axis=0))
        scale = np.exp(row_max - new_max)  # 0 at the first block (m = -inf): nothing accumulated yet
        p = np.exp(s - new_max)
        total = total * scale + p.sum(axis=0)
        self._store(softmax, box, p, 0)
        o = contract_heads(self._window(values, softmax.name, box), v_rows)
        self._store(values, box, o, k1 - k0)
        acc = acc * scale + o
        if k0:  # every block after the first rescales each row's sum and accumulator (the first has nothing)
            self.counts.extra_operations += scale.size * (acc.shape[0] + 2)
        self._observe(k_held.size + v_held.size + acc.size + 2 * scale.size)
        for g in (scores, softmax):  # the block is consumed: the next key block overwrites it
            self.stores[g.name].held[y0:y1, x0:x1] = False
        return new_max, total, acc

    def _stream(self, layer: LayerGeometry, rows: Interval, block: tuple[slice, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Fetch the key block ``block`` of the K/V slices ``rows`` read: (the fetched slices, one per row)."""
        slices = layer.slices(rows)
        held = self.weights[layer.name][slices.start:slices.stop][block]
        self.counts.dram_read_words += held.size
        self.counts.buffer_fills["weight"] += held.size
        return held, held[np.arange(*rows) // layer.rows_per_slice - slices.start]

    def _store(self, layer: LayerGeometry, box: Box, block: np.ndarray, macs_per_word: int) -> None:
        """Count a computed block (its MACs, or one operation per word for the softmax) and hold it if it is read
        (a short last key block holds only its keys)."""
        self.counts.buffer_writes += block.size
        self.counts.macs += block.size * macs_per_word
        self.counts.operations += block.size * max(macs_per_word, 1)
        store = self.stores.get(layer.name)
        if store is not None:
            if store.data.shape[0] != block.shape[0]:
                store.data = np.zeros((block.shape[0], *store.held.shape))
            store.write(box, block)


def float_reference(network: Network, group: FusedGroup, inputs: dict[str, np.ndarray],
                    weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every map of the attention group computed whole in float64 by the NumPy forward pass
    (:func:`dnnmap.sim.functions.forward`: einsums and the real softmax)."""
    maps = dict(inputs)
    for g in group.layers:
        op = network.layer(g.name).op
        src, *rest = op.inputs
        tensors = {src.name: operator_tensor(op, src.name, maps[g.inputs[0]])}
        tensors.update({t.name: operator_tensor(op, t.name, weights[g.name]) for t in rest})
        maps[g.name] = head_map(op, g, forward(op, tensors))
    return maps
