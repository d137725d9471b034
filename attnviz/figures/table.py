"""A figure's numbers as real HTML tables, for screen readers: ``figure_tables`` reads a figure
spec (``go.Figure.to_dict()`` or its JSON) and ``tables_html`` writes the tables.

A heatmap trace (R, C) becomes one table: a caption naming the panel and its axes, a column header
per column (e.g. "hidden 2") and a row header per row (e.g. "word 1"), the numbers as the figure
draws them. A line or marker trace becomes one table of its points (x, y). Every text is escaped:
a table never carries markup from the figure.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.figures.heatmap import STRETCH_GLYPH, fmt, plain_label

_TAG = re.compile(r"<[^>]*>")
_HOVER = re.compile(r"^(?P<y>.*?) %\{y\}, (?P<x>.*?) %\{x\}")
_DTYPES = {"i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16", "i4": "int32"}
_DTYPES |= {"u4": "uint32", "f4": "float32", "f8": "float64"}
#: Most rows one table holds (a long benchmark line is cut, and the caption says so).
MAX_ROWS = 200


@dataclass(frozen=True)
class Table:
    """caption: plain text; columns: the column headers (the first names the row headers' axis);
    rows: (row header, cells), all plain text."""

    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]


def plain(text: object) -> str:
    """Plotly's pseudo-HTML (a title, a label) as plain text: tags dropped, entities read."""
    s = ("" if text is None else str(text)).replace("<br>", " ")
    return html.unescape(_TAG.sub("", s)).strip()


def _array(v: object) -> list:
    """A spec's array (a list, or plotly.js's typed array {dtype, bdata, shape}) as a list."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=_DTYPES[v["dtype"]])
        if v.get("shape"):
            a = a.reshape([int(n) for n in str(v["shape"]).split(",")])
        return a.tolist()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return list(v) if isinstance(v, list | tuple) else []


def _axis_title(layout: dict, ref: str, letter: str) -> str:
    axis = layout.get(f"{letter}axis{ref[1:]}", {})
    title = axis.get("title", {})
    return plain(title.get("text", "") if isinstance(title, dict) else title)


def _number(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, int | float):
        return fmt(float(v))
    return plain(v)


def _heatmap_table(trace: dict, layout: dict, title: str) -> Table:
    z = _array(trace.get("z"))
    if z and not isinstance(z[0], list):
        z = [z]
    rows, cols = len(z), len(z[0]) if z else 0
    names = _HOVER.match(str(trace.get("hovertemplate", "")))
    x_name = _axis_title(layout, trace.get("xaxis", "x"), "x") or (names and names["x"]) or "column"
    y_name = _axis_title(layout, trace.get("yaxis", "y"), "y") or (names and names["y"]) or "row"
    xs = _array(trace.get("x")) or list(range(cols))
    ys = _array(trace.get("y")) or list(range(rows))
    text = _array(trace.get("text"))
    cells = []
    for i in range(rows):
        row = []
        for j in range(cols):
            label = plain_label(str(text[i][j])) if i < len(text) and j < len(text[i]) else ""
            value = plain(label.replace(f"<br>{STRETCH_GLYPH}", "")) or _number(z[i][j])
            row.append(f"{value} (stretched copy)" if STRETCH_GLYPH in label else value)
        cells.append((f"{y_name} {plain(ys[i])}".strip(), tuple(row)))
    name = plain(trace.get("name", "")) or title
    caption = f"{name}: rows are {y_name}, columns are {x_name} ({rows} x {cols})"
    return Table(caption, (y_name, *(f"{x_name} {plain(x)}" for x in xs[:cols])), tuple(cells))


def _line_table(trace: dict, layout: dict, title: str) -> Table:
    x_name = _axis_title(layout, trace.get("xaxis", "x"), "x") or "x"
    y_name = _axis_title(layout, trace.get("yaxis", "y"), "y") or "y"
    xs, ys = _array(trace.get("x")), _array(trace.get("y"))
    n = min(len(xs), len(ys))
    rows = tuple((_number(xs[i]), (_number(ys[i]),)) for i in range(min(n, MAX_ROWS)))
    name = plain(trace.get("name", "")) or title
    cut = f", the first {MAX_ROWS} of {n} points" if n > MAX_ROWS else ""
    return Table(f"{name}: {y_name} by {x_name}{cut}", (x_name, y_name), rows)


def _drawn(trace: dict) -> bool:
    """A trace with points a reader sees (not an invisible hover layer)."""
    marker = trace.get("marker") or {}
    hidden = marker.get("opacity") == 0 and "lines" not in str(trace.get("mode", ""))
    return trace.get("y") is not None and not hidden and trace.get("hoverinfo") != "skip"


def figure_tables(spec: dict) -> list[Table]:
    """spec: a figure as a dict ({"data": [...], "layout": {...}}) -> one Table per heatmap and
    per line/marker trace with points, in drawing order (other traces are skipped)."""
    layout = spec.get("layout", {}) or {}
    title_obj = layout.get("title", {})
    title = plain(title_obj.get("text", "") if isinstance(title_obj, dict) else title_obj)
    out = []
    for trace in spec.get("data", []) or []:
        kind = trace.get("type", "scatter")
        if kind == "heatmap" and trace.get("z") is not None:
            out.append(_heatmap_table(trace, layout, title))
        elif kind in ("scatter", "scattergl", "bar") and _drawn(trace):
            table = _line_table(trace, layout, title)
            if table.rows:
                out.append(table)
    return out


def _cells(tag: str, texts: Sequence[str], scope: str) -> str:
    e = html.escape
    return "".join(f'<{tag} scope="{scope}">{e(t)}</{tag}>' for t in texts)


def tables_html(tables: Sequence[Table]) -> str:
    """The tables as HTML: <caption>, a header row of <th scope="col">, a <th scope="row"> per row."""
    e = html.escape
    parts = []
    for t in tables:
        body = "".join(
            f'<tr><th scope="row">{e(head)}</th>'
            + "".join(f"<td>{e(c)}</td>" for c in cells)
            + "</tr>"
            for head, cells in t.rows
        )
        parts.append(
            f"<table><caption>{e(t.caption)}</caption>"
            f"<thead><tr>{_cells('th', t.columns, 'col')}</tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )
    return "".join(parts)
