"""Sparse figures (docs/sparse.md): the model's error on unstructured sparsity, and load balancing.

Run: ``python benchmarks/sparse_bench.py`` (about a minute). Prints

1. the analytical model (expected values at the measured density) against the simulator executing the
   same mappings with a real unstructured sparse weight tensor: the distribution of the relative error
   (model - simulator) / simulator of energy, compute cycles, latency and the sparse operand's words;
2. RTML section 3.2.11 load balancing on a 16-row SIMD array: the latency overhead of imbalance (slowest
   row vs mean, summed over waves) before and after, on synthetic 90%-sparse conv weights whose tiles have
   uneven densities, and on the magnitude-pruned (90%) weights of a small MLP trained here with NumPy on
   synthetic data (nothing downloaded).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from dnnmap.cost.batch import MappingBatch  # noqa: E402
from dnnmap.cost.model import CostModel  # noqa: E402
from dnnmap.mapping.load_balance import balance, imbalance, tile_halves  # noqa: E402
from dnnmap.sim import sim_metrics, simulate  # noqa: E402
from dnnmap.sim.sparse import uneven_pattern  # noqa: E402
from sparse_cases import random_sparse_case  # noqa: E402

ROWS = 16  # SIMD rows of the RTML chip's 16 x 12 array (the report does not say which is which)


def model_error(n: int = 200, seed: int = 21) -> None:
    rng = np.random.default_rng(seed)
    errors: dict[str, list[float]] = {"energy": [], "compute cycles": [], "latency": [], "sparse-operand words": []}
    for _ in range(n):
        c = random_sparse_case(rng, exact=False)
        if any(c.mapping.total(d) != b for d, b in c.op.dims):
            continue
        sim = simulate(c.op, c.arch, c.mapping, nonzero=c.nonzero, compute=False)
        met = sim_metrics(sim, c.op, c.arch, c.mapping)
        cost = CostModel(c.op, c.arch).evaluate(MappingBatch.from_mappings(c.op, c.arch, [c.mapping]))
        w = [t.name for t in c.op.tensors].index("W")
        model_words = sum(cost.counts[k][0, :, w].sum() for k in cost.counts)
        sim_words = sum(sum(getattr(x, k) for k in ("reads", "fills", "updates", "drains", "accumulate_reads"))
                        for (_, t), x in sim.counts.items() if t == "W")
        for name, a, b in (("energy", cost.energy[0], met.energy), ("compute cycles", cost.compute_cycles[0],
                           sim.temporal_steps), ("latency", cost.cycles[0], met.cycles),
                           ("sparse-operand words", model_words, sim_words)):
            errors[name].append((a - b) / b if b else 0.0)
    count = len(errors["energy"])
    print(f"1. model (expectation) vs simulator, unstructured sparsity, {count} random perfect-factorization cases "
          "(density 0.1-0.75, half with zero-skipping MACs):")
    print(f"   {'quantity':22s} {'median':>8s} {'p10':>8s} {'p90':>8s} {'min':>8s} {'max':>8s}  relative error")
    for name, values in errors.items():
        v = np.array(values) * 100
        print(f"   {name:22s} " + " ".join(f"{x:+7.2f}%" for x in (np.median(v), *np.percentile(v, [10, 90]),
                                                                      v.min(), v.max())))


def report_balance(label: str, mask: np.ndarray, tile: tuple[int, ...], split_axis: int) -> None:
    halves = tile_halves(mask, tile, split_axis)
    before, after = balance(halves, ROWS)
    _, after_layer = balance(halves, ROWS, scope="layer")
    base = imbalance(before)  # every figure against the same ideal: the original waves perfectly balanced
    print(f"   {label:34s} density {mask.mean():.3f}, {len(halves):4d} tiles: overhead "
          f"{base.overhead * 100:6.1f}% -> {(imbalance(after).slowest / base.mean - 1) * 100:5.1f}% per wave, "
          f"{(imbalance(after_layer).slowest / base.mean - 1) * 100:5.1f}% layer-wide")


def train_mlp(seed: int = 0) -> list[np.ndarray]:
    """A 256-128-64-10 ReLU MLP trained with SGD + momentum on synthetic 16x16 'images' (one blurred blob
    per class at a class-specific place, plus noise and a random shift): real trained weights."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:16, 0:16]
    centres = rng.uniform(3, 13, size=(10, 2))
    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, 10, n)
        shift = rng.normal(0, 0.7, size=(n, 2))
        cy, cx = (centres[y] + shift).T
        img = np.exp(-((yy[None] - cy[:, None, None]) ** 2 + (xx[None] - cx[:, None, None]) ** 2) / 6.0)
        return (img + rng.normal(0, 0.15, img.shape)).reshape(n, 256), y
    sizes = [256, 128, 64, 10]
    weights = [rng.normal(0, np.sqrt(2 / a), size=(b, a)) for a, b in zip(sizes, sizes[1:])]
    momentum = [np.zeros_like(w) for w in weights]
    x_all, y_all = draw(6000)
    masks = [np.ones_like(w) for w in weights]

    def epochs(count: int) -> None:
        for _ in range(count):
            for i in range(0, len(x_all), 64):
                step(x_all[i:i + 64], y_all[i:i + 64])

    def step(x: np.ndarray, y: np.ndarray) -> None:
        acts = [x]
        for k, w in enumerate(weights):
            z = acts[-1] @ w.T
            acts.append(np.maximum(z, 0) if k < len(weights) - 1 else z)
        p = np.exp(acts[-1] - acts[-1].max(1, keepdims=True))
        grad = p / p.sum(1, keepdims=True)
        grad[np.arange(len(y)), y] -= 1
        grad /= len(y)
        for k in range(len(weights) - 1, -1, -1):
            g_w = grad.T @ acts[k]
            grad = (grad @ weights[k]) * (acts[k] > 0)
            momentum[k] = 0.9 * momentum[k] - 0.05 * g_w
            weights[k] += momentum[k]
            weights[k] *= masks[k]  # pruned weights stay zero while fine-tuning

    epochs(20)
    x_test, y_test = draw(2000)
    def accuracy(ws: list[np.ndarray]) -> float:
        a = x_test
        for k, w in enumerate(ws):
            a = a @ w.T
            a = np.maximum(a, 0) if k < len(ws) - 1 else a
        return float((a.argmax(1) == y_test).mean())
    dense_accuracy = accuracy(weights)
    masks[:] = [(np.abs(w) >= np.quantile(np.abs(w), 0.9)).astype(float) for w in weights]
    for w, m in zip(weights, masks):
        w *= m
    pruned_accuracy = accuracy(weights)
    epochs(5)
    print(f"   MLP 256-128-64-10 trained on synthetic blobs: test accuracy {dense_accuracy:.3f} dense, "
          f"{pruned_accuracy:.3f} after 90% magnitude pruning per layer, {accuracy(weights):.3f} after 5 epochs of "
          "masked fine-tuning")
    return weights


def load_balancing() -> None:
    print(f"2. load balancing (RTML 3.2.11) on {ROWS} SIMD rows: overhead = sum over waves of the slowest row's "
          "non-zeros / the mean - 1")
    rng = np.random.default_rng(7)
    for spread in (2.0, 3.0, 5.0):
        mask = uneven_pattern((256, 128, 3, 3), (8, 32, 3, 3), 0.1, spread, rng)
        report_balance(f"synthetic conv, tile spread {spread:g}x", mask, (8, 32, 3, 3), split_axis=1)
    mask = rng.random((256, 128, 3, 3)) < 0.1
    report_balance("synthetic conv, uniform random", mask, (8, 32, 3, 3), split_axis=1)
    for k, w in enumerate(train_mlp()):
        tile = (8, 32) if w.shape[0] >= 64 else (2, 16)
        report_balance(f"pruned MLP layer {k + 1} {w.shape}", w != 0, tile, split_axis=1)


if __name__ == "__main__":
    model_error()
    load_balancing()
