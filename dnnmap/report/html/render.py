"""Matplotlib figures to inline SVG (for the HTML page) and to PNG files (``--png-dir``)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from dnnmap.report.html.style import TIP_PREFIX

PNG_DPI = 150
# text as SVG text (searchable, selectable, small and fast to write), drawn in the reader's sans-serif font
_RC = {"svg.hashsalt": "dnnmap-report", "svg.fonttype": "none"}
_TIP = re.compile(f'<g id="{re.escape(TIP_PREFIX)}([^"]*)">')


def svg_of(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to inline (no XML prolog, no creation date: reproducible)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    # gids of the form "tip:TEXT" (style.tip) become tooltips; the text is already XML-escaped
    return _TIP.sub(r"<g><title>\1</title>", text[text.index("<svg"):])


def save_png(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context(_RC):
        fig.savefig(path, format="png", dpi=PNG_DPI)
