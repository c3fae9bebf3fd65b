"""TSO Table I (and Figs. 8, 9, 12, 13) on the zoo: `python benchmarks/tso_table.py [--alpha literal|per_tlt|tlt_rounds] [--nominal] [--no-trace]`.

Per model: conv-layer time (us) of TSO-burst, TSO-noburst and the fixed slicings/dataflows, all
timed by the burst model (docs/tso.md "Table I"), the speed-up of TSO-burst over each (paper beside),
the LOAD+STORE share of the TSO-noburst total for both schedules (Fig. 9), every column's schedules
timed on the DDR3-2133 address-trace simulator (the board: estimate and trace side by side), and the
core cost model's latency of the TSO-burst and TSO-noburst schedules. Fixed-baseline columns are
documented under ``--alpha per_tlt`` (the default; docs/tso.md). Constants: the DRAM bandwidth and CAS fitted to
TSO Fig. 1 (2 GB/s, 49.7 ns) unless --nominal (the nmp preset's 17 GB/s, 14 ns).
"""

from __future__ import annotations

import argparse
import time

from dnnmap.arch.spec import load_arch
from dnnmap.arch.variants import with_dram_constants
from dnnmap.search.tso.machine import FIG1_BANDWIDTH_GBPS, FIG1_CAS_NS, TsoMachine, TsoOptions
from dnnmap.studies.tso.table import COLUMNS, MODELS, PAPER, PAPER_NOBURST_LOADSTORE, model_row
from dnnmap.workload import zoo

HEAD = {"burst": "TSO-burst", "noburst": "noburst"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alpha", choices=("literal", "per_tlt", "tlt_rounds"), default="per_tlt",
                    help="access counts (TsoOptions); per_tlt: the documented setting of Table I")
    ap.add_argument("--edges", choices=("exact", "ceil"), default="exact")
    ap.add_argument("--nominal", action="store_true", help="the nmp preset's 17 GB/s and 14 ns CAS")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-core", action="store_true", help="skip the core cost model's prices")
    ap.add_argument("--no-trace", action="store_true", help="skip timing the schedules on the DDR3 trace")
    args = ap.parse_args()
    arch = load_arch("nmp")
    if not args.nominal:
        arch = with_dram_constants(arch, FIG1_BANDWIDTH_GBPS, FIG1_CAS_NS)
    machine = TsoMachine.from_arch(arch)
    opts = TsoOptions(alpha=args.alpha, edges=args.edges)
    print(f"TSO Table I on nmp: BW {machine.bw_bytes_per_s / 1e9:g} GB/s, CAS {machine.cas_s * 1e9:g} ns, "
          f"BURST {machine.burst_bytes} B; options {opts}")
    print("times in us (conv, pointwise, depthwise, FC layers); 'paper' rows are TSO Table I; speed-up = "
          "time / TSO-burst - 1")
    cols = "".join(f"{HEAD.get(c, c):>11s}" for c in COLUMNS)
    for label, name in MODELS:
        t0 = time.perf_counter()
        row = model_row(label, zoo.get(name), arch, machine, opts, core=not args.no_core, workers=args.workers,
                        trace=not args.no_trace)
        secs = time.perf_counter() - t0
        print(f"\n{label} ({name}, {row.layers} conv layers; searched in {secs:.1f} s)")
        print(f"  {'':14s}{cols}")
        print(f"  {'ours us':14s}" + "".join(f"{row.seconds[c] * 1e6:11.0f}" for c in COLUMNS))
        print(f"  {'paper us':14s}" + "".join(f"{v:11d}" for v in PAPER[label]))
        print(f"  {'ours speed-up':14s}" + "".join(f"{row.speedup(c):11.1%}" for c in COLUMNS))
        paper = PAPER[label]
        print(f"  {'paper':14s}" + "".join(f"{v / paper[0] - 1:11.1%}" for v in paper))
        if row.trace_seconds:
            print(f"  {'trace us':14s}" + "".join(f"{row.trace_seconds[c] * 1e6:11.0f}" for c in COLUMNS))
            print(f"  {'trace speed-up':14s}" + "".join(f"{row.trace_speedup(c):11.1%}" for c in COLUMNS))
        nb = row.seconds["noburst"]
        quoted = PAPER_NOBURST_LOADSTORE.get(label)
        print(f"  LOAD+STORE share of the TSO-noburst total: noburst {row.load_store['noburst'] / nb:.1%}"
              + (f" (paper {quoted:.2f}%)" if quoted else "")
              + f", burst {row.load_store['burst'] / nb:.1%}; pool/add/concat {row.other_seconds * 1e6:.0f} us")
        if not args.no_core:
            print(f"  core cost model, same schedules: TSO-burst {row.core_seconds['burst'] * 1e6:.0f} us, "
                  f"TSO-noburst {row.core_seconds['noburst'] * 1e6:.0f} us "
                  f"(noburst/burst - 1 = {row.core_seconds['noburst'] / row.core_seconds['burst'] - 1:.1%})")


if __name__ == "__main__":
    main()
