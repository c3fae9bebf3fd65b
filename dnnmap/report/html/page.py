"""HTML building blocks of the report page: escaping, tables, figures, the page shell and its style."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0; color: #222; background: #fafafa; }
header { background: #1f3a5f; color: white; padding: 1em 2em; }
header h1 { margin: 0 0 .3em 0; font-size: 1.5em; }
header p { margin: 0; opacity: .9; }
main { padding: 1em 2em; max-width: 1400px; }
section { margin-bottom: 2em; }
h2 { border-bottom: 2px solid #1f3a5f; padding-bottom: .2em; }
p.help { color: #555; max-width: 60em; }
.cards { display: flex; flex-wrap: wrap; gap: 1em; margin: .5em 0; max-width: 44em; }
.card { background: white; border: 1px solid #ddd; border-radius: 6px; padding: .6em 1em; min-width: 9em; }
.card .value { font-size: 1.4em; font-weight: 600; }
.card .name { color: #666; font-size: .85em; }
table { border-collapse: collapse; background: white; font-size: .85em; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #eef2f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.better { color: #1a7f37; } td.worse { color: #b3261e; }
.overview { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1em;
           align-items: start; }
figure.plot { background: white; border: 1px solid #ddd; border-radius: 6px; margin: 0; padding: .5em; }
figure.plot svg { display: block; width: 100%; height: auto; }
figcaption { color: #555; font-size: .85em; max-width: 40em; margin-top: .3em; }
details.layer { background: white; border: 1px solid #ddd; border-radius: 4px; margin: .3em 0; padding: .3em .8em; }
details.layer summary { cursor: pointer; }
pre.loop-nest { background: #f4f4f4; padding: .6em; overflow-x: auto; font-size: .85em; }
footer { color: #777; font-size: .8em; padding: 1em 2em; }
"""


def num(value: float, digits: int = 4) -> str:
    """Whole numbers (and values of 1000 or more, rounded) with thousands separators, others to
    ``digits`` significant digits."""
    if (float(value).is_integer() or abs(value) >= 1000) and abs(value) < 1e15:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool] | None = None,
          classes: Sequence[Sequence[str]] | None = None, css_class: str = "") -> str:
    """An HTML table; cells are plain text (escaped), ``numeric`` columns right-aligned, ``classes``
    optional per-cell CSS classes."""
    numeric = numeric or [False] * len(headers)
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for r, row in enumerate(rows):
        cells = []
        for c, cell in enumerate(row):
            names = (["num"] if numeric[c] else []) + ([classes[r][c]] if classes and classes[r][c] else [])
            attr = f' class="{" ".join(names)}"' if names else ""
            cells.append(f"<td{attr}>{escape(cell)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    attr = f' class="{css_class}"' if css_class else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def cards(items: Sequence[tuple[str, str]]) -> str:
    """Big numbers with a name under each."""
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="value">{escape(value)}</div><div class="name">{escape(name)}</div></div>'
        for name, value in items) + "</div>"


def figure(key: str, svg: str, caption: str) -> str:
    """A plot: its inline SVG (dnnmap.report.html.canvas) and a caption saying how to read it."""
    return (f'<figure class="plot" id="fig-{escape(key)}" data-figure="{escape(key)}">{svg}'
            f"<figcaption>{escape(caption)}</figcaption></figure>")


def section(anchor: str, title: str, body: str, help_text: str = "") -> str:
    help_html = f'<p class="help">{escape(help_text)}</p>' if help_text else ""
    return f'<section id="{escape(anchor)}"><h2>{escape(title)}</h2>{help_html}{body}</section>'


def page(title: str, subtitle: str, body: str, footer: str) -> str:
    """A complete, self-contained HTML document (inline style, no scripts, no external resources)."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n"
            f"<body><header><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header>\n"
            f"<main>{body}</main>\n<footer>{escape(footer)}</footer></body></html>\n")
