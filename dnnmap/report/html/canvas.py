"""A tiny drawing surface for the report's figures: filled paths, lines, circles and text, written as
inline SVG (text as real ``<text>``, a tooltip as each shape's ``<title>``) or as a PNG with Pillow.

The report's figures are simple bar charts, a scatter, a graph and boxes; drawing them here instead of
with matplotlib takes milliseconds per figure instead of about 0.3 s (docs/report.md, "Cost"). Units
are points (1/72 inch), y grows downwards."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from PIL.Image import Image
    from PIL.ImageFont import FreeTypeFont, ImageFont

RGBA = tuple[float, float, float, float]
Anchor = Literal["start", "middle", "end"]
Baseline = Literal["baseline", "middle", "hanging"]
FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
_PIL_HORIZONTAL = {"start": "l", "middle": "m", "end": "r"}  # Pillow's text anchors
_PIL_VERTICAL = {"baseline": "s", "middle": "m", "hanging": "t"}
CHAR_EM = 0.56  # average width of a character of the sans-serif font, in font sizes (for layout)


def text_width(text: str, size: float) -> float:
    """Approximate width in points of ``text`` at ``size`` points."""
    return CHAR_EM * size * len(text)


def hex_color(color: RGBA | str) -> tuple[str, float]:
    """``#rrggbb`` and the opacity of an RGBA tuple (components 0..1) or of a ``#rrggbb`` string."""
    if isinstance(color, str):
        return color, 1.0
    r, g, b, a = color
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}", a


def rgba(hex_text: str) -> RGBA:
    """The RGBA tuple of a ``#rrggbb`` colour."""
    return (int(hex_text[1:3], 16) / 255, int(hex_text[3:5], 16) / 255, int(hex_text[5:7], 16) / 255, 1.0)


def _f(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Shape:
    kind: Literal["path", "circle", "text"]
    points: tuple[tuple[float, float], ...]  # path: its vertices; circle: its centre; text: its anchor point
    fill: RGBA | str | None = None
    stroke: RGBA | str | None = None
    width: float = 0.0  # stroke width; for a circle the radius is ``size``
    size: float = 0.0  # circle radius or font size
    closed: bool = False
    dash: str = ""
    text: str = ""
    anchor: Anchor = "start"
    baseline: Baseline = "baseline"
    bold: bool = False
    rotate: float = 0.0
    tip: str = ""


@dataclass
class Canvas:
    """A figure ``width`` x ``height`` points, drawn in the order shapes are added."""

    width: float
    height: float
    shapes: list[Shape] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, fill: RGBA | str | None, stroke: RGBA | str | None = None,
             width: float = 0.0, tip: str = "") -> None:
        self.shapes.append(Shape("path", ((x, y), (x + w, y), (x + w, y + h), (x, y + h)), fill, stroke, width,
                                 closed=True, tip=tip))

    def line(self, points: list[tuple[float, float]], color: RGBA | str, width: float = 0.8, dash: str = "",
             closed: bool = False) -> None:
        """A polyline through ``points`` (back to the first one when ``closed``), not filled."""
        self.shapes.append(Shape("path", tuple(points), None, color, width, dash=dash, closed=closed))

    def arrow(self, start: tuple[float, float], end: tuple[float, float], width: float = 0.8) -> None:
        """A line from ``start`` with a small head at ``end``."""
        (x0, y0), (x1, y1) = start, end
        length = max(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5, 1e-9)
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        head = 4.0
        self.line([start, end], "#000000", width)
        self.line([(x1 - head * ux + head / 2 * uy, y1 - head * uy - head / 2 * ux), (x1, y1),
                   (x1 - head * ux - head / 2 * uy, y1 - head * uy + head / 2 * ux)], "#000000", width)

    def circle(self, x: float, y: float, radius: float, fill: RGBA | str, stroke: RGBA | str | None = "#000000",
               width: float = 0.4, tip: str = "") -> None:
        self.shapes.append(Shape("circle", ((x, y),), fill, stroke, width, radius, tip=tip))

    def text(self, x: float, y: float, text: str, size: float, anchor: Anchor = "start",
             baseline: Baseline = "baseline", bold: bool = False, rotate: float = 0.0) -> None:
        self.shapes.append(Shape("text", ((x, y),), "#000000", text=text, size=size, anchor=anchor,
                                 baseline=baseline, bold=bold, rotate=rotate))

    def svg(self) -> str:
        """The figure as an ``<svg>`` element to inline in HTML."""
        parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(self.width)}pt" height="{_f(self.height)}pt" '
                 f'viewBox="0 0 {_f(self.width)} {_f(self.height)}" font-family="{FONT}">'
                 f'<rect width="100%" height="100%" fill="#ffffff"/>']
        parts.extend(_svg_shape(shape) for shape in self.shapes)
        parts.append("</svg>")
        return "".join(parts)

    def png(self, path: Path, dpi: float = 150) -> None:
        """The figure as a PNG file at ``dpi`` dots per inch."""
        from PIL import Image as PILImage, ImageDraw, ImageFont as PILFont  # only when PNG files are asked for

        scale = dpi / 72
        image = PILImage.new("RGB", (round(self.width * scale), round(self.height * scale)), "white")
        draw = ImageDraw.Draw(image, "RGBA")
        fonts: dict[float, FreeTypeFont | ImageFont] = {}
        for shape in self.shapes:
            xy = [(x * scale, y * scale) for x, y in shape.points]
            fill, outline = _pil_color(shape.fill), _pil_color(shape.stroke)
            line_width = max(1, round(shape.width * scale)) if shape.stroke is not None else 0
            if shape.kind == "circle":
                (x, y), r = xy[0], shape.size * scale
                draw.ellipse((x - r, y - r, x + r, y + r), fill=fill, outline=outline, width=line_width)
            elif shape.kind == "path" and shape.closed:
                draw.polygon(xy, fill=fill, outline=outline, width=line_width)
            elif shape.kind == "path":
                draw.line(xy, fill=outline, width=line_width)
            else:
                font = fonts.setdefault(shape.size, PILFont.load_default(size=shape.size * scale))
                anchor = _PIL_HORIZONTAL[shape.anchor] + _PIL_VERTICAL[shape.baseline]
                if shape.rotate:
                    _rotated_text(image, xy[0], shape.text, font, shape.rotate)
                else:
                    draw.text(xy[0], shape.text, fill="black", font=font, anchor=anchor)
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path, format="png")


