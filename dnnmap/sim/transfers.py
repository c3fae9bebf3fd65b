"""DRAM tile transfers of a simulation as boxes, and their contiguous runs in a DRAM layout.

Each transfer (one event's words of one tensor for one child instance, or for all of them
when the fan-outs in between multicast/reduce) is decomposed into disjoint axis-aligned
boxes of unit-stride index ranges; a strided tile (stride-2 window rows) becomes several
boxes. ``DramTransfer.runs(layout)`` gives the lengths of the contiguous runs the words
occupy when the tensor is stored with its axes in ``layout`` order (outermost first), which
is what a DRAM burst model charges for; ``dram_bursts`` applies the burst rule of
``docs/cost-model.md`` section 3 to every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.mapping import Mapping
from dnnmap.sim.loopnest import Direction, SimResult, TransferLog

Box = tuple[tuple[int, int], ...]  # per tensor axis: [start, stop)


@dataclass(frozen=True)
class DramTransfer:
    """One DRAM read or update event of one tensor."""

    step: int  # temporal step of the event (the nest's step count for the final drain)
    tensor: str
    direction: Direction
    group: int  # child instance served, -1 when one transfer serves all child instances
    axis_names: tuple[str, ...]
    shape: tuple[int, ...]
    boxes: tuple[Box, ...]

    @property
    def words(self) -> int:
        return sum(math.prod(stop - start for start, stop in box) for box in self.boxes)

    def runs(self, layout: tuple[str, ...] | None = None) -> list[int]:
        """Lengths of the contiguous runs of the transferred words in ``layout`` (default: axis order)."""
        order = [self.axis_names.index(a) for a in (layout or self.axis_names)]
        flat = []
        for box in self.boxes:
            grids = np.meshgrid(*(np.arange(box[a][0], box[a][1]) for a in order), indexing="ij")
            flat.append(np.ravel_multi_index(tuple(g.ravel() for g in grids), [self.shape[a] for a in order]))
        words = np.sort(np.concatenate(flat))
        breaks = np.nonzero(np.diff(words) != 1)[0] + 1
        return [len(run) for run in np.split(words, breaks)]


def _merge_boxes(lo: np.ndarray, hi: np.ndarray, first_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge unit boxes ``[lo, hi)`` (rows) into maximal boxes, last axis first; columns before
    ``first_axis`` are never merged (they identify the transfer)."""
    for axis in range(lo.shape[1] - 1, first_axis - 1, -1):
        others = [j for j in range(lo.shape[1]) if j != axis]
        order = np.lexsort([lo[:, axis]] + [hi[:, j] for j in others] + [lo[:, j] for j in others])
        lo, hi = lo[order], hi[order]
        same = (lo[1:, others] == lo[:-1, others]).all(axis=1) & (hi[1:, others] == hi[:-1, others]).all(axis=1)
        starts = np.concatenate([[True], ~(same & (lo[1:, axis] == hi[:-1, axis]))])
        ends = np.concatenate([starts[1:], [True]])
        new_lo, new_hi = lo[starts], hi[starts]
        new_hi[:, axis] = hi[ends, axis]
        lo, hi = new_lo, new_hi
    return lo, hi


def _log_transfers(log: TransferLog) -> list[DramTransfer]:
    events, transfer = np.unique(np.stack([log.step, log.group]), axis=1, return_inverse=True)
    coords = np.stack(np.unravel_index(log.word, log.shape), axis=1)
    lo = np.concatenate([transfer.reshape(-1, 1), coords], axis=1)  # transfer id, then the tensor axes
    lo, hi = _merge_boxes(lo, lo + 1, first_axis=1)
    boxes: list[list[Box]] = [[] for _ in range(events.shape[1])]
    for l_row, h_row in zip(lo.tolist(), hi.tolist()):
        boxes[l_row[0]].append(tuple(zip(l_row[1:], h_row[1:])))
    return [DramTransfer(int(events[0, k]), log.tensor, log.direction, int(events[1, k]), log.axis_names,
                         log.shape, tuple(sorted(boxes[k]))) for k in range(events.shape[1])]


def dram_transfers(result: SimResult) -> list[DramTransfer]:
    """All DRAM transfers of ``result`` in time order (reads before updates at one step, then by tensor)."""
    transfers = [tr for log in result.dram_log for tr in _log_transfers(log)]
    return sorted(transfers, key=lambda tr: (tr.step, tr.direction, tr.tensor, tr.group))


def _run_lengths(log: TransferLog, layout: tuple[str, ...]) -> np.ndarray:
    """Lengths of the contiguous runs of every transfer of ``log`` with the tensor stored in ``layout``
    (axis names, outermost first): the same runs as :meth:`DramTransfer.runs`, for all transfers at once."""
    order = [log.axis_names.index(a) for a in layout]
    coords = np.unravel_index(log.word, log.shape)
    address = np.ravel_multi_index(tuple(coords[a] for a in order), [log.shape[a] for a in order])
    _, transfer = np.unique(np.stack([log.step, log.group]), axis=1, return_inverse=True)
    # one key per (transfer, address), sorted; a gap of one address between transfers keeps their runs apart
    keys = np.unique(transfer.reshape(-1) * (math.prod(log.shape) + 1) + address)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(keys) != 1) + 1, [len(keys)]])
    return np.diff(bounds)


def dram_bursts(result: SimResult, arch: ArchSpec, mapping: Mapping) -> int:
    """Bursts of all DRAM transfers (TSO Alg. 4 applied literally): each contiguous run of a transfer in
    the tensor's DRAM layout (the mapping's ``layouts``, else the axis order) costs
    ``ceil(run_bytes / burst_bytes)`` of ``arch``'s DRAM (final outputs at their width)."""
    if arch.dram.transfer is None:
        raise ValueError(f"architecture {arch.name!r}: the DRAM level has no transfer model (burst_bytes)")
    burst_bytes = arch.dram.transfer.burst_bytes
    total = 0
    for log in result.dram_log:
        if len(log.word):
            runs = _run_lengths(log, mapping.layout(log.tensor, log.axis_names))
            total += int(np.ceil(runs * arch.moved_bits(log.role, log.final) / 8 / burst_bytes).sum())
    return total
