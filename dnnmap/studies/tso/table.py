"""TSO Table I, Fig. 8 and Fig. 9 on the zoo: TSO-burst vs TSO-noburst vs fixed slicings vs fixed dataflows.

Every schedule is chosen by TSO's search (Alg. 1) and timed by the burst model (Eq. 6 with
Alg. 4's CAS term): the burst model stands in for the board, so TSO-noburst is the schedule the
volume model picks, timed as the hardware would run it. Fixed baselines (Section V): one slicing
(or one dataflow) for every layer, the best of the rest per layer, chosen with the burst model.
Times cover the convolution layers (conv, pointwise, depthwise, FC: the layers TSO schedules);
pooling, add and concat are reported apart. The same schedules are also priced by the core cost
model (TSO-burst and TSO-noburst schedules as core mappings).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from dnnmap.arch.spec import ArchSpec
from dnnmap.search.network import shape_key
from dnnmap.arch.variants import with_dram_model
from dnnmap.search.tso.core_mapping import price, pricing_arch, schedule_mapping
from dnnmap.search.tso.layer import tso_layer
from dnnmap.search.tso.machine import TsoMachine, TsoOptions
from dnnmap.search.tso.search import TsoLayerResult, TsoSchedule, tso_layer_search
from dnnmap.search.tso.slicing import DATAFLOWS, SLICINGS
from dnnmap.search.tso.timing import Tiles, breakdown
from dnnmap.search.tso.transfers import schedule_transfers, trace_replay
from dnnmap.workload.ir import Network, Operator

CONV_FAMILY = frozenset({"conv2d", "pointwise", "depthwise", "fc"})
COLUMNS = ("burst", "noburst", *SLICINGS, *DATAFLOWS)
MODELS = (("InceptionV3", "inceptionv3"), ("LeNet", "lenet5"), ("MobileNetV2", "mobilenetv2"),
          ("ResNet-50", "resnet50_v1"), ("SqueezeNet", "squeezenet1_0"), ("YOLO", "tiny_yolov2"))
# TSO Table I, microseconds, in COLUMNS order; Fig. 9 LOAD+STORE share of the TSO-noburst total (%)
PAPER = {
    "InceptionV3": (72686, 88478, 82370, 81367, 91408, 73706, 93731, 101641),
    "LeNet": (199, 231, 202, 224, 231, 199, 233, 228),
    "MobileNetV2": (14030, 15470, 17765, 16696, 17571, 14084, 17387, 15155),
    "ResNet-50": (55927, 62375, 62077, 63118, 78844, 59714, 71905, 77535),
    "SqueezeNet": (12504, 13713, 16579, 14134, 12993, 12908, 15840, 13452),
    "YOLO": (53271, 57225, 56591, 55713, 63550, 68530, 58592, 55375),
}
PAPER_NOBURST_LOADSTORE = {"InceptionV3": 51.83, "LeNet": 83.80}  # Fig. 9, the two quoted ends


@dataclass(frozen=True)
class ModelRow:
    """One model's Table I row (seconds per column) with the Fig. 9 split and the core model's prices."""

    label: str
    network: str
    seconds: dict[str, float]
    load_store: dict[str, float]  # LOAD+STORE seconds of the burst and noburst schedules
    other_seconds: float  # pooling, add, concat (TSO-burst)
    core_seconds: dict[str, float]  # the burst and noburst schedules priced by the core model
    layers: int
    trace_seconds: dict[str, float]  # every column's schedules with their DRAM time replayed on DDR3 (empty: not run)

    def speedup(self, column: str) -> float:
        """time(column) / time(TSO-burst) - 1 (the paper's Figs. 8, 12, 13)."""
        return self.seconds[column] / self.seconds["burst"] - 1.0

    def trace_speedup(self, column: str) -> float:
        """:meth:`speedup` with every schedule timed on the DDR3 trace."""
        return self.trace_seconds[column] / self.trace_seconds["burst"] - 1.0


def trace_timed(s: TsoSchedule, m: TsoMachine) -> float:
    """Eq. 6 with its DRAM term replaced by the schedule's tile transfers replayed as byte addresses through
    the DDR3-2133 channel simulator (:func:`dnnmap.search.tso.transfers.trace_replay`; MAC and software
    terms as estimated): the schedule timed as on a board."""
    return float(s.time.mac[0] + s.time.sw[0]) + trace_replay(schedule_transfers(s, m), m).seconds


def _retime(s: TsoSchedule, m: TsoMachine, opts: TsoOptions) -> TsoSchedule:
    """``s`` timed under ``opts`` (the schedule stays; Eq. 6 is recomputed)."""
    one = Tiles(*(np.array([v]) for v in (s.TR, s.TC, s.TN, s.TM)))
    return replace(s, time=breakdown(s.layer, m, opts, s.slice, s.q, one), options=opts)


def _fixed_dataflow(found: TsoLayerResult, q: str) -> TsoSchedule:
    """Best schedule with dataflow ``q``; WS falls back to OS where no filter with all N channels fits MB1."""
    if q == "WS" and not any(qq == "WS" for _, qq in found.by_strategy):
        return found.best_with(q="OS")
    return found.best_with(q=q)


def layer_columns(op: Operator, arch: ArchSpec, m: TsoMachine, opts: TsoOptions,
                  core: bool = True) -> tuple[dict[str, TsoSchedule], dict[str, float]]:
    """Every column's schedule of one layer, timed by the burst model, and the core model's prices."""
    burst_opts, volume_opts = replace(opts, dram="burst"), replace(opts, dram="volume")
    layer = tso_layer(op)
    found = tso_layer_search(layer, m, burst_opts)
    cols = {"burst": found.best, "noburst": _retime(tso_layer_search(layer, m, volume_opts).best, m, burst_opts)}
    cols.update({p: found.best_with(p=p) for p in SLICINGS})
    cols.update({q: _fixed_dataflow(found, q) for q in DATAFLOWS})
    core_s: dict[str, float] = {}
    if core:
        burst_arch = with_dram_model(arch, "burst")
        for key in ("burst", "noburst"):
            on = pricing_arch(cols[key], burst_arch)
            cost = price(schedule_mapping(cols[key], op, on), op, on)
            core_s[key] = float(cost.cycles[0]) / (on.clock_mhz * 1e6)
    return cols, core_s


def _layer_job(args: tuple) -> tuple[dict[str, tuple[float, float, float]], dict[str, float]]:
    op, arch, m, opts, core, trace = args
    cols, core_s = layer_columns(op, arch, m, opts, core)
    timed = trace and op.kind in CONV_FAMILY
    return {k: (s.seconds, float(s.time.dram[0]), trace_timed(s, m) if timed else 0.0)
            for k, s in cols.items()}, core_s


def model_row(label: str, network: Network, arch: ArchSpec, m: TsoMachine, opts: TsoOptions = TsoOptions(),
              core: bool = True, workers: int = 1, trace: bool = False) -> ModelRow:
    """Table I row of ``network``; layers of identical shape are searched once (``workers`` processes).
    ``trace``: also time every column's schedules on the DDR3 trace (:func:`trace_timed`)."""
    unique: dict[tuple, Operator] = {}
    for op in network.operators:
        unique.setdefault(shape_key(op), op)
    jobs = [(op, arch, m, opts, core, trace) for op in unique.values()]
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_layer_job, jobs))
    else:
        results = [_layer_job(j) for j in jobs]
    by_key = dict(zip(unique, results))
    seconds = dict.fromkeys(COLUMNS, 0.0)
    traced = dict.fromkeys(COLUMNS, 0.0)
    load_store = {"burst": 0.0, "noburst": 0.0}
    core_s = {"burst": 0.0, "noburst": 0.0}
    other, convs = 0.0, 0
    for op in network.operators:
        cols, core_layer = by_key[shape_key(op)]
        if op.kind not in CONV_FAMILY:
            other += cols["burst"][0]
            continue
        convs += 1
        for c in COLUMNS:
            seconds[c] += cols[c][0]
            traced[c] += cols[c][2]
        for c in load_store:
            load_store[c] += cols[c][1]
            core_s[c] += core_layer.get(c, 0.0)
    return ModelRow(label, network.name, seconds, load_store, other, core_s, convs, traced if trace else {})
