"""DRAM transfer time: the volume model and TSO's burst-aware model (TSO Alg. 4, Eq. 9)."""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import TransferModel
from dnnmap.cost.kernel import product_bursts, words_for


def dram_transfer_seconds(spec: TransferModel, nbytes: np.ndarray | float, bursts: np.ndarray | float) -> np.ndarray:
    """TSO Alg. 4 (CalcDataTransfer): ``bytes / BW`` plus, for the burst model, ``bursts * CAS``.

    The volume model ("TSO-noburst", used by the earlier works) ignores ``bursts``.
    """
    t = np.asarray(nbytes, dtype=float) / (spec.bandwidth_gbps * 1e9)
    if spec.model == "burst":
        t = t + np.asarray(bursts, dtype=float) * spec.cas_ns * 1e-9
    return t


def bursts_of_box(ext: np.ndarray, full: np.ndarray, word_bytes: float, burst_bytes: int) -> np.ndarray:
    """TSO Alg. 4 (CalBurstCount), generalized: bursts to move boxes of extents ``ext`` (B, X), in
    layout order (outermost first), of a tensor of extents ``full`` (X,).

    Innermost axes that span the whole tensor merge with the next one into one contiguous
    run (TSO section IV-D: a tile as wide as the IFM row is contiguous across rows). This is
    the cost kernel's own burst count (:func:`dnnmap.cost.kernel.product_bursts`) applied to
    boxes, i.e. to products of intervals.
    """
    ext = np.asarray(ext, dtype=np.int64)
    full = np.asarray(full, dtype=np.int64)
    X = len(full)
    sets = np.zeros((X, words_for(int(full.max()))), dtype=np.uint64)
    sizes = full.reshape(1, X)
    layout = np.arange(X, dtype=np.int64).reshape(1, X)
    out = np.empty(len(ext))
    for b, box in enumerate(ext):
        for x in range(X):
            bits = np.zeros(sets.shape[1] * 64, dtype=np.uint8)
            bits[:box[x]] = 1
            sets[x] = np.packbits(bits, bitorder="little").view(np.uint64)
        out[b] = product_bursts(sets, sizes, 0, X, layout, float(word_bytes), float(burst_bytes))
    return out


def box_bursts(ext: list[np.ndarray], full: list[int], elem_bytes: float, burst_bytes: int) -> np.ndarray:
    """Bursts to move boxes of extents ``ext`` (one array per axis, outermost first, broadcastable)
    out of a tensor of extents ``full``: :func:`bursts_of_box` in closed form, vectorized over
    millions of tiles (TSO's search). The innermost axes a box covers whole merge with the next one
    into one run; every run costs ``ceil(run_bytes / burst_bytes)`` (TSO Sec. IV-E; tests/tso checks
    the two agree)."""
    shape = np.broadcast_shapes(*(np.shape(e) for e in ext))
    run = np.ones(shape, dtype=np.int64)
    runs = np.ones(shape, dtype=np.int64)
    inner_full = np.ones(shape, dtype=bool)  # every axis inside this one is covered whole
    for e, f in zip(reversed(ext), reversed(full)):
        e = np.broadcast_to(np.asarray(e, dtype=np.int64), shape)
        run = np.where(inner_full, run * e, run)
        runs = np.where(inner_full, runs, runs * e)
        inner_full = inner_full & (e == f)
    return runs * np.ceil(run * elem_bytes / burst_bytes).astype(np.int64)
