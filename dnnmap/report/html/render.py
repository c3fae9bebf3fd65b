"""Matplotlib figures to inline SVG (for the HTML page) and to PNG files (``--png-dir``)."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

PNG_DPI = 150
_RC = {"svg.hashsalt": "dnnmap-report", "svg.fonttype": "path"}  # text as glyph paths: no fonts needed


def svg_of(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to inline (no XML prolog, no creation date: reproducible)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def save_png(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context(_RC):
        fig.savefig(path, format="png", dpi=PNG_DPI)
