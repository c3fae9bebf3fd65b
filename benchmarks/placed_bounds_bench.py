"""The certified-optimal mapper over the per-tensor placement space: nodes and seconds to proof, before and after.

Run: ``python benchmarks/placed_bounds_bench.py [--before REV] [--budget-seconds 300] [--cases pw,q,...]
[--objectives energy,edp]`` from the repository root.

Cases (the architecture of the side-by-side comparison with AccelForge, ``eyeriss`` with hop energy 0,
``tests/support/archs.py``): ``pw`` the 1x1 convolution K=256 C=128 P=Q=14 and ``q`` BERT-base's query projection
(``ops.matmul("q", 128, 768, 768)``), each with placement and both-axis unrolling on the global buffer, and
ResNet-18 layers (``layer2.0.downsample.0``, ``layer3.0.conv1``, ``layer4.0.conv2``, ``fc``) with placement alone.
Each case runs in its own process, on this checkout and, with ``--before REV``, on the code of git revision
``REV`` (exported to a temporary directory), one after the other, so both share the machine's load; seconds on
a shared 2-core machine are noisy, nodes are not. Printed per case: proven or the gap at the budget, nodes,
seconds, and the optimum.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("pw", "q", "layer2.0.downsample.0", "layer3.0.conv1", "layer4.0.conv2", "fc")

ONE = """
import json, sys, time
sys.path.insert(0, {support!r})
from archs import eyeriss_without_hops
from dnnmap.search.optimal import optimal_search
from dnnmap.workload import ops, zoo
case, objective, budget = {case!r}, {objective!r}, {budget!r}
arch = eyeriss_without_hops()
if case in ("pw", "q"):
    op = ops.conv2d("pw", 128, 256, (14, 14), 1, 1, 0, 1, 1) if case == "pw" else ops.matmul("q", 128, 768, 768)
    both = ["GLB"]
else:
    op, both = next(layer.op for layer in zoo.get("resnet18").layers if layer.name == case), []
c = optimal_search(op, arch, objective, budget_seconds=budget, placement=True, both_axes=both).certificate
print(json.dumps({{"proven": c.proven, "gap": c.gap, "nodes": c.nodes, "seconds": c.seconds,
                  "incumbent": c.incumbent}}))
"""


def run(code_root: Path, case: str, objective: str, budget: float) -> dict:
    """One case in a fresh process importing ``dnnmap`` from ``code_root``."""
    script = ONE.format(support=str(ROOT / "tests" / "support"), case=case, objective=objective, budget=budget)
    env = dict(os.environ, PYTHONPATH=str(code_root))  # run from code_root: ``-c`` puts the working directory first
    out = subprocess.run([sys.executable, "-c", script], env=env, cwd=code_root, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=None, help="git revision to compare with (default: none)")
    ap.add_argument("--budget-seconds", type=float, default=300.0)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--objectives", default="energy,edp")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        roots = [("after", ROOT)]
        if args.before:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "dnnmap"], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            roots.insert(0, ("before", Path(tmp)))
        print("| case | objective | code | proven | gap | nodes | s | optimum |\n|---|---|---|---|---|---|---|---|",
              flush=True)
        for case in args.cases.split(","):
            for objective in args.objectives.split(","):
                for name, root in roots:
                    r = run(root, case, objective, args.budget_seconds)
                    print(f"| {case} | {objective} | {name} | {'yes' if r['proven'] else 'no'} | {r['gap']:.2%} | "
                          f"{r['nodes']:,} | {r['seconds']:.1f} | {r['incumbent']:.6g} |", flush=True)


if __name__ == "__main__":
    main()
