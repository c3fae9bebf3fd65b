"""Marvel's uniform-layout study (Sec. 4.1, Fig. 7): one layout for every layer vs each layer's best.

For each layer and each of the 36 layouts the off-chip step already holds the least DMC
(``OffchipResult.layout_best``); the layer's off-chip cost under a layout is that DMC times the
layer's iterations (its DB blocks). Fig. 7 normalizes the total over the layers to the total at
each layer's own best layout (layout conversions between layers not charged); the paper finds
W: K, I: X, O: K innermost within 5%. The per-layer mean of the normalized costs is reported too
(the figure's normalization is not stated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dnnmap.search.marvel.offchip import OffchipResult

PAPER_UNIFORM = "K/X/K"  # Marvel Sec. 4.1: filters K, inputs X, outputs K innermost


@dataclass(frozen=True)
class UniformStudy:
    labels: tuple[str, ...]  # the layouts, W/I/O innermost
    layers: tuple[str, ...]
    cost: np.ndarray  # (layers, layouts) DB blocks of each layer at its best tile under each layout
    best: np.ndarray  # (layers,) at the layer's best layout

    @property
    def total_ratio(self) -> np.ndarray:
        """(layouts,) total cost under one layout / total at each layer's best layout (Fig. 7)."""
        return self.cost.sum(axis=0) / self.best.sum()

    @property
    def mean_ratio(self) -> np.ndarray:
        """(layouts,) mean over layers of cost / the layer's best."""
        return (self.cost / self.best[:, None]).mean(axis=0)

    def ratio_of(self, label: str) -> tuple[float, float]:
        i = self.labels.index(label)
        return float(self.total_ratio[i]), float(self.mean_ratio[i])


def uniform_layout_study(results: list[OffchipResult]) -> UniformStudy:
    """Fig. 7 over ``results`` (one off-chip result per layer; every layer must have the same layout names)."""
    if not results:
        raise ValueError("the uniform-layout study needs at least one layer")
    labels = tuple(results[0].space.label(c) for c in results[0].space.choices)
    for r in results[1:]:
        mine = tuple(r.space.label(c) for c in r.space.choices)
        if mine != labels:
            raise ValueError(f"layer {r.op.name!r} has other layouts than {results[0].op.name!r}; "
                             "the study needs one layout space (e.g. convolution layers only)")
    cost = np.array([r.layout_best[:, 0] / r.layout_best[:, 1] * r.op.iterations for r in results])
    best = np.array([r.total_blocks for r in results])
    return UniformStudy(labels, tuple(r.op.name for r in results), cost, best)
