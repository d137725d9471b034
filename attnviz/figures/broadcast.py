"""Figures for the broadcast story: steps, the shape alignment, provenance, gradients, and view vs
copy (the mistakes gallery is in ``attnviz.figures.mistakes``). Each takes the data from ``attnviz.trace`` and returns a ``go.Figure`` whose
plain-text description is in ``fig.layout.meta["description"]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from attnviz.errors import AttnvizError
from attnviz.figures.draft import Draft, figure_builder
from attnviz.figures.heatmap import (
    STRETCH_GLYPH,
    fmt,
    heatmap_trace,
    range_text,
    shared_zrange,
    square_cells,
    tensor_draft,
    tensor_figure,
    to_numpy,
)
from attnviz.figures.layout import PHONE_SUBTITLE_CHARS, base_layout
from attnviz.figures.style import (
    PROJECTOR,
    current_style,
    styled,
)
from attnviz.figures.text import (
    describe,
    escape,
    wrap_escaped,
    wrap_plain,
)
from attnviz.trace import (
    CLASH,
    EQUAL,
    STRETCHED,
    Alignment,
    Gradients,
    Provenance,
    Step,
    ViewCopy,
    feeding_cells,
)

# Categorical fills for the alignment diagram (the glyphs carry the meaning too, not colour alone).
_FILL = {
    "size": "#ffffff",
    EQUAL: "#d9e7f5",  # light blue
    STRETCHED: "#fdd49e",  # light orange
    CLASH: "#4d4d4d",  # dark grey, white text
    "missing": "#f0f0f0",
}
_GLYPH = {EQUAL: "=", STRETCHED: STRETCH_GLYPH, CLASH: "✗"}
#: Characters of a line of code in a subtitle on a phone (bold, up to 14 px, 320 px wide).
PHONE_CODE_CHARS = 38


@styled
def step_draft(
    step: Step,
    *,
    zrange: tuple[float, float] | None = None,
    cell: tuple[int, int] | None = None,
) -> Draft:
    """The figure of one step: the alignment diagram for "align", else a heatmap of its value.

    zrange: a shared colour range for the story (see ``shared_zrange``). cell: (b, h) of a result
    cell to follow through the story: the cells of this step that feed weighted[b, h] are
    outlined (see ``trace.feeding_cells``). The subtitle gives the code, the shape and, where they
    matter, the strides and the memory the step uses. style: see ``heatmap.Style``.
    -> the ``Draft`` (``step_figure``: the same, as a ``go.Figure``).
    """
    if step.alignment is not None or step.value is None:
        assert step.alignment is not None
        fig = alignment_draft(step.alignment, title=f"{step.title}", axis_names=step.axis_names)
        return fig.describe(f"{step.title}. Code: {step.code}. " + fig.description)
    code = [escape(step.code)]
    if current_style().stack:  # a phone: a long line of code wrapped, each line in bold
        code = wrap_escaped(step.code, PHONE_CODE_CHARS)
    parts = ["<br>".join(f"<b>{line}</b>" for line in code), f"shape {step.shape}"]
    if step.strides is not None:
        parts.append(f"strides {step.strides}")
    if step.view_of:
        parts.append(f"a view of {step.view_of}: {step.new_bytes} new bytes")
    elif step.new_bytes:
        parts.append(f"{step.new_bytes} new bytes")
    fig = tensor_draft(
        step.value,
        title=step.title,
        subtitle=("<br>" if current_style().stack else " · ").join(parts),
        axis_names=step.axis_names or None,
        zrange=zrange,
        stretched=step.stretched,
        name=step.key,
        highlight=feeding_cells(step, *cell) if cell is not None else (),
        highlight_note=None if cell is None else f"they feed weighted[{cell[0]}, {cell[1]}]",
    )
    text = fig.description
    extra = f" Code: {step.code}. Shape {step.shape}"
    extra += f", strides {step.strides}." if step.strides is not None else "."
    if step.checks:
        extra += " " + " ".join(
            f"{c.method}: {'agrees' if c.ok else 'DISAGREES'} (largest difference "
            f"{c.max_abs_diff:.1e})."
            for c in step.checks
        )
    return fig.describe(text + extra + " " + step.explanation)


step_figure = figure_builder(step_draft)  # the same arguments -> a go.Figure


@styled
def story_figures(steps: Sequence[Step], *, cell: tuple[int, int] | None = None) -> list[go.Figure]:
    """step_figure for every step, with one colour range shared by all of them (and the cells
    feeding weighted[b, h] outlined when cell = (b, h) is given)."""
    zrange = shared_zrange(steps)
    return [step_figure(s, zrange=zrange, cell=cell) for s in steps]


@styled
def alignment_draft(
    alignment: Alignment,
    *,
    title: str | None = None,
    axis_names: Sequence[str] = (),
) -> Draft:
    """The right-aligned shape comparison as a grid: one column per axis, rows for each shape, the
    outcome (= equal, ↔ stretched from 1, ✗ clash) and the result size.

    axis_names: optional names of the result's axes (e.g. sentence, word, hidden), right-aligned.
    -> the ``Draft`` (``alignment_figure``: the same, as a ``go.Figure``).
    """
    n = len(alignment.axes)
    names = list(axis_names)[-n:] if axis_names else []
    names = [""] * (n - len(names)) + names
    col_labels = [
        f"axis {m.axis}" + (f"<br>({nm})" if nm else "")
        for m, nm in zip(alignment.axes, names, strict=True)
    ]
    row_labels = [alignment.name_a, alignment.name_b, "outcome", "result"]
    fills: list[list[str]] = [[], [], [], []]
    texts: list[list[str]] = [[], [], [], []]
    sep = "<br>" if current_style().stack else " "  # a phone's narrow column: lines stacked
    for m in alignment.axes:
        for r, (size, side) in enumerate(((m.size_a, "a"), (m.size_b, "b"))):
            if size is None:
                texts[r].append("–")
                fills[r].append(_FILL["missing"])
            elif m.stretched == side:
                texts[r].append(f"{size} {STRETCH_GLYPH}")
                fills[r].append(_FILL[STRETCHED])
            elif m.outcome == CLASH:
                texts[r].append(f"{size} ✗")
                fills[r].append(_FILL[CLASH])
            else:
                texts[r].append(str(size))
                fills[r].append(_FILL["size"])
        if m.outcome == EQUAL:
            texts[2].append(f"={sep}equal")
        elif m.outcome == STRETCHED:
            missing = (m.size_a if m.stretched == "a" else m.size_b) is None
            texts[2].append(
                f"{STRETCH_GLYPH}{sep}new axis{sep}→ {m.result}"
                if missing
                else f"{STRETCH_GLYPH}{sep}stretch{sep}1 → {m.result}"
            )
        else:
            texts[2].append(f"✗{sep}clash")
        fills[2].append(_FILL[m.outcome])
        texts[3].append("✗" if m.result is None else str(m.result))
        fills[3].append(_FILL[CLASH] if m.result is None else _FILL["size"])

    style = current_style()
    cell_font = style.cell + 3 if not style.stack else style.cell
    fig = Draft()
    for r in range(4):
        for c in range(n):
            dark = fills[r][c] == _FILL[CLASH]
            fig.add_shape(
                type="rect",
                x0=c,
                x1=c + 1,
                y0=-r,
                y1=-r - 1,
                fillcolor=fills[r][c],
                line={"color": "#333333", "width": 2, "dash": "dot" if r == 2 else "solid"},
                layer="below",
            )
            fig.add_annotation(
                x=c + 0.5,
                y=-r - 0.5,
                text=texts[r][c],
                showarrow=False,
                font={"size": cell_font, "color": "white" if dark else "#111111"},
            )
    # invisible points give the axes their extent and hover text
    fig.add_trace(
        dict(
            type="scatter",
            x=[c + 0.5 for c in range(n)],
            y=[-0.5] * n,
            mode="markers",
            marker={"opacity": 0},
            hovertext=[m.explanation for m in alignment.axes],
            hoverinfo="text",
            showlegend=False,
        )
    )
    fig.update_xaxes(
        range=[0, n],
        tickmode="array",
        tickvals=[c + 0.5 for c in range(n)],
        ticktext=col_labels,
        side="top",
        showgrid=False,
        zeroline=False,
        fixedrange=True,
    )
    fig.update_yaxes(
        range=[-4.05, 0.05],
        tickmode="array",
        tickvals=[-r - 0.5 for r in range(4)],
        ticktext=row_labels,
        showgrid=False,
        zeroline=False,
        fixedrange=True,
    )
    verdict = f"broadcast to {alignment.result}" if alignment.ok else "do not broadcast (✗ clash)"
    sep = "<br>" if style.stack else " "
    base_layout(
        fig,
        title=title or "Shapes line up from the right",
        subtitle=f"{alignment.shape_a} vs {alignment.shape_b}:{sep}{verdict}",
        height=420 if not style.stack else 460,
    )
    if style.stack:  # a phone: short row names; the outcome row holds three lines
        fig.update_yaxes(ticktext=[_short(t) for t in row_labels])
        fig.update_layout(margin={"l": 6 * style.font, "t": 150 + 2 * style.font, "b": 20})
    else:
        fig.update_layout(margin={"l": 12 * style.font + 14, "t": 170 + style.font, "b": 30})
    text = (
        f"Alignment diagram: {alignment.name_a} {alignment.shape_a} above {alignment.name_b} "
        f"{alignment.shape_b}, right-aligned, one column per axis, then the outcome and the "
        f"result size. {alignment.explanation} Axis by axis: "
        + " ".join(m.explanation for m in alignment.axes)
    )
    return fig.describe(text)


alignment_figure = figure_builder(alignment_draft)  # the same arguments -> a go.Figure


def _short(label: str) -> str:
    """A row label short enough for a phone's margin."""
    return {"net_output": "x", "att_scores[..., None]": "w[…,None]"}.get(label, label)


