"""How fast ``dnnmap`` refuses bad input, and ``--help`` / ``--version`` answer (issue 25: under a second).

Run: ``python benchmarks/refusal_speed.py [--runs N]`` (default 5). Runs each representative refusal of
``tests/test_lazy_imports.py`` (unknown preset, bad workload spec, missing file, FIFO input, bad ``--budget``,
output equal to an input, unknown mapper, an option the mapper ignores) and the two quick answers in fresh
interpreters, after one unmeasured run, and prints per command the median and range of the wall and CPU seconds
(user + system of the child), then the medians over the refusals against the issue's goal (under a second). On a
shared, loaded machine the wall time is mostly waiting for a core: compare the CPU column."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from first_run import timed_run

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))  # the shared refusal cases
from test_lazy_imports import refusal_cases  # noqa: E402

GOAL_SECONDS = 1.0


def measure(args: list[str], exit_code: int, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``runs`` runs of ``dnnmap ARGS`` after one unmeasured run."""
    timed_run(args, exit_code=exit_code)
    times = [timed_run(args, exit_code=exit_code) for _ in range(runs)]
    return [wall for _, wall in times], [cpu for cpu, _ in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    medians, cpu_medians = [], []
    with tempfile.TemporaryDirectory(prefix="dnnmap-refusals-") as tmp:
        cases = {name: (args, 2) for name, (args, _) in refusal_cases(Path(tmp)).items()}
        cases |= {"--help": (["--help"], 0), "--version": (["--version"], 0)}
        print(f"{'command':28} {'wall s median (min-max)':>26} {'cpu s median':>13}")
        for name, (args, code) in cases.items():
            walls, cpus = measure(args, code, runs)
            if code == 2:
                medians.append(statistics.median(walls))
                cpu_medians.append(statistics.median(cpus))
            print(f"{name:28} {statistics.median(walls):>10.3f} ({min(walls):.3f}-{max(walls):.3f}) "
                  f"{statistics.median(cpus):>13.3f}")
    for label, values in (("wall", medians), ("CPU", cpu_medians)):
        overall = statistics.median(values)
        print(f"median refusal: {overall:.3f} s {label} (goal under {GOAL_SECONDS:g} s: "
              f"{'met' if overall < GOAL_SECONDS else 'not met'})")


if __name__ == "__main__":
    main()