def _pil_color(color: RGBA | str | None) -> tuple[int, int, int, int] | None:
    if color is None:
        return None
    r, g, b, a = rgba(color) if isinstance(color, str) else color
    return round(r * 255), round(g * 255), round(b * 255), round(a * 255)


def _rotated_text(image: Image, at: tuple[float, float], text: str, font: FreeTypeFont | ImageFont,
                  angle: float) -> None:
    """Text turned by ``angle`` degrees (counter-clockwise), centred on ``at``."""
    from PIL import Image as PILImage, ImageDraw

    left, top, right, bottom = font.getbbox(text)
    label = PILImage.new("RGBA", (int(right - left) + 2, int(bottom - top) + 2), (255, 255, 255, 0))
    ImageDraw.Draw(label).text((-left + 1, -top + 1), text, fill="black", font=font)
    label = label.rotate(angle, expand=True)
    image.paste(label, (int(at[0] - label.width / 2), int(at[1] - label.height / 2)), label)


def _paint(kind: str, color: RGBA | str | None) -> str:
    if color is None:
        return f' {kind}="none"'
    text, alpha = hex_color(color)
    return f' {kind}="{text}"' + (f' {kind}-opacity="{_f(alpha)}"' if alpha < 1 else "")


def _svg_shape(shape: Shape) -> str:
    title = f"<title>{escape(shape.tip, quote=False)}</title>" if shape.tip else ""
    stroke = _paint("stroke", shape.stroke) + (f' stroke-width="{_f(shape.width)}"' if shape.stroke else "")
    if shape.kind == "circle":
        (x, y), = shape.points
        body = f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(shape.size)}"{_paint("fill", shape.fill)}{stroke}'
    elif shape.kind == "path":
        d = "M" + " L".join(f"{_f(x)} {_f(y)}" for x, y in shape.points) + (" Z" if shape.closed else "")
        dash = f' stroke-dasharray="{shape.dash}"' if shape.dash else ""
        body = f'<path d="{d}"{_paint("fill", shape.fill)}{stroke}{dash}'
    else:
        (x, y), = shape.points
        attrs = f' text-anchor="{shape.anchor}"' if shape.anchor != "start" else ""
        if shape.baseline == "middle":
            attrs += ' dy="0.35em"'
        elif shape.baseline == "hanging":
            attrs += ' dy="0.8em"'
        attrs += ' font-weight="bold"' if shape.bold else ""
        attrs += f' transform="rotate({_f(-shape.rotate)} {_f(x)} {_f(y)})"' if shape.rotate else ""
        return f'<text x="{_f(x)}" y="{_f(y)}" font-size="{_f(shape.size)}"{attrs}>{escape(shape.text)}</text>'
    return f"{body}>{title}</{shape.kind}>" if title else f"{body}/>"
