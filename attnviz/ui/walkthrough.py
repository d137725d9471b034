"""The Walkthrough: the lesson as slides for a projector, one narration and one figure each.

The slide number lives in the URL (``?slide=4``) so a teacher can hand out a link to a slide.
Every narration comes from the library (the steps' explanations), computed on the classic example.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from attnviz import examples, figures, trace
from attnviz.ui.safe import inert
from attnviz.ui.sections import PLOT_CONFIG

_LARGE_TYPE = """
<style>
.st-key-wt_narration p, .st-key-wt_narration li { font-size: 1.55rem; line-height: 1.45; }
.st-key-wt_narration code { font-size: 1.4rem; }
.st-key-wt_title h2 { font-size: 2.4rem; }
</style>
"""


@dataclass(frozen=True)
class Slide:
    """One slide: a title, the code it is about, a narration (markdown) and its figure."""

    title: str
    code: str
    narration: str
    figure: Callable[[], go.Figure]


@st.cache_resource(show_spinner=False)
def slides() -> list[Slide]:
    """The lesson on the classic example: the broadcast story, then one cell, the silent trap,
    the gradient and the cost of a stretch."""
    x, w = examples.classic()  # (2, 3, 5), (2, 3)
    b, t, h = x.shape
    steps = trace.broadcast_steps(x, w)
    zrange = figures.shared_zrange(steps)
    out = [
        Slide(
            s.title,
            s.code,
            s.explanation,
            (lambda s=s: figures.step_figure(s, zrange=zrange)),
        )
        for s in steps
    ]
    prov = trace.provenance(x, w, 0, 0)
    out.append(
        Slide(
            "Where one number comes from",
            prov.formula,
            f"Each cell of `weighted` is a weighted sum over the {t} words of one sentence:\n\n"
            f"`{prov.equation}`",
            lambda: figures.provenance_figure(prov, zrange=zrange),
        )
    )
    trap = next((m for m in trace.mistakes(x, w) if m.silent), None)
    if trap is not None:
        note = f"\n\n{trap.variant_note}" if trap.variant_note else ""
        out.append(
            Slide(
                f"The silent trap: {trap.title}",
                trap.code,
                trap.explanation + note,
                lambda: figures.mistake_figure(trap),
            )
        )
    grads = trace.gradients(x, w)
    out.append(
        Slide(
            "Backward: the stretch becomes a sum",
            grads.att_scores_code,
            grads.explanation,
            lambda: figures.gradient_figure(grads, part="att_scores"),
        )
    )
    vc = trace.view_vs_copy(w, h)
    out.append(
        Slide(
            "A stretch costs nothing: expand vs repeat",
            f"{vc.expand.code}  vs  {vc.repeat.code}",
            vc.explanation,
            lambda: figures.view_copy_figure(vc),
        )
    )
    return out


@st.cache_resource(max_entries=32, show_spinner=False)
def _figure(i: int) -> go.Figure:
    return slides()[i].figure()


def _slide_from_url(n: int) -> tuple[int, str | None]:
    text = st.query_params.get("slide")
    if text is None:
        return 1, None
    if text.isdigit() and 1 <= int(text) <= n:
        return int(text), None
    return (
        1,
        inert(
            f"The link asks for slide {text[:12]!r}; there are slides 1 to {n}. Starting at slide 1."
        ),
    )


def page() -> None:
    """The Walkthrough page."""
    deck = slides()
    n = len(deck)
    ss = st.session_state
    if not ss.get("wt_ready"):
        ss["wt_slide"], ss["wt_notice"] = _slide_from_url(n)
        ss["wt_ready"] = True
    ss["wt_slide"] = min(max(int(ss["wt_slide"]), 1), n)

    def move(delta: int) -> None:
        ss["wt_slide"] = min(max(ss["wt_slide"] + delta, 1), n)

    st.html(_LARGE_TYPE)
    if ss.get("wt_notice"):
        st.warning(ss["wt_notice"], icon="⚠️")
        ss["wt_notice"] = None
    k = ss["wt_slide"]
    slide = deck[k - 1]
    nav = st.columns([1, 1, 6], vertical_alignment="center")
    nav[0].button(
        "Back",
        key="wt_back",
        on_click=move,
        args=(-1,),
        disabled=k == 1,
        icon=":material/arrow_back:",
        width="stretch",
    )
    nav[1].button(
        "Next",
        key="wt_next",
        on_click=move,
        args=(1,),
        disabled=k == n,
        icon=":material/arrow_forward:",
        width="stretch",
        type="primary",
    )
    nav[2].progress(k / n, text=f"Slide {k} of {n}")
    with st.container(key="wt_title"):
        st.markdown(f"## {k}. {slide.title}")
    with st.container(key="wt_narration"):
        st.code(slide.code, language="python", wrap_lines=True)
        st.markdown(slide.narration)
    fig = _figure(k - 1)
    st.plotly_chart(fig, key="wt_fig", config=PLOT_CONFIG, width="stretch", theme=None)
    st.caption(figures.description(fig))
    if st.query_params.get("slide") != str(k):
        st.query_params["slide"] = str(k)
