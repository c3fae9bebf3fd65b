"""The figures of a report: what each one shows and how to read it (its caption), built on demand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dnnmap.report.html.arch_figure import arch_figure
from dnnmap.report.html.canvas import Canvas
from dnnmap.report.html.compare import METRICS, delta_figure, energy_note
from dnnmap.report.html.graph import graph_figure
from dnnmap.report.html.layer_figures import dram_figure, energy_figure, latency_figure, utilization_figure
from dnnmap.report.html.roofline import roofline_figure
from dnnmap.report.html.runs import Run


@dataclass(frozen=True)
class PlotSpec:
    key: str  # HTML id (fig-KEY) and PNG file stem
    caption: str
    build: Callable[[], Canvas | None]  # None: the data is not there, ``missing`` says why
    missing: str = ""


def comparison_plots(runs: list[Run], names: list[str]) -> list[PlotSpec]:
    """Per-layer change figures of a comparison (the layers the runs share, matched by name)."""
    def missing(key: str) -> str:
        if not names:
            return "The runs share no layer names: no per-layer changes to draw."
        return energy_note(runs) if key == "energy" else ""

    return [PlotSpec(f"compare-{key}", f"Per layer, the change in {label} of each run against {runs[0].label}; "
                     "bars to the left (negative) are improvements.",
                     lambda key=key, label=label: delta_figure(runs, names, key, label), missing(key))
            for key, label, _ in METRICS]


def run_plots(run: Run, prefix: str = "") -> list[PlotSpec]:
    """The figures of one run, in page order; ``prefix`` keeps keys unique when several runs share a page."""
    dram = run.machine.levels[-1]
    return [
        PlotSpec(f"{prefix}energy", "Where the energy goes: each bar is one layer, split into the memory level "
                 "(colour) and tensor (shade) that spends it, plus the on-chip network hops and the MACs. Long "
                 f"{dram} segments mean the layer re-reads data from off chip.", lambda: energy_figure(run)),
        PlotSpec(f"{prefix}latency", "How long each layer takes. Grey cycles are limited by the MAC array "
                 "(compute-bound); coloured cycles are the extra time a memory level's bandwidth adds on top "
                 "(bandwidth-bound). A layer without colour keeps the MACs busy.", lambda: latency_figure(run)),
        PlotSpec(f"{prefix}dram", f"Bytes each layer moves between the chip and {dram}, per tensor (inputs, "
                 "weights, outputs). This traffic costs both energy and, when the bandwidth is short, time.",
                 lambda: dram_figure(run)),
        PlotSpec(f"{prefix}utilization", "Share of the MAC array's cycles doing useful work, coloured by what "
                 "limits the layer. Low utilization with grey means the mapping cannot spread the layer over "
                 "all MACs; with colour, the MACs wait for data.", lambda: utilization_figure(run)),
        PlotSpec(f"{prefix}roofline", f"Roofline: a layer to the left of the ridge can at best run at the {dram} "
                 "bandwidth times its operations per byte (sloped roof); to the right the MAC array's peak "
                 "caps it (flat roof). The gap between a point and the roof is time lost to the mapping or "
                 "to on-chip bandwidth.", lambda: roofline_figure(run)),
        PlotSpec(f"{prefix}graph", "The network's layers from input (top) to output, each coloured by "
                 "its bottleneck: compute or the bandwidth of a memory level.", lambda: graph_figure(run),
                 "No layer graph: the JSON lists no layer inputs (it was written without the network)."),
        PlotSpec(f"{prefix}arch", f"The architecture {run.arch}: its memory levels from {dram} (top) down to the "
                 "MAC array, each with its capacity per instance, the tensors it keeps and how many instances "
                 "there are; the fan-outs say how many instances of the level below each one feeds.",
                 lambda: arch_figure(run), "No architecture picture: the JSON does not describe the memory levels "
                 "(written by an older dnnmap)."),
    ]
