"""The network as a layered graph, top to bottom, each layer coloured by its bottleneck."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dnnmap.report.html.axes import LegendEntry, Plot, legend, legend_layout
from dnnmap.report.html.canvas import Canvas
from dnnmap.report.html.runs import Run
from dnnmap.report.html.style import TITLE_FONT, level_color

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


def graph_figure(run: Run) -> Canvas | None:
    """None when the JSON does not record the layers' inputs (``to_dict`` called without the network)."""
    if any(layer.inputs is None for layer in run.layers):
        return None
    pos = layout([(layer.name, layer.inputs or ()) for layer in run.layers])
    depth = max(row for _, row in pos.values()) + 1
    width = max(column for column, _ in pos.values()) + 1
    canvas = Canvas(72 * (1.5 + COLUMN_INCHES * width), 72 * (1.0 + ROW_INCHES * depth))
    plot = Plot(canvas, 8, 26, canvas.width - 16, canvas.height - 32, (-0.2, width - 0.2), (-0.8, depth - 0.5))

    def at(name: str) -> tuple[float, float]:
        return plot.x(pos[name][0]), plot.y(pos[name][1])

    for layer in run.layers:
        for src in layer.inputs or ():
            canvas.line([at(src), at(layer.name)], "#999999", 0.7)
    layer_names = {layer.name for layer in run.layers}
    inputs = [name for name in pos if name not in layer_names]
    side = math.sqrt(40)  # marker areas in square points, as matplotlib's scatter sizes
    for name in inputs:
        x, y = at(name)
        canvas.rect(x - side / 2, y - side / 2, side, side, INPUT_COLOR, "#000000", 0.6, tip=f"{name}: graph input")
    entries = [LegendEntry("graph input", INPUT_COLOR, "box")] if inputs else []
    levels = run.machine.levels
    for key in ["compute", *levels]:
        group = [layer for layer in run.layers if layer.bottleneck == key]
        label = "compute-bound" if key == "compute" else f"{key} bandwidth-bound"
        if group:
            entries.append(LegendEntry(label, level_color(levels, key), "circle"))
        for g in group:
            canvas.circle(*at(g.name), math.sqrt(45 / math.pi), level_color(levels, key),
                          tip=f"{g.name} ({g.kind}): {g.cycles:,.0f} cycles, {label}")
    kinds = {layer.name: f" ({layer.kind})" for layer in run.layers}
    for name in pos:
        x, y = at(name)
        canvas.text(x + 6, y, f"{name}{kinds.get(name, '')}", 6, baseline="middle")
    canvas.text(plot.left, 18, f"{run.network}: layer graph, colour = bottleneck", TITLE_FONT)
    _, column = legend_layout(entries, 0, 1)
    legend(canvas, entries, canvas.width - column - 8, 26, column, 1)
    return canvas
