"""``dnnmap map``'s printed results: the per-layer table and totals, or the fused schedule and its exports.
Imported once the run is done (the report modules load the cost model)."""

from __future__ import annotations

from pathlib import Path

from dnnmap.api import MapRun
from dnnmap.cli.console import stdout_console, wrote
from dnnmap.fileio import write_text_atomic
from dnnmap.report.fusion import group_table, totals_lines
from dnnmap.report.fusion_trace import timeline_png, trace_json
from dnnmap.report.tables import layer_table, totals_line
from dnnmap.report.tso import tso_comparison


def print_fused(run: MapRun, trace: Path | None, trace_png: Path | None) -> None:
    """``--fuse``: the fused groups and totals beside the unfused schedule (dnnmap/fusion)."""
    out = stdout_console()
    out.print(group_table(run.fusion))
    for line in totals_lines(run.fusion):
        out.print(line)
    if trace is not None:
        write_text_atomic(trace, trace_json(run.fusion))
        wrote(out, trace, detail="Chrome trace-event JSON; open in https://ui.perfetto.dev")
    if trace_png is not None:
        write_text_atomic(trace_png, timeline_png(run.fusion))
        wrote(out, trace_png)


def print_layers(run: MapRun) -> None:
    """The per-layer table and the totals (with ``--mapper tso``, TSO's own estimate beside them)."""
    out = stdout_console()
    out.print(layer_table(run.search))
    out.print(totals_line(run.search))
    if run.prepared.request.mapper == "tso":
        out.print(tso_comparison(run.search))