@styled
def provenance_figure(prov: Provenance, *, zrange: tuple[float, float] | None = None) -> go.Figure:
    """weighted[b, h] as a sum of products: rows weight, value, product; one column per word,
    and a last column Σ with the total. The equation with the numbers is the subtitle."""
    t = len(prov.terms)
    weights = [term.weight for term in prov.terms]
    values = [term.value for term in prov.terms]
    products = [term.product for term in prov.terms]
    nan = float("nan")
    arr = np.array(
        [weights + [nan], values + [nan], products + [prov.total]], dtype=np.float64
    )  # (3, T+1)
    if zrange is None:
        zrange = shared_zrange([arr])
    zmin, zmax = zrange
    b, h = prov.b, prov.h
    style = current_style()
    rows = [f"att_scores[{b}, t]", f"net_output[{b}, t, {h}]", "product"]
    if style.stack:
        rows = [f"w[{b},t]", f"x[{b},t,{h}]", "w·x"]
    cols = [f"t = {i}" for i in range(t)] + ["Σ"]
    trace = heatmap_trace(
        arr,
        zmin=zmin,
        zmax=zmax,
        x_name="word",
        y_name="",
        x_labels=cols,
        y_labels=rows,
        name="provenance",
    )
    text = [list(r) for r in trace["text"]]
    text[0][t] = text[1][t] = ""
    text[2][t] = f"<b>{fmt(prov.total, 4)}</b>"
    if not style.stack:  # a phone's cells hold the number only (the row is named w·x)
        for i in range(t):  # the × and = of each column
            text[2][i] = f"= {text[2][i]}"
    trace["text"] = text
    fig = Draft(trace)
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False)
    fig.update_xaxes(side="top", showgrid=False, zeroline=False, title={"text": "word t"})
    fig.update_traces(hovertemplate="%{y}, %{x}: %{z:.4f}<extra></extra>")
    terms = prov.equation.split(" = ", 1)[1].rsplit(" = ", 1)[0].split(" + ")
    total = f"<b>{fmt(prov.total, 4)}</b>"
    if style.stack:  # a phone: one term a line
        eq = f"weighted[{b}, {h}] =<br>   " + " +<br>   ".join(terms) + f"<br>= {total}"
    else:
        chunks = [" + ".join(terms[i : i + 4]) for i in range(0, len(terms), 4)]
        eq = f"weighted[{b}, {h}] = " + " +<br>   ".join(chunks) + f" = {total}"
    eq_lines = eq.count("<br>") + 1
    fig.add_annotation(
        text=eq,
        xref="paper",
        yref="paper",
        x=0,
        y=0,
        yshift=-30,
        xanchor="left",
        yanchor="top",
        showarrow=False,
        align="left",
        font={"size": style.font},
    )
    base_layout(
        fig, title=f"Where weighted[{b}, {h}] comes from", subtitle=prov.formula, height=400
    )
    sub_lines = wrap_plain(prov.formula, PHONE_SUBTITLE_CHARS).count("<br>") if style.stack else 0
    line = style.font + 12
    fig.update_layout(
        height=3 * style.row_px + 8 * style.font + 160 + line * eq_lines + sub_lines * line,
        margin={
            "l": (6 if style.stack else 12) * style.font + 14,
            "t": 5 * style.font + 60 + sub_lines * line,
            "b": 40 + line * eq_lines,
        },
    )
    desc = (
        f"Provenance of weighted[{b}, {h}]: {prov.formula}. For each of the {t} words the figure "
        f"shows the weight, the value and their product; the last column is their sum. "
        f"{prov.equation}. The one-liner gives {fmt(prov.result, 4)}."
    )
    return fig.figure(desc)


