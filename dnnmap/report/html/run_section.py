"""The HTML sections of one run: metadata and totals, its figures, and every layer's loop nest and mapping."""

from __future__ import annotations

from html import escape
from typing import Any

from dnnmap.report.html.page import cards, num, section, table
from dnnmap.report.html.runs import LayerRun, Run


def bottleneck_text(name: str) -> str:
    return "compute" if name == "compute" else f"{name} bandwidth"


def summary_html(run: Run, anchor: str) -> str:
    t = run.totals
    metadata = [
        ("model", run.network), *([("phase", run.phase)] if run.phase else []), ("architecture", run.arch), ("mapper", run.mapper), ("objective", run.objective),
        ("mappings evaluated", num(t["evaluated"])), ("search time", f"{t['seconds']:.2f} s"),
        ("layers", str(len(run.layers))), ("clock", f"{run.clock_mhz:g} MHz"),
        ("peak", f"{run.machine.peak_ops_per_second:.4g} operations/s"),
        (f"{run.machine.levels[-1]} bandwidth", "unlimited" if run.machine.dram_bytes_per_second is None
         else f"{run.machine.dram_bytes_per_second / 1e9:.4g} GB/s"),
        ("tool", f"dnnmap {run.tool_version}"), ("created", run.created), ("source", run.source),
    ]
    totals = cards([
        ("latency", f"{t['latency_ms']:.4g} ms"), ("cycles", num(t["cycles"])),
        (f"energy ({run.energy_unit})", f"{t['energy']:.4g}"), (f"{run.machine.levels[-1]} traffic",
                                                                f"{t['dram_bytes'] / 1e6:.4g} MB"),
        ("MAC utilization", f"{t['utilization']:.1%}"), ("MACs", num(t["macs"])),
    ] + ([(f"on-chip / off-chip energy ({run.energy_unit})", f"{t['energy_onchip']:.4g} / {t['energy_offchip']:.4g}")]
         if "energy_offchip" in t else []))  # runs saved before the split lack it
    return section(anchor, "Summary", f'<div class="overview">{totals}{table(["run", "value"], metadata)}</div>')


def _loops(entry: dict[str, Any], key: str) -> str:
    factors = entry.get(key, {})
    order = [d for d in entry.get("order", []) if d in factors] if key == "temporal" else []
    dims = order + [d for d in factors if d not in order]
    return " ".join(f"{d}{factors[d]}" for d in dims) or "-"


def mapping_table(layer: LayerRun, levels: tuple[str, ...]) -> str:
    """Per level, outermost first: temporal loops (outermost first), spatial factors, kept tensors, tile words."""
    rows = []
    for level in reversed(levels):
        entry = layer.mapping.get("levels", {}).get(level, {})
        words = layer.tile_words.get(level, {})
        rows.append([level, _loops(entry, "temporal"), _loops(entry, "spatial"),
                     ", ".join(entry["keeps"]) if "keeps" in entry else "default",
                     ", ".join(f"{t} {num(w)}" for t, w in words.items()) or "-"])
    return table(["level", "temporal loops", "spatial", "keeps", "tile words per instance"], rows)


def layer_details(layer: LayerRun, run: Run) -> str:
    parts = ", ".join(f"{bottleneck_text(k)} {num(v)}" for k, v in layer.latency_parts.items())
    reused = f" (mapping reused from {layer.reused_from}, same shape)" if layer.reused_from else ""
    summary = (f"<b>{escape(layer.name)}</b> {escape(layer.kind)} · {num(layer.cycles)} cycles · energy "
               f"{layer.energy:.4g} · bottleneck {escape(bottleneck_text(layer.bottleneck))}")
    return (f'<details class="layer" data-layer="{escape(layer.name)}"><summary>{summary}</summary>'
            f"<p>cycles: {escape(parts)}; mapper {escape(layer.mapper)}{escape(reused)}</p>"
            f'<pre class="loop-nest">{escape(layer.loop_nest)}</pre>{mapping_table(layer, run.machine.levels)}'
            "</details>")


def layers_html(run: Run, anchor: str) -> str:
    rows = [[layer.name, layer.kind, num(layer.macs), num(layer.cycles),
             f"{layer.compute_cycles / layer.cycles:.0%}" if layer.cycles else "-", bottleneck_text(layer.bottleneck),
             f"{layer.energy:.4g}", f"{layer.dram_bytes / 1e6:.3g}", f"{layer.utilization:.0%}",
             f"= {layer.reused_from}" if layer.reused_from else layer.mapper] for layer in run.layers]
    headers = ["layer", "kind", "MACs", "cycles", "compute share", "bottleneck", f"energy ({run.energy_unit})",
               f"{run.machine.levels[-1]} MB", "util", "mapper"]
    numeric = [False, False, True, True, True, False, True, True, True, False]
    details = "".join(layer_details(layer, run) for layer in run.layers)
    return section(anchor, "Layers", table(headers, rows, numeric) + "<h3>Loop nests and mappings</h3>" + details,
                   "One row per layer. Click a layer below to see its loop nest (outermost loop first; "
                   "[LEVEL] lines say which tensors each memory level keeps, parallel-for loops run on "
                   "separate processing elements) and its mapping per memory level.")


def run_html(run: Run, figures: str, anchor: str = "") -> str:
    """Summary, figures and layers of one run; ``anchor`` prefixes the section ids."""
    plots = section(f"{anchor}figures", "Figures", f'<div class="figures">{figures}</div>')
    return summary_html(run, f"{anchor}summary") + plots + layers_html(run, f"{anchor}layers")
