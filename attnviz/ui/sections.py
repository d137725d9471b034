"""The Playground's sections (one tab each), drawn only when their tab is open.

Every section takes the example on screen as one typed value (``current.Current``: numpy arrays
and the weights actually applied) and shows what ``attnviz.ui.cached`` returns for it: text, rows
and figure specs, never tensors. The sections a visitor steps through (step by step, one result
cell, mistakes, gradients) are ``st.fragment``s: "Next", a picked cell or a picked mistake reruns
that section only, not the page (the address bar is kept up to date by ``on_change``, see
``playground.sync_link``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from attnviz import figures
from attnviz.ui import _controls, cached, edit, export, expression, figure, link
from attnviz.ui.boundary import callback
from attnviz.ui.current import Current

TABS: tuple[tuple[str, str], ...] = (
    ("steps", "Step by step"),
    ("cell", "One result cell"),
    ("forms", "Equivalent forms"),
    ("mistakes", "Mistakes"),
    ("grad", "Gradients"),
    ("view", "Expand vs repeat"),
    ("expr", "Your expression"),
    ("share", "Share & export"),
)
PLOT_CONFIG = figure.PLOT_CONFIG

# What a fragment calls with the example after it reruns alone, so that the address bar follows
# (the page registers playground.sync_link; a function of the example and session state only).
_after_fragment: list[Callable[[Current], object]] = []


def after_fragment(sync: Callable[[Current], object]) -> None:
    """Register what runs after a section reran on its own (not during a page run)."""
    _after_fragment[:] = [sync]


def show_figure(fig: go.Figure, key: str) -> None:
    """A figure with its name, summary and numbers (``figure.show``; the camera icon saves a PNG)."""
    figure.show(fig, key)


def _style() -> str:
    """The figures' style for the screen the browser reported (``playground.page`` keeps its
    name in ``pg_style``: "screen", "projector" or "phone")."""
    name = st.session_state.get("pg_style")
    return name if name in cached.STYLES else figures.SCREEN.name


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def _note(ex: Current) -> None:
    if not ex.plain:
        st.caption(
            "Here `att_scores` means the weights actually applied (after the softmax and the mask)."
        )


def _synced(fn: Callable[..., None]) -> Callable[..., None]:
    """A fragment that, once drawn, lets the page bring the address bar up to date."""

    @functools.wraps(fn)
    def run(ex: Current) -> None:
        fn(ex)
        if st.session_state.get("pg_page_done"):  # the page is not running: a fragment rerun
            for sync in _after_fragment:
                sync(ex)

    return run


def numbers_markdown(values: np.ndarray, axis: str, cols: list[str]) -> str:
    """A read-only table of numbers (R, C), all with four decimals, as Markdown, its rows numbered
    0..R-1 under the axis's name as in the editors: our own labels and formatted numbers only,
    never a visitor's text."""
    lines = [f"| {axis} | " + " | ".join(cols) + " |", "|--:|" + "--:|" * len(cols)]
    for i, row in enumerate(np.asarray(values, dtype=np.float64) + 0.0):
        lines.append(f"| {i} | " + " | ".join(f"{v:.4f}" for v in row) + " |")
    return "\n".join(lines)


# ---- the sections ------------------------------------------------------------------------------


def _steps_table(ex: Current) -> None:
    with st.expander("Every step's shape and strides", expanded=True, key="pg_steps_table"):
        st.markdown(cached.steps_table(ex.x, ex.applied))  # our own text: codes and shapes


@st.fragment
@_synced
def _steps_body(ex: Current) -> None:
    steps = cached.steps(ex.x, ex.applied)
    index, show_all = _controls.step_controls(len(steps))
    shown = range(len(steps)) if show_all else [index]
    if not show_all:  # said once in the page's live region (figure.announce)
        s = steps[index]
        figure.announce(f"Step {index + 1} of {len(steps)}: {s.title}, shape {s.shape}.", "step")
    for i in shown:
        s = steps[i]
        strides = f", strides `{s.strides}`" if s.strides else ""
        # the step's heading and its explanation in one element (an edit redraws them for
        # every student of a class)
        head = f"**{i + 1}. {s.title}**: `{s.code}` → shape `{s.shape}`{strides}"
        st.markdown(f"{head}\n\n{s.explanation}")
        style = _style()
        cached.show(cached.step_figure(ex.x, ex.applied, i, style), f"pg_fig_step_{i}", style=style)


