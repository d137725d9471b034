"""Heatmaps of 1-D, 2-D and 3-D tensors with numbers in every cell, their colour scale and bar.

A 3-D tensor (B, T, H) is drawn as one panel per sentence: rows are words, columns hidden features.
Colours use one colour-blind-safe diverging scale (blue for negative, orange for positive) centred
at zero; ``shared_zrange`` gives one range for all the steps of a story so colours compare.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence

import numpy as np
import torch
from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.examples import AXIS_NAMES
from attnviz.figures.contrast import BLACK, label_color, scale_color
from attnviz.figures.draft import Draft, figure_builder, heatmaps
from attnviz.figures.layout import PHONE_BAR_PX, bar_room, base_layout
from attnviz.figures.style import (
    current_style,
    styled,
)
from attnviz.figures.text import wrap_lines

#: Blue (negative) - white (zero) - orange (positive): distinguishable with the common colour-vision
#: deficiencies (after ColorBrewer's colour-blind-safe diverging schemes).
COLORSCALE = [
    [0.0, "#2166ac"],
    [0.25, "#92c5de"],
    [0.5, "#f7f7f7"],
    [0.75, "#fdb863"],
    [1.0, "#b35806"],
]
#: Glyph written in cells that exist only by broadcasting (stride 0), beside the number.
STRETCH_GLYPH = "↔"
MARK_COLOR = "#222222"
#: Border of highlighted cells (e.g. the cells that feed one result cell).
HIGHLIGHT_COLOR = "#000000"
#: Height of a heatmap cell as a fraction of its width.
CELL_RATIO = 0.62
#: Smallest height of one panel's plotting area, so a one-row tensor keeps a readable colour bar.
MIN_PLOT_PX = 150
#: Most columns of cells in a row of panels that still get fixed-aspect cells.
MAX_SQUARE_COLUMNS = 12

#: Default axis names by number of axes: (word,), (sentence, word), (sentence, word, hidden).
AXIS_DEFAULTS = {1: AXIS_NAMES[1:2], 2: AXIS_NAMES[:2], 3: AXIS_NAMES}
#: Most panels side by side in one row before a 3-D figure wraps to a new row.
MAX_COLUMNS = 4


def to_numpy(value: Tensor | np.ndarray | Sequence) -> np.ndarray:
    """Any tensor (any dtype, any device, with grad) or array -> a float64 numpy array."""
    if isinstance(value, Tensor):
        return value.detach().to("cpu", torch.float64).numpy()
    return np.asarray(value, dtype=np.float64)


def fmt(v: float, digits: int = 3) -> str:
    """A cell number: fixed decimals for ordinary sizes, significant digits for large ones."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if abs(v) >= 1000:
        return f"{v:.{digits}g}"
    out = f"{v:.{digits}f}"
    return "0." + "0" * digits if out == "-0." + "0" * digits else out


def shared_zrange(items: Iterable[object]) -> tuple[float, float]:
    """One zero-centred colour range (-m, m) for all the tensors of a story.

    items: steps (anything with a ``value``), tensors or arrays; None values are skipped. m is the
    largest finite absolute value (1 when there is none or it is 0).
    """
    m = 0.0
    for item in items:
        value = getattr(item, "value", item)
        if value is None:
            continue
        arr = to_numpy(value)
        finite = arr[np.isfinite(arr)]
        if finite.size:
            m = max(m, float(np.abs(finite).max()))
    if m == 0.0:
        m = 1.0
    return (-m, m)


def _zrange(
    arrays: Iterable[np.ndarray], zrange: tuple[float, float] | None
) -> tuple[float, float]:
    if zrange is not None:
        lo, hi = float(zrange[0]), float(zrange[1])
        m = max(abs(lo), abs(hi)) or 1.0
        return (-m, m)
    return shared_zrange(arrays)


