"""The Walkthrough: the lesson as slides for a projector and for phones, and the live class.

The link carries the slide (``?slide=4``) and may carry a Playground example (its ``p``, ``s``,
``x``, ``w``, ``m``, ``sm``, ``mk`` parameters, read with ``attnviz.ui.link.decode``): the slides
then run on those numbers. A live class adds ``class=`` (and ``me=`` for a student); see
``attnviz.ui.live_class``. The slides' text comes from ``attnviz.classroom.deck`` and their figures
from ``attnviz.figures``, sized for the screen the browser reports (``attnviz.ui.live_screen``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from attnviz import figures
from attnviz.classroom import deck
from attnviz.classroom.plan import questions
from attnviz.classroom.question import Question
from attnviz.errors import AttnvizError
from attnviz.ui import figure, link, live_class, live_plan, live_question, live_screen
from attnviz.ui.boundary import callback
from attnviz.ui.safe import inert

#: The Playground link parameters that describe the example (the rest are its own view).
_SLIDE = re.compile(r"[0-9]{1,3}")

_STYLE = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 3.4rem; }
.st-key-wt_narration p, .st-key-wt_narration li { font-size: 1.2rem; line-height: 1.4; }
.st-key-wt_narration code, .st-key-wt_code code { font-size: 1.1rem; }
.st-key-wt_title h1 { font-size: 1.8rem; padding: 0; margin: 0; }
.st-key-wt_nav p { font-size: 1.15rem; }
.st-key-wt_nav button { min-height: 3rem; min-width: 6.5rem; font-size: 1.1rem; }
.st-key-wt_code [data-testid="stCaptionContainer"] p { font-size: 1.1rem; }
.st-key-wt_live_question p, .st-key-wt_live_question label p { font-size: 1.15rem; }
.st-key-wt_live_bar p { font-size: 1.05rem; }
@media (min-width: 1600px) {
  .st-key-wt_live_question p, .st-key-wt_live_question label p { font-size: 1.5rem; }
  .st-key-wt_live_question button p { font-size: 1.3rem; }
  .st-key-wt_live_bar p { font-size: 1.3rem; }
  [data-testid="stCode"] code { font-size: 1.2rem; }
  .st-key-wt_narration p, .st-key-wt_narration li { font-size: 1.55rem; }
  .st-key-wt_narration code, .st-key-wt_code code { font-size: 1.35rem; }
  .st-key-wt_title h1 { font-size: 2.3rem; }
  .st-key-wt_nav p, .st-key-wt_code [data-testid="stCaptionContainer"] p { font-size: 1.3rem; }
}
@media (max-width: 640px) {
  .st-key-wt_narration p, .st-key-wt_narration li { font-size: 1.05rem; line-height: 1.45; }
  .st-key-wt_narration code, .st-key-wt_code code { font-size: 0.95rem; }
  .st-key-wt_title h1 { font-size: 1.45rem; }
  .st-key-wt_nav button { min-height: 3.2rem; min-width: 5.5rem; }
  .st-key-wt_first, .st-key-wt_last { display: none; }
  [data-testid="stMainBlockContainer"] { padding-left: 0.9rem; padding-right: 0.9rem; }
}
</style>
"""


# ---- the example and the deck, cached by the example's canonical query string --------------------


example_query = link.example_query  # the example part of a link, canonical


example_tensors = link.example_tensors  # a canonical example query -> its tensors


@st.cache_data(max_entries=64, show_spinner=False)
def _slides(query: str) -> tuple[deck.Slide, ...]:
    return deck.story(*example_tensors(query)).slides


@st.cache_data(max_entries=64, show_spinner=False)
def _questions(query: str) -> tuple[Question, ...]:
    return questions(*example_tensors(query))


