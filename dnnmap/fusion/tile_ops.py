"""NumPy kernels that compute one multi-tile of one layer from its input window (the executor's arithmetic).

Written independently of :mod:`dnnmap.sim.reference` (which the proof compares against): a
convolution is a sum over the kernel offsets of strided slices contracted over input channels,
a max-pool the maximum of those slices, an average pool their (undivided) sum, an add the sum of
its inputs, a concat their channels stacked. Padding is materialized in the window: zeros, or the lowest integer for max-pooling.
"""

from __future__ import annotations

import numpy as np

from dnnmap.fusion.attention import contract_heads
from dnnmap.fusion.geometry import LayerGeometry
from dnnmap.workload.kinds import KINDS

LOWEST = np.iinfo(np.int64).min


def pad_value(layer: LayerGeometry) -> int:
    """What a padded input position holds for ``layer``."""
    return LOWEST if layer.kind == "pool_max" else 0


def compute_block(layer: LayerGeometry, windows: list[np.ndarray], weights: np.ndarray | None,
                  shape: tuple[int, int]) -> np.ndarray:
    """Output block ``(channels, h, w)`` of ``layer`` from its padded input window(s).

    ``windows[0]`` starts at the input position of the block's first output (``S*o - P``); for an
    add every window is the block itself. A banded layer (attention) gets one weight slice per output row,
    ``(rows, out, in)``.
    """
    if layer.banded:
        out = contract_heads(windows[0], weights)
    elif layer.has_macs:
        out = _convolve(layer, windows[0], weights, shape)
    elif layer.kind == "concat":
        out = np.concatenate(windows, axis=0)
    elif layer.kind.startswith("pool"):
        slices = _window_slices(layer, windows[0], shape)
        out = np.maximum.reduce(slices) if layer.kind == "pool_max" else np.add.reduce(slices)
    else:
        out = _elementwise(layer, windows, weights)
    return np.maximum(out, 0) if layer.relu else out


def _elementwise(layer: LayerGeometry, windows: list[np.ndarray], weights: np.ndarray | None) -> np.ndarray:
    """An add (the sum of its inputs) or a transformer vector kind by its combine rule: a copy (GELU, SiLU), gate
    times up (SwiGLU), the input times the per-channel scale (the norms), as the reference simulator runs them."""
    operands = [*windows, *([] if weights is None else [weights[:, None, None]])]
    product = KINDS[layer.kind].combine == "product"
    out = operands[0].copy()
    for other in operands[1:]:
        out = out * other if product else out + other
    return out


def _window_slices(layer: LayerGeometry, window: np.ndarray, shape: tuple[int, int]) -> list[np.ndarray]:
    (wy, wx), (h, w) = layer.windows, shape
    return [window[:, r:r + wy.stride * (h - 1) + 1:wy.stride, s:s + wx.stride * (w - 1) + 1:wx.stride]
            for r in range(wy.kernel) for s in range(wx.kernel)]


def _convolve(layer: LayerGeometry, window: np.ndarray, weights: np.ndarray | None,
              shape: tuple[int, int]) -> np.ndarray:
    """``out[k, y, x] = sum_{c,r,s} W[k, c, r, s] * in[c, S*y + r, S*x + s]`` (Algorithm 1)."""
    assert weights is not None
    (wy, wx) = layer.windows
    out = np.zeros((weights.shape[0], *shape), dtype=np.int64)
    slices = iter(_window_slices(layer, window, shape))
    for r in range(wy.kernel):
        for s in range(wx.kernel):
            out += np.tensordot(weights[:, :, r, s], next(slices), axes=(1, 0))
    return out


def block_macs(layer: LayerGeometry, out_channels: int, shape: tuple[int, int]) -> int:
    """MACs of one output block (Eq. 13's ``N_of * N_if * N_kx * N_ky`` per output pixel)."""
    if not layer.has_macs:
        return 0
    ky, kx = (w.kernel for w in layer.windows)
    return out_channels * layer.in_channels * ky * kx * shape[0] * shape[1]
