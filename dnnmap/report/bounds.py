"""``dnnmap bounds`` output: the table, the JSON document and the PNG curve of attainable bounds
(:mod:`dnnmap.search.bounds`)."""

from __future__ import annotations

import io
import math
from typing import Any

from rich.markup import escape
from rich.table import Table

from dnnmap.arch.spec import ArchSpec
from dnnmap.mapping.io import mapping_to_dict
from dnnmap.report.json_report import tool_version
from dnnmap.report.summary import mapping_summary
from dnnmap.report.tables import si
from dnnmap.search.bounds import BoundPoint, OptimalSpace, buffer_level
from dnnmap.workload.ir import Operator

Curve = tuple[Operator, list[BoundPoint]]  # one layer and its points


def capacity_unit(arch: ArchSpec) -> str:
    """The unit capacities of the buffer level are given in (words or bits)."""
    return arch.levels[buffer_level(arch)].capacity_unit


def objective_label(objective: str, arch: ArchSpec) -> str:
    return "DRAM bytes" if objective == "dram" else f"energy ({arch.energy_unit})"


def status(point: BoundPoint) -> str:
    """``proven``, ``gap x% (bound b)`` when the time budget ran out, or ``nothing fits``."""
    if point.found is None:
        return "nothing fits"
    cert = point.found.certificate
    return "proven" if cert.proven else f"gap {cert.gap:.1%} (bound {cert.lower_bound:.4g})"


def bounds_table(op: Operator, points: list[BoundPoint], objective: str, arch: ArchSpec,
                 space: OptimalSpace = OptimalSpace()) -> Table:
    """One row per capacity: the minimum in ``space``, its certificate, the DRAM bytes and energy of the mapping
    and the mapping's spatial and off-chip loops."""
    level = arch.levels[buffer_level(arch)].name
    table = Table(title=f"{op.name}: minimum {objective_label(objective, arch)} by {level} capacity on "
                        f"{arch.name}, {space.label}", title_justify="left")
    for header in (f"{level} capacity ({capacity_unit(arch)})", f"minimum {objective_label(objective, arch)}",
                   "certificate", "DRAM bytes", f"energy ({arch.energy_unit})", "seconds",
                   "mapping (spatial | DRAM loops)"):
        table.add_column(header, justify="left" if header.startswith(("certificate", "mapping")) else "right",
                         no_wrap=True)
    for p in points:
        if p.found is None:
            table.add_row(f"{p.capacity:,}", "-", status(p), "-", "-", "-", "-")
            continue
        res = p.found.result
        value = f"{p.value:,.0f}" if p.value >= 1e3 else f"{p.value:.4g}"
        table.add_row(f"{p.capacity:,}", value, status(p), si(float(res.cost.dram_bytes[0])),
                      si(float(res.cost.energy[0])), f"{p.found.certificate.seconds:.1f}",
                      escape(mapping_summary(res.mapping, op, p.arch)))
    return table


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def point_to_dict(op: Operator, p: BoundPoint) -> dict[str, Any]:
    out: dict[str, Any] = {"capacity": p.capacity, "fits": p.found is not None}
    if p.found is None:
        return out
    cert, res = p.found.certificate, p.found.result
    out.update(value=p.value, proven=cert.proven, lower_bound=cert.lower_bound, gap=_finite(cert.gap),
               dram_bytes=float(res.cost.dram_bytes[0]), energy=float(res.cost.energy[0]),
               cycles=float(res.cost.cycles[0]), seconds=cert.seconds, nodes=cert.nodes,
               mapping=mapping_to_dict(res.mapping, [lv.name for lv in p.arch.levels], op))
    return out


def bounds_to_dict(model: str, arch: ArchSpec, objective: str, curves: list[Curve],
                   space: OptimalSpace = OptimalSpace()) -> dict[str, Any]:
    """The JSON document of ``dnnmap bounds``: the space searched, per layer its points, each with its mapping."""
    return {"tool": tool_version(), "model": model, "arch": arch.name, "objective": objective,
            "space": {"placement": space.placement, "both_axes": list(space.both_axes), "imperfect": space.imperfect,
                      "label": space.label},
            "level": arch.levels[buffer_level(arch)].name, "capacity_unit": capacity_unit(arch),
            "value_unit": objective_label(objective, arch),
            "layers": [{"layer": op.name, "points": [point_to_dict(op, p) for p in points]} for op, points in curves]}


def bounds_png(curves: list[Curve], objective: str, arch: ArchSpec, space: OptimalSpace = OptimalSpace()) -> bytes:
    """The curves as a PNG: minimum in ``space`` against capacity (log-log), proven points filled, points whose
    time budget ran out hollow with a bar down to their certified lower bound."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    for op, points in curves:
        fit = [p for p in points if p.found is not None]
        line, = ax.plot([p.capacity for p in fit], [p.value for p in fit], drawstyle="steps-post", label=op.name)
        proven = [p for p in fit if p.proven]
        ax.plot([p.capacity for p in proven], [p.value for p in proven], "o", color=line.get_color())
        for p in fit:
            if not p.proven:
                low = p.found.certificate.lower_bound
                ax.plot([p.capacity], [p.value], "o", mfc="none", color=line.get_color())
                ax.vlines(p.capacity, max(low, p.value * 1e-3), p.value, colors=line.get_color(), linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    level = arch.levels[buffer_level(arch)].name
    ax.set_xlabel(f"{level} capacity ({capacity_unit(arch)})")
    ax.set_ylabel(f"minimum {objective_label(objective, arch)}")
    ax.set_title(f"Attainable {objective_label(objective, arch)} on {arch.name}, {space.label}\n"
                 "(filled: proven; hollow: bar to the certified bound)", fontsize=9)
    ax.grid(True, which="both", linewidth=0.3)
    if len(curves) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()
