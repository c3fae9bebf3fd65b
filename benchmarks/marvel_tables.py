"""Marvel (arXiv 2002.07752) Table 3 (paper vs ours), the DB model vs the core's exact DRAM bursts, and Fig. 6/7.

    python benchmarks/marvel_tables.py [--arch marvel_platform1]

Table 3: each layer's published level-3 tile and layout beside ours (DbSettings.table3(): stride
ignored, outputs counted twice, R and S whole, 2x-buffered 108 KB L2, 64 B blocks); "co-opt" says
whether the published entry fits and has exactly our least DMC, with residual adds modelled as
depthwise (dw) or as a K = 1 reduction (red). docs/marvel.md explains every setting.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dnnmap.arch.spec import load_arch
from dnnmap.search.marvel.crosscheck import crosscheck
from dnnmap.search.marvel.db_model import DbSettings
from dnnmap.search.marvel.offchip import OffchipResult, offchip_search, tile_cost
from dnnmap.search.marvel.table3 import MARVEL_LETTERS, TABLE3, Table3Row, paper_tile, table3_op
from dnnmap.search.marvel.uniform import PAPER_UNIFORM, uniform_layout_study


def marvel_tile(res: OffchipResult) -> tuple[int, ...]:
    """Our IR tile in Table 3's letters (K, C, R, S, P width, Q height); a depthwise channel tile is C."""
    t = dict(zip(res.op.dim_names, res.tile))
    k, c = (1, t["G"]) if res.op.bound("G") > 1 else (t["K"], t["C"])
    return k, c, t["R"], t["S"], t["Q"], t["P"]


def co_optimal(r: Table3Row, radd: str, arch) -> tuple[bool, OffchipResult]:
    op = table3_op(r, radd)
    best = offchip_search(op, arch, DbSettings.table3())
    dmc, fits = tile_cost(op, arch, paper_tile(r, op), r.layout, DbSettings.table3())
    return fits and dmc == best.dmc, best


def table3(arch) -> list[OffchipResult]:
    print("Table 3 (level-3 tiles K,C,R,S,P,Q and innermost W/I/O): paper vs ours")
    print(f"{'':4} {'paper tile':>24} {'lay':>6} | {'our tile':>24} {'lay':>6} {'DRAM order':>11} {'ties':>4} "
          f"{'co-opt dw':>9} {'red':>4}")
    results, hits = [], {"depthwise": 0, "reduction": 0}
    for r in TABLE3:
        ok_dw, res = co_optimal(r, "depthwise", arch)
        ok_red, _ = co_optimal(r, "reduction", arch)
        hits["depthwise"] += ok_dw
        hits["reduction"] += ok_red
        results.append(res)
        names = {"G": "C", "P": "Q", "Q": "P"} if res.op.bound("G") > 1 else {"P": "Q", "Q": "P"}
        order = " ".join(names.get(d, d) for d in res.order) or "-"
        print(f"{r.id:4} {','.join(map(str, r.tiles)):>24} {r.layout:>6} | "
              f"{','.join(map(str, marvel_tile(res))):>24} {res.layout:>6} {order:>11} {res.ties:>4} "
              f"{'yes' if ok_dw else 'NO':>9} {'yes' if ok_red else 'NO':>4}")
    print(f"co-optimal: {hits['depthwise']}/15 with residual adds as depthwise, {hits['reduction']}/15 as a K=1 "
          "reduction (order: Marvel letters, outermost first)\n")
    return results


def db_vs_core(arch) -> None:
    print("DB blocks vs the core's exact DRAM bursts for our tiles and layouts (layers taken with stride 1, "
          "what DB sees)")
    print(f"{'':4} {'compulsory':>10} {'core':>9} {'DB':>9} {'DB/core':>7}  per tensor words core/DB (W, I, O)")
    ratios = []
    for r in TABLE3:
        res = offchip_search(table3_op(r, stride=False), arch, DbSettings.table3())
        c = crosscheck(res, arch)
        ratios.append(c.ratio)
        per = "  ".join(f"{t} {c.core_words[t] / c.db_words[t]:.2f}" for t in ("W", "I", "O"))
        print(f"{r.id:4} {c.compulsory:>10,} {c.core_bursts:>9,} {c.db_blocks:>9,} {c.ratio:>7.2f}  {per}")
    print(f"DB / core: geometric mean {np.exp(np.mean(np.log(ratios))):.2f}, range {min(ratios):.2f}-{max(ratios):.2f}")
    for rid in ("L6", "L14"):
        r = next(x for x in TABLE3 if x.id == rid)
        res = offchip_search(table3_op(r), arch, DbSettings(stride="real"))
        c = crosscheck(res, arch)
        print(f"{rid} with its stride 2 (DbSettings(stride='real'), no bound proven): compulsory "
              f"{c.compulsory:,}, core {c.core_bursts:,}, DB {c.db_blocks:,} (DB/core {c.ratio:.2f})")
    print()


def fig7(results: list[OffchipResult]) -> None:
    st = uniform_layout_study(results)
    total, mean = st.ratio_of(PAPER_UNIFORM)
    print("Fig. 7 uniform layout: total DB blocks of the 15 layers under one layout / under each layer's best")
    print(f"paper's uniform {PAPER_UNIFORM}: {total:.3f} (paper: within 1.05); per-layer mean {mean:.3f}")
    order = np.argsort(st.total_ratio)
    print("best five: " + ", ".join(f"{st.labels[i]} {st.total_ratio[i]:.3f}" for i in order[:5])
          + f"; worst {st.labels[order[-1]]} {st.total_ratio[order[-1]]:.2f}")
    per = st.cost[:, st.labels.index(PAPER_UNIFORM)] / st.best
    print("per layer under " + PAPER_UNIFORM + ": " + " ".join(f"{r.id} {x:.2f}" for r, x in zip(TABLE3, per)))
    spread = st.cost.max(axis=1) / st.best
    print("Fig. 6 worst / best layout per layer: " + " ".join(f"{r.id} {x:.1f}" for r, x in zip(TABLE3, spread)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="marvel_platform1")
    args = ap.parse_args()
    arch = load_arch(args.arch)
    t0 = time.perf_counter()
    results = table3(arch)
    db_vs_core(arch)
    fig7(results)
    print(f"\n({time.perf_counter() - t0:.1f} s; letters {','.join(MARVEL_LETTERS)}: P width, Q height)")


if __name__ == "__main__":
    main()
