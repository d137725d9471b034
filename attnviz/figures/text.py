"""A figure's words: its plain-text description (``describe``/``description``), labels escaped and
wrapped for plotly, titles shortened between tokens (``short_title``), and ``figure_html``, a self-contained page with the description beside it.
"""

from __future__ import annotations

import html
import re

import plotly.graph_objects as go

_TOKEN = re.compile(r"\s*(\w+|\S)")  # a name or number, or one other character


def short_title(text: str, most: int = 60) -> str:
    """A title of at most ``most`` characters: text as it is when it fits, else its first whole
    tokens (names, numbers, single symbols; never half of one) and " …". A first token longer
    than the title itself is the one thing cut inside."""
    text = " ".join(text.split())
    if len(text) <= most:
        return text
    end = 0
    for match in _TOKEN.finditer(text):
        if match.end() > most - 2:
            break
        end = match.end()
    return text[: end or most - 2].rstrip() + " …"


def describe(fig: go.Figure, text: str) -> go.Figure:
    """Store the plain-text description for screen readers in fig.layout.meta["description"]."""
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    meta["description"] = text
    fig.update_layout(meta=meta)
    return fig


def description(fig: go.Figure) -> str:
    """The plain-text description of a figure built here ("" when it has none)."""
    meta = fig.layout.meta
    return str(meta.get("description", "")) if isinstance(meta, dict) else ""


def escape(text: str) -> str:
    """Text for a plotly label (which reads a little HTML): <, > and & shown as themselves."""
    return html.escape(text, quote=False)


def wrap_escaped(text: str, width: int) -> list[str]:
    """escape(text), wrapped to lines of at most width characters (see wrap_lines)."""
    return wrap_lines(escape(text), width)


def wrap_hard(text: str, width: int) -> list[str]:
    """Words -> escaped lines of at most width characters each (before escaping): a word longer
    than a line is split across lines, so that a narrow table cell holds it (a phone)."""
    lines = []
    for line in wrap_lines(text, width):
        lines += [escape(line[i : i + width]) for i in range(0, len(line), width)]
    return lines


def wrap_lines(text: str, width: int) -> list[str]:
    """Words -> lines of at most width characters (a longer word gets a line of its own)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return lines


def wrap_plain(text: str, width: int) -> str:
    """A plotly label's lines (split at <br>) of plain words wrapped to at most width characters;
    a line with markup (<b>...</b>) is kept whole, so that no tag is split across lines."""
    return "<br>".join(
        "<br>".join(wrap_lines(line, width)) if len(line) > width and "<" not in line else line
        for line in text.split("<br>")
    )


def figure_html(fig: go.Figure, *, full_html: bool = True) -> str:
    """A self-contained HTML page (plotly.js inlined, nothing from a CDN) with the description.

    The description is written beside the figure as text (and as the figure's aria-label), so it
    reaches screen readers and works offline.
    """
    text = html.escape(description(fig))
    body = fig.to_html(
        include_plotlyjs=True,
        full_html=False,
        include_mathjax=False,
        config={"displaylogo": False, "responsive": True},
    )
    block = (
        f'<figure role="group" aria-label="{text}" style="margin:0">{body}'
        f'<figcaption style="font:16px Arial, sans-serif;max-width:70em">{text}</figcaption>'
        "</figure>"
    )
    if not full_html:
        return block
    title = html.escape(_plain_title(fig))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title></head><body>{block}</body></html>"
    )


def _plain_title(fig: go.Figure) -> str:
    t = fig.layout.title.text if fig.layout.title and fig.layout.title.text else "attnviz figure"
    return html.unescape(str(t).replace("<br>", " "))
