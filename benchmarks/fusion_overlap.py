"""The spatial pipeline's buffer: replayed peak occupancy against the bound, on the fusion proof cases.

For every map case of ``tests/fusion/test_proof.py`` (VGG16-E prefix, ResNet blocks, Inception modules) this runs
the literal executor once, then replays its steps on concurrent sub-arrays with 1, 2, the layer count and an
unbounded number of bottom tiles in flight, over the test's 12 draws of stage latencies (10^2 .. 10^6 cycles),
and prints a Markdown table: the sequential executor's peak beside Eq. 5 + 8, then per window the largest
replayed peak beside ``OverlapBuffer.words`` (docs/fusion.md, "The buffer of the overlap").

    python benchmarks/fusion_overlap.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "fusion"))  # the proof cases

from test_proof import CASES, _ids, _plan  # noqa: E402

from dnnmap.fusion.buffers import fusion_buffer, overlap_buffer  # noqa: E402
from dnnmap.fusion.execute import FusedExecutor, replay  # noqa: E402
from dnnmap.fusion.pipeline import pipeline  # noqa: E402
from dnnmap.fusion.proof import random_operands  # noqa: E402

DRAWS = 12


def main() -> None:
    print("| case | tiles | sequential peak / Eq. 5+8 | W = 1 | W = 2 | W = layers | unbounded |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        if case[0].name not in ("vgg16_e_prefix", "resnet_blocks", "inception_blocks"):
            continue
        net, names = case[:2]
        plan = _plan(case)
        executor = FusedExecutor(plan, *random_operands(net, plan.group))
        result = executor.run()
        bound = overlap_buffer(plan)
        rng = np.random.default_rng(len(names))
        position = {n: p for p, n in enumerate(names)}
        cells = {}
        for window in sorted({1, 2, len(names)}) + [None]:
            peak = 0
            for _ in range(DRAWS):
                zero = dict.fromkeys(names, 0.0)
                model = pipeline(plan, {n: float(10 ** rng.uniform(2, 6)) for n in names}, zero, zero, window=window)
                duration = {(s.tile, s.layer): float(model.duration[s.tile, position[s.layer]]) for s in result.steps}
                peak = max(peak, replay(result.steps, duration, window, executor.resident_weights).peak_words)
            cells[window] = f"{peak:,} / {bound.words(window or plan.n_tiles):,}"
        print(f"| {_ids(case)} | {plan.n_tiles} | {result.counts.peak_words:,} / {fusion_buffer(plan).total_words:,} "
              f"| {cells[1]} | {cells.get(2, cells[1])} | {cells[len(names)]} | {cells[None]} |")


if __name__ == "__main__":
    main()