def _trap_note(ex: Current) -> None:
    """Where T == H: the trap form runs without an error here; what it computes, run by torch."""
    view = cached.trap(ex.x, ex.applied)
    if view is None:
        return
    b, t, h = ex.shape
    cols = edit.col_labels("h", h)
    what = (
        "It gives a result of the right shape "
        f"{(b, h)} and the wrong numbers: word k's weight multiplies hidden feature k."
        if view.wrong
        else "Here it even gives the right numbers, because every word's weight is the same: "
        "change one weight and it goes wrong without a word."
    )
    with st.container(border=True, key="pg_trap"):
        st.markdown(
            f"**Careful: here T = H = {t}, so `{view.code}` would not raise an error.** "
            f"`att_scores[:, None]` is {(b, 1, t)}; against `net_output` {(b, t, h)} its {t} "
            f"words line up with the {h} hidden features. {what}\n\n"
            "What it would compute:\n\n" + numbers_markdown(view.value, "sentence", cols)
        )
        if view.wrong:
            st.caption("The right `weighted`, for comparison:")
            st.markdown(numbers_markdown(view.expected, "sentence", cols))


def steps_section(ex: Current) -> None:
    """The one-liner step by step: Back/Next or all at once, shape and strides on every step.
    Back/Next rerun only the step (a fragment); the table of every step is drawn once. Where
    T == H, a note says what the trap form would compute (``_trap_note``)."""
    _trap_note(ex)
    _steps_body(ex)
    _steps_table(ex)


def _on_pick() -> None:
    """A click on the result heatmap picks that cell (x = hidden h, y = sentence b)."""
    event = st.session_state.get("pg_pick")
    points = event.get("selection", {}).get("points", []) if isinstance(event, dict) else []
    if points and isinstance(points[0], dict):
        x, y = points[0].get("x"), points[0].get("y")
        if type(x) is int and type(y) is int and x >= 0 and y >= 0:
            st.session_state["pg_cell_b"], st.session_state["pg_cell_h"] = y, x


@st.fragment
@_synced
def cell_section(ex: Current) -> None:
    """Pick a result cell (b, h), by clicking it or with the two boxes: its sum of products."""
    b, _, h = ex.shape
    left, right = st.columns([1, 1.4], gap="large")
    with left:
        st.markdown(
            "Click a cell of `weighted`, or pick it here, to see where its number comes from."
        )
        sb, sh = _controls.cell_controls(b, h)
        view = cached.cell(ex.x, ex.applied, sb, sh, _style())
        st.markdown(f"`{view.formula}`")
        st.text(view.equation)  # a plain block: no copy icon over the numbers
    with right:
        result = cached.result_figure(ex.x, ex.applied, _style())
        figure.show(
            cached.figure(result),
            "pg_pick",
            summary=result.description,
            style=_style(),
            on_select=callback(_on_pick, "pg_"),
            selection_mode="points",
        )
    cached.show(view.figure, key="pg_fig_cell", style=_style())


def forms_section(ex: Current) -> None:
    """Every method in attnviz.METHODS on the current example, checked against the float64 oracle."""
    rows = cached.forms(ex.x, ex.w, ex.mask, ex.softmax)
    st.markdown(
        f"Every form computes the same `weighted` {rows[0]['shape']}; each is checked against a "
        "float64 reference on the numbers above."
    )
    st.dataframe(pd.DataFrame(rows).set_index("method"), width="stretch")


@st.fragment
@_synced
def mistakes_section(ex: Current) -> None:
    """The gallery of wrong forms, run live; the silent trap beside the right answer."""
    items, overview = cached.mistakes(ex.x, ex.applied, _style())
    cached.show(overview, key="pg_fig_mistakes", style=_style())
    labels = [f"{m.code}  ({m.outcome})" for m in items]
    _controls.choose("pg_mistake", range(len(items)), 0)
    i = st.selectbox(
        "Look closer at one form",
        range(len(items)),
        index=next((i for i, m in enumerate(items) if m.silent), 0),
        format_func=labels.__getitem__,
        key="pg_mistake",
    )
    m = items[i]
    st.markdown(f"### `{m.code}`: {m.outcome}")
    st.markdown(m.explanation)
    if m.error:
        st.code(m.error, language=None, wrap_lines=True)
    if m.variant_note:
        st.caption(m.variant_note)
    fig = cached.mistake_figure(ex.x, ex.applied, i, _style())
    cached.show(fig, key="pg_fig_mistake", style=_style())


