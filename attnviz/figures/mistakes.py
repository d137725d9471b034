"""The mistakes gallery's figures: one wrong form beside the right answer (``mistake_figure``) and
the whole gallery as a table (``mistakes_figure``). Each takes ``attnviz.trace.mistakes`` items and
returns a ``go.Figure`` whose plain-text description is in ``fig.layout.meta["description"]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from attnviz.figures.draft import Draft
from attnviz.figures.heatmap import (
    heatmap_trace,
    range_text,
    shared_zrange,
    square_cells,
    to_numpy,
)
from attnviz.figures.layout import base_layout
from attnviz.figures.style import (
    current_style,
    styled,
)
from attnviz.figures.text import (
    escape,
    wrap_escaped,
    wrap_hard,
)
from attnviz.trace import Mistake

_OUTCOME_SYMBOL = {"right": "✓", "error": "✗", "wrong shape": "✗", "silently wrong": "⚠"}


def _as_2d(value: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, tuple[str, str], str]:
    """Squeeze size-1 axes so a result can be drawn flat; returns the note on what was dropped."""
    names = list(names) if len(names) == value.ndim else [f"axis {i}" for i in range(value.ndim)]
    note = ""
    while value.ndim > 2:
        ones = [i for i, s in enumerate(value.shape) if s == 1]
        if not ones:
            break
        i = ones[0]
        note = f" (drawn without its size-1 {names[i]} axis)"
        value = value.reshape([s for j, s in enumerate(value.shape) if j != i])
        names.pop(i)
    if value.ndim > 2:  # no size-1 axis left: put the leading axes side by side in rows
        value = value.reshape(-1, value.shape[-1])
        names = [" × ".join(names[:-1]), names[-1]]
        note = " (leading axes flattened into rows)"
    if value.ndim == 1:
        value, names = value[None, :], ["", names[0]]
    return value, (names[0], names[1]), note


@styled
def mistake_figure(mistake: Mistake, *, zrange: tuple[float, float] | None = None) -> go.Figure:
    """One form beside the right answer: what the code gave (or torch's error) | the right result.

    Cells where a silently wrong answer differs from the right one are marked ≠.
    """
    symbol = _OUTCOME_SYMBOL[mistake.outcome]
    expected = to_numpy(mistake.expected)
    got = None if mistake.value is None else to_numpy(mistake.value)
    if zrange is None:
        zrange = shared_zrange([a for a in (expected, got) if a is not None])
    zmin, zmax = zrange
    left_title = f"{symbol} this code: {mistake.outcome}" + (
        "" if mistake.shape is None else f", shape {mistake.shape}"
    )
    style = current_style()
    grid = {"rows": 2, "cols": 1, "vertical_spacing": 0.22} if style.stack else {}
    fig = Draft.grid(
        **(grid or {"rows": 1, "cols": 2, "horizontal_spacing": 0.12}),
        subplot_titles=[left_title, f"✓ right answer, shape {mistake.expected_shape}"],
    )
    right = {"row": 2, "col": 1} if style.stack else {"row": 1, "col": 2}
    if got is not None and got.ndim in (1, 2, 3):
        arr, (y_name, x_name), note = _as_2d(got, mistake.axis_names)
        mask = None
        if mistake.silent and got.shape == expected.shape:
            diff = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
            mask = diff.reshape(arr.shape) if diff.size == arr.size else None
        trace = heatmap_trace(
            arr, zmin=zmin, zmax=zmax, x_name=x_name, y_name=y_name or "row", name="got"
        )
        if mask is not None:
            trace["text"] = [
                [f"{s}<br>≠" if mask[i, j] else s for j, s in enumerate(row)]
                for i, row in enumerate(trace["text"])
            ]
        fig.add_trace(trace, row=1, col=1)
        fig.update_xaxes(title={"text": x_name}, row=1, col=1)
        fig.update_yaxes(title={"text": y_name}, autorange="reversed", row=1, col=1)
        got_text = f"It ran and gave shape {mistake.shape}{note}; {range_text(got)}."
    else:
        message = mistake.error or "no tensor"
        wrapped = "<br>".join(wrap_escaped(f"RuntimeError: {message}", 30 if style.stack else 38))
        x_domain = fig.axis("xaxis")["domain"]
        fig.add_annotation(
            text=wrapped,
            xref="paper",
            yref="paper",
            x=(x_domain[0] + x_domain[1]) / 2,
            y=0.5,
            xanchor="center",
            yanchor="middle",
            showarrow=False,
            font={"size": max(style.font - 1, 12), "family": "DejaVu Sans Mono, monospace"},
            bordercolor="#4d4d4d",
            borderwidth=2,
            borderpad=8,
            bgcolor="#f0f0f0",
        )
        fig.update_xaxes(visible=False, row=1, col=1)
        fig.update_yaxes(visible=False, row=1, col=1)
        got_text = f"torch raised: {message.rstrip('.')}."
    exp2, (ey, ex), _ = _as_2d(expected, ("sentence", "hidden"))
    fig.add_trace(
        heatmap_trace(
            exp2, zmin=zmin, zmax=zmax, x_name=ex, y_name=ey, name="right", show_scale=got is None
        ),
        **right,
    )
    fig.update_xaxes(title={"text": ex}, **right)
    fig.update_yaxes(title={"text": ey}, autorange="reversed", **right)
    fig.update_xaxes(showgrid=False, zeroline=False, tickmode="linear", dtick=1)
    fig.update_yaxes(showgrid=False, zeroline=False, tickmode="linear", dtick=1)
    for annotation in fig.annotations[:2]:
        annotation["font"] = {"size": style.font}
    variant = " (T == H variant)" if mistake.variant else ""
    subtitle = (
        f"<b>{escape(mistake.code)}</b> on inputs {mistake.input_shape}{variant}; right: "
        f"{escape(mistake.expected_code)}"
    )
    if style.stack:
        subtitle = f"on inputs {mistake.input_shape}{variant}"
    rows = max(exp2.shape[0], 1 if got is None else _as_2d(got, mistake.axis_names)[0].shape[0])
    height = 6 * style.font + 4 * style.title + 60 + style.row_px * max(rows, 2)
    if style.stack:
        height = 2 * height + 6 * style.font
    base_layout(fig, title=mistake.title, subtitle=subtitle, height=height)
    square_cells(fig)
    desc = (
        f"{mistake.title}: {mistake.code} on net_output of shape {mistake.input_shape}. "
        f"Outcome: {mistake.outcome}. {got_text} The right answer, {mistake.expected_code}, has "
        f"shape {mistake.expected_shape}. {mistake.explanation}"
    )
    if mistake.silent:
        desc += " No error was raised: the numbers are silently wrong (cells marked ≠ differ)."
    if mistake.variant_note:
        desc += " " + mistake.variant_note
    return fig.figure(desc)


def _table_row_px(m: Mistake, size: int) -> int:
    """Rough height of a gallery row in cells of ``size`` px text: the tallest of its wrapped
    cells. (The columns' widths grow with the screen as the text does, so a cell holds about as
    many characters a line on a laptop as on a projector; its lines are taller there: at 20 px a
    line, a projector's gallery was cut after its seventh row.)"""
    code_lines = len(wrap_escaped(m.code, 52)) + (1 if m.variant else 0)
    error_lines = len(wrap_escaped(m.error, 40)) if m.error else 1
    return 14 + _line_px(size) * max(code_lines, error_lines)


def _line_px(size: int) -> int:
    """The height of a line of ``size`` px text in a table cell, as plotly draws it."""
    return round(size * 1.4)


def _phone_table(items: Sequence[Mistake]) -> tuple[dict, list[int]]:
    """The gallery as two narrow columns for a phone: the form, then what torch did; every line
    short enough for its cell. -> (the table trace, each row's height in px)."""
    size = max(current_style().font - 3, 12)
    code, what, heights = [], [], []
    for m in items:
        left = wrap_hard(m.code, 20)
        left = [f"<b>{line}</b>" for line in left]
        if m.variant:
            left += wrap_hard(f"T == H variant, inputs {m.input_shape}", 20)
        right = [f"{_OUTCOME_SYMBOL[m.outcome]} {m.outcome}"]
        right += wrap_hard(
            f"shape {'–' if m.shape is None else m.shape}, want {m.expected_shape}", 22
        )
        right += wrap_hard(m.error, 22) if m.error else ["no error raised"]  # all of it
        code.append("<br>".join(left))
        what.append("<br>".join(right))
        heights.append(12 + _line_px(size) * max(len(left), len(right)))
    fills = ["#e6f2e6" if m.correct else "#fde0c5" if m.silent else "#eeeeee" for m in items]
    table = dict(
        type="table",
        columnwidth=[50, 50],
        header={
            "values": ["<b>code</b>", "<b>what torch did</b>"],
            "font": {"size": current_style().font},
            "fill": {"color": "#d9d9d9"},
            "align": "left",
            "height": 32,
        },
        cells={
            "values": [code, what],
            "font": {"size": size},
            "fill": {"color": [fills] * 2},
            "align": "left",
            "height": 30,
        },
    )
    return table, heights


@styled
def mistakes_figure(items: Sequence[Mistake]) -> go.Figure:
    """The gallery at a glance: a table of every form, its outcome, shapes and torch's message."""
    code = [
        f"<b>{escape(m.code)}</b>"
        + (f"<br>T == H variant, inputs {m.input_shape}" if m.variant else "")
        for m in items
    ]
    outcome = [f"{_OUTCOME_SYMBOL[m.outcome]} {m.outcome}" for m in items]
    shapes = [f"{'–' if m.shape is None else m.shape} (want {m.expected_shape})" for m in items]
    errors = [
        "<br>".join(wrap_escaped(m.error, 40)) if m.error else "no error raised" for m in items
    ]
    fills = ["#e6f2e6" if m.correct else "#fde0c5" if m.silent else "#eeeeee" for m in items]
    s = current_style()
    size = max(s.font - 3, 12)  # the cells' text
    table = dict(
        type="table",
        columnwidth=[40, 14, 18, 28],
        header={
            "values": ["<b>code</b>", "<b>outcome</b>", "<b>shape</b>", "<b>torch says</b>"],
            "font": {"size": s.font},
            "fill": {"color": "#d9d9d9"},
            "align": "left",
            "height": 36,
        },
        cells={
            "values": [code, outcome, shapes, errors],
            "font": {"size": size},
            "fill": {"color": [fills] * 4},
            "align": "left",
            "height": 34,
        },
    )
    heights = [_table_row_px(x, size) for x in items]
    if s.stack:  # a phone: two columns whose lines fit
        table, heights = _phone_table(items)
    fig = Draft(table)
    legend = "each form run live by torch: ✓ right · ✗ fails or wrong shape · ⚠ silently wrong"
    base_layout(
        fig,
        title="Mistakes gallery",
        subtitle="<br>".join(wrap_escaped(legend, 40)) if s.stack else legend,
        height=400,  # replaced below, once the title's margins are known
    )
    # a table needs no room for axis labels, under its subtitle (base_layout keeps room there for
    # a heatmap's panel titles) nor on the sides: the header starts under the subtitle's last line
    sub_lines = fig.layout["title"]["subtitle"]["text"].count("<br>") + 1
    top = 10 + round(1.4 * s.title) + sub_lines * round(1.5 * max(s.font - 2, 12)) + 14
    fig.update_layout(margin={"l": 20, "r": 20, "t": top, "b": 8})
    # as tall as the title, the header and the rows need: no blank band under the table
    m = fig.layout["margin"]
    header = max(36, _line_px(s.font) + 8)
    fig.update_layout(height=m["t"] + m["b"] + header + sum(heights))
    lines = [
        f"{m.code}{' (T == H variant, inputs ' + str(m.input_shape) + ')' if m.variant else ''}: "
        f"{m.outcome}" + (f" (torch: {m.error})" if m.error else f", shape {m.shape}")
        for m in items
    ]
    return fig.figure("Mistakes gallery, a table of forms. " + "; ".join(lines) + ".")
