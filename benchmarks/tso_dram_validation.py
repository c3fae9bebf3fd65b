"""TSO's DRAM models against an address-trace DDR3 simulation: `python benchmarks/tso_dram_validation.py
[--models lenet5,...]`.

For every convolution (conv, pointwise, depthwise, FC) of the six Table I models: TSO's search (burst
model) gives the best schedule of each (slicing, dataflow) pair and the volume model's pick; each such
candidate's tile transfers (``dnnmap.search.tso.transfers``) are priced three ways: replayed as byte
addresses through the DDR3-2133 timing simulator (``dnnmap.sim.dram_timing``: row buffers, banks, CL,
tRCD, tRP, tRAS, tWR, BL8), and by Alg. 4's burst (bytes / BW + bursts x CAS) and volume (bytes / BW)
models with the nmp preset's constants (17 GB/s, 14 ns CAS, 128 B bursts: the DDR3-2133 datasheet values
the simulator also uses). Prints per model the relative error (model / trace - 1) of both models over the layers'
TSO-burst schedules (median, 95th percentile, worst |error|) and, over each layer's candidates, Kendall's
tau-b between each model's and the trace's times and how often each model's fastest candidate is the
trace's fastest (top-1). Layers of identical shape are evaluated once and counted for every layer.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from dnnmap.arch.spec import load_arch
from dnnmap.search.network import shape_key
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.search import TsoSchedule, tso_layer_search
from dnnmap.search.tso.transfers import analytical_seconds, schedule_transfers, trace_replay
from dnnmap.workload import zoo

MODELS = ("inceptionv3", "lenet5", "mobilenetv2", "resnet50_v1", "squeezenet1_0", "tiny_yolov2")
CONV = frozenset({"conv2d", "pointwise", "depthwise", "fc"})


@dataclass(frozen=True)
class LayerCheck:
    """One layer's candidates priced three ways (seconds), the TSO-burst choice first."""

    trace: np.ndarray
    burst: np.ndarray
    volume: np.ndarray


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (ties in either ranking allowed); nan when one ranking is all ties."""
    i, j = np.triu_indices(len(x), 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n0 = len(i)
    denom = np.sqrt((n0 - np.sum(dx == 0)) * (n0 - np.sum(dy == 0)))
    return float(np.sum(dx * dy) / denom) if denom else float("nan")


def candidates(op, m: TsoMachine) -> list[TsoSchedule]:
    """The TSO-burst schedule, the best schedule of every other (p, q), and the volume model's pick
    (distinct tilings only)."""
    layer = tso_layer(op)
    found = tso_layer_search(layer, m, TsoOptions())
    volume = tso_layer_search(layer, m, TsoOptions(dram="volume")).best
    out, seen = [], set()
    for s in (found.best, *found.by_strategy.values(), volume):
        key = (s.p, s.q, s.TR, s.TC, s.TN, s.TM)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def check_layer(op, m: TsoMachine) -> LayerCheck:
    rows = []
    for s in candidates(op, m):
        t = schedule_transfers(s, m)
        rows.append((trace_replay(t, m).seconds, analytical_seconds(t, m, True), analytical_seconds(t, m, False)))
    a = np.array(rows)
    return LayerCheck(a[:, 0], a[:, 1], a[:, 2])


def summary(label: str, checks: list[LayerCheck]) -> str:
    lines = [f"{label}: {len(checks)} convolutions, {sum(len(c.trace) for c in checks)} candidate schedules"]
    for name in ("burst", "volume"):
        err = np.array([getattr(c, name)[0] / c.trace[0] - 1 for c in checks])
        taus = np.array([kendall_tau_b(getattr(c, name), c.trace) for c in checks if len(c.trace) > 1])
        top1 = [int(np.argmin(getattr(c, name))) == int(np.argmin(c.trace)) for c in checks if len(c.trace) > 1]
        worst = err[np.argmax(np.abs(err))]
        lines.append(f"  {name:6s} error on the TSO-burst schedules: median {np.median(err):+.1%}, "
                     f"95th pct |err| {np.percentile(np.abs(err), 95):.1%}, worst {worst:+.1%}; "
                     f"ranking vs trace: Kendall tau-b median {np.nanmedian(taus):.2f} "
                     f"(mean {np.nanmean(taus):.2f}), top-1 {sum(top1)}/{len(top1)}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    m = TsoMachine.from_arch(load_arch("nmp"))
    print(f"analytical constants: BW {m.bw_bytes_per_s / 1e9:g} GB/s, CAS {m.cas_s * 1e9:g} ns, BURST {m.burst_bytes} B; "
          "trace: DDR3-2133 14-14-14, 8 banks, 8 KB rows, BL8 64 B bursts (docs/tso.md)")
    everything: list[LayerCheck] = []
    for name in args.models.split(","):
        t0 = time.perf_counter()
        cache: dict[tuple, LayerCheck] = {}
        checks = []
        for op in zoo.get(name).operators:
            if op.kind not in CONV:
                continue
            key = shape_key(op)
            if key not in cache:
                cache[key] = check_layer(op, m)
            checks.append(cache[key])
        everything += checks
        print(summary(f"{name} ({len(cache)} distinct shapes, {time.perf_counter() - t0:.0f} s)", checks), flush=True)
    print(summary("all models", everything))


if __name__ == "__main__":
    main()