@styled
def gradient_figure(
    grads: Gradients, *, part: str = "att_scores", zrange: tuple[float, float] | None = None
) -> go.Figure:
    """The backward pass. part="att_scores": upstream (B, H) | autograd's d/d att_scores (B, T) |
    the formula Σ_h net_output · upstream. part="net_output": autograd's d/d net_output (B, T, H),
    one panel per sentence, = att_scores[..., None] · upstream[:, None, :]."""
    if part == "net_output":
        ok = "matches" if grads.net_output_ok else "DOES NOT match"
        fig = tensor_figure(
            grads.net_output,
            title="Gradient of net_output",
            subtitle=(
                f"autograd {ok} <b>{escape(grads.net_output_code)}</b> (largest difference "
                f"{grads.net_output_max_abs_diff:.1e})"
            ),
            zrange=zrange or shared_zrange([grads.net_output, grads.upstream]),
            name="grad net_output",
        )
        text = (
            f"Gradient of the loss with respect to net_output, shape "
            f"{tuple(grads.net_output.shape)}, from autograd. It {ok} the formula "
            f"{grads.net_output_code} (largest difference {grads.net_output_max_abs_diff:.1e}). "
            f"{grads.explanation} " + fig.layout.meta["description"]
        )
        return describe(fig, text)
    if part != "att_scores":
        raise AttnvizError(f"part must be 'att_scores' or 'net_output', got {part!r}.")
    up = to_numpy(grads.upstream)
    auto = to_numpy(grads.att_scores)
    formula = to_numpy(grads.att_scores_formula)
    if zrange is None:
        zrange = shared_zrange([up, auto, formula])
    zmin, zmax = zrange
    ok = "matches" if grads.att_scores_ok else "DOES NOT match"
    style = current_style()
    titles = [
        "upstream d loss / d weighted",
        "autograd: att_scores.grad",
        f"formula: {escape(grads.att_scores_code)}",
    ]
    if style.stack:  # a phone: the formula's code wrapped, more room above each panel for it
        titles[2] = "<br>".join(wrap_escaped(f"formula: {grads.att_scores_code}", 34))
        fig = Draft.grid(rows=3, cols=1, subplot_titles=titles, vertical_spacing=0.2)
    else:
        fig = Draft.grid(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.08)
    panels = ((up, "hidden"), (auto, "word"), (formula, "word"))
    for i, (arr, x_name) in enumerate(panels):
        rc = {"row": i + 1, "col": 1} if style.stack else {"row": 1, "col": i + 1}
        fig.add_trace(
            heatmap_trace(
                arr,
                zmin=zmin,
                zmax=zmax,
                x_name=x_name,
                y_name="sentence",
                show_scale=i == 0,
                name=["upstream", "autograd", "formula"][i],
            ),
            **rc,
        )
        fig.update_xaxes(title={"text": x_name}, **rc)
        fig.update_yaxes(title={"text": "sentence" if i == 0 or style.stack else ""}, **rc)
    fig.update_xaxes(showgrid=False, zeroline=False, tickmode="linear", dtick=1)
    fig.update_yaxes(
        showgrid=False, zeroline=False, tickmode="linear", dtick=1, autorange="reversed"
    )
    for annotation in fig.annotations[:3]:
        annotation["font"] = {"size": max(style.font - 2, 12)}
    height = 6 * style.font + 4 * style.title + 60 + style.row_px * max(up.shape[0], 2)
    if style.stack:
        height = 3 * (style.row_px * max(up.shape[0], 2) + 6 * style.font) + 10 * style.font
    base_layout(
        fig,
        title="Gradient of att_scores: the broadcast becomes a sum",
        subtitle=(
            f"autograd {ok} the formula (largest difference {grads.att_scores_max_abs_diff:.1e})"
        ),
        height=height,
    )
    square_cells(fig)
    text = (
        f"Gradient of the loss with respect to att_scores, shape {tuple(auto.shape)}. Left: the "
        f"upstream gradient, shape {tuple(up.shape)}, {range_text(up)}. Middle: autograd's "
        f"att_scores.grad, {range_text(auto)}. Right: the formula {grads.att_scores_code}; "
        f"autograd {ok} it (largest difference {grads.att_scores_max_abs_diff:.1e}). "
        f"{grads.explanation}"
    )
    return fig.figure(text)


