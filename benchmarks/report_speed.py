"""Speed of drawing the HTML report against the search it reports.

Run: ``python benchmarks/report_speed.py [MODEL] [--arch ARCH] [--json FILE]``. Maps MODEL (default
ResNet-50, the default mapper and budget) once, or reads a saved ``dnnmap map --json`` FILE (its
search time is the one recorded in the file), then builds the report of that run and of the run
compared with itself ``--repeat`` times, timing every figure. Prints the CPU seconds
(``time.process_time``: steady on a shared machine) and the wall seconds of the search, the medians over
the repeats of each figure and of the whole page, the page's size, and the ratio drawing / search
(goal: under 0.1)."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from dnnmap.report.html.plots import PlotSpec
from dnnmap.report.html.report import build_report, plan
from dnnmap.report.html.runs import Run, load_run


def mapped_run(model: str, arch: str, path: Path) -> tuple[Run, float, float]:
    """The run (saved to ``path``) and the CPU and wall seconds of its search."""
    import dnnmap
    from dnnmap.cost.warmup import compile_kernels

    compile_kernels()
    cpu, wall = time.process_time(), time.perf_counter()
    run = dnnmap.map_network(model, arch=arch)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    run.save_json(path)
    return load_run(path), cpu, wall


def timed_page(runs: list[Run]) -> tuple[dict[str, float], float, float, int]:
    """CPU seconds per figure, CPU and wall seconds of the page, the page's bytes."""
    figures: dict[str, float] = {}
    last = [time.process_time()]

    def on_figure(key: str) -> None:
        now = time.process_time()
        figures[key] = now - last[0]
        last[0] = now

    cpu, wall = time.process_time(), time.perf_counter()
    html = build_report(runs, on_figure=on_figure)
    return figures, time.process_time() - cpu, time.perf_counter() - wall, len(html.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="resnet50")
    parser.add_argument("--arch", default="eyeriss")
    parser.add_argument("--json", type=Path, help="a saved run instead of mapping MODEL")
    parser.add_argument("--repeat", type=int, default=5, help="pages drawn per case, medians printed "
                        "(default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("report_speed_run.json"),
                        help="where to save the mapped run (default: %(default)s)")
    args = parser.parse_args()
    if args.json:
        run = load_run(args.json)
        search_cpu = search_wall = float(json.loads(args.json.read_text())["totals"]["seconds"])
        print(f"run {args.json}: {run.network} on {run.arch}, {len(run.layers)} layers, "
              f"search {search_wall:.2f} s (recorded)")
    else:
        run, search_cpu, search_wall = mapped_run(args.model, args.arch, args.out)
        print(f"search {run.network} on {run.arch}: {search_cpu:.2f} s CPU, {search_wall:.2f} s wall "
              f"({len(run.layers)} layers; run saved to {args.out})")
    for label, runs in (("one run", [run]), ("two runs compared", [run, run])):
        specs: list[PlotSpec] = [spec for group in plan(runs) for spec in group]
        pages = [timed_page(runs) for _ in range(max(args.repeat, 1))]
        cpu, wall = (statistics.median(page[i] for page in pages) for i in (1, 2))
        print(f"report of {label} (median of {len(pages)}): {cpu:.3f} s CPU, {wall:.3f} s wall, "
              f"{pages[0][3] / 1e6:.2f} MB, {len(specs)} figures; drawing / search = {cpu / search_cpu:.3f} (CPU)")
        if label == "one run":
            print("  " + ", ".join(f"{key} {1e3 * statistics.median(page[0][key] for page in pages):.1f} ms"
                                   for key in pages[0][0]))


if __name__ == "__main__":
    main()
