"""Marvel (arXiv 2002.07752): Table 3, the DB model vs the core's bursts, Fig. 6/7, Fig. 8, Fig. 9 and search cost.

    python benchmarks/marvel_tables.py [--arch marvel_platform1] [--quick]

Off-chip (platform-independent, ``--arch``): Table 3, DB vs core, Fig. 6/7. On-chip on both
platforms: Fig. 8 (the 15 layers: Marvel vs the RS-, DLA- and ShiDianNao-like baselines and the
roofline), the pruning switches (symmetry, prologue/epilogue), the best uniform dataflow, Fig. 9
(whole models), the MAESTRO cross-check of the baselines (``maestro_crosscheck.py``, from MAESTRO's
stored figures) and the search cost against the random and optimal mappers. ``--quick`` skips
Fig. 9, runs the switches and the search cost on two layers (L2, L9) with smaller budgets and
the uniform dataflow on platform 1 only; ``--sections`` picks parts (e.g. ``--sections fig8``).

Table 3: each layer's published level-3 tile and layout beside ours (DbSettings.table3(): stride
ignored, outputs counted twice, R and S whole, 2x-buffered 108 KB L2, 64 B blocks); "co-opt" says
whether the published entry fits and has exactly our least DMC, with residual adds modelled as
depthwise (dw) or as a K = 1 reduction (red). docs/marvel.md explains every setting.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dnnmap.arch.spec import ArchSpec, load_arch
from dnnmap.cost.model import CostModel
from dnnmap.studies.marvel.compare import MARVEL, compare_layer, compare_network, geomean, uniform_dataflow
from dnnmap.studies.marvel.crosscheck import crosscheck
from dnnmap.search.marvel.dataflows import BASELINES
from dnnmap.search.marvel.mapper import marvel_search
from dnnmap.search.marvel.onchip import MarvelOptions
from dnnmap.search.optimal import optimal_search
from dnnmap.search.marvel.db_model import DbSettings
from dnnmap.search.marvel.offchip import OffchipResult, offchip_search, tile_cost
from dnnmap.studies.marvel.table3 import MARVEL_LETTERS, TABLE3, Table3Row, paper_tile, table3_op
from dnnmap.studies.marvel.uniform import PAPER_UNIFORM, uniform_layout_study
from dnnmap.search.sampling import CandidateSampler
from dnnmap.search.space import MapSpace
from dnnmap.workload import zoo
from maestro_crosscheck import maestro_table, stored_rows


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


PLATFORMS = ("marvel_platform1", "marvel_platform2")
PAPER_FIG8 = (5.23, 1.12)  # geometric-mean throughput and energy gains over the baselines, 15 layers
PAPER_FIG9 = (3.43, 1 / (1 - 0.0919))  # whole models: 3.43x throughput, 9.19% lower energy
MODELS = ("vgg16", "alexnet", "resnet50", "mobilenetv2")
POINTWISE = ("L5", "L11", "L12", "L13")


def fig8(arch: ArchSpec) -> tuple[list[float], list[float], list[float]]:
    """Fig. 8 on one platform: throughput (MACs or adds per cycle) and energy (with and without DRAM's),
    Marvel vs each baseline at full strength (its own schedule on its own level-3 tile, ``baseline.py``)."""
    names = [b.name for b in BASELINES]
    print(f"Fig. 8 on {arch.name}: throughput (iterations/cycle of each latency-optimal mapping), energy with and "
          "without DRAM (baseline / Marvel of each energy-optimal mapping), mappings priced (Marvel / each baseline)")
    print(f"{'':4} {'roofline':>15} {'Marvel':>7} {'%roof':>5} | " + " ".join(f"{n:>15}" for n in names)
          + " | energy " + " ".join(f"{n[:6]:>6}" for n in names) + " | no DRAM " + " ".join(f"{n[:6]:>6}" for n in names)
          + f" | {'mappings':>28} | {'s':>4}")
    speed: list[float] = []
    energy: list[float] = []
    onchip: list[float] = []
    per: dict[str, list[float]] = {n: [] for n in names}
    pointwise: list[float] = []
    for r in TABLE3:
        c = compare_layer(table3_op(r), arch)
        COMPARED[(arch.name, r.id)] = c
        speed += [c.speedup(n) for n in names]
        energy += [c.energy_gain(n) for n in names]
        onchip += [c.energy_gain(n, dram=False) for n in names]
        for n in names:
            per[n].append(c.speedup(n))
        if r.id in POINTWISE:
            pointwise += [c.speedup(n) for n in names]
        thr = " ".join(f"{c.throughput(n):>7.1f} ({c.speedup(n):>5.2f}x)" for n in names)
        evals = "/".join(f"{c.evaluated[n]:,}" for n in (MARVEL, *names))
        print(f"{r.id:4} {c.roofline.throughput:>7.1f} {c.roofline.bound:>7} {c.throughput(MARVEL):>7.1f} "
              f"{c.throughput(MARVEL) / c.roofline.throughput:>5.0%} | {thr} | energy "
              + " ".join(f"{c.energy_gain(n):>6.3f}" for n in names) + " | no DRAM "
              + " ".join(f"{c.energy_gain(n, dram=False):>6.3f}" for n in names)
              + f" | {evals:>28} | {sum(c.seconds.values()):>4.1f}")
    print("geomean speedup per baseline: " + ", ".join(f"{n} {geomean(v):.2f}x" for n, v in per.items())
          + f"; pointwise layers {geomean(pointwise):.2f}x (paper 6.1x)")
    print(f"geomean over layers x baselines: throughput {geomean(speed):.2f}x (paper {PAPER_FIG8[0]}x), "
          f"energy {geomean(energy):.3f}x, without DRAM {geomean(onchip):.3f}x (paper {PAPER_FIG8[1]}x)\n")
    return speed, energy, onchip


def fig9(arch: ArchSpec) -> tuple[list[float], list[float], list[float]]:
    """Fig. 9 on one platform: whole models, totals over layers (energy with and without DRAM's)."""
    names = [b.name for b in BASELINES]
    print(f"Fig. 9 on {arch.name}: whole models (sum over layers), baseline / Marvel")
    print(f"{'model':12} {'layers':>6} {'Marvel cycles':>14} {'Marvel energy':>14} | throughput "
          + " ".join(f"{n:>15}" for n in names) + " | energy " + " ".join(f"{n[:6]:>6}" for n in names)
          + " | no DRAM " + " ".join(f"{n[:6]:>6}" for n in names) + f" | {'s':>5}")
    speed: list[float] = []
    energy: list[float] = []
    onchip: list[float] = []
    for model in MODELS:
        t0 = time.perf_counter()
        c = compare_network(zoo.get(model), arch)
        speed += [c.speedup(n) for n in names]
        energy += [c.energy_gain(n) for n in names]
        onchip += [c.energy_gain(n, dram=False) for n in names]
        print(f"{model:12} {len(c.layers):>6} {c.cycles(MARVEL):>14,.0f} {c.energy(MARVEL):>14.4g} | throughput "
              + " ".join(f"{c.speedup(n):>14.2f}x" for n in names) + " | energy "
              + " ".join(f"{c.energy_gain(n):>6.3f}" for n in names) + " | no DRAM "
              + " ".join(f"{c.energy_gain(n, dram=False):>6.3f}" for n in names) + f" | {time.perf_counter() - t0:>5.0f}")
    print(f"geomean: throughput {geomean(speed):.2f}x (paper {PAPER_FIG9[0]}x), energy {geomean(energy):.3f}x "
          f"= {1 - 1 / geomean(energy):.1%} lower, without DRAM {1 - 1 / geomean(onchip):.1%} lower (paper 9.19%)\n")
    return speed, energy, onchip


def both_platforms(fig) -> tuple[list[float], list[float], list[float]]:
    """``fig`` (:func:`fig8` or :func:`fig9`) on each platform in turn: the speed-ups and energy ratios (with
    and without DRAM), concatenated."""
    speed: list[float] = []
    energy: list[float] = []
    onchip: list[float] = []
    for name in PLATFORMS:
        s, e, o = fig(load_arch(name))
        speed += s
        energy += e
        onchip += o
    return speed, energy, onchip


def switches(arch: ArchSpec, layers: tuple[str, ...]) -> None:
    """The two added pruning switches: symmetry (lossless: same optimum, fewer mappings) and
    prologue/epilogue tiles (divisor_only off; paper: +2% throughput, +10% energy, 20x search time)."""
    print(f"Pruning switches on {arch.name} (Marvel, latency and energy objectives; layers {' '.join(layers)})")
    print(f"{'':4} {'sym evals':>9} {'no-sym':>9} {'same opt':>8} | {'exact cyc':>10} {'pro/epi':>10} "
          f"{'exact E':>10} {'pro/epi E':>10} {'time x':>6}")
    cyc, en, slow = [], [], []
    for r in (x for x in TABLE3 if x.id in layers):
        op = table3_op(r)
        sym = {o: marvel_search(op, arch, o) for o in ("latency", "energy")}
        nosym = marvel_search(op, arch, "latency", MarvelOptions(symmetry=False))
        same = nosym.cost.cycles[0] == sym["latency"].cost.cycles[0]
        t0 = time.perf_counter()
        pad = {o: marvel_search(op, arch, o, MarvelOptions(divisor_only=False)) for o in ("latency", "energy")}
        slow.append((time.perf_counter() - t0) / (sym["latency"].seconds + sym["energy"].seconds))
        cyc.append(sym["latency"].cost.cycles[0] / pad["latency"].cost.cycles[0])
        en.append(sym["energy"].cost.energy[0] / pad["energy"].cost.energy[0])
        print(f"{r.id:4} {sym['latency'].evaluated:>9,} {nosym.evaluated:>9,} {'yes' if same else 'NO':>8} | "
              f"{sym['latency'].cost.cycles[0]:>10,.0f} {pad['latency'].cost.cycles[0]:>10,.0f} "
              f"{sym['energy'].cost.energy[0]:>10.4g} {pad['energy'].cost.energy[0]:>10.4g} {slow[-1]:>6.1f}")
    print(f"prologue/epilogue (15% padding): throughput {geomean(cyc):.3f}x, energy {geomean(en):.3f}x better, "
          f"search {geomean(slow):.1f}x slower (geomeans; paper: 1.02x, 1.10x, 20x)\n")


def uniform(arch: ArchSpec) -> None:
    st = uniform_dataflow([table3_op(r) for r in TABLE3], arch)
    order = np.argsort(-st.geomean)
    print(f"Uniform dataflow on {arch.name} (one pair of parallel loops for all 15 layers; geomean throughput "
          f"relative to Marvel): " + ", ".join(f"{st.names[i]} {st.geomean[i]:.2f}" for i in order[:6])
          + f"; best {st.best} (paper, platform 1: CP)")
    pairs = {frozenset(n): g for n, g in zip(st.names, st.geomean)}
    print("baselines: " + ", ".join(f"{b.name} {pairs[frozenset(b.parallel)]:.2f}" for b in BASELINES) + "\n")


def random_until(op, arch: ArchSpec, objective: str, target: float, seconds: float, cap: int,
                 chunk: int = 500) -> tuple[float, tuple[int, float] | None, float, int]:
    """Random sampling of the declared space (the random mapper's sampler and the core model), in chunks:
    its best after ``seconds`` (equal time), and the evaluations and seconds at which it first reaches
    ``target`` (equal quality; None within ``cap`` evaluations)."""
    model, sampler = CostModel(op, arch), CandidateSampler(MapSpace(op, arch), 0)
    best, at_time, reached, evals, t0 = np.inf, None, None, 0, time.perf_counter()
    while evals < cap:
        batch = sampler.sample(chunk)
        if len(batch) == 0:
            break
        cost = model.evaluate(batch, reuse_buffers=True)
        best = min(best, float(np.where(cost.valid, cost.objective(objective), np.inf).min()))
        evals += len(batch)
        now = time.perf_counter() - t0
        if at_time is None and now >= seconds:
            at_time = best
        if reached is None and best <= target:
            reached = (evals, now)
        if reached is not None and at_time is not None:
            break
    return (best if at_time is None else at_time), reached, best, evals


def search_cost(arch: ArchSpec, layers: tuple[str, ...], cap: int, optimal_seconds: float) -> None:
    """Marvel vs random sampling (equal time, equal quality) and the certified-optimal mapper."""
    print(f"Search cost on {arch.name}: Marvel vs random sampling and the optimal mapper (branch and bound, "
          f"{optimal_seconds:.0f} s budget) over the core's declared space (default layouts)")
    print(f"{'':4} {'obj':>7} {'Marvel s':>8} {'evals':>7} | {'rnd@=t':>7} | {'rnd to Marvel (500s)':>20} | "
          f"{'optimal/Marvel':>14} {'opt s':>6} {'proven':>6} {'opt s/Marvel s':>14}")
    quality, faster = [], []
    for r in (x for x in TABLE3 if x.id in layers):
        op = table3_op(r)
        for objective in ("latency", "energy"):
            m = marvel_search(op, arch, objective)
            mv = float(m.cost.objective(objective)[0])
            at_t, reached, _, evals = random_until(op, arch, objective, mv, m.seconds, cap)
            eq = f"{reached[0]:>9,} ev {reached[1]:>6.1f} s" if reached else f"not in {evals:,} ev"
            opt = optimal_search(op, arch, objective, budget_seconds=optimal_seconds)
            ov = float(opt.result.cost.objective(objective)[0])
            quality.append(mv / ov)
            faster.append(opt.result.seconds / m.seconds)
            print(f"{r.id:4} {objective:>7} {m.seconds:>8.2f} {m.evaluated:>7,} | {at_t / mv:>6.2f}x | {eq:>20} | "
                  f"{ov / mv:>14.3f} {opt.result.seconds:>6.1f} {'yes' if opt.certificate.proven else 'no':>6} "
                  f"{opt.result.seconds / m.seconds:>13.0f}x")
    print(f"Marvel / optimal-mapper objective: geomean {geomean(quality):.3f} (paper: ~1.05 vs brute force); optimal "
          f"mapper seconds / Marvel seconds: geomean {geomean(faster):.0f}x (paper: ~300x); rnd@=t: random's best "
          "after Marvel's wall time / Marvel's\n")


SECTIONS = ("offchip", "fig8", "maestro", "switches", "uniform", "fig9", "cost")
COMPARED: dict = {}  # (platform, layer id) -> compare_layer result of Fig. 8, reused by the MAESTRO table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="marvel_platform1", help="platform of the off-chip tables")
    ap.add_argument("--quick", action="store_true", help="skip Fig. 9; switches and search cost on L2 and L9 "
                    "with smaller budgets; the uniform dataflow on platform 1 only")
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {', '.join(SECTIONS)}")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    if sections - set(SECTIONS):
        ap.error(f"unknown sections {sorted(sections - set(SECTIONS))}; choose from {', '.join(SECTIONS)}")
    if args.quick:
        sections.discard("fig9")
    t0 = time.perf_counter()
    if "offchip" in sections:
        arch = load_arch(args.arch)
        results = table3(arch)
        db_vs_core(arch)
        fig7(results)
        print()
    if "fig8" in sections:
        speed, energy, onchip = both_platforms(fig8)
        print(f"Fig. 8, both platforms: geomean throughput {geomean(speed):.2f}x (paper {PAPER_FIG8[0]}x), energy "
              f"{geomean(energy):.3f}x, without DRAM {geomean(onchip):.3f}x (paper {PAPER_FIG8[1]}x)\n")
    if "maestro" in sections:
        maestro_table(stored_rows(), COMPARED)
    p1 = load_arch(PLATFORMS[0])
    few = ("L2", "L9") if args.quick else ("L2", "L5", "L9", "L13")
    if "switches" in sections:
        switches(p1, few)
    if "uniform" in sections:
        for name in PLATFORMS[:1] if args.quick else PLATFORMS:
            uniform(load_arch(name))
    if "fig9" in sections:
        speed, energy, onchip = both_platforms(fig9)
        print(f"Fig. 9, both platforms: geomean throughput {geomean(speed):.2f}x (paper {PAPER_FIG9[0]}x), energy "
              f"{1 - 1 / geomean(energy):.1%} lower, without DRAM {1 - 1 / geomean(onchip):.1%} lower (paper 9.19%)\n")
    if "cost" in sections:
        search_cost(p1, few if args.quick else tuple(r.id for r in TABLE3), 20_000 if args.quick else 100_000,
                    3.0 if args.quick else 30.0)
    print(f"({time.perf_counter() - t0:.1f} s; letters {','.join(MARVEL_LETTERS)}: P width, Q height)")


if __name__ == "__main__":
    main()
