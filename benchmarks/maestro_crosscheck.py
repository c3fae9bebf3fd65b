"""MAESTRO cross-check of Marvel's baselines: dnnmap's full-strength RS-, DLA- and ShiDianNao-like mappings
of the 15 Marvel layers on both platforms beside MAESTRO's own fixed dataflows (rs.m, dla.m, shi).

    python benchmarks/maestro_crosscheck.py                     # the stored MAESTRO figures
    python benchmarks/maestro_crosscheck.py --maestro ./maestro  # run a MAESTRO binary and store its figures

MAESTRO (maestro-project/maestro, built from source; not part of dnnmap) prices each dataflow's
published directives on the layer (its fixed tile sizes: RS 16 filters per PE, DLA 64 channels per
cluster, ShiDianNao 8 output columns per cluster) with the platform's 168 or 1024 PEs, 512 B L1,
108 KB L2 and 12 or 128 B/cycle NoC. Its runtime and its total energy (L1, L2 and MACs in MAC units;
MAESTRO has no DRAM energy) are stored in ``benchmarks/data/maestro_marvel.csv``. dnnmap's figures are
the baseline's latency-optimal cycles and its energy-optimal mapping's energy without DRAM's
(``compare.compare_layer``). Spearman is over all 90 cases; ratios are dnnmap / MAESTRO.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import tempfile

import numpy as np

from dnnmap.arch.spec import load_arch
from dnnmap.search.marvel.dataflows import BASELINES
from dnnmap.studies.marvel.compare import LayerComparison, compare_layer
from dnnmap.studies.marvel.table3 import TABLE3, table3_op

STORE = os.path.join(os.path.dirname(__file__), "data", "maestro_marvel.csv")
PLATFORMS = {"marvel_platform1": (168, 12), "marvel_platform2": (1024, 128)}


def maestro_dataflow(name: str, r: int, s: int) -> str:
    """MAESTRO's published directives for one baseline (data/dataflow/rs.m, dla.m; the shi mappings)."""
    if name == "RS-like":
        return ("SpatialMap(1,1) Y'; TemporalMap(1,1) X'; TemporalMap(1,1) C; TemporalMap(16,16) K; "
                "TemporalMap(Sz(R),Sz(R)) R; TemporalMap(Sz(S),Sz(S)) S; Cluster(Sz(R),P); SpatialMap(1,1) Y; "
                "SpatialMap(1,1) R; TemporalMap(Sz(S),Sz(S)) S;")
    if name == "DLA-like":
        return ("SpatialMap(1,1) K; TemporalMap(64,64) C; TemporalMap(Sz(R),Sz(R)) R; TemporalMap(Sz(S),Sz(S)) S; "
                "TemporalMap(Sz(R),1) Y; TemporalMap(Sz(S),1) X; Cluster(64,P); SpatialMap(1,1) C; "
                "TemporalMap(Sz(R),1) Y; TemporalMap(Sz(S),1) X; TemporalMap(Sz(R),Sz(R)) R; "
                "TemporalMap(Sz(S),Sz(S)) S;")
    return (f"TemporalMap(1,1) K; TemporalMap(1,1) C; SpatialMap({r},1) Y; TemporalMap({s + 7},8) X; Cluster(8,P); "
            f"SpatialMap({s},1) X; TemporalMap(Sz(R),Sz(R)) R; TemporalMap(Sz(S),Sz(S)) S;")


def layer_text(rid: str, df: str) -> str:
    """One Marvel layer as a MAESTRO layer (depthwise and residual adds as DSCONV, Marvel's reading)."""
    op = table3_op(next(x for x in TABLE3 if x.id == rid))
    b = op.bounds
    inp = next(t for t in op.tensors if t.role == "input")
    axes = {a.name: a for a in inp.axes}
    y, x = axes["H"].extent(b), axes["W"].extent(b)
    dw = b.get("G", 1) > 1
    k, c = (1, b["G"]) if dw else (b["K"], b["C"])
    stride = axes["H"].coef("P")
    directives = maestro_dataflow(df, b["R"], b["S"])
    if dw and df == "DLA-like":  # no K to split: channels across all PEs, as MAESTRO's own kcp_ws DSCONV layers
        directives = ("SpatialMap(1,1) C; TemporalMap(Sz(R),1) Y; TemporalMap(Sz(S),1) X; TemporalMap(Sz(R),Sz(R)) R; "
                      "TemporalMap(Sz(S),Sz(S)) S;")
    elif dw:  # MAESTRO's DSCONV has no K dimension: its directives on K are dropped (as in its own DSCONV mappings)
        directives = " ".join(d + ";" for d in directives.split(";") if d.strip() and not d.strip().endswith(" K"))
    return (f"Network m {{\nLayer {rid} {{\nType: {'DSCONV' if dw else 'CONV'}\nStride {{ X: {stride}, Y: {stride} }}\n"
            f"Dimensions {{ K: {k}, C: {c}, R: {b['R']}, S: {b['S']}, Y: {y}, X: {x} }}\n"
            f"Dataflow {{ {directives} }}\n}}\n}}\n")


