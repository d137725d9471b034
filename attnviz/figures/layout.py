"""A figure's frame in the current style: its title and subtitle (wrapped between words on a
phone), fonts, white background and margins, with room under the plot for a phone's colour bar."""

from __future__ import annotations

from attnviz.figures.draft import Draft
from attnviz.figures.style import FONT_FAMILY, current_style
from attnviz.figures.text import wrap_lines, wrap_plain

#: Characters of a figure title per line on a phone (16 px text across a 320 px screen).
PHONE_TITLE_CHARS = 34
#: Characters of a subtitle line on a phone (its 12 px text across a 320 px screen).
PHONE_SUBTITLE_CHARS = 44


def base_layout(fig: Draft, *, title: str, subtitle: str | None = None, height: int) -> None:
    """Big fonts, white background, title (and subtitle) on top, in the current style. On a phone
    (a stacking style) a long title is wrapped between words, so it is not cut at the edge."""
    s = current_style()
    title_lines = 1
    if s.stack and "<br>" not in title and len(title) > PHONE_TITLE_CHARS:
        lines = wrap_lines(title, PHONE_TITLE_CHARS)
        title, title_lines = "<br>".join(lines), len(lines)
    title_dict: dict = {
        "text": title,
        "font": {"size": s.title},
        "x": 0.0,
        "xanchor": "left",
        "yref": "container",
        "y": 1.0,
        "yanchor": "top",
        "pad": {"t": 10 + (title_lines - 1) * (s.title + 6)},  # plotly lifts extra lines above
    }
    if subtitle and s.stack:
        subtitle = wrap_plain(subtitle, PHONE_SUBTITLE_CHARS)
    if subtitle:
        title_dict["subtitle"] = {"text": subtitle, "font": {"size": max(s.font - 2, 12)}}
    sub_lines = subtitle.count("<br>") + 1 if subtitle else 0
    top = s.title * 2 + 46 + sub_lines * (s.font + 10) + (s.font if sub_lines > 1 else 0)
    top += (title_lines - 1) * (s.title + 6)
    fig.update_layout(
        title=title_dict,
        font={"size": s.font, "family": FONT_FAMILY, "color": "#111111"},
        height=height + bar_room(),
        margin={
            "l": s.margin,
            "r": 40 if not s.stack else 12,
            "t": top,
            "b": 30 + 2 * s.font + bar_room(),
        },
        paper_bgcolor="white",
        plot_bgcolor="white",
    )


PHONE_BAR_PX = 12  # thickness of a phone's colour bar, which lies under the figure


def bar_room() -> int:
    """Pixels at the bottom of a figure that hold its colour bar: none beside the plot (a wide
    screen), the bar, its ticks and some air under the axis titles (a phone)."""
    s = current_style()
    return PHONE_BAR_PX + 2 * (s.small + 6) + 12 if s.stack else 0
