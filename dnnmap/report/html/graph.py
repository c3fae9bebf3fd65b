"""The network as a layered graph, top to bottom, each layer coloured by its bottleneck."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import level_color, tip

INPUT_COLOR = "#ffffff"
ROW_INCHES = 0.22
COLUMN_INCHES = 2.0


def layout(layers: Sequence[tuple[str, tuple[str, ...]]]) -> dict[str, tuple[int, int]]:
    """(column, row) per node, from (layer, its inputs) pairs in topological order.

    The row is the longest path from a graph input (inputs on row 0); the column is the first
    input's column when that place is free, else the next free one to its right, so a chain stays
    in one column and branches step aside. Sources that are not layers of the run are graph inputs."""
    pos: dict[str, tuple[int, int]] = {}
    taken: set[tuple[int, int]] = set()

    def place(name: str, column: int, row: int) -> None:
        while (column, row) in taken:
            column += 1
        pos[name] = (column, row)
        taken.add((column, row))

    for name, inputs in layers:
        for src in inputs:
            if src not in pos:
                place(src, 0, 0)
        row = 1 + max((pos[src][1] for src in inputs), default=-1)
        place(name, pos[inputs[0]][0] if inputs else 0, row)
    return pos


def graph_figure(run: Run) -> Figure | None:
    """None when the JSON does not record the layers' inputs (``to_dict`` called without the network)."""
    if any(layer.inputs is None for layer in run.layers):
        return None
    pos = layout([(layer.name, layer.inputs or ()) for layer in run.layers])
    depth = max(row for _, row in pos.values()) + 1
    width = max(column for column, _ in pos.values()) + 1
    fig = Figure(figsize=(1.5 + COLUMN_INCHES * width, 1.0 + ROW_INCHES * depth), layout="constrained")
    ax = fig.add_subplot()
    edges = [(pos[src], pos[layer.name]) for layer in run.layers for src in layer.inputs or ()]
    ax.add_collection(LineCollection(edges, colors="#999999", linewidths=0.7, zorder=1))
    layer_names = {layer.name for layer in run.layers}
    inputs = [name for name in pos if name not in layer_names]
    ax.scatter([pos[n][0] for n in inputs], [pos[n][1] for n in inputs], marker="s", s=40, color=INPUT_COLOR,
               edgecolors="black", linewidths=0.6, zorder=2, label="graph input")
    levels = run.machine.levels
    for key in ["compute", *levels]:
        group = [layer for layer in run.layers if layer.bottleneck == key]
        label = "compute-bound" if key == "compute" else f"{key} bandwidth-bound"
        for n, g in enumerate(group):  # one collection per node: each gets its tooltip
            ax.scatter(*pos[g.name], s=45, color=level_color(levels, key), edgecolors="black", linewidths=0.4,
                       zorder=2, label=label if n == 0 else "_nolegend_",
                       gid=tip(f"{g.name} ({g.kind}): {g.cycles:,.0f} cycles, {label}"))
    kinds = {layer.name: f" ({layer.kind})" for layer in run.layers}
    for name, (x, y) in pos.items():
        ax.annotate(f"{name}{kinds.get(name, '')}", (x, y), xytext=(6, 0), textcoords="offset points", va="center",
                    fontsize=6)
    ax.set_ylim(depth - 0.5, -0.8)
    ax.set_xlim(-0.2, width - 0.2)
    ax.set_axis_off()
    ax.set_title(f"{run.network}: layer graph, colour = bottleneck", loc="left", fontsize=10)
    ax.legend(fontsize=7, loc="upper right", frameon=False)
    return fig
