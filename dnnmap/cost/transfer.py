"""DRAM transfer time: the volume model and TSO's burst-aware model (TSO Alg. 4, Eq. 9)."""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import ArchSpec, TransferModel


def dram_transfer_seconds(spec: TransferModel, nbytes: np.ndarray | float, bursts: np.ndarray | float) -> np.ndarray:
    """TSO Alg. 4 (CalcDataTransfer): ``bytes / BW`` plus, for the burst model, ``bursts * CAS``.

    The volume model ("TSO-noburst", used by the earlier works) ignores ``bursts``.
    """
    t = np.asarray(nbytes, dtype=float) / (spec.bandwidth_gbps * 1e9)
    if spec.model == "burst":
        t = t + np.asarray(bursts, dtype=float) * spec.cas_ns * 1e-9
    return t


def dram_transfer_cycles(arch: ArchSpec, nbytes: np.ndarray, bursts: np.ndarray) -> np.ndarray:
    """Transfer time of the DRAM level in clock cycles (0 when the level has no transfer model)."""
    spec = arch.dram.transfer
    if spec is None:
        return np.zeros_like(np.asarray(nbytes, dtype=float))
    return dram_transfer_seconds(spec, nbytes, bursts) * arch.clock_mhz * 1e6


def bursts_of_box(ext: np.ndarray, full: np.ndarray, word_bytes: float, burst_bytes: int) -> np.ndarray:
    """TSO Alg. 4 CalBurstCount, generalized: bursts to move a box of extents ``ext`` (layout order, outermost first) of a tensor of extents ``full``.

    Innermost axes that span the whole tensor merge with the next one into one contiguous
    run (TSO section IV-D: a tile as wide as the IFM row is contiguous across rows).
    """
    B, X = ext.shape
    run = ext[:, -1].astype(np.int64).copy()
    merging = np.ones(B, dtype=bool)
    runs = np.ones(B, dtype=np.int64)
    for x in range(X - 2, -1, -1):
        merging &= ext[:, x + 1] == full[x + 1]
        run = np.where(merging, run * ext[:, x], run)
        runs = np.where(merging, runs, runs * ext[:, x])
    return runs * np.ceil(run * word_bytes / burst_bytes).astype(np.int64)
