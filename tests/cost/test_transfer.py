"""DRAM burst model against TSO's worked examples (digest section 4.7)."""

from __future__ import annotations

import numpy as np

from dnnmap.arch.spec import TransferModel
from dnnmap.cost.transfer import bursts_of_box, dram_transfer_seconds


def _bursts(ext: tuple[int, ...], full: tuple[int, ...], word_bytes: float = 2, burst: int = 128) -> int:
    return int(bursts_of_box(np.array([ext]), np.array(full), word_bytes, burst)[0])


def test_tso_fig1_slices_of_one_channel() -> None:
    # one 128x128 16-bit channel, 128 B bursts: slices of 128 rows x 32 B, 128 x 64 B, 64 x 128 B
    full = (128, 128)
    assert 8 * _bursts((128, 16), full) == 1024
    assert 4 * _bursts((128, 32), full) == 512
    assert 4 * _bursts((64, 64), full) == 256


def test_tso_inception_conv5_input_tiles() -> None:
    full = (80, 73, 73)  # IFM channels x rows x columns
    assert _bursts((14, 4, 73), full) == 70  # full-width rows are contiguous: 584 B -> 5 bursts per channel
    assert _bursts((16, 11, 20), full) == 176  # one burst per 40 B row


def test_whole_tensor_is_one_run() -> None:
    assert _bursts((80, 73, 73), (80, 73, 73)) == int(np.ceil(80 * 73 * 73 * 2 / 128))


def test_burst_model_adds_cas_per_burst_volume_model_does_not() -> None:
    burst = TransferModel(model="burst", bandwidth_gbps=16.0, burst_bytes=128, cas_ns=14.0)
    volume = TransferModel(model="volume", bandwidth_gbps=16.0)
    assert np.isclose(dram_transfer_seconds(volume, 16e9, 1000), 1.0)
    assert np.isclose(dram_transfer_seconds(burst, 16e9, 1000), 1.0 + 1000 * 14e-9)
