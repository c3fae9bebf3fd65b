"""DRAM burst model against TSO's worked examples (TSO Section IV-E, Fig. 1 and Algorithm 4), the kernel's burst count of a
product minus a sub-product against enumerated runs, and the simulator's two burst counts."""

from __future__ import annotations

import math

import numpy as np

from dnnmap.arch.spec import TransferModel
from dnnmap.cost.kernel import holed_bursts
from dnnmap.cost.transfer import bursts_of_box, dram_transfer_seconds
from dnnmap.sim import dram_bursts, dram_transfers, simulate
from random_cases import random_case


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


def _bitmaps(sets: list[np.ndarray], nwords: int) -> np.ndarray:
    out = np.zeros((len(sets), nwords), dtype=np.uint64)
    for x, s in enumerate(sets):
        bits = np.zeros(nwords * 64, dtype=np.uint8)
        bits[s] = 1
        out[x] = np.packbits(bits, bitorder="little").view(np.uint64)
    return out


def _literal_bursts(words: np.ndarray, shape: tuple[int, ...], layout: np.ndarray, word_bytes: float,
                    burst_bytes: float) -> float:
    """Bursts of the coordinates ``words`` (rows) counted run by run in the layout's flat order."""
    address = np.sort(np.ravel_multi_index(tuple(words[:, layout].T), [shape[x] for x in layout]))
    runs = np.diff(np.concatenate([[0], np.flatnonzero(np.diff(address) != 1) + 1, [len(address)]]))
    return float(np.ceil(runs * word_bytes / burst_bytes).sum())


def test_holed_bursts_equal_literal_runs_of_random_sets() -> None:
    """``holed_bursts`` (TSO Alg. 4 on a product minus a sub-product, any layout) against the runs of
    the enumerated words: random per-axis sets (strided, gapped, touching the axis' ends or not),
    holes on random axes whose set is not the whole axis, random layouts and burst sizes."""
    rng = np.random.default_rng(3)
    for _ in range(400):
        nax = int(rng.integers(1, 5))
        shape = tuple(int(v) for v in rng.integers(1, 7, size=nax))
        full, new, holes = [], [], 0
        for x in range(nax):
            s = np.flatnonzero(rng.random(shape[x]) < rng.choice([0.5, 0.8, 1.0]))
            s = s if len(s) else np.array([int(rng.integers(shape[x]))])
            full.append(s)
            n = s[rng.random(len(s)) < 0.5]
            if len(s) < shape[x] and len(n) and rng.random() < 0.6:
                holes |= 1 << x
                new.append(n)
            else:
                new.append(s)
        grid = np.stack(np.meshgrid(*full, indexing="ij"), axis=-1).reshape(-1, nax)
        in_hole = np.ones(len(grid), dtype=bool)
        for x in range(nax):
            kept = np.setdiff1d(full[x], new[x]) if holes >> x & 1 else full[x]
            in_hole &= np.isin(grid[:, x], kept)
        words = grid[~in_hole] if holes else grid
        layout = rng.permutation(nax)
        word_bytes, burst_bytes = float(rng.choice([1, 2])), float(rng.choice([2, 4, 8]))
        model = holed_bursts(_bitmaps(full, 1), _bitmaps(new, 1), holes, np.zeros((2, 1), dtype=np.uint64),
                             np.array([shape]), 0, nax, layout.reshape(1, -1), word_bytes, burst_bytes)
        expected = _literal_bursts(words, shape, layout, word_bytes, burst_bytes) if len(words) else 0.0
        assert model == expected, (shape, full, new, holes, layout)


def test_simulator_bursts_equal_the_runs_of_its_transfer_boxes() -> None:
    """``dram_bursts`` (all transfers of a log at once) equals the burst rule applied to the runs of every
    ``DramTransfer`` (its disjoint boxes) in the mapping's layout, on random cases with layouts."""
    rng = np.random.default_rng(4)
    for _ in range(40):
        op, arch, m = random_case(rng)
        dram = arch.levels[-1].model_copy(update={"transfer": TransferModel(model="burst", bandwidth_gbps=1.0,
                                                                             burst_bytes=8)})
        arch = arch.model_copy(update={"levels": arch.levels[:-1] + (dram,)})
        sim = simulate(op, arch, m, compute=False)
        expected = sum(math.ceil(run * arch.bytes_of(op.tensor(tr.tensor).role) / 8)
                       for tr in dram_transfers(sim) for run in tr.runs(m.layout(tr.tensor, tr.axis_names)))
        assert dram_bursts(sim, arch, m) == expected
