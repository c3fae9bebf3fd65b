"""Proofs of the optimal mapper over the placed space, this checkout against another revision, side by side.

Run from the repository root: ``PYTHONPATH=. python benchmarks/optimal_placement_bench.py [--compare REV]
[--budget-seconds 300] [--r18-budget-seconds 180] [--cases a,b] [--objectives energy,edp]``

Cases (docs/search.md "The optimal mapper with placement"): the issue's two layers (the 1x1 convolution K=256
C=128 P=Q=14 and BERT-base's query projection, 128x768 by 768x768) on ``eyeriss`` with hop energy 0, with
placement and both-axis unrolling on the global buffer's PE array; and ResNet-18 layers on ``eyeriss`` with
placement; each for the ``--objectives`` (energy and EDP). A case is named ``LAYER-OBJECTIVE`` (``pw-energy``,
``q_proj-edp``, ``layer4.0.conv2-energy``); ``--cases`` takes case or layer names. Every (case, code) runs in its own process (``PYTHONPATH`` the checkout, REV
exported with ``git archive`` into a temporary folder), the two codes one after the other per case, so both see
about the same load. Printed per run: proven or the gap at the budget, the objective, nodes bounded, wall and CPU
seconds. The machine is shared: compare nodes first, seconds as orders of magnitude.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, architecture, layer, placement, both-axes levels, objective)
LAYERS = [("pw", "nohop", ["GLB"]), ("q_proj", "nohop", ["GLB"])] + [
    (name, "eyeriss", []) for name in ("layer2.0.downsample.0", "layer3.0.conv1", "layer4.0.conv1", "layer4.0.conv2",
                                       "fc")]

WORKER = r"""
import json, sys, time
from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.search.optimal import optimal_search
from dnnmap.workload import ops, zoo
arch_name, layer, placement, both, objective, budget = json.loads(sys.argv[1])
data = load_arch("eyeriss").model_dump()
if arch_name == "nohop":  # the issue's shared architecture (tests/support/archs.py eyeriss_without_hops)
    data["levels"][1]["fanout"]["hop_energy"] = 0.0
arch = ArchSpec.model_validate(data)
if layer == "pw":
    op = ops.conv2d("pw", 128, 256, (14, 14), 1, 1, 0, 1, 1)
elif layer == "q_proj":
    op = ops.matmul("q", 128, 768, 768)
else:
    op = next(x.op for x in zoo.get("resnet18").layers if x.name == layer)
cpu = time.process_time()
r = optimal_search(op, arch, objective, budget_seconds=budget, placement=placement, both_axes=both)
c = r.certificate
print(json.dumps({"proven": c.proven, "value": c.incumbent, "gap": c.gap, "nodes": c.nodes, "s": c.seconds,
                  "cpu": time.process_time() - cpu}))
"""


def run(checkout: Path, case: tuple, budget: float) -> dict | str:
    _, arch, layer, placement, both, objective = case
    args = json.dumps([arch, layer, placement, both, objective, budget])
    done = subprocess.run([sys.executable, "-c", WORKER, args], cwd=checkout, env={"PYTHONPATH": str(checkout),
                          "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def cell(r: dict | str) -> str:
    if isinstance(r, str):
        return f"error: {r} | | | |"
    state = "proven" if r["proven"] else f"gap {r['gap']:.1%}"
    return f"{r['value']:,.0f} ({state}) | {r['nodes']:,} | {r['s']:.1f} | {r['cpu']:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", help="git revision to run beside this checkout (before)")
    parser.add_argument("--budget-seconds", type=float, default=300.0, help="per run, the issue's two layers")
    parser.add_argument("--r18-budget-seconds", type=float, default=180.0, help="per run, the ResNet-18 layers")
    parser.add_argument("--cases", help="comma-separated case or layer names (default: all)")
    parser.add_argument("--objectives", default="energy,edp")
    args = parser.parse_args()
    wanted = set(args.cases.split(",")) if args.cases else None
    cases = [(f"{layer}-{obj}", arch, layer, True, both, obj) for layer, arch, both in LAYERS
             for obj in args.objectives.split(",") if wanted is None or {layer, f"{layer}-{obj}"} & wanted]
    with tempfile.TemporaryDirectory() as tmp:
        codes = [("this checkout", ROOT)]
        if args.compare:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            codes.insert(0, (args.compare, Path(tmp)))
        print("| case | code | value (state) | nodes | wall s | CPU s |")
        print("|---|---|---|---|---|---|")
        for case in cases:
            budget = args.budget_seconds if case[1] == "nohop" else args.r18_budget_seconds
            for label, path in codes:
                print(f"| {case[0]} | {label} | {cell(run(path, case, budget))} |", flush=True)


if __name__ == "__main__":
    main()
