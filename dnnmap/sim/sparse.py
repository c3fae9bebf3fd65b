"""Sparse tensors for the reference simulator and the timing of zero-skipping lanes (docs/sparse.md).

:func:`structured_pattern` draws N:M sparsity along one axis (every aligned block of ``m`` consecutive
elements along it holds exactly ``n`` non-zeros), the pattern under which the analytical model's density
is exact for every tile (docs/sparse.md, "What is exact"); :func:`random_pattern` draws unstructured
sparsity with exactly ``round(density * size)`` non-zeros; :func:`uneven_pattern` gives every block of a
tensor its own density (the load-balancing benchmark's synthetic weights).
:func:`sync_cycles` is the compute time of lanes that walk only their effectual lane-steps and wait for
the slowest lane at every event of a level (RTML section 3.2.11).
"""

from __future__ import annotations

import numpy as np


def structured_pattern(shape: tuple[int, ...], axis: int, n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Boolean non-zero mask of ``shape``: along ``axis``, every aligned block of ``m`` elements has exactly
    ``n`` non-zeros at random positions (N:M structured sparsity, density ``n / m``). ``shape[axis]`` must be
    a multiple of ``m``."""
    if not 1 <= n <= m or shape[axis] % m:
        raise ValueError(f"N:M = {n}:{m} needs 1 <= N <= M and M dividing the axis extent {shape[axis]}")
    moved = np.moveaxis(np.zeros(shape, dtype=bool), axis, -1)
    blocks = moved.reshape(-1, m)
    keys = rng.random(blocks.shape)
    chosen = np.argsort(keys, axis=1)[:, :n]
    np.put_along_axis(blocks, chosen, True, axis=1)
    return np.moveaxis(blocks.reshape(moved.shape), -1, axis)


def random_pattern(shape: tuple[int, ...], density: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean non-zero mask with exactly ``round(density * size)`` (at least one) non-zeros, uniformly placed."""
    size = int(np.prod(shape))
    mask = np.zeros(size, dtype=bool)
    mask[rng.permutation(size)[:max(1, round(density * size))]] = True
    return mask.reshape(shape)


def uneven_pattern(shape: tuple[int, ...], block: tuple[int, ...], density: float, spread: float,
                   rng: np.random.Generator) -> np.ndarray:
    """Boolean mask whose blocks (of ``block`` elements per axis) each draw their own density, log-uniform
    within a factor ``spread`` around ``density`` (clipped to (0, 1]); elements are non-zero with their
    block's density. Mean density close to ``density``."""
    grid = tuple(-(-s // b) for s, b in zip(shape, block))
    per_block = np.clip(density * np.exp(rng.uniform(-np.log(spread), np.log(spread), size=grid)), 1e-6, 1.0)
    per_block *= density / per_block.mean()
    dens = per_block
    for ax, b in enumerate(block):
        dens = np.repeat(dens, b, axis=ax)
    dens = dens[tuple(slice(0, s) for s in shape)]
    return rng.random(shape) < np.clip(dens, 0.0, 1.0)


def sync_cycles(step: np.ndarray, lane: np.ndarray, per_event: int, lanes: int) -> tuple[float, float]:
    """Compute cycles when every lane executes only its effectual lane-steps (``step``/``lane`` of each) and
    all lanes wait for the slowest at each event boundary (events of ``per_event`` steps): the sum over
    events of the busiest lane's work. Returns that and the sum over events of the mean work over lanes
    (perfect balance), whose ratio is the imbalance (RTML section 3.2.11)."""
    if not len(step):
        return 0.0, 0.0
    work = np.bincount(step // per_event * lanes + lane).astype(float)
    work = np.pad(work, (0, -len(work) % lanes)).reshape(-1, lanes)
    return float(work.max(axis=1).sum()), float(work.mean(axis=1).sum())
