"""Vectorized analytical cost model: access counts, capacity, energy, latency for a batch of mappings.

Implements docs/cost-model.md. For each tensor, consecutive levels that keep it form
(child, parent) pairs, plus the MAC lanes as the innermost child. For a child level the
temporal loops above it, listed innermost first, are the *events*: loop ``m`` advances
``count_m = (trip_m - 1) * prod(trip of loops outside m)`` times, and each time the
child's tile moves by a displacement ``disp`` (loop ``m`` steps forward, the loops inside it
wrap back). With per-axis set sizes from :mod:`dnnmap.cost.axis_sets`, the words filled
per instance are ``prod(A) - prod(O_m)`` and the distinct words the parent sends to all
its children (multicast) are ``prod(U) - prod(U - N_m)``; both are exact for perfect
factorizations (section 4 of the doc gives the derivation and the bound cases).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.cost.axis_sets import lookup_window_stats
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.transfer import bursts_of_box, dram_transfer_cycles
from dnnmap.workload.ir import Operator

COUNT_KINDS = ("reads", "fills", "updates", "drains")


@dataclass(frozen=True)
class CostBatch:
    """Costs of a batch: 1-D arrays of length B, plus (B, L, T) access counts."""

    valid: np.ndarray  # every tile fits its level
    cycles: np.ndarray  # latency in cycles
    compute_cycles: np.ndarray
    level_cycles: np.ndarray  # (B, L): bandwidth-limited cycles per level (DRAM: transfer model)
    energy: np.ndarray
    energy_breakdown: np.ndarray  # (B, L + 2): per level, network hops, MACs
    dram_bytes: np.ndarray
    utilization: np.ndarray
    counts: dict[str, np.ndarray]  # kind -> (B, L, T) words
    tile_words: np.ndarray  # (B, L, T) words of each tensor's tile per instance (0 if not kept)
    capacity_excess: np.ndarray  # (B, L) words over capacity (<= 0 fits)
    dram_bursts: np.ndarray
    hop_words: np.ndarray  # (B, L) words delivered through each level's fan-out

    @property
    def edp(self) -> np.ndarray:
        return self.energy * self.cycles

    def objective(self, name: str) -> np.ndarray:
        values = {"latency": self.cycles, "energy": self.energy, "edp": self.edp, "dram": self.dram_bytes}
        if name not in values:
            raise ValueError(f"unknown objective {name!r}; choose from {', '.join(values)}")
        return np.where(self.valid, values[name].astype(float), np.inf)


class CostModel:
    """Evaluates batches of mappings of one operator on one architecture."""

    def __init__(self, op: Operator, arch: ArchSpec) -> None:
        self.op, self.arch = op, arch
        self.dims = op.dim_names
        self.L, self.D, self.T = len(arch.levels), len(self.dims), len(op.tensors)
        self._axes = []  # per tensor: list of (dim indices, coefs)
        for t in op.tensors:
            self._axes.append([(tuple(self.dims.index(d) for d, _ in a.terms), tuple(c for _, c in a.terms))
                               for a in t.axes])
        self._relevant = np.array([[d in t.dims for d in self.dims] for t in op.tensors], dtype=bool)
        self._out = next(j for j, t in enumerate(op.tensors) if t.role == "output")
        self.ops_count = op.macs or op.iterations

    # ------------------------------------------------------------------------------
    def evaluate(self, batch: MappingBatch) -> CostBatch:
        arch, L, T = self.arch, self.L, self.T
        tf, sf = batch.temporal, batch.spatial
        B = tf.shape[0]
        cov = np.cumprod(tf * sf, axis=1)  # (B, L, D) coverage at level j
        cov_below = np.concatenate([np.ones_like(cov[:, :1]), cov[:, :-1]], axis=1)
        spat_prod = sf.prod(axis=2)  # (B, L)
        # active instances of level j = product of spatial factors of levels > j
        inst = np.concatenate([np.cumprod(spat_prod[:, ::-1], axis=1)[:, ::-1][:, 1:], np.ones((B, 1), np.int64)],
                              axis=1)
        lanes = spat_prod.prod(axis=1)
        steps = tf.prod(axis=(1, 2))
        padded = cov[:, -1]  # (B, D) iteration space incl. edge padding

        counts = {k: np.zeros((B, L, T), dtype=np.float64) for k in COUNT_KINDS}
        tile_words = np.zeros((B, L, T), dtype=np.float64)
        hop_words = np.zeros((B, L), dtype=np.float64)
        dram_bursts = np.zeros(B, dtype=np.float64)

        for ti in range(T):
            chain = [i for i in range(L) if batch.keeps[i, ti]]
            is_out = ti == self._out
            for c, p in zip([-1] + chain[:-1], chain):
                ev = self._pair_events(batch, ti, c, p, cov, cov_below)
                mcast = all(arch.levels[j].fanout is None or arch.levels[j].fanout.multicast for j in range(c + 1, p + 1))
                reduce = all(arch.levels[j].fanout is None or arch.levels[j].fanout.reduction for j in range(c + 1, p + 1))
                inst_c = inst[:, c] if c >= 0 else lanes
                if c < 0:
                    # MAC lanes: every temporal step, every lane touches one word (no reuse).
                    per_lane = steps * lanes
                    union = steps * ev["U"] * inst[:, p]
                    if is_out:
                        counts["updates"][:, p, ti] += union if reduce else per_lane
                    else:
                        counts["reads"][:, p, ti] += union if mcast else per_lane
                    hop_words += per_lane[:, None] * self._has_fanout(range(0, p + 1))
                    continue
                tile_words[:, c, ti] = ev["A"]
                w_child = inst_c * ev["child_total"]
                u_parent = inst[:, p] * ev["union_total"]
                if is_out:
                    rep_c = self._replication(sf, c)
                    rep_p = self._replication(sf, p)
                    o_size = self._tensor_size(ti, padded)
                    counts["drains"][:, c, ti] += w_child
                    counts["fills"][:, c, ti] += w_child - o_size * rep_c
                    counts["updates"][:, p, ti] += u_parent if reduce else w_child
                    counts["reads"][:, p, ti] += (u_parent - o_size * rep_p) if mcast else (w_child - o_size * rep_c)
                else:
                    counts["fills"][:, c, ti] += w_child
                    counts["reads"][:, p, ti] += u_parent if mcast else w_child
                moved = counts["drains"][:, c, ti] + counts["fills"][:, c, ti] if is_out else w_child
                hop_words += moved[:, None] * self._has_fanout(range(c + 1, p + 1))
                if p == L - 1:
                    dram_bursts += self._bursts(batch, ti, ev, is_out)

        # ---- capacity --------------------------------------------------------------
        excess = np.zeros((B, L), dtype=np.float64)
        roles = [t.role for t in self.op.tensors]
        for i, lv in enumerate(arch.levels[:-1]):
            if lv.capacity is None:
                continue
            if isinstance(lv.capacity, dict):
                worst = np.full(B, -np.inf)
                for role in set(roles):
                    used = sum(tile_words[:, i, j] for j in range(T) if roles[j] == role)
                    worst = np.maximum(worst, used - lv.capacity_for(role))
                excess[:, i] = worst
            else:
                excess[:, i] = tile_words[:, i].sum(axis=1) - lv.capacity_for("input")
        valid = (excess <= 0).all(axis=1)

        # ---- energy ------------------------------------------------------------------
        read_e = np.array([lv.read_energy for lv in arch.levels])
        write_e = np.array([lv.write_energy for lv in arch.levels])
        hop_e = np.array([lv.fanout.hop_energy if lv.fanout else 0.0 for lv in arch.levels])
        per_level = ((counts["reads"] + counts["drains"]).sum(axis=2) * read_e
                     + (counts["fills"] + counts["updates"]).sum(axis=2) * write_e)
        hop_energy = (hop_words * hop_e).sum(axis=1)
        mac_energy = np.full(B, self.ops_count * arch.mac.energy)
        breakdown = np.concatenate([per_level, hop_energy[:, None], mac_energy[:, None]], axis=1)
        energy = breakdown.sum(axis=1)

        # ---- latency -----------------------------------------------------------------
        moved = sum(counts[k] for k in COUNT_KINDS).sum(axis=2)  # (B, L)
        level_cycles = np.zeros((B, L), dtype=np.float64)
        for i, lv in enumerate(arch.levels[:-1]):
            if lv.bandwidth is not None:
                level_cycles[:, i] = moved[:, i] / inst[:, i] / lv.bandwidth
        dram_words = counts["reads"][:, -1].sum(axis=1) + counts["updates"][:, -1].sum(axis=1)
        dram_bytes = dram_words * arch.word_bytes
        level_cycles[:, -1] = dram_transfer_cycles(arch, dram_bytes, dram_bursts)
        if arch.overlap:
            cycles = np.maximum(steps, level_cycles.max(axis=1))
        else:
            cycles = steps + level_cycles.sum(axis=1)
        utilization = self.ops_count / (cycles * arch.num_macs)
        return CostBatch(valid, cycles, steps.astype(float), level_cycles, energy, breakdown, dram_bytes,
                         utilization, counts, tile_words, excess, dram_bursts, hop_words)

    # ------------------------------------------------------------------------------
    def _has_fanout(self, levels: range) -> np.ndarray:
        mask = np.zeros(self.L)
        for j in levels:
            if self.arch.levels[j].fanout is not None:
                mask[j] = 1.0
        return mask

    def _replication(self, sf: np.ndarray, c: int) -> np.ndarray:
        """Instances of level ``c`` that hold copies of the same output words (spatial split of reductions)."""
        irrelevant = ~self._relevant[self._out]
        return np.where(irrelevant[None, None, :], sf[:, c + 1:, :], 1).prod(axis=(1, 2))

    def _tensor_size(self, ti: int, padded: np.ndarray) -> np.ndarray:
        size = np.ones(padded.shape[0], dtype=np.int64)
        for dims, coefs in self._axes[ti]:
            size = size * (sum(cf * (padded[:, d] - 1) for d, cf in zip(dims, coefs)) + 1)
        return size

    def _pair_events(self, batch: MappingBatch, ti: int, c: int, p: int, cov: np.ndarray,
                     cov_below: np.ndarray) -> dict[str, np.ndarray]:
        """Per-axis set sizes and event totals for tensor ``ti`` between child ``c`` and parent ``p``."""
        tf, sf, order = batch.temporal, batch.spatial, batch.order
        B, D = tf.shape[0], self.D
        # child tile extents and the spatial grid between child and parent
        tile = cov[:, c, :] if c >= 0 else np.ones((B, D), dtype=np.int64)
        grid_levels = list(range(c + 1, p + 1))
        grid_stride = cov_below[:, grid_levels, :]  # (B, G, D)
        grid_count = sf[:, grid_levels, :]
        # event sequence: temporal loops of levels c+1..L-1, innermost first
        levels = list(range(c + 1, self.L))
        if c < 0 or not levels:
            seq_dim = np.zeros((B, 0), dtype=np.int64)
        else:
            seq_dim = np.concatenate([order[:, j, ::-1] for j in levels], axis=1)
        seq_level = np.repeat(np.array(levels, dtype=np.int64), D)[None, :] if c >= 0 else np.zeros((1, 0), np.int64)
        rows = np.arange(B)[:, None]
        trip = tf[rows, seq_level, seq_dim]
        stride = cov_below[rows, seq_level, seq_dim] * sf[rows, seq_level, seq_dim]
        if trip.shape[1]:
            # loops of trip 1 never advance: keep only the non-trivial ones, innermost first
            keep = np.argsort(trip == 1, axis=1, kind="stable")[:, : max(1, int((trip > 1).sum(axis=1).max()))]
            trip = np.take_along_axis(trip, keep, axis=1)
            stride = np.take_along_axis(stride, keep, axis=1)
            seq_dim = np.take_along_axis(seq_dim, keep, axis=1)
        outer = np.concatenate([np.cumprod(trip[:, ::-1], axis=1)[:, ::-1][:, 1:], np.ones((B, 1), np.int64)], axis=1)
        count = (trip - 1) * outer  # (B, M)
        onehot = seq_dim[:, :, None] == np.arange(D)[None, None, :]  # (B, M, D)
        wrap = onehot * ((trip - 1) * stride)[:, :, None]
        inner_wrap = np.cumsum(wrap, axis=1) - wrap  # exclusive
        disp = onehot * stride[:, :, None] - inner_wrap  # (B, M, D)

        M = seq_dim.shape[1]
        prod_a = np.ones(B, dtype=np.int64)
        prod_u = np.ones(B, dtype=np.int64)
        prod_o = np.ones((B, M), dtype=np.int64)
        prod_un = np.ones((B, M), dtype=np.int64)
        moved_axes = []
        for dims, coefs in self._axes[ti]:
            delta = sum(cf * disp[:, :, d] for d, cf in zip(dims, coefs))  # (B, M)
            moved_axes.append(delta != 0)
            if len(dims) == 1 and coefs[0] == 1:
                d = dims[0]
                a = tile[:, d]
                u = a * grid_count[:, :, d].prod(axis=1)
                o = np.maximum(0, a[:, None] - np.abs(delta))
                n = np.where(delta != 0, u[:, None], 0)
            else:
                a, u, o, n = self._window_axis(dims, coefs, tile, grid_stride, grid_count, delta)
            prod_a = prod_a * a
            prod_u = prod_u * u
            prod_o = prod_o * o
            prod_un = prod_un * (u[:, None] - n)
        child_new = prod_a[:, None] - prod_o
        union_new = prod_u[:, None] - prod_un
        return {
            "A": prod_a,
            "U": prod_u,
            "child_total": prod_a + (count * child_new).sum(axis=1),
            "union_total": prod_u + (count * union_new).sum(axis=1),
            "count": count,
            "union_new": union_new,
            "delta_axes": np.stack(moved_axes, axis=2) if M else np.zeros((B, 0, 0), bool),
            "tile": tile,
            "grid_count": grid_count,
        }

    @staticmethod
    def _window_axis(dims: tuple[int, ...], coefs: tuple[int, ...], tile: np.ndarray, grid_stride: np.ndarray,
                     grid_count: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, ...]:
        B, M = delta.shape
        G = grid_stride.shape[1]
        parts = []
        for d in dims:
            parts.append(tile[:, d:d + 1])
            for g in range(G):
                parts.append(grid_stride[:, g, d:d + 1])
                parts.append(grid_count[:, g, d:d + 1])
        base = np.concatenate(parts, axis=1)  # (B, K)
        zero = lookup_window_stats(np.concatenate([base, np.zeros((B, 1), np.int64)], axis=1), coefs, G)
        a, u = zero[:, 0], zero[:, 1]
        o = np.repeat(a[:, None], M, axis=1)
        n = np.zeros((B, M), dtype=np.int64)
        moving = np.nonzero(delta != 0)
        if len(moving[0]):
            keys = np.concatenate([base[moving[0]], delta[moving][:, None]], axis=1)
            stats = lookup_window_stats(keys, coefs, G)
            o[moving] = stats[:, 2]
            n[moving] = stats[:, 3]
        return a, u, o, n

    def _bursts(self, batch: MappingBatch, ti: int, ev: dict[str, np.ndarray], is_out: bool) -> np.ndarray:
        """DRAM bursts of all transfers of tensor ``ti`` (TSO Alg. 4 generalized to any layout)."""
        spec = self.arch.dram.transfer
        if spec is None or spec.model != "burst":
            return np.zeros(len(batch), dtype=np.float64)
        tensor = self.op.tensors[ti]
        axis_names = [a.name for a in tensor.axes]
        layout = dict(batch.layouts).get(tensor.name, tuple(axis_names))
        perm = [axis_names.index(a) for a in layout]
        full = np.array(tensor.shape(self.op.bounds))
        # union tile extents per axis (interval hull of each axis set)
        tile, gc = ev["tile"], ev["grid_count"]
        ext = []
        for dims, coefs in self._axes[ti]:
            ext.append(sum(cf * (tile[:, d] * gc[:, :, d].prod(axis=1) - 1) for d, cf in zip(dims, coefs)) + 1)
        ext = np.minimum(np.stack(ext, axis=1), full[None, :])[:, perm]  # (B, X) in layout order
        full_l = full[perm]
        bursts_full = bursts_of_box(ext, full_l, self.arch.word_bytes, spec.burst_bytes)
        # step events: the new part along a single moved axis, else the whole box
        count, delta_axes = ev["count"], ev["delta_axes"]
        total = bursts_full.astype(float)
        if count.shape[1]:
            moved_one = delta_axes.sum(axis=2) == 1
            step_bursts = np.repeat(bursts_full[:, None], count.shape[1], axis=1).astype(float)
            union_full = np.maximum(ev["U"], 1)[:, None]
            frac = ev["union_new"] / union_full  # fraction of the box that is new
            for x in range(len(perm)):
                sel = moved_one & delta_axes[:, :, perm[x]]
                if not sel.any():
                    continue
                new_ext = np.repeat(ext[:, None, :], count.shape[1], axis=1).astype(float)
                new_ext[:, :, x] = np.maximum(1, np.round(ext[:, None, x] * frac))
                nb = bursts_of_box(new_ext.reshape(-1, ext.shape[1]).astype(np.int64), full_l,
                                    self.arch.word_bytes, spec.burst_bytes).reshape(count.shape)
                step_bursts = np.where(sel, nb, step_bursts)
            step_bursts = np.where(ev["union_new"] > 0, step_bursts, 0)
            total = total + (count * step_bursts).sum(axis=1)
        return total * (2 if is_out else 1)

