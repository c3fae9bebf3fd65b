"""TSO Algorithm 4's CalBurstCount for a tile (a box) of a row-major tensor, vectorized over tiles.

Section IV-E: within a channel the data is row-major; a tile row is one contiguous run, and when
the tile spans the whole row (T_L = L) its rows join into one run (the InceptionV3 example: 4 x 73
x 2 B = 584 B contiguous, 5 bursts). Generalized to any number of axes: the innermost axes that
the tile covers whole merge with the next one; every run costs ``ceil(run_bytes / BURST)`` bursts
(no alignment or straddling, as in the paper's examples). This is the core's own rule
(:func:`dnnmap.cost.transfer.bursts_of_box`) in closed form; tests/tso checks they agree.
"""

from __future__ import annotations

import numpy as np


def box_bursts(ext: list[np.ndarray], full: list[int], elem_bytes: float, burst_bytes: int) -> np.ndarray:
    """Bursts to move boxes of extents ``ext`` (one array per axis, outermost first, broadcastable)
    out of a tensor of extents ``full``."""
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
