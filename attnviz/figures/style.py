"""How big a figure's text and cells are for one kind of screen: ``Style`` and the three styles
(``SCREEN``, ``PROJECTOR``, ``PHONE``), and ``styled``, which gives every builder a ``style=`` keyword.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

#: Font sizes large enough for a laptop screen (PROJECTOR below is for the back row).
FONT_SIZE = 18
TITLE_SIZE = 22
CELL_FONT_SIZE = 17
FONT_FAMILY = "Arial, Helvetica, sans-serif"
#: Pixels per row of cells used to size a figure's height.
ROW_PX = 58


@dataclass(frozen=True)
class Style:
    """Text sizes (px, as drawn) and layout of a figure for one kind of screen.

    font: axis titles, ticks, subplot titles and notes; title: the figure title; cell: the numbers
    in cells (the largest; smaller automatically for many cells); row_px: height of one row of
    cells; stack: panels one above the other (a phone) instead of side by side; margin: the left
    margin for row labels, in px."""

    name: str = "screen"
    font: int = FONT_SIZE
    title: int = TITLE_SIZE
    cell: int = CELL_FONT_SIZE
    row_px: int = ROW_PX
    stack: bool = False
    margin: int = 90
    small: int = FONT_SIZE - 4  # colour-bar ticks, table cells, bar labels


#: A laptop or desktop screen (the default of every builder).
SCREEN = Style()
#: A projector at 1920x1080 seen from the back row: every text in the figure at least 24 px.
PROJECTOR = Style("projector", font=26, title=30, cell=28, row_px=74, margin=120, small=24)
#: A phone held upright (390 px wide): panels stacked, cell numbers at least 12 px.
PHONE = Style("phone", font=14, title=16, cell=14, row_px=54, stack=True, margin=56, small=12)

_STYLE: contextvars.ContextVar[Style] = contextvars.ContextVar("attnviz_style", default=SCREEN)
_F = TypeVar("_F", bound=Callable[..., object])  # go.Figure, or a Draft of one


def current_style() -> Style:
    """The style the figure being built uses (``SCREEN`` unless a builder got ``style=``)."""
    return _STYLE.get()


def styled(builder: _F) -> _F:
    """Give a figure builder a keyword ``style: Style | None``; None keeps the caller's style."""

    @functools.wraps(builder)
    def build(*args, style: Style | None = None, **kwargs):
        if style is None:
            return builder(*args, **kwargs)
        token = _STYLE.set(style)
        try:
            return builder(*args, **kwargs)
        finally:
            _STYLE.reset(token)

    return build  # type: ignore[return-value]