@styled
def view_copy_figure(vc: ViewCopy) -> go.Figure:
    """expand vs repeat: a table of shape, strides, memory and new bytes, and a bar chart of how
    many numbers each really stores."""
    rows = (vc.source, vc.expand, vc.repeat)
    style = current_style()
    if style.stack:  # a phone: the table above the bars
        fig = Draft.grid(
            rows=2,
            cols=1,
            row_heights=[0.55, 0.45],
            specs=[[{"type": "table"}], [{"type": "xy"}]],
            vertical_spacing=0.08,
        )
        bars = {"row": 2, "col": 1}
    else:
        fig = Draft.grid(
            rows=1,
            cols=2,
            column_widths=[0.62, 0.38],
            specs=[[{"type": "table"}, {"type": "xy"}]],
            horizontal_spacing=0.1,
        )
        bars = {"row": 1, "col": 2}
    line = style.small + 10  # one line of a table cell
    header = [
        "<b>code</b>",
        "<b>shape</b>",
        "<b>strides</b>",
        "<b>same memory as att_scores?</b>",
        "<b>new bytes</b>",
    ]
    columns = [
        [f"<b>{escape(r.code)}</b>" for r in rows],
        [str(r.shape) for r in rows],
        [str(r.strides) for r in rows],
        ["✓ yes (a view)" if r.same_memory else "✗ no (a copy)" for r in rows],
        [str(r.new_bytes) for r in rows],
    ]
    widths = [40, 14, 14, 18, 12]
    if style.stack:  # a phone: two columns, the facts of each tensor in one cell
        header = ["<b>code</b>", "<b>shape, strides, memory</b>"]
        columns = [
            ["<br>".join(wrap_escaped(r.code, 16)) for r in rows],
            [
                f"{r.shape}<br>strides {r.strides}<br>"
                + (
                    f"a view, {r.new_bytes} new bytes"
                    if r.same_memory
                    else f"a copy, {r.new_bytes} new bytes"
                )
                for r in rows
            ],
        ]
        widths = [50, 50]
    fig.add_trace(
        dict(
            type="table",
            columnwidth=widths,
            header={
                "values": header,
                "font": {"size": max(style.font - 2, 12)},
                "fill": {"color": "#d9d9d9"},
                "align": "left",
                "height": line * (1 if style.stack else 2),
            },
            cells={
                "values": columns,
                "font": {"size": style.small},
                "fill": {"color": [["#ffffff", "#d9e7f5", "#fdd49e"]] * len(columns)},
                "align": "left",
                "height": line * (3 if style.stack else 2),
            },
        ),
        row=1,
        col=1,
    )
    labels = ["att_scores<br>[..., None]", "expand", "repeat"]  # two lines: clear of the axis
    stored = [r.storage_numbers for r in rows]
    fig.add_trace(
        dict(
            type="bar",
            x=labels,
            y=stored,
            text=[
                f"{n} numbers<br>{r.new_bytes} new bytes" for n, r in zip(stored, rows, strict=True)
            ],
            textposition="outside",
            marker={
                "color": ["#92c5de", "#2166ac", "#b35806"],
                "pattern": {"shape": ["", "", "/"]},
            },
            showlegend=False,
            cliponaxis=False,
            textfont={"size": style.small},
        ),
        **bars,
    )
    fig.update_yaxes(title={"text": "numbers in memory"}, range=[0, max(stored) * 1.35], **bars)
    fig.update_xaxes(tickfont={"size": style.small}, **bars)
    e = vc.expand
    sep = "<br>" if style.stack else "; "
    base_layout(
        fig,
        title="expand is a view, repeat is a copy",
        subtitle=f"both {e.shape}{sep}expand's stride 0 re-reads memory, repeat copies it",
        height=440 if style is not PROJECTOR else 620,
    )
    if style.stack:
        # no colour bar here: the bottom margin without base_layout's bar_room
        fig.update_layout(height=860, margin={"l": 44, "r": 8, "b": 30 + 2 * style.font})
    return fig.figure("View vs copy. " + vc.explanation)