def square_cells(fig: Draft, *, ratio: float | None = None) -> Draft:
    """Give every heatmap cells of one fixed aspect (height = ratio x width), so a (B, T, 1)
    tensor looks like a column and a (B, T, H) one like a block, whatever the page width.

    Only while a row of panels holds at most ``MAX_SQUARE_COLUMNS`` columns of cells in all:
    wider tensors fill the width instead (their cells are narrow already).
    """
    if ratio is None:  # a phone's cells are taller: a number and its glyph on two lines
        ratio = 0.9 if current_style().stack else CELL_RATIO
    maps = heatmaps(fig)
    by_row: dict[tuple, int] = {}
    for trace in maps:
        y_axis = fig.axis("yaxis" + trace.get("yaxis", "y")[1:])
        key = tuple(y_axis["domain"]) if y_axis.get("domain") else (0, 1)
        by_row[key] = by_row.get(key, 0) + (len(trace["z"][0]) if trace.get("z") else 0)
    if not by_row or max(by_row.values()) > MAX_SQUARE_COLUMNS:
        return fig
    for trace in maps:
        x_id, y_id = trace.get("xaxis", "x"), trace.get("yaxis", "y")
        x_axis, y_axis = fig.axis("xaxis" + x_id[1:]), fig.axis("yaxis" + y_id[1:])
        y_axis.update(scaleanchor=x_id, scaleratio=ratio, constrain="domain")
        x_axis["constrain"] = "domain"
    return fig


def colorbar(zmin: float, zmax: float) -> dict:
    """The colour bar of a (zmin, zmax) scale: ticks at both ends and at zero."""
    s = current_style()
    ticks = [zmin, 0.0, zmax] if zmin < 0 < zmax else [zmin, zmax]
    bar = {
        "title": {"text": "value", "side": "right", "font": {"size": s.small}},
        "tickfont": {"size": s.small},
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [fmt(v, 2) for v in ticks],
        "thickness": 18 if not s.stack else PHONE_BAR_PX,
        "len": 0.9,
    }
    if s.stack:  # a phone: the bar lies under the figure, in its own room (bar_room)
        bar.update(orientation="h", x=0.5, xanchor="center", len=0.7)
        bar.update(yref="container", y=0, yanchor="bottom", ypad=8)
        bar["title"] = {"text": "value", "side": "right", "font": {"size": s.small}}
    return bar


def range_text(arr: np.ndarray) -> str:
    finite = arr[np.isfinite(arr)]
    if not finite.size:
        return "no finite values"
    return f"values from {fmt(float(finite.min()))} to {fmt(float(finite.max()))}"


def _stretched_mask(shape: tuple[int, ...], stretched: Sequence[int]) -> np.ndarray:
    """True for cells that exist only by broadcasting: index > 0 along a stretched axis."""
    mask = np.zeros(shape, dtype=bool)
    for axis in stretched:
        index = [slice(None)] * len(shape)
        index[axis] = slice(1, None)
        mask[tuple(index)] = True
    return mask


def label_span(text: str, color: str) -> str:
    """A cell's label in color: BLACK is the trace's own text colour; WHITE wraps every line
    (plotly's pseudo-HTML <span style>) so the colour holds across the <br>."""
    if color == BLACK:
        return text
    return "<br>".join(f'<span style="color:{color}">{line}</span>' for line in text.split("<br>"))


_SPAN = re.compile(r"</?span[^>]*>")


def plain_label(text: str) -> str:
    """A cell's label without its colour spans: the number (bold, glyph) as written."""
    return _SPAN.sub("", text)


def _cell_text(
    arr2: np.ndarray,
    mask2: np.ndarray | None,
    digits: int,
    bold2: np.ndarray | None = None,
    zrange: tuple[float, float] = (-1.0, 1.0),
) -> list[list[str]]:
    """Every cell's label, black or white by the colour the scale gives its value (>= 4.5:1)."""
    rows = []
    for i in range(arr2.shape[0]):
        row = []
        for j in range(arr2.shape[1]):
            v = float(arr2[i, j])
            s = fmt(v, digits)
            if bold2 is not None and bold2[i, j]:
                s = f"<b>{s}</b>"
            if mask2 is not None and mask2[i, j]:
                s = f"{s}<br>{STRETCH_GLYPH}"
            background = scale_color(COLORSCALE, v, *zrange)
            row.append(label_span(s, label_color(background)))
        rows.append(row)
    return rows


def _cell_font(n_cells: int, n_cols: int) -> int:
    cell = current_style().cell
    if n_cols >= 12 or n_cells > 200:
        return max(cell - 5, 12)
    if n_cols >= 8 or n_cells > 80:
        return max(cell - 3, 12)
    return cell


