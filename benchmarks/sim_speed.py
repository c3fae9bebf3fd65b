"""Speed of the reference simulator: lane-steps per second on sample layers and mappings.

Run: ``python benchmarks/sim_speed.py``. Prints, per sample, the lane-steps (temporal steps x
lanes), (level, tensor) pairs tracked, and the time of ``simulate`` with and without the output
check (best of 3). The last two samples carry random architecture options (docs/cost-model.md
2b: operand registers, no halo reuse, the identical multicast rule, ...).

The section 2b bookkeeping (copies per level, accumulate reads) made ``simulate`` 10-18% slower
than the section-2-only version, measured side by side on ``sample_conv`` (min and median of 15
interleaved runs): ~1.2 M lane-steps/s where that one ran ~1.4 M on an idle machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from dnnmap.arch.spec import ArchSpec, Fanout, Level
from dnnmap.mapping.mapping import LevelMapping, Mapping
from dnnmap.sim import simulate
from dnnmap.workload import ops

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "support"))  # the test-case generator
from random_cases import random_case  # noqa: E402


def sample_conv() -> tuple:
    """3x3 conv, C 8 -> K 16 on a 10x10 input (8x8 output): 73,728 MACs on a 4x4 array, 3 levels."""
    op = ops.conv2d("conv3x3", 8, 16, 10, 3)
    arch = ArchSpec(name="bench", clock_mhz=200.0, levels=(
        Level(name="RF"),
        Level(name="GLB", keeps=("input", "output"), fanout=Fanout(shape=(4, 4))),
        Level(name="DRAM"),
    ))
    mapping = Mapping(levels=(
        LevelMapping(temporal=(("S", 3), ("C", 2)), order=("C", "S")),
        LevelMapping(temporal=(("R", 3), ("Q", 8), ("C", 4)), order=("C", "R", "Q"),
                     spatial=(("K", 4), ("P", 4)), spatial_axis=(("K", 0), ("P", 1))),
        LevelMapping(temporal=(("K", 4), ("P", 2)), order=("K", "P")),
    ))
    return op, arch, mapping


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    samples = [sample_conv()]
    rng = np.random.default_rng(0)
    samples += [random_case(rng) for _ in range(3)]
    samples += [random_case(rng, options=True) for _ in range(2)]
    for op, arch, m in samples:
        r = simulate(op, arch, m)
        lane_steps = r.temporal_steps * r.lanes
        pairs = sum(1 for c in r.counts.values() if c.read_words or c.write_words)
        full = best_of(lambda: simulate(op, arch, m))
        counts_only = best_of(lambda: simulate(op, arch, m, compute=False))
        print(f"{op.name:>10} {op.kind:>9} lane-steps {lane_steps:>7} levels {len(arch.levels)} pairs {pairs:>2}: "
              f"{full * 1e3:7.1f} ms ({lane_steps / full:,.0f} lane-steps/s), counts only {counts_only * 1e3:7.1f} ms, "
              f"output ok {r.output_matches}")


if __name__ == "__main__":
    main()