@st.fragment
@_synced
def grad_section(ex: Current) -> None:
    """The backward pass: the broadcast becomes a sum, the sum becomes a broadcast."""
    parts = ["att_scores", "net_output"]
    _controls.choose("pg_grad_part", parts, "att_scores")
    start = _controls.held("pg_grad_part", "att_scores", lambda v: v in parts)
    part = st.segmented_control(
        "Gradient of", parts, default=start, required=True, key="pg_grad_part"
    )  # default: see held
    _controls.drawn("pg_grad_part", start)
    g = cached.gradients(ex.x, ex.applied, part, _style())
    st.markdown(g.explanation)
    st.markdown(
        f"Formula: `{g.code}` — {'matches' if g.ok else 'does NOT match'} autograd "
        f"(largest difference {g.max_abs_diff:.1e}). The loss is `weighted.sum()`, so upstream "
        "is all ones."
    )
    cached.show(g.figure, key="pg_fig_grad", style=_style())


def view_section(ex: Current) -> None:
    """expand (a stride-0 view, 0 bytes) beside repeat (a real copy)."""
    vc = cached.view_copy(ex.applied, ex.shape[2], _style())
    st.markdown(vc.explanation)
    cached.show(vc.figure, key="pg_fig_view", style=_style())


_SECTIONS: dict[str, Callable[[Current], None]] = {
    "steps": steps_section,
    "cell": cell_section,
    "forms": forms_section,
    "mistakes": mistakes_section,
    "grad": grad_section,
    "view": view_section,
}


def render(key: str, ex: Current) -> None:
    """Draw the section named key (see TABS) for the current example."""
    if key == "share":
        return  # drawn by the page once the link is known
    if key == "expr":
        mask = None if ex.mask is None else torch.from_numpy(ex.mask)
        expression.section(torch.from_numpy(ex.x), torch.from_numpy(ex.w), mask, ex.normalize)
        return
    _note(ex)
    _SECTIONS[key](ex)


def _registered_elsewhere() -> None:
    """A page link's target names the page by its url_path only; the page itself (what runs) is
    the one attnviz.ui.navigation registers at that path."""


def share(ex: Current, params: dict[str, str]) -> None:
    """The link, the PyTorch snippet, the tensors as JSON/.npy and the figures as HTML. Every
    download is built when it is clicked (a callable), not on each rerun."""
    from urllib.parse import urlencode

    base = (st.context.url or "").split("?")[0]
    st.markdown("**Link to exactly this example, options and step** (also in the address bar):")
    st.code(f"{base}?{urlencode(params)}", language=None, wrap_lines=True)
    walk = link.walkthrough_params(params)
    st.page_link(
        st.Page(_registered_elsewhere, title="Walkthrough", url_path="walkthrough"),
        label="Open in the Walkthrough",
        icon=":material/slideshow:",
        query_params=walk,
    )
    st.caption("The same example as slides for a projector; its link:")
    st.code(
        f"{link.sibling(base, 'walkthrough')}?{urlencode(walk)}", language=None, wrap_lines=True
    )
    st.markdown("**Rebuild it in plain PyTorch** (copy with the icon at the top right):")
    st.code(export.pytorch_snippet(ex.x, ex.w, ex.mask, ex.softmax), language="python")
    st.markdown("**Download**")
    cols = st.columns(4)
    tensors = {"net_output": ex.x, "att_scores": ex.w, "mask": ex.mask, "weighted": ex.weighted}
    cols[0].download_button(
        "Tensors (JSON)",
        functools.partial(export.tensors_json, tensors, normalize=ex.normalize),
        file_name="attnviz_example.json",
        mime="application/json",
        key="pg_dl_json",
        on_click="ignore",
    )
    for col, (name, a) in zip(
        cols[1:],
        (("net_output", ex.x), ("att_scores", ex.w), ("weighted", ex.weighted)),
        strict=True,
    ):
        col.download_button(
            f"{name}.npy",
            functools.partial(export.npy_bytes, a),
            file_name=f"{name}.npy",
            mime="application/octet-stream",
            key=f"pg_dl_{name}",
            on_click="ignore",
        )
    steps = cached.steps(ex.x, ex.applied)
    i = min(int(st.session_state.get("pg_step", 0)), len(steps) - 1)
    st.download_button(
        f"Figure of step {i + 1}, {steps[i].title} (self-contained HTML, works offline)",
        functools.partial(cached.step_html, ex.x, ex.applied, i),
        file_name=f"attnviz_step{i + 1}.html",
        mime="text/html",
        key="pg_dl_html",
        on_click="ignore",
    )
    st.caption("Every figure saves itself as a PNG with the camera icon in its top-right corner.")
