"""Text contrast on coloured cells (WCAG 2.1): the colour a diverging scale gives a value, its
relative luminance, and the label colour (black or white) that reads best on it.

A cell's label is black or white, whichever has the larger contrast ratio with the cell's colour;
for any colour one of the two reaches at least sqrt(21) ~ 4.58:1, above AA's 4.5:1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

BLACK = "#000000"
WHITE = "#ffffff"
#: The background of a cell without a colour (nan, masked): the figure's white paper.
PAPER = "#ffffff"


def rgb(color: str) -> tuple[int, int, int]:
    """'#rrggbb' -> (r, g, b), each 0..255."""
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def luminance(color: str) -> float:
    """WCAG 2.1 relative luminance of '#rrggbb', 0 (black) .. 1 (white)."""

    def channel(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two colours, 1..21."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def scale_color(
    colorscale: Sequence[Sequence], value: float | None, zmin: float, zmax: float
) -> str:
    """The colour plotly draws for value on colorscale [[pos, '#rrggbb'], ...] over (zmin, zmax):
    clamped to the range, linear in RGB between the two stops around it; PAPER for None or nan."""
    if value is None or not math.isfinite(value):
        return PAPER
    span = zmax - zmin
    t = 0.5 if span <= 0 else min(max((value - zmin) / span, 0.0), 1.0)
    stops = [(float(p), rgb(str(c))) for p, c in colorscale]
    for (p0, c0), (p1, c1) in zip(stops, stops[1:], strict=False):
        if t <= p1:
            f = 0.0 if p1 == p0 else (t - p0) / (p1 - p0)
            mixed = (round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
            return "#" + "".join(f"{v:02x}" for v in mixed)
    return "#" + "".join(f"{v:02x}" for v in stops[-1][1])


def label_color(background: str) -> str:
    """BLACK or WHITE, whichever contrasts more with background."""
    return BLACK if contrast(BLACK, background) >= contrast(WHITE, background) else WHITE