def heatmap_trace(
    arr2: np.ndarray,
    *,
    zmin: float,
    zmax: float,
    x_name: str,
    y_name: str,
    mask2: np.ndarray | None = None,
    bold2: np.ndarray | None = None,
    digits: int = 3,
    show_scale: bool = True,
    name: str = "",
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
) -> dict:
    """A 2-D heatmap trace (a dict for ``Draft.add_trace``) with a number in every cell: with the
    broadcast glyph where mask2 is True, in bold where bold2 is True."""
    rows, cols = arr2.shape
    x = list(x_labels) if x_labels is not None else list(range(cols))
    y = list(y_labels) if y_labels is not None else list(range(rows))
    z = [[None if not math.isfinite(v) else float(v) for v in row] for row in arr2.tolist()]
    return dict(
        type="heatmap",
        z=z,
        x=x,
        y=y,
        zmin=zmin,
        zmax=zmax,
        zmid=0.0,
        colorscale=COLORSCALE,
        showscale=show_scale,
        colorbar=colorbar(zmin, zmax) if show_scale else None,
        text=_cell_text(arr2, mask2, digits, bold2, (zmin, zmax)),
        texttemplate="%{text}",
        textfont={"size": _cell_font(arr2.size, cols), "color": BLACK},
        xgap=2,
        ygap=2,
        name=name,
        hovertemplate=f"{y_name} %{{y}}, {x_name} %{{x}}: %{{z:.4f}}<extra>{name}</extra>",
    )


def _mark_cells(
    fig: Draft,
    mask2: np.ndarray,
    *,
    row: int | None = None,
    col: int | None = None,
    solid: bool = False,
) -> int:
    """A border around every cell where mask2 is True: dotted for broadcast-only cells, solid
    and thick for highlighted ones. Returns how many cells were marked."""
    line = (
        {"color": HIGHLIGHT_COLOR, "width": 4}
        if solid
        else {"color": MARK_COLOR, "width": 2, "dash": "dot"}
    )
    count = 0
    for i, j in zip(*np.nonzero(mask2), strict=True):
        kwargs = {"row": row, "col": col} if row is not None else {}
        fig.add_shape(
            type="rect",
            x0=j - 0.5,
            x1=j + 0.5,
            y0=i - 0.5,
            y1=i + 0.5,
            line=line,
            fillcolor="rgba(0,0,0,0)",
            layer="above",
            **kwargs,
        )
        count += 1
    return count


def _axes_style(fig: Draft, *, x_name: str, y_name: str, rows: int, cols: int, **rc) -> None:
    fig.update_xaxes(
        title={"text": x_name, "standoff": 6},  # right under the ticks, clear of what follows
        tickmode="array",
        tickvals=list(range(cols)),
        side="bottom",
        showgrid=False,
        zeroline=False,
        constrain="domain",
        **rc,
    )
    fig.update_yaxes(
        title={"text": y_name},
        tickmode="array",
        tickvals=list(range(rows)),
        autorange="reversed",
        showgrid=False,
        zeroline=False,
        **rc,
    )


def _stretch_note(
    shape: tuple[int, ...], axis_names: Sequence[str], stretched: Sequence[int]
) -> str:
    parts = [f"{axis_names[a]} axis stretched from 1 to {shape[a]} (stride 0)" for a in stretched]
    return (
        f"{STRETCH_GLYPH} dotted cells exist only by broadcasting: "
        + "; ".join(parts)
        + ". They re-read the first cell's memory."
    )