def run_maestro(binary: str) -> list[dict[str, str]]:
    """Every (platform, layer, baseline) through MAESTRO: its runtime and total (on-chip) energy."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for platform, (pes, bw) in PLATFORMS.items():
            hw = os.path.join(tmp, "hw.m")
            with open(hw, "w") as f:
                f.write(f"num_pes: {pes}\nl1_size_cstr: 512\nl2_size_cstr: 110592\nnoc_bw_cstr: {bw}\n"
                        "offchip_bw_cstr: 64\n")
            for r in TABLE3:
                for df in BASELINES:
                    path = os.path.join(tmp, "layer.m")
                    with open(path, "w") as f:
                        f.write(layer_text(r.id, df.name))
                    out = subprocess.run([binary, f"--HW_file={hw}", f"--Mapping_file={path}", "--print_res=true",
                                          "--print_res_csv_file=false", "--print_log_file=false"],
                                         capture_output=True, text=True, cwd=tmp, timeout=120, check=False).stdout
                    cyc = re.search(r"^Runtime: (\S+) cycles", out, re.MULTILINE)
                    en = re.search(r"^Total energy consumption: (\S+) X MAC energy", out, re.MULTILINE)
                    pes_used = re.search(r"^Average number of utilized PEs: (\S+)", out, re.MULTILINE)
                    rows.append({"platform": platform, "layer": r.id, "dataflow": df.name,
                                 "cycles": cyc.group(1) if cyc else "", "energy": en.group(1) if en else "",
                                 "pes": pes_used.group(1) if pes_used else ""})
    with open(STORE, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def ranks(v: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (for Spearman)."""
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(len(v), dtype=float)
    for val in np.unique(v):
        tie = v == val
        r[tie] = r[tie].mean()
    return r


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def stored_rows() -> list[dict[str, str]]:
    """MAESTRO's figures as stored by the last ``--maestro`` run."""
    with open(STORE) as f:
        return list(csv.DictReader(f))


def maestro_table(rows: list[dict[str, str]], compared: dict[tuple[str, str], LayerComparison] | None = None) -> None:
    """Print every (platform, layer, baseline) case beside MAESTRO's and the agreement summary; ``compared``:
    comparisons already computed (platform name, layer id) -> :func:`compare_layer`, the rest are computed."""
    compared = compared or {}
    ref = {(x["platform"], x["layer"], x["dataflow"]): x for x in rows}
    ours_c, ref_c, ours_e, ref_e = [], [], [], []
    print("MAESTRO cross-check (benchmarks/data/maestro_marvel.csv; docs/marvel.md)")
    print("platform layer baseline        | dnnmap cycles   MAESTRO cycles  ratio | dnnmap on-chip E   MAESTRO E  ratio"
          " | dnnmap PEs MAESTRO PEs")
    for platform in PLATFORMS:
        arch = load_arch(platform)
        for r in TABLE3:
            c = compared.get((platform, r.id)) or compare_layer(table3_op(r), arch)
            for df in BASELINES:
                m = ref[(platform, r.id, df.name)]
                if not m["cycles"]:
                    print(f"{platform[-1]:>8} {r.id:5} {df.name:15} | MAESTRO refused the mapping")
                    continue
                mc, me = float(m["cycles"]), float(m["energy"])
                oc, oe = c.cycles[df.name], c.onchip_energy[df.name]
                ours_c.append(oc), ref_c.append(mc), ours_e.append(oe), ref_e.append(me)
                flag = " *" if max(oc / mc, mc / oc) > 2 or max(oe / me, me / oe) > 2 else ""
                print(f"{platform[-1]:>8} {r.id:5} {df.name:15} | {oc:>13,.0f} {mc:>16,.0f} {oc / mc:>6.2f} | "
                      f"{oe:>16.4g} {me:>11.4g} {oe / me:>6.2f} | {c.iterations / oc:>10.1f} {m['pes']:>11}{flag}")
    oc, mc, oe, me = map(np.array, (ours_c, ref_c, ours_e, ref_e))

    def within(a: np.ndarray, b: np.ndarray) -> int:
        return int((np.maximum(a / b, b / a) <= 2).sum())

    print(f"\n{len(oc)} cases: cycles Spearman {spearman(oc, mc):.3f}, median ratio {np.median(oc / mc):.2f}, "
          f"within 2x {within(oc, mc)}; on-chip energy Spearman {spearman(oe, me):.3f}, median ratio "
          f"{np.median(oe / me):.2f}, within 2x {within(oe, me)} (* = more than 2x apart; 'dnnmap PEs' is "
          f"iterations per cycle)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--maestro", help="a MAESTRO binary to run (else the stored figures)")
    args = ap.parse_args()
    maestro_table(run_maestro(args.maestro) if args.maestro else stored_rows())


if __name__ == "__main__":
    main()
