"""The larger hostile-input run (issue 8): seeded mutations of every file kind and option.

Run: ``python benchmarks/fuzz_inputs.py [--cases N] [--seed S]`` (default 300 cases per kind,
~2,400 inputs, a few minutes). The default test suite runs the same generators with 30 cases per
kind (tests/robustness/test_fuzz_inputs.py). Prints, per kind, the inputs tried and their exit codes,
the slowest refusal, and every broken invariant (traceback, hang, NumPy warning, partial output,
silently coerced value, illegal accepted mapping); exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # this checkout's dnnmap, not an installed one
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "robustness"))  # the shared generators
from fuzz_cases import KINDS, fuzz, make_bases  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300, help="cases per kind")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generators (the test suite uses 0)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds: " + ", ".join(KINDS))
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    with tempfile.TemporaryDirectory(prefix="dnnmap-fuzz-") as tmp:
        bases = make_bases(Path(tmp))
        start = time.perf_counter()
        tally = fuzz(bases, {k: args.cases for k in kinds}, seed=args.seed)
        seconds = time.perf_counter() - start
    print(f"{sum(tally.tried.values())} inputs in {seconds:.0f} s (seed {args.seed}); "
          f"slowest refusal {tally.slowest_rejection:.2f} s")
    for kind in kinds:
        codes = ", ".join(f"exit {c}: {n}" for (k, c), n in sorted(tally.codes.items()) if k == kind)
        print(f"  {kind:13s} {tally.tried[kind]:5d} inputs  ({codes})")
    for o in tally.problems:
        print(f"PROBLEM {o.kind}: dnnmap {' '.join(o.args)}\n  -> {o.problem}\n  {o.message[:200]}")
    print(f"{len(tally.problems)} broken invariants")
    return 1 if tally.problems else 0


if __name__ == "__main__":
    sys.exit(main())