_FIGURES: dict[deck.Kind, Callable[[deck.Story, deck.Slide, figures.Style], go.Figure]] = {
    deck.Kind.STEP: lambda s, slide, style: figures.step_figure(
        s.steps[slide.step], zrange=figures.shared_zrange(s.steps), style=style
    ),
    deck.Kind.CELL: lambda s, slide, style: figures.provenance_figure(
        s.provenance, zrange=figures.shared_zrange(s.steps), style=style
    ),
    deck.Kind.TRAP: lambda s, slide, style: figures.mistake_figure(s.trap, style=style),
    deck.Kind.GRAD: lambda s, slide, style: figures.gradient_figure(
        s.gradients, part="att_scores", style=style
    ),
    deck.Kind.VIEW: lambda s, slide, style: figures.view_copy_figure(s.view_copy, style=style),
}


@st.cache_data(max_entries=192, show_spinner=False)
def _figure(query: str, key: str, style_name: str, height: int) -> tuple[dict, str]:
    """The figure of the slide named key -> (the figure as a plotly dict, its text description);
    height 0 keeps its own."""
    style = {s.name: s for s in (figures.SCREEN, figures.PROJECTOR, figures.PHONE)}[style_name]
    story = deck.story(*example_tensors(query))
    slide = next(s for s in story.slides if s.key == key)
    fig = _FIGURES[slide.kind](story, slide, style)
    _untitled(fig, style, drop_subtitle=slide.kind is deck.Kind.TRAP)
    if height:
        fig.update_layout(height=height)
    return fig.to_plotly_json(), figures.description(fig)


def _untitled(fig: go.Figure, style: figures.Style, *, drop_subtitle: bool) -> None:
    """The slide's heading is the figure's title: drop it and give its room to the figure. The
    subtitle (code, shape, strides) takes its place, except on the trap slide, whose two code
    boxes above already show both codes."""
    title = fig.layout.title
    sub = title.subtitle.text if title.subtitle and title.subtitle.text else ""
    cut = int(style.title * 1.4) + 12  # the title line; the subtitle line moves up into it
    if drop_subtitle or not sub:
        cut += (style.font + 10) if sub else 0
        fig.update_layout(title_text="", title_subtitle_text="")
    else:
        # a subtitle of several lines (a phone's) keeps room above for its extra lines
        pad = 10 + sub.count("<br>") * (style.font + 6)
        fig.update_layout(
            title_text=sub, title_font_size=style.font, title_subtitle_text="", title_pad_t=pad
        )
    fig.update_layout(margin_t=max(int(fig.layout.margin.t or 0) - cut, 24))


# ---- layout ---------------------------------------------------------------------------------------


#: Measured in chromium at 1366x768 and 1920x1080 (artifacts/screenshots/live): the narration's
#: font px, its line height, px above the narration with a one-line code box, px between
#: paragraphs, px the trap slide's two captions add, and the code font px.
_LAPTOP_TYPE = (19.2, 26.9, 271, 15, 44, 17.6)
_PROJECTOR_TYPE = (24.8, 34.7, 286, 17, 48, 21.6)


#: px kept free below the figure: the page's own bottom padding and the few px the heading and the
#: buttons' row vary by with fonts (the slides test measures every slide's bottom edge)
BOTTOM_MARGIN = 40

#: The share of the page's width the slide keeps when the live class's question is beside it.
SLIDE_SHARE = 0.6