@styled
def tensor_draft(
    value: Tensor | np.ndarray,
    *,
    title: str,
    subtitle: str | None = None,
    axis_names: Sequence[str] | None = None,
    zrange: tuple[float, float] | None = None,
    stretched: Sequence[int] = (),
    digits: int = 3,
    name: str = "tensor",
    highlight: Sequence[Sequence[int]] = (),
    highlight_note: str | None = None,
) -> Draft:
    """A heatmap of a 1-D, 2-D or 3-D tensor with its number in every cell.

    value: (N,), (R, C) or (B, R, C); a 3-D tensor gets one panel per sentence (index 0).
    title: plain text (escaped, so user text is safe); subtitle may use plotly's <b>/<br> subset.
    axis_names: one per axis (defaults: word; sentence, word; sentence, word, hidden).
    zrange: the colour range, made zero-centred (default: from this tensor alone).
    stretched: axes that exist only by broadcasting (stride 0); cells past index 0 along them are
    drawn with a dotted border and the glyph ↔, and an annotation names the stretched axis.
    highlight: full indices of cells to outline (thick solid border, bold number), e.g. the cells
    that feed one result cell; highlight_note says why, in the description.
    The description is in fig.layout.meta["description"]. style: a ``Style`` (text sizes and
    layout for a projector or a phone; default ``SCREEN``). -> the ``Draft`` (``tensor_figure``:
    the same, as a ``go.Figure``).
    """
    st = current_style()
    arr = to_numpy(value)
    if arr.ndim not in (1, 2, 3):
        raise AttnvizError(
            f"tensor_figure draws 1-D, 2-D or 3-D tensors, got shape {tuple(arr.shape)}."
        )
    if arr.size == 0:
        raise AttnvizError(f"tensor_figure has nothing to draw: shape {tuple(arr.shape)} is empty.")
    names = tuple(str(n) for n in axis_names) if axis_names else AXIS_DEFAULTS[arr.ndim]
    shown = tuple(html.escape(n, quote=False) for n in names)  # axis names as drawn
    if len(names) != arr.ndim:
        raise AttnvizError(
            f"axis_names {names} must name each of the {arr.ndim} axes of {tuple(arr.shape)}."
        )
    shape = tuple(int(s) for s in arr.shape)
    stretched = tuple(a % arr.ndim for a in stretched if shape[a % arr.ndim] > 1)
    zmin, zmax = _zrange([arr], zrange)
    mask = _stretched_mask(shape, stretched) if stretched else None
    bold = _highlight_mask(shape, highlight) if len(highlight) else None

    if arr.ndim == 3:
        fig = _panels_figure(arr, shown, zmin, zmax, mask, bold, digits, name)
        n_rows_grid = math.ceil(shape[0] / _ncols(shape))
        height = 3 * st.title + 3 * st.font + 90 + _plot_px(n_rows_grid, shape[1])
        layout = (
            f"one panel per {names[0]} ({_count(shape[0], 'panel')}); in each, rows are "
            f"{_plural(names[1])} ({shape[1]}) and columns are {_plural(names[2])} ({shape[2]})"
        )
    else:
        arr2 = arr[None, :] if arr.ndim == 1 else arr
        mask2 = None if mask is None else (mask[None, :] if arr.ndim == 1 else mask)
        bold2 = None if bold is None else (bold[None, :] if arr.ndim == 1 else bold)
        y_name = "" if arr.ndim == 1 else shown[0]
        x_name = shown[-1]
        fig = Draft(
            heatmap_trace(
                arr2,
                zmin=zmin,
                zmax=zmax,
                x_name=x_name,
                y_name=y_name or "row",
                mask2=mask2,
                bold2=bold2,
                digits=digits,
                name=name,
            )
        )
        _axes_style(fig, x_name=x_name, y_name=y_name, rows=arr2.shape[0], cols=arr2.shape[1])
        if arr.ndim == 1:
            fig.update_yaxes(showticklabels=False)
        if mask2 is not None:
            _mark_cells(fig, mask2)
        if bold2 is not None:
            _mark_cells(fig, bold2, solid=True)
        height = 4 * st.title + 4 * st.font + 70 + max(st.row_px * arr2.shape[0], MIN_PLOT_PX)
        layout = (
            f"one row of {shape[0]} {_plural(names[0])}"
            if arr.ndim == 1
            else f"rows are {_plural(names[0])} ({shape[0]}), columns are {_plural(names[1])} "
            f"({shape[1]})"
        )
    base_layout(fig, title=html.escape(title, quote=False), subtitle=subtitle, height=height)
    square_cells(fig)
    marked = int(mask.sum()) if mask is not None else 0
    text = (
        f"{title}. Heatmap of shape {shape}: {layout}. {range_text(arr).capitalize()}; the "
        f"colour scale is centred at 0 (blue negative, white zero, orange positive) and runs from "
        f"{fmt(zmin)} to {fmt(zmax)}. Every cell shows its number."
    )
    if stretched:
        note = _stretch_note(shape, names, stretched)
        drawn = _stretch_note(shape, shown, stretched)
        lines = wrap_lines(drawn, 44) if st.stack else [drawn]
        fig.add_annotation(
            text="<br>".join(lines),
            xref="paper",
            yref="paper",
            x=0,
            y=0,
            xanchor="left",
            yanchor="top",
            yshift=-(2 * st.font + 30),
            showarrow=False,
            font={"size": max(st.font - 2, 12)},
            align="left",
        )
        extra = len(lines) * (st.font + 6) + 40
        room = bar_room()
        fig.update_layout(
            margin={"b": 2 * st.font + 70 + extra + room}, height=height + extra + 40 + room
        )
        text += f" {marked} of {arr.size} cells are marked {STRETCH_GLYPH}: " + note
    if bold is not None:
        cells = ", ".join(str(tuple(int(i) for i in idx)) for idx in np.argwhere(bold))
        why = f" ({highlight_note})" if highlight_note else ""
        text += f" Outlined in bold{why}: cells {cells}."
    return fig.describe(text)


