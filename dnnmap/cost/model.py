"""Analytical cost model: access counts, capacity, energy, latency for a batch of mappings.

Implements docs/cost-model.md. ``CostModel`` turns the operator and architecture into the
flat tables the compiled batch kernel reads (:func:`dnnmap.cost.kernel.evaluate_range`,
sections 4-5 of the doc), which computes every cost of every mapping in one pass."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.arch.sparsity import sparse_operand
from dnnmap.arch.spec import ACTIONS, ArchSpec, Fanout
from dnnmap.arch.units import compute_unit
from dnnmap.cost import kernel
from dnnmap.cost.batch import MappingBatch
from dnnmap.cost.imbalance import imbalance_factor
from dnnmap.cost.objective import best_index, objective_value, tie_break
from dnnmap.cost.transfer import dram_transfer_seconds
from dnnmap.workload.ir import Operator

HALO_MODES = {False: 0.0, True: 1.0, "innermost": 2.0}  # the kernel's P_HALO column
COUNT_KINDS = ("reads", "fills", "updates", "drains", "accumulate_reads")  # in the kernel's order


@dataclass(frozen=True)
class CostBatch:
    """Costs of a batch: 1-D arrays of length B, plus (B, L, T) access counts."""

    valid: np.ndarray  # every tile fits its level
    cycles: np.ndarray  # latency in cycles
    compute_cycles: np.ndarray
    level_cycles: np.ndarray  # (B, L): bandwidth-limited cycles per level (DRAM: transfer model)
    network_cycles: np.ndarray  # (B, L): cycles of the network (fan-out) below each level: max over its
    # instances of max(ingress / ingress_bandwidth, egress / egress_bandwidth); 0 without those bandwidths.
    # Latency takes them like level cycles (docs/cost-model.md sections 2b, 3)
    energy: np.ndarray
    energy_breakdown: np.ndarray  # (B, L + 2): per level (all tensors and actions), network hops, MACs
    dram_bytes: np.ndarray
    utilization: np.ndarray
    counts: dict[str, np.ndarray]  # kind -> (B, L, T) words
    tile_words: np.ndarray  # (B, L, T) words of each tensor's tile per instance (0 if not kept)
    capacity_excess: np.ndarray  # (B, L) words over capacity (<= 0 fits)
    dram_bursts: np.ndarray
    hop_words: np.ndarray  # (B, L) words delivered through each level's fan-out
    action_energy: np.ndarray  # (L, T, 3) energy per word of read, fill, update (the architecture's)
    final_drains: np.ndarray  # (B,) the lowest level whose output drains carry final values (L: none) ...
    final_updates: np.ndarray  # (B,) ... and whose output updates do; every level above it too (section 2b)
    final_scale: np.ndarray  # (T,) bits of a final word over the word's bits (final_output_bits; 1: not the output)

    def final_share(self, kind: str) -> np.ndarray:
        """(B, L, T) what one word of ``kind`` (``drains`` or ``updates``) costs in words of its tensor's width:
        ``final_scale`` where the output's words of that kind carry final values, else 1 (docs/cost-model.md 2b)."""
        L = self.counts[kind].shape[1]
        lowest = self.final_drains if kind == "drains" else self.final_updates
        final = np.arange(L)[None, :, None] >= lowest[:, None, None]
        return np.where(final, self.final_scale[None, None, :], 1.0)

    def final_words(self, kind: str) -> np.ndarray:
        """(B, L, T) the words of ``kind`` (``drains`` or ``updates``), final output words counted at their width
        (:meth:`final_share`); every other count unchanged."""
        return self.counts[kind] * self.final_share(kind)

    def energy_by_action(self) -> np.ndarray:
        """(B, L, T, 3) energy of each level, tensor and action: reads (to children and lanes, drains,
        read-modify-write reads) x read energy, fills x fill energy, updates x update energy, drains and
        updates of final outputs at their width (``final_words``; docs/cost-model.md section 2b). Their sum
        plus hop and MAC energy is ``energy``."""
        c = self.counts
        words = np.stack([c["reads"] + self.final_words("drains") + c["accumulate_reads"], c["fills"],
                          self.final_words("updates")], axis=-1)
        return words * self.action_energy

    def dram_bytes_by_tensor(self, word_bytes: np.ndarray) -> np.ndarray:
        """(B, T) bytes each tensor moves to or from the backing store (its reads and updates, final outputs at
        their width), given each tensor's bytes per word; they sum to ``dram_bytes``."""
        top = self.counts["reads"].shape[1] - 1
        return (self.counts["reads"][:, top] + self.final_words("updates")[:, top]) * word_bytes

    @property
    def edp(self) -> np.ndarray:
        return self.energy * self.cycles

    def objective(self, name: str) -> np.ndarray:
        """Each mapping's value of the objective ``name`` (dnnmap.cost.objective); inf where it does not fit."""
        value = objective_value(name, self.energy, self.cycles, self.dram_bytes)
        return np.where(self.valid, value.astype(float), np.inf)

    def tie_break(self) -> np.ndarray:
        """Each mapping's second ranking key (:func:`dnnmap.cost.objective.tie_break`)."""
        return tie_break(self.energy, self.cycles)

    def best(self, objective: str) -> tuple[float, int]:
        """The best mapping's objective value and index: the objective, then the tie-break, then batch order."""
        score = self.objective(objective)
        idx = best_index(score, self.tie_break())
        return float(score[idx]), idx


