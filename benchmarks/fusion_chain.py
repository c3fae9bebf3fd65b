"""Three chained 1x1 convolutions fused on the Eyeriss of the AccelForge comparison (issue 22).

Run: ``python benchmarks/fusion_chain.py``. Writes the network (three 64 -> 64 channel 1x1 convolutions on a
56x56 map, AccelForge's ``mmchain_N3_C64_H56``: matmuls with M = 3136) and the architecture (the ``eyeriss``
preset with free fan-out hops, the spec written for both tools) to a temporary folder, and runs
``dnnmap map chain.yaml --arch eyeriss_shared.yaml --fuse auto --max-fused 3 --objective energy --json``
twice in fresh interpreters, the second with the cost kernel cached (as ``benchmarks/first_run.py``).
Prints the fused energy (MAC units) and DRAM bytes of the schedule, each group's least possible DRAM bytes,
and the CPU seconds of each run beside AccelForge's figures measured on the same inputs (FFM, the issue's
numbers: 285.7e6, 0.83 MB, 68.5 s CPU) and the goal (energy at or below AccelForge's at the same DRAM
traffic in a tenth of its CPU time)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import yaml
from first_run import timed_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dnnmap.arch.spec import ArchSpec, load_arch  # noqa: E402
from dnnmap.workload.builder import NetworkBuilder  # noqa: E402
from dnnmap.workload.importers.netfile import save_network  # noqa: E402

ACCELFORGE = {"energy": 285.7e6, "dram_mb": 0.83, "cpu_seconds": 68.5}


def chain_files(folder: Path) -> tuple[Path, Path]:
    """The network and architecture files of the comparison, written into ``folder``."""
    b = NetworkBuilder("mmchain_N3_C64_H56", (1, 64, 56, 56))
    for i in range(3):
        b.conv(f"conv{i}", 64, 1, fused=())
    net = save_network(b.build(), folder / "chain.yaml")
    data = load_arch("eyeriss").model_dump(mode="json", exclude_defaults=True)
    data["name"] = "eyeriss_shared"
    data["levels"][1]["fanout"]["hop_energy"] = 0.0
    arch = folder / "eyeriss_shared.yaml"
    arch.write_text(yaml.safe_dump(ArchSpec.model_validate(data).model_dump(mode="json", exclude_defaults=True),
                                   sort_keys=False))
    return net, arch


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="dnnmap-chain-") as tmp:
        folder = Path(tmp)
        net, arch = chain_files(folder)
        out = folder / "run.json"
        command = ["map", str(net), "--arch", str(arch), "--fuse", "auto", "--max-fused", "3", "--objective",
                   "energy", "--json", str(out)]
        cache = folder / "numba"
        cpu = {label: timed_run(command, cache) for label in ("cold", "warm")}
        run = json.loads(out.read_text())
    totals, fusion = run["totals"], run["fusion"]
    shown = [Path(a).name if a.startswith(tmp) else a for a in command[:-2]]
    print(f"dnnmap {' '.join(shown)}")
    print(f"  fused energy {totals['energy']:.4e} MAC units, DRAM {totals['dram_bytes']:,.0f} bytes "
          f"({totals['dram_bytes'] / 1e6:.2f} MB); unfused {fusion['unfused']['energy']:.4e}")
    for g in fusion["groups"]:
        if g["mode"] != "single":
            print(f"  group {' + '.join(g['layers'])} ({g['mode']}, {' '.join(g['shares'])}): "
                  f"{g['cost']['energy']:.4e}, DRAM {g['cost']['dram_bytes']:,.0f} bytes, "
                  f"least possible {g['dram_bytes_least']:,.0f}")
    for label, (seconds, wall) in cpu.items():
        print(f"  {label} kernel cache: {seconds:.1f} s CPU, {wall:.1f} s wall")
    af = ACCELFORGE
    print(f"AccelForge (FFM): {af['energy']:.4e}, DRAM {af['dram_mb']} MB, {af['cpu_seconds']} s CPU")
    met = totals["energy"] <= af["energy"] and round(totals["dram_bytes"] / 1e6, 2) <= af["dram_mb"]
    fast = cpu["warm"][0] < af["cpu_seconds"] / 10
    print(f"goal: energy at or below AccelForge's at the same DRAM traffic: {'met' if met else 'not met'}; "
          f"under a tenth of its CPU ({af['cpu_seconds'] / 10:.2f} s) with the kernel cached: "
          f"{'met' if fast else 'not met'}")


if __name__ == "__main__":
    main()