tensor_figure = figure_builder(tensor_draft)  # the same arguments -> a go.Figure


def _plural(name: str) -> str:
    """sentence -> sentences, word -> words, hidden -> hidden features; a numbered name such as
    "axis 0" stays as it is (never "axis 0s")."""
    if name == "hidden":
        return "hidden features"
    if name.endswith("s") or any(c.isdigit() for c in name):
        return name
    return name + "s"


def _highlight_mask(shape: tuple[int, ...], cells: Sequence[Sequence[int]]) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    for idx in cells:
        idx = tuple(int(i) for i in idx)
        if len(idx) != len(shape) or not all(0 <= i < n for i, n in zip(idx, shape, strict=True)):
            raise AttnvizError(f"highlight cell {idx} is outside a tensor of shape {shape}.")
        mask[idx] = True
    return mask


def _ncols(shape: tuple[int, ...]) -> int:
    if current_style().stack:
        return 1
    return max(1, min(shape[0], MAX_COLUMNS, 24 // max(shape[2], 1) or 1))


def _gap_px() -> int:
    """Room between rows of panels: the axis title and ticks above, the next panel's title."""
    s = current_style()
    return 2 * s.font + 2 * s.title + 30


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _plot_px(n_panel_rows: int, cell_rows: int) -> int:
    """Height in pixels of the plotting area for a grid of panels."""
    panel = max(current_style().row_px * cell_rows, MIN_PLOT_PX)
    return n_panel_rows * panel + (n_panel_rows - 1) * _gap_px()


def _panels_figure(
    arr: np.ndarray,
    names: Sequence[str],
    zmin: float,
    zmax: float,
    mask: np.ndarray | None,
    bold: np.ndarray | None,
    digits: int,
    name: str,
) -> Draft:
    b, r, c = arr.shape
    ncols = _ncols(arr.shape)
    nrows = math.ceil(b / ncols)
    fig = Draft.grid(
        rows=nrows,
        cols=ncols,
        subplot_titles=[f"{names[0]} {i}" for i in range(b)],
        horizontal_spacing=min(0.08, 0.4 / max(ncols - 1, 1)),
        vertical_spacing=min(0.3, _gap_px() / _plot_px(nrows, r)) if nrows > 1 else 0.1,
    )
    for i in range(b):
        row, col = i // ncols + 1, i % ncols + 1
        fig.add_trace(
            heatmap_trace(
                arr[i],
                zmin=zmin,
                zmax=zmax,
                x_name=names[2],
                y_name=names[1],
                mask2=None if mask is None else mask[i],
                bold2=None if bold is None else bold[i],
                digits=digits,
                show_scale=i == 0,
                name=f"{name} [{i}]",
            ),
            row=row,
            col=col,
        )
        _axes_style(
            fig,
            x_name=names[2],
            y_name=names[1] if col == 1 else "",
            rows=r,
            cols=c,
            row=row,
            col=col,
        )
        if mask is not None:
            _mark_cells(fig, mask[i], row=row, col=col)
        if bold is not None:
            _mark_cells(fig, bold[i], row=row, col=col, solid=True)
    for annotation in fig.annotations:  # the subplot titles
        annotation["font"] = {"size": current_style().font}
    return fig