class CostModel:
    """Evaluates batches of mappings of one operator on one architecture."""

    def __init__(self, op: Operator, arch: ArchSpec, imbalance: bool = True) -> None:
        """``imbalance``: zero-skipping lanes pay the expected load-imbalance overhead of unstructured sparsity
        (:mod:`dnnmap.cost.imbalance`, RTML 3.2.11); False: perfectly balanced lanes, exact for N:M
        structured sparsity (docs/sparse.md section 4)."""
        self.op, self.arch = op, arch
        self.dims = op.dim_names
        self.L, self.D, self.T = len(arch.levels), len(self.dims), len(op.tensors)
        bounds = op.bounds
        # axes over dimensions of bound 1 only never move and hold one element: the kernel skips them
        self._axes = [[a for a in t.axes if a.extent(bounds) > 1] or list(t.axes[:1]) for t in op.tensors]
        X = max(len(axes) for axes in self._axes)
        K = max(len(a.terms) for t in op.tensors for a in t.axes)
        self._bounds = np.array([bounds[d] for d in self.dims], dtype=np.int64)
        # the kernel's operator tables (dnnmap/cost/kernel.py, column constants TERM_*, TX_*, REL_*, DT_*)
        self._ax_nterm = np.zeros((self.T, X), dtype=np.int64)
        self._ax_terms = np.zeros((self.T, X, K, 2), dtype=np.int64)
        self._tensor_axes = np.zeros((self.T, kernel.TX_WIN + X), dtype=np.int64)
        self._dim_rel = np.zeros((self.T, self.D, 2), dtype=np.int64)
        self._dim_terms = np.zeros((self.T, self.D, X, 2), dtype=np.int64)
        self._sizes = np.ones((self.T, X), dtype=np.int64)
        for ti, axes in enumerate(self._axes):
            self._tensor_axes[ti, kernel.TX_NAX] = len(axes)
            for d in op.tensors[ti].dims:
                self._dim_rel[ti, self.dims.index(d), kernel.REL_KIND] |= kernel.REL_DIM
            for xi, a in enumerate(axes):
                # dimensions of bound 1 never move an axis: a window over them is a single-dimension axis;
                # terms in ascending coefficient, the order the kernel's closed forms take them in
                moving = [(d, c) for d, c in a.terms if bounds[d] > 1] or list(a.terms[:1])
                terms = sorted(moving, key=lambda dc: dc[1])
                self._ax_nterm[ti, xi] = len(terms)
                if len(terms) > 1:  # a sliding-window axis
                    self._tensor_axes[ti, kernel.TX_WIN + self._tensor_axes[ti, kernel.TX_NWIN]] = xi
                    self._tensor_axes[ti, kernel.TX_NWIN] += 1
                for k, (d, c) in enumerate(terms):
                    di = self.dims.index(d)
                    self._ax_terms[ti, xi, k] = di, c
                    kind = kernel.REL_SINGLE if len(terms) == 1 else kernel.REL_WINDOW
                    self._dim_rel[ti, di, kernel.REL_KIND] |= kind
                    self._dim_terms[ti, di, self._dim_rel[ti, di, kernel.REL_NTERMS]] = xi, c
                    self._dim_rel[ti, di, kernel.REL_NTERMS] += 1
                self._sizes[ti, xi] = a.extent(bounds)
        self._out = next(j for j, t in enumerate(op.tensors) if t.role == "output")
        self.sparse = sparse_operand(op, arch)  # the compressed sparse operand, None: dense (docs/sparse.md)
        self.imbalance = imbalance and self.sparse is not None and self.sparse.skip_zeros
        skip = self.sparse.density if self.sparse is not None and self.sparse.skip_zeros else 1.0
        self.ops_count = op.operations * skip  # executed (effectual) operations
        self.unit = compute_unit(op, arch)  # the MAC array, or the vector unit for non-MAC kinds
        self._buffers: tuple[bytes, tuple[np.ndarray, ...]] | None = None
        self._networks = [[self._network_flags(lv.fanout, t.role) for t in op.tensors] for lv in arch.levels]
        self.action_energy = np.array([[[lv.energy_of(t.role, a) for a in ACTIONS] for t in op.tensors]
                                       for lv in arch.levels])  # (L, T, 3): read, fill, update
        self._level_params = np.array([[lv.bandwidth or 0.0, lv.read_bandwidth or 0.0, lv.write_bandwidth or 0.0,
                                        lv.fanout.hop_energy if lv.fanout else 0.0, float(lv.read_modify_write),
                                        HALO_MODES[lv.halo_reuse], float(lv.fanout is not None),
                                        (lv.fanout.ingress_bandwidth or 0.0) if lv.fanout else 0.0,
                                        (lv.fanout.egress_bandwidth or 0.0) if lv.fanout else 0.0]
                                       for lv in arch.levels])
        self.final_scale = np.array([arch.final_bits / arch.bits_of(t.role) if j == self._out else 1.0
                                     for j, t in enumerate(op.tensors)])
        self._tensor_params = np.array([[arch.bytes_of(t.role), float(t.role in arch.mac.operand_registers),
                                         float(j == self._out), 1.0, self.final_scale[j]]
                                        for j, t in enumerate(op.tensors)])
        self._cap_part, self._cap = self._capacity_partitions()
        cap_weight = np.array([[float(arch.capacity_units_of(lv, t.role))
                                for t in op.tensors] for lv in arch.levels])
        word_scale = np.ones((self.L, self.T))
        if self.sparse is not None:  # docs/sparse.md: compressed words of the sparse operand, effectual lane-steps
            word_scale[:, self.sparse.index] = [self.sparse.word_factor if z else 1.0 for z in self.sparse.compressed]
            self._tensor_params[:, kernel.T_LANE_SCALE] = skip
            self._tensor_params[self.sparse.index, kernel.T_LANE_SCALE] = 1.0
        self._level_tensor = np.concatenate([self.action_energy, cap_weight[:, :, None], word_scale[:, :, None]],
                                            axis=2)  # (L, T, 5)
        self._pair_tables: dict[bytes, np.ndarray] = {}
        self._scratches: dict[int, tuple[np.ndarray, ...]] = {}
        self._backing_excess = self._backing_store_excess()
        transfer = arch.dram.transfer
        burst_model = transfer is not None and transfer.model == "burst"
        scalars = np.zeros(kernel.SCALAR_COLUMNS)
        scalars[kernel.S_BURST_BYTES] = transfer.burst_bytes if burst_model else 1.0
        if transfer is not None:  # the transfer time is linear in bytes and bursts (TSO Alg. 4)
            scalars[kernel.S_SEC_PER_BYTE] = float(dram_transfer_seconds(transfer, 1.0, 0.0))
            scalars[kernel.S_SEC_PER_BURST] = float(dram_transfer_seconds(transfer, 0.0, 1.0))
        scalars[kernel.S_CLOCK_HZ] = arch.clock_mhz * 1e6
        scalars[kernel.S_OPS] = self.ops_count
        scalars[kernel.S_MAC_ENERGY] = self.unit.energy
        scalars[kernel.S_NUM_MACS] = self.unit.lanes
        scalars[kernel.S_LEAST_COMPUTE] = self.unit.least_cycles(self.ops_count)
        scalars[kernel.S_OVERLAP] = float(arch.overlap)
        scalars[kernel.S_BURST_MODEL] = float(burst_model)
        self._burst_model = burst_model  # else the kernel gets no layouts: its burst code is not even compiled
        # the kernel's placement argument when no mapping places a tensor: an empty array, not None, so that the
        # kernel is not compiled once more for it (docs/cost-model.md section 5)
        self._no_above = np.zeros((0, self.L, self.T), dtype=np.int64)
        scalars[kernel.S_SPARSE] = float(self.sparse is not None)
        scalars[kernel.S_STEP_SCALE] = skip * self.unit.cycles  # effectual steps x cycles per step
        self._scalars = scalars
        # some fan-out has an ingress or egress bandwidth: the kernel's network pass runs
        self._network = bool((self._level_params[:, [kernel.P_IN_BW, kernel.P_OUT_BW]] > 0).any())
        self._operator = (self._bounds, self._ax_nterm, self._ax_terms, self._tensor_axes, self._dim_rel,
                          self._dim_terms, self._sizes)
        self._arch = (self._level_params, self._level_tensor, self._tensor_params, self._cap_part, self._cap,
                      self._scalars)

    @staticmethod
    def _network_flags(fanout: Fanout | None, role: str) -> tuple[bool, bool, bool, bool]:
        """(fan-out, multicast, reduction, identical-only multicast) of a level's network for ``role``."""
        if fanout is None:
            return False, False, False, False
        mcast = fanout.multicast and role not in fanout.no_multicast
        return True, mcast, fanout.reduction, mcast and fanout.multicast_rule == "identical"

    def _backing_store_excess(self) -> float:
        """Capacity units by which the whole tensors exceed a bounded backing store (<= 0: they fit)."""
        top = self.arch.dram
        if top.capacity is None:
            return -np.inf
        used: dict[str, float] = {}
        for t in self.op.tensors:
            key = t.role if isinstance(top.capacity, dict) else ""
            unit = self.arch.capacity_units_of(top, t.role)
            words = t.size(self.op.bounds) * (self.sparse.word_factor if self.sparse and self.sparse.tensor == t.name
                                              else 1.0)  # the compressed sparse operand (docs/sparse.md)
            used[key] = used.get(key, 0.0) + words * unit
        return max(words - top.capacity_for(key or "input") for key, words in used.items())

    def _capacity_partitions(self) -> tuple[np.ndarray, np.ndarray]:
        """Per level, the capacity partition each tensor's tile counts against and the partitions'
        words (-1: unlimited). One partition for a plain capacity, one per role for a per-role one."""
        roles = sorted({t.role for t in self.op.tensors})
        part = np.zeros((self.L, self.T), dtype=np.int64)
        cap = np.full((self.L, self.T), -1.0)
        for i, lv in enumerate(self.arch.levels[:-1]):
            if isinstance(lv.capacity, dict):
                part[i] = [roles.index(t.role) for t in self.op.tensors]
                for r, role in enumerate(roles):
                    cap[i, r] = lv.capacity_for(role)
            elif lv.capacity is not None:
                cap[i, 0] = lv.capacity_for("input")
        return part, cap

    def _pairs(self, keeps: np.ndarray) -> np.ndarray:
        """The kernel's pair table for the bypass choices ``keeps`` (L, T) (columns ``kernel.PR_*``): per tensor,
        the consecutive levels keeping it as (child, parent), innermost first, the MAC lanes (child -1) first,
        and whether every fan-out between them (those of levels child + 1 .. parent, docs/cost-model.md
        section 2) multicasts / reduces / multicasts by the identical rule (any of them does, section 2b)."""
        key = keeps.tobytes()
        if key in self._pair_tables:
            return self._pair_tables[key]
        rows = []
        for t in range(self.T):
            c = -1
            register = self._tensor_params[t, kernel.T_REGISTER] > 0
            for p in range(self.L):
                if not keeps[p, t]:
                    continue
                # (multicast, reduction, identical rule) of every fan-out in between
                nets = [self._networks[j][t][1:] for j in range(c + 1, p + 1) if self._networks[j][t][0]]
                mcast = all(m for m, _, _ in nets)
                row = np.zeros(kernel.PAIR_COLUMNS, dtype=np.int64)
                row[[kernel.PR_TENSOR, kernel.PR_CHILD, kernel.PR_PARENT]] = t, c, p
                row[kernel.PR_MCAST] = mcast
                row[kernel.PR_REDUCE] = all(r for _, r, _ in nets)
                row[kernel.PR_IDENTICAL] = mcast and any(i for _, _, i in nets)
                row[kernel.PR_OUTPUT] = t == self._out
                row[kernel.PR_LANES] = c < 0 and not register
                row[kernel.PR_SETS] = self._burst_model and p == self.L - 1
                row[kernel.PR_RMW] = self._level_params[p, kernel.P_RMW] > 0
                row[kernel.PR_HALO] = int(self._level_params[c, kernel.P_HALO]) if c >= 0 else 1
                rows.append(row)
                c = p
        self._pair_tables[key] = np.array(rows, dtype=np.int64)
        return self._pair_tables[key]

    def _scratch(self, base: int) -> tuple[np.ndarray, ...]:
        """The kernel's scratch arrays for bitmaps of axis extents up to ``base`` (:func:`kernel.scratch_arrays`),
        allocated once per ``base``: the kernel overwrites what it reads of them for every mapping."""
        if base not in self._scratches:
            self._scratches[base] = kernel.scratch_arrays(self.L, self.D, self.T, self._ax_terms.shape[1],
                                                          self._ax_terms.shape[2], base)
        return self._scratches[base]

    def _layouts(self, batch: MappingBatch) -> np.ndarray:
        """Per tensor the DRAM axis order (outermost first) as indices into the kernel's axes."""
        layout = np.zeros_like(self._sizes)
        given = dict(batch.layouts)
        for ti, t in enumerate(self.op.tensors):
            kept = [a.name for a in self._axes[ti]]
            order = [a for a in given.get(t.name, [a.name for a in t.axes]) if a in kept]
            layout[ti, :len(order)] = [kept.index(a) for a in order]
        return layout

    # ------------------------------------------------------------------------------
    def evaluate(self, batch: MappingBatch, reuse_buffers: bool = False) -> CostBatch:
        """Costs of every mapping of ``batch`` (one compiled pass, :func:`kernel.evaluate_range`, and the
        network term's, :func:`kernel.network_range`, when a fan-out has a network bandwidth).

        ``reuse_buffers=True`` (the mappers' inner loop) returns arrays backed by buffers this model
        overwrites on its next such call - read the result first. It spares writing ~0.5 kB of fresh
        memory per mapping (~6% of the time on a conv layer, docs/cost-model.md section 5).
        """
        L, T = self.L, self.T
        B = len(batch)
        shapes = ((B, len(COUNT_KINDS), L, T), (B, L, T), (B, L), (B, L), (B, L + 2), (B, L), (B, 9), (B, L))
        if reuse_buffers:
            # cells the kernel never writes (levels not keeping a tensor) depend only on the bypass
            # choices, so buffers zeroed once serve every batch with the same ones
            key = batch.keeps.tobytes()
            if self._buffers is None or self._buffers[0] != key or len(self._buffers[1][0]) < B:
                self._buffers = (key, tuple(np.zeros(shape) for shape in shapes))
            outputs = tuple(buf[:B] for buf in self._buffers[1])
        else:
            outputs = tuple(np.zeros(shape) for shape in shapes)
        counts, tile_words, hop_words, excess, breakdown, level_cycles, summary, network_cycles = outputs
        args = (np.ascontiguousarray(batch.temporal, dtype=np.int64),
                np.ascontiguousarray(batch.spatial, dtype=np.int64),
                np.ascontiguousarray(batch.order, dtype=np.int64), self._pairs(np.asarray(batch.keeps, dtype=bool)),
                self._layouts(batch) if self._burst_model else None,
                self._no_above if batch.above is None else np.ascontiguousarray(batch.above, dtype=np.int64),
                self._operator, self._arch, outputs)
        done, base = 0, int(self._sizes.max())
        while done < B:  # more than one call only when an imperfect factorization needs larger bitmaps
            done, base = kernel.evaluate_range(*args, self._scratch(base), done, base)
        done = 0 if self._network else B
        while done < B:
            done, base = kernel.network_range(*args, self._scratch(base), done, base)
        valid = summary[:, kernel.O_VALID] > 0
        if self._backing_excess > -np.inf:  # a bounded backing store must hold the whole tensors
            excess[:, L - 1] = self._backing_excess
            valid = valid & (self._backing_excess <= 0)
        compute, cycles, utilization = (summary[:, kernel.O_STEPS], summary[:, kernel.O_CYCLES],
                                        summary[:, kernel.O_UTILIZATION])
        if self.imbalance:  # the lanes wait for the slowest at every event (docs/sparse.md section 5)
            slower = compute * imbalance_factor(self.op, self.sparse, batch)
            # compute only grows: with overlap the latency is the max of its terms, else their sum
            cycles = np.maximum(cycles, slower) if self.arch.overlap else cycles + slower - compute
            utilization = utilization * summary[:, kernel.O_CYCLES] / cycles
            compute = slower
        return CostBatch(
            valid=valid, cycles=cycles,
            compute_cycles=compute, level_cycles=level_cycles,
            network_cycles=network_cycles, energy=summary[:, kernel.O_ENERGY],
            energy_breakdown=breakdown, dram_bytes=summary[:, kernel.O_DRAM_BYTES],
            utilization=utilization,
            counts={k: counts[:, i] for i, k in enumerate(COUNT_KINDS)}, tile_words=tile_words,
            capacity_excess=excess, dram_bursts=summary[:, kernel.O_BURSTS], hop_words=hop_words,
            action_energy=self.action_energy, final_drains=summary[:, kernel.O_FINAL_DRAINS].astype(np.int64),
            final_updates=summary[:, kernel.O_FINAL_UPDATES].astype(np.int64), final_scale=self.final_scale)