def figure_room(
    screen: live_screen.Screen, slide: deck.Slide, above: int = 0, share: float = 1.0
) -> int:
    """Pixels left for the figure below the narration on a laptop or projector, so that the slide
    fits the screen without scrolling (may be small, or below 0). above: px the live-class strip
    takes; share: the part of the page's width the slide's text and figure have (SLIDE_SHARE
    with a question beside them)."""
    big = screen.style is figures.PROJECTOR
    font, line, base, para, captions, code_font = _PROJECTOR_TYPE if big else _LAPTOP_TYPE
    content_w = max((screen.w - 160) * share, 300)
    per_line = content_w / (0.44 * font)
    text = re.sub(r"[`*]", "", slide.narration)
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    lines = sum(-(-len(p) // int(per_line)) for p in paragraphs)
    code_w = content_w / 2 if slide.right_code else content_w
    code_lines = -(-(len(slide.code) + 4) // max(int(code_w / (0.6 * code_font)), 20))
    used = base + above + lines * line + para * (len(paragraphs) - 1)
    used += (code_lines - 1) * (code_font * 1.5) + (captions if slide.right_code else 0)
    return int(screen.h - used - BOTTOM_MARGIN)


#: The fewest px a figure gets on a projector (its text is 24 px), and with a laptop's text.
PROJECTOR_LEAST, LAPTOP_LEAST = 380, 210
#: The fewest px for which a projector's figure takes a laptop's text rather than its own height
#: (below it, as beside a QR code shown to the room, its rows would be too thin to read).
SMALLER_TEXT_LEAST = 220


def figure_height(
    screen: live_screen.Screen, slide: deck.Slide, above: int = 0, share: float = 1.0
) -> int:
    """The figure's height: ``figure_room``, at least a few rows' worth, at most 1500 px (0 on a
    phone: the figure keeps its height, the page scrolls)."""
    if screen.phone:
        return 0
    least = PROJECTOR_LEAST if screen.style is figures.PROJECTOR else LAPTOP_LEAST
    return min(max(figure_room(screen, slide, above, share), least), 1500)


def figure_fit(
    screen: live_screen.Screen, slide: deck.Slide, above: int = 0, share: float = 1.0
) -> tuple[figures.Style, int]:
    """The figure's style and height. On a projector with less room than a figure with 24 px text
    needs (a live class's strip above a long narration), the figure takes a laptop's text size
    and the room there is (at least SMALLER_TEXT_LEAST px), so that the slide still fits."""
    height = figure_height(screen, slide, above, share)
    room = figure_room(screen, slide, above, share)
    if screen.style is figures.PROJECTOR and SMALLER_TEXT_LEAST <= room < height:
        return figures.SCREEN, room
    return screen.style, height


# ---- the page -------------------------------------------------------------------------------------


def _slide_from_url(n: int) -> tuple[int, str | None]:
    text = st.query_params.get("slide")
    if text is None:
        return 1, None
    if _SLIDE.fullmatch(text) and 1 <= int(text) <= n:
        return int(text), None
    return (
        1,
        inert(
            f"The link asks for slide {text[:12]!r}; there are slides 1 to {n}. Starting at slide 1."
        ),
    )


def _init() -> None:
    ss = st.session_state
    notice = None
    try:
        ss["wt_example"] = example_query(st.query_params)
    except AttnvizError as e:
        ss["wt_example"] = ""
        notice = f"This link's example could not be read: {e}. Showing the classic example."
    n = len(_slides(ss["wt_example"]))
    ss["wt_slide"], slide_notice = _slide_from_url(n)
    ss["wt_notice"] = inert(notice) if notice else slide_notice
    live_class.init_from_link(st.query_params)
    ss["wt_ready"] = True


def go_to(n: int, *, to: int) -> None:
    """The slide buttons' callback: a teacher moves the class; a student steps away from it.

    ``to`` is the slide the button was drawn for (Next on slide k says k + 1), never a step from
    wherever the page is now: Streamlit may run a press's callback again when a new request
    replaces the run it started, and a clicker's press sent mid-rerun then moved the whole class
    two slides. A press applied twice lands on the same slide."""
    ss = st.session_state
    ss["wt_notice"] = None
    ss["wt_pressed"] = True  # the press was heard (see _nav)
    to = min(max(int(to), 1), n)
    if live_class.moved(to, n):  # a teacher's move is in the store first, or not made at all
        ss["wt_slide"] = to


def _nav(k: int, n: int) -> None:
    ss = st.session_state
    with st.container(key="wt_nav", horizontal=True, vertical_alignment="center", gap="small"):
        first = st.button(
            "First",
            key="wt_first",
            on_click=callback(go_to, "wt_", reset=False),
            args=(n,),
            kwargs={"to": 1},
            disabled=k == 1,
            icon=":material/first_page:",
        )
        back = st.button(
            "Back",
            key="wt_back",
            on_click=callback(go_to, "wt_", reset=False),
            args=(n,),
            kwargs={"to": k - 1},
            disabled=k == 1,
            icon=":material/arrow_back:",
        )
        ahead = st.button(
            "Next",
            key="wt_next",
            on_click=callback(go_to, "wt_", reset=False),
            args=(n,),
            kwargs={"to": k + 1},
            disabled=k == n,
            icon=":material/arrow_forward:",
            type="primary",
        )
        last = st.button(
            "Last",
            key="wt_last",
            on_click=callback(go_to, "wt_", reset=False),
            args=(n,),
            kwargs={"to": n},
            disabled=k == n,
            icon=":material/last_page:",
        )
        if (first or back or ahead or last) and not ss.pop("wt_pressed", False):
            # A press whose callback Streamlit could not run: the session was rebuilt on
            # another replica (a failover) and its runs so far ended before these buttons were
            # drawn, so Streamlit knew no callback for them (a teacher's → right after the
            # reconnect). The press still counts, for the slide it was drawn for; the page runs
            # again from there. The move leaves wt_pressed set: the rerun cannot count it twice.
            to = 1 if first else k - 1 if back else k + 1 if ahead else n
            callback(go_to, "wt_", reset=False)(n, to=to)
            st.rerun()
        ss.pop("wt_pressed", None)
        st.markdown(f"**Slide {k} of {n}**")
        live_class.tools()  # the teacher's menu, in a class only


def _code(slide: deck.Slide, phone: bool) -> None:
    with st.container(key="wt_code"):
        if not slide.right_code:
            st.code(slide.code, language="python", wrap_lines=True)
            return
        cols = st.columns(1 if phone else 2)
        with cols[0]:
            st.caption(slide.code_note)
            st.code(slide.code, language="python", wrap_lines=True)
        with cols[-1]:
            st.caption(slide.right_note)
            st.code(slide.right_code, language="python", wrap_lines=True)


def page() -> None:
    """The Walkthrough page."""
    ss = st.session_state
    if not ss.get("wt_ready"):
        _init()
    query = ss["wt_example"]
    slides = live_plan.class_slides(_slides(query))  # in a class: its plan's order
    n = len(slides)
    ss["wt_slide"] = min(max(int(ss["wt_slide"]), 1), n)
    screen = live_class.screen()
    st.html(_STYLE)
    if ss.get("wt_notice"):  # stays until the visitor acts (a slide button)
        st.warning(ss["wt_notice"], icon="⚠️")
    k = ss["wt_slide"]
    ss["wt_shown"] = k
    slide = slides[k - 1]
    qs = live_plan.class_questions(_questions(query))  # the class's plan, in a class
    covered = live_question.covered(live_class.room())  # every screen of the class
    # said once in the live region; a covered slide's title is not said either
    figure.announce(f"Slide {k} of {n}: {'Predict first' if covered else slide.title}", "slide")
    _nav(k, n)
    beside = live_class.question_beside(qs, screen.phone)  # a question on screen, not a phone
    live_class.panel(query, n, slides, qs)  # only while in a class
    main, side = st.columns([3, 2], gap="medium") if beside else (st.container(), None)
    with main:
        if covered:  # a question is open: no slide (its answer may be there) until the vote
            with st.container(key="wt_title"):
                st.markdown(f"# {k}. Predict first")
            st.caption(live_question.COVER)
        else:
            with st.container(key="wt_title"):
                st.markdown(f"# {k}. {slide.title}")
            _code(slide, screen.phone)
            with st.container(key="wt_narration"):
                st.markdown(slide.narration)
            above = live_class.height_above(screen.w)
            style, height = figure_fit(screen, slide, above, SLIDE_SHARE if beside else 1.0)
            spec, text = _figure(query, slide.key, style.name, height)
            figure.show(
                spec, "wt_fig", summary=text, config=figure.SLIDE_CONFIG, folded="wt_description"
            )
    if side is not None:
        with side:
            live_class.live(n, slides, qs)  # the poll, with the question beside the slide
    live_class.start_or_join(query, n)  # only while in no class
    live_class.write_link(query, k)
