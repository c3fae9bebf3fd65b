"""Admissible lower bounds of a partial mapping fixed from the top level down (``--mapper optimal``).

A node fixes, for the levels ``>= j``, the temporal and spatial factors and (after its order
stage) the loop orders. The cost model's counts of a (child, parent) pair of a tensor depend
only on the child's tile and the loops above the child (docs/cost-model.md section 4), so:

* **exact part**: every pair whose child level is ``>= known`` (its tile and all loops above it
  are fixed) is priced exactly, from :class:`CostModel` counts of any completion of the node;
* **compulsory part**, for the other pairs: every touched word of a tensor is filled into (or
  drained from) the child at least once per child instance that touches it, read from (written
  to) each parent instance at least once, and a MAC lane reads one word of each input and writes
  one partial sum per step, so the innermost level keeping a tensor serves at least
  ``iterations / lanes per instance`` words; hops through fan-outs crossed by unknown pairs and
  read-modify-write reads count 0;
* latency: compute steps ``>= iterations / (fixed spatial x the unfixed fan-outs' sizes)`` and the
  bandwidth cycles of levels whose counts are all exact; EDP the product of both bounds; DRAM
  bytes from the exact and compulsory DRAM counts.
Touched words per instance use, per tensor axis, the largest single-term count (a sliding
window ``s*p + r`` touches at least as many elements as ``p`` or ``r`` alone take values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.model import CostBatch, CostModel
from dnnmap.cost.transfer import dram_transfer_seconds
from dnnmap.workload.ir import Operator


@dataclass(frozen=True)
class Pair:
    tensor: int
    child: int  # -1: the MAC lanes
    parent: int


def tensor_pairs(op: Operator, keeps: np.ndarray) -> list[Pair]:
    """(child, parent) pairs of every tensor along the levels keeping it, MAC lanes first."""
    out = []
    for t in range(len(op.tensors)):
        chain = [-1] + [i for i in range(keeps.shape[0]) if keeps[i, t]]
        out.extend(Pair(t, c, p) for c, p in zip(chain, chain[1:]))
    return out


def touched_lower(op: Operator, cover: np.ndarray) -> np.ndarray:
    """(n, T) lower bound of the words of each tensor one instance touches when it iterates ``cover``."""
    dims = op.dim_names
    out = np.ones((cover.shape[0], len(op.tensors)), dtype=float)
    for j, t in enumerate(op.tensors):
        for a in t.axes:
            out[:, j] *= np.max(np.stack([cover[:, dims.index(d)] for d in a.dims], axis=1), axis=1)
    return out


class LowerBound:
    """Bounds of batches of nodes of one operator on one architecture."""

    def __init__(self, op: Operator, arch: ArchSpec, model: CostModel, keeps: np.ndarray) -> None:
        self.op, self.arch, self.model, self.keeps = op, arch, model, keeps
        self.L, self.T = len(arch.levels), len(op.tensors)
        self.pairs = tensor_pairs(op, keeps)
        self.bounds = np.array([op.bound(d) for d in op.dim_names], dtype=np.int64)
        self.iterations = float(np.prod(self.bounds.astype(float)))
        self.fan = np.array([lv.fanout_size for lv in arch.levels], dtype=float)
        self.energy = model.action_energy  # (L, T, 3) read, fill, update
        self.out = next(j for j, t in enumerate(op.tensors) if t.role == "output")
        self.registers = {j for j, t in enumerate(op.tensors) if t.role in arch.mac.operand_registers}
        self.word_bytes = np.array([arch.bytes_of(t.role) for t in op.tensors])
        transfer = arch.dram.transfer
        self.cycles_per_byte = (float(dram_transfer_seconds(transfer, 1.0, 0.0)) * arch.clock_mhz * 1e6
                                if transfer is not None else 0.0)

    def _instances(self, spatial: np.ndarray, level: int) -> np.ndarray:
        """(n,) instances of ``level`` (product of the spatial factors above it) and (n, D) coverage each."""
        return spatial[:, level + 1:].prod(axis=(1, 2)).astype(float)

    def _cover(self, spatial: np.ndarray, level: int) -> np.ndarray:
        return self.bounds[None, :] // spatial[:, level + 1:].prod(axis=1)

    def compute(self, cost: CostBatch, spatial: np.ndarray, fixed_from: int, known: int,
                objective: str) -> np.ndarray:
        """Lower bound of ``objective`` for nodes whose spatial factors are fixed on levels ``>= fixed_from``
        and whose pairs with child ``>= known`` are exact in ``cost`` (a completion of each node)."""
        n = spatial.shape[0]
        c = cost.counts
        energy = cost.energy_breakdown[:, self.L + 1].copy()  # MACs
        dram = np.zeros(n)
        exact_level = np.ones((n, self.L), dtype=bool)
        level_known = np.ones(self.L, dtype=bool)
        touched_all = touched_lower(self.op, self.bounds[None, :])[0]
        for pr in self.pairs:
            t, ch, p = pr.tensor, pr.child, pr.parent
            e_rd, e_fill, e_upd = self.energy[p, t]
            if ch >= known:
                if ch >= 0:
                    energy += (c["fills"][:, ch, t] * self.energy[ch, t, 1]
                               + c["drains"][:, ch, t] * self.energy[ch, t, 0])
                parent = (c["reads"][:, p, t] + c["accumulate_reads"][:, p, t]) * e_rd + c["updates"][:, p, t] * e_upd
                energy += parent
                if p == self.L - 1:
                    dram += (c["reads"][:, p, t] + c["updates"][:, p, t]) * self.word_bytes[t]
                continue
            level_known[p] = False
            if ch >= 0:
                level_known[ch] = False
            words = self._compulsory(pr, spatial, fixed_from, touched_all)
            if ch >= 0:
                child_e = self.energy[ch, t, 0] if t == self.out else self.energy[ch, t, 1]
                energy += words[0] * child_e
            energy += words[1] * (e_upd if t == self.out else e_rd)
            if p == self.L - 1:
                dram += words[1] * self.word_bytes[t]
        hop_known = self._hops_known(known)
        energy += (cost.hop_words * np.array([lv.fanout.hop_energy if lv.fanout else 0.0
                                              for lv in self.arch.levels]))[:, hop_known].sum(axis=1)
        if objective == "energy":
            return energy
        if objective == "dram":
            return dram
        latency = self._latency(cost, spatial, fixed_from, level_known, dram)
        return latency if objective == "latency" else energy * latency

    def _compulsory(self, pr: Pair, spatial: np.ndarray, fixed_from: int,
                    touched_all: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower bounds of (child fills or drains, parent reads or updates) words of an unknown pair."""
        t, ch, p = pr.tensor, pr.child, pr.parent
        n = spatial.shape[0]
        if ch < 0:
            if t in self.registers:
                return np.zeros(n), np.zeros(n)
            lanes = np.ones(n)
            for m in range(p + 1):
                lanes *= spatial[:, m].prod(axis=1) if m >= fixed_from else self.fan[m]
            return np.zeros(n), self.iterations / lanes
        child = np.full(n, touched_all[t])
        if ch + 1 >= fixed_from:  # every spatial factor above the child is fixed
            child = self._instances(spatial, ch) * touched_lower(self.op, self._cover(spatial, ch))[:, t]
        parent = np.full(n, touched_all[t])
        if p + 1 >= fixed_from:
            parent = self._instances(spatial, p) * touched_lower(self.op, self._cover(spatial, p))[:, t]
        return child, parent

    def _hops_known(self, known: int) -> np.ndarray:
        """Fan-outs every pair crossing which is exact (child >= known)."""
        ok = np.array([lv.fanout is not None for lv in self.arch.levels])
        for pr in self.pairs:
            if pr.child < known:
                ok[pr.child + 1:pr.parent + 1] = False
        return ok

    def _latency(self, cost: CostBatch, spatial: np.ndarray, fixed_from: int, level_known: np.ndarray,
                 dram: np.ndarray) -> np.ndarray:
        par = spatial[:, fixed_from:].prod(axis=(1, 2)).astype(float) * np.prod(self.fan[:fixed_from])
        steps = self.iterations / par
        known = np.where(level_known[None, :], cost.level_cycles, 0.0)
        known[:, -1] = np.maximum(known[:, -1], dram * self.cycles_per_byte)
        if self.arch.overlap:
            return np.maximum(steps, known.max(axis=1))
        return steps + known.sum(axis=1)
