"""Run every benchmark script in this folder and print their figures.

Usage: ``python benchmarks/run_all.py`` (add ``--slow`` to also run the slow pytest
paper-reproduction tests, ``pytest -m slow``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    here = Path(__file__).parent
    failures = 0
    for script in sorted(here.glob("*.py")):
        if script.name in ("run_all.py", "golden_runs.py"):  # golden_runs records and compares; no figures
            continue
        print(f"=== {script.name}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script)])
        print(f"=== {script.name}: exit {rc}, {time.perf_counter() - t0:.1f} s\n", flush=True)
        failures += rc != 0
    if "--slow" in sys.argv:
        failures += subprocess.call([sys.executable, "-m", "pytest", "-q", "-m", "slow"]) != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
