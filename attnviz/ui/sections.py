"""The Playground's sections (one tab each), drawn only when their tab is open.

Every section takes the current example as tensors: x (B, T, H), w (B, T) raw scores, mask (B, T)
or None, normalize None or "softmax"; the story is told with the weights actually applied
(``attnviz.attention_weights``). Library calls are cached here, keyed by the arrays' contents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

import attnviz
from attnviz import figures, trace
from attnviz.ui import _controls, export, expression, link

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
PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2, "filename": "attnviz"},
}


def show_figure(fig: go.Figure, key: str) -> None:
    """A figure with its text description beside it (the camera icon saves a PNG)."""
    st.plotly_chart(fig, key=key, config=PLOT_CONFIG, width="stretch", theme=None)
    st.caption(figures.description(fig))


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


# ---- cached library calls (keyed by the arrays' contents) ------------------------------------


@st.cache_resource(max_entries=16, show_spinner=False)
def _steps(x: np.ndarray, w: np.ndarray) -> tuple[list[trace.Step], tuple[float, float]]:
    steps = trace.broadcast_steps(torch.from_numpy(x), torch.from_numpy(w))
    return steps, figures.shared_zrange(steps)


@st.cache_resource(max_entries=64, show_spinner=False)
def _step_figure(x: np.ndarray, w: np.ndarray, i: int) -> go.Figure:
    steps, zrange = _steps(x, w)
    return figures.step_figure(steps[i], zrange=zrange)


@st.cache_resource(max_entries=32, show_spinner=False)
def _provenance(x: np.ndarray, w: np.ndarray, b: int, h: int) -> tuple[trace.Provenance, go.Figure]:
    prov = trace.provenance(torch.from_numpy(x), torch.from_numpy(w), b, h)
    _, zrange = _steps(x, w)
    return prov, figures.provenance_figure(prov, zrange=zrange)


@st.cache_resource(max_entries=16, show_spinner=False)
def _mistakes(x: np.ndarray, w: np.ndarray) -> tuple[list[trace.Mistake], go.Figure]:
    items = trace.mistakes(torch.from_numpy(x), torch.from_numpy(w))
    return items, figures.mistakes_figure(items)


@st.cache_resource(max_entries=32, show_spinner=False)
def _mistake_figure(x: np.ndarray, w: np.ndarray, i: int) -> go.Figure:
    items, _ = _mistakes(x, w)
    return figures.mistake_figure(items[i])


@st.cache_resource(max_entries=16, show_spinner=False)
def _gradients(x: np.ndarray, w: np.ndarray, part: str) -> tuple[trace.Gradients, go.Figure]:
    grads = trace.gradients(torch.from_numpy(x), torch.from_numpy(w))
    return grads, figures.gradient_figure(grads, part=part)


@st.cache_resource(max_entries=16, show_spinner=False)
def _view_copy(w: np.ndarray, h: int) -> tuple[trace.ViewCopy, go.Figure]:
    vc = trace.view_vs_copy(torch.from_numpy(w), h)
    return vc, figures.view_copy_figure(vc)


# ---- the sections ----------------------------------------------------------------------------


def _applied(w: torch.Tensor, mask: torch.Tensor | None, normalize: str | None) -> torch.Tensor:
    return attnviz.attention_weights(w, mask=mask, normalize=normalize)  # (B, T)


def _note(mask: torch.Tensor | None, normalize: str | None) -> None:
    if mask is not None or normalize:
        st.caption(
            "Here `att_scores` means the weights actually applied (after the softmax and the mask)."
        )


def steps_section(x: np.ndarray, w: np.ndarray) -> None:
    """The one-liner step by step: Back/Next or all at once, shape and strides on every step."""
    steps, _ = _steps(x, w)
    index, show_all = _controls.step_controls(len(steps))
    rows = [
        {
            "#": i + 1,
            "step": s.title,
            "code": s.code,
            "shape": str(s.shape),
            "strides": "" if s.strides is None else str(s.strides),
            "new bytes": "" if s.new_bytes is None else str(s.new_bytes),
        }
        for i, s in enumerate(steps)
    ]
    shown = range(len(steps)) if show_all else [index]
    for i in shown:
        s = steps[i]
        strides = "" if s.strides is None else f", strides `{s.strides}`"
        st.markdown(f"**{i + 1}. {s.title}**: `{s.code}` → shape `{s.shape}`{strides}")
        st.markdown(s.explanation)
        show_figure(_step_figure(x, w, i), key=f"pg_fig_step_{i}")
    with st.expander("Every step's shape and strides", expanded=True):
        st.dataframe(pd.DataFrame(rows).set_index("#"), width="stretch")


@st.cache_resource(max_entries=16, show_spinner=False)
def _result_figure(x: np.ndarray, w: np.ndarray) -> go.Figure:
    steps, zrange = _steps(x, w)
    result = steps[-1].value  # (B, H)
    fig = figures.tensor_figure(
        result,
        title="weighted: click a cell",
        axis_names=("sentence", "hidden"),
        zrange=zrange,
        name="weighted",
    )
    # heatmaps can't be selected by a click; invisible markers on the cell centres can
    b, h = result.shape
    fig.add_scatter(
        x=[j for _ in range(b) for j in range(h)],
        y=[i for i in range(b) for _ in range(h)],
        mode="markers",
        marker={"size": 36, "opacity": 0, "symbol": "square"},
        hovertemplate="weighted[%{y}, %{x}]: click to see its sum<extra></extra>",
        showlegend=False,
    )
    fig.update_layout(clickmode="event+select", dragmode=False)
    return fig


def _on_pick() -> None:
    """A click on the result heatmap picks that cell (x = hidden h, y = sentence b)."""
    event = st.session_state.get("pg_pick")
    points = event.get("selection", {}).get("points", []) if event else []
    if points:
        x, y = points[0].get("x"), points[0].get("y")
        if isinstance(x, int) and isinstance(y, int):
            st.session_state["pg_cell_b"], st.session_state["pg_cell_h"] = y, x


def cell_section(x: np.ndarray, w: np.ndarray) -> None:
    """Pick a result cell (b, h), by clicking it or with the two boxes: its sum of products."""
    b, _, h = x.shape
    left, right = st.columns([1, 1.4], gap="large")
    with left:
        st.markdown(
            "Click a cell of `weighted`, or pick it here, to see where its number comes from."
        )
        sb, sh = _controls.cell_controls(b, h)
        prov, fig = _provenance(x, w, sb, sh)
        st.markdown(f"`{prov.formula}`")
        st.code(prov.equation, language=None, wrap_lines=True)
    with right:
        result = _result_figure(x, w)
        st.plotly_chart(
            result,
            key="pg_pick",
            on_select=_on_pick,
            selection_mode="points",
            config=PLOT_CONFIG,
            width="stretch",
            theme=None,
        )
    show_figure(fig, key="pg_fig_cell")


def forms_section(
    x: torch.Tensor, w: torch.Tensor, mask: torch.Tensor | None, normalize: str | None
) -> None:
    """Every method in attnviz.METHODS on the current example, checked against the float64 oracle."""
    checks = attnviz.compare_methods(x, w, mask=mask, normalize=normalize)
    rows = [
        {
            "method": c.method,
            "how": c.summary,
            "shape": str(tuple(c.result.shape)),
            "largest difference from float64": f"{c.max_abs_diff:.1e}",
            "agrees": "✓" if c.ok else "✗",
        }
        for c in checks
    ]
    st.markdown(
        f"Every form computes the same `weighted` {tuple(checks[0].result.shape)}; each is checked against a "
        "float64 reference on the numbers above."
    )
    st.dataframe(pd.DataFrame(rows).set_index("method"), width="stretch")


def mistakes_section(x: np.ndarray, w: np.ndarray) -> None:
    """The gallery of wrong forms, run live; the silent trap beside the right answer."""
    items, overview = _mistakes(x, w)
    show_figure(overview, key="pg_fig_mistakes")
    labels = [f"{m.code}  ({m.outcome})" for m in items]
    i = st.selectbox(
        "Look closer at one form",
        range(len(items)),
        index=next((i for i, m in enumerate(items) if m.silent), 0),
        format_func=labels.__getitem__,
        key="pg_mistake",
    )
    m = items[i]
    st.markdown(f"#### `{m.code}`: {m.outcome}")
    st.markdown(m.explanation)
    if m.error:
        st.code(m.error, language=None, wrap_lines=True)
    if m.variant_note:
        st.caption(m.variant_note)
    show_figure(_mistake_figure(x, w, i), key="pg_fig_mistake")


def grad_section(x: np.ndarray, w: np.ndarray) -> None:
    """The backward pass: the broadcast becomes a sum, the sum becomes a broadcast."""
    _controls.remembered("pg_grad_part", "att_scores")
    part = st.segmented_control(
        "Gradient of", ["att_scores", "net_output"], required=True, key="pg_grad_part"
    )
    _controls.remember("pg_grad_part")
    grads, fig = _gradients(x, w, part)
    st.markdown(grads.explanation)
    code = grads.att_scores_code if part == "att_scores" else grads.net_output_code
    ok = grads.att_scores_ok if part == "att_scores" else grads.net_output_ok
    gap = grads.att_scores_max_abs_diff if part == "att_scores" else grads.net_output_max_abs_diff
    st.markdown(
        f"Formula: `{code}` — {'matches' if ok else 'does NOT match'} autograd "
        f"(largest difference {gap:.1e}). The loss is `weighted.sum()`, so upstream is all ones."
    )
    show_figure(fig, key="pg_fig_grad")


def view_section(w: np.ndarray, h: int) -> None:
    """expand (a stride-0 view, 0 bytes) beside repeat (a real copy)."""
    vc, fig = _view_copy(w, h)
    st.markdown(vc.explanation)
    rows = [
        {
            "code": lay.code,
            "shape": str(lay.shape),
            "strides": str(lay.strides),
            "shares memory with att_scores": "yes" if lay.same_memory else "no",
            "new bytes": lay.new_bytes,
            "numbers stored": lay.storage_numbers,
        }
        for lay in (vc.source, vc.expand, vc.repeat)
    ]
    st.dataframe(pd.DataFrame(rows).set_index("code"), width="stretch")
    show_figure(fig, key="pg_fig_view")


EXPRESSIONS = (
    "(net_output * att_scores[..., None]).sum(axis=1)",
    "net_output * att_scores",
    "att_scores[..., None]",
    "att_scores[:, None]",
    "(net_output * att_scores[..., None]).sum(axis=0)",
    'einsum("bth,bt->bh", net_output, att_scores)',
    "att_scores[:, None, :] @ net_output",
)
MAX_EXPR_CHARS = link.MAX_EXPR_CHARS


def render(
    key: str, x: torch.Tensor, w: torch.Tensor, mask: torch.Tensor | None, normalize: str | None
) -> None:
    """Draw the section named key (see TABS) for the current example."""
    if key == "share":
        return  # drawn by the page once the link is known
    if key == "expr":
        expression.section(x, w, mask, normalize)
        return
    applied = _applied(w, mask, normalize)
    xa, wa = _np(x), _np(applied).astype(np.float32)
    _note(mask, normalize)
    if key == "steps":
        steps_section(xa, wa)
    elif key == "cell":
        cell_section(xa, wa)
    elif key == "forms":
        forms_section(x, w, mask, normalize)
    elif key == "mistakes":
        mistakes_section(xa, wa)
    elif key == "grad":
        grad_section(xa, wa)
    elif key == "view":
        view_section(wa, int(x.shape[2]))


def share(
    x: torch.Tensor,
    w: torch.Tensor,
    mask: torch.Tensor | None,
    normalize: str | None,
    params: dict[str, str],
) -> None:
    """The link, the PyTorch snippet, the tensors as JSON/.npy and the figures as HTML."""
    from urllib.parse import urlencode

    base = st.context.url or ""
    st.markdown("**Link to exactly this example, options and step** (also in the address bar):")
    st.code(f"{base}?{urlencode(params)}", language=None, wrap_lines=True)
    st.markdown("**Rebuild it in plain PyTorch** (copy with the icon at the top right):")
    xn, wn = _np(x), _np(w)
    mn = None if mask is None else _np(mask)
    st.code(export.pytorch_snippet(xn, wn, mn, normalize == "softmax"), language="python")
    weighted = _np(attnviz.weighted_sum(x, w, mask=mask, normalize=normalize))
    st.markdown("**Download**")
    cols = st.columns(4)
    cols[0].download_button(
        "Tensors (JSON)",
        export.tensors_json(
            {"net_output": xn, "att_scores": wn, "mask": mn, "weighted": weighted},
            normalize=normalize,
        ),
        file_name="attnviz_example.json",
        mime="application/json",
        key="pg_dl_json",
        on_click="ignore",
    )
    for col, (name, a) in zip(
        cols[1:], (("net_output", xn), ("att_scores", wn), ("weighted", weighted)), strict=True
    ):
        col.download_button(
            f"{name}.npy",
            export.npy_bytes(a),
            file_name=f"{name}.npy",
            mime="application/octet-stream",
            key=f"pg_dl_{name}",
            on_click="ignore",
        )
    applied = _applied(w, mask, normalize)
    xa, wa = xn, _np(applied).astype(np.float32)
    steps, _ = _steps(xa, wa)
    i = min(int(st.session_state.get("pg_step", 0)), len(steps) - 1)
    fig = _step_figure(xa, wa, i)
    st.download_button(
        f"Figure of step {i + 1}, {steps[i].title} (self-contained HTML, works offline)",
        figures.figure_html(fig),
        file_name=f"attnviz_step{i + 1}.html",
        mime="text/html",
        key="pg_dl_html",
        on_click="ignore",
    )
    st.caption("Every figure saves itself as a PNG with the camera icon in its top-right corner.")
