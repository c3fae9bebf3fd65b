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
