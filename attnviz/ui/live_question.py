"""The live class's check-in question: the teacher's panel (ask, the live count, reveal, close) and a
student's (the answer form, then whether they were right). Drawn by the live class's poll
(``attnviz.ui.live_class.live``) every second; every answer is parsed by ``attnviz.classroom``.
"""

from __future__ import annotations

import html
import time

import streamlit as st

from attnviz.classroom import ClassError, ClassRecord, Classroom, Kind, Phase, Problem, Question
from attnviz.classroom.deck import Slide
from attnviz.ui.boundary import callback
from attnviz.ui.safe import inert

TYPED_BARS = 6  # the teacher's count shows this many different typed answers (the most given)
#: Server CPU seconds spent in the last answer this session recorded (the closing note measures it).
LAST_ANSWER_CPU = "wt_answer_cpu"


# ---- questions --------------------------------------------------------------------------------------


def ask_buttons(
    r: Classroom, record: ClassRecord, slides: tuple[Slide, ...], qs: tuple[Question, ...]
) -> None:
    """The teacher's "Ask the class" button for each question of the class's slide (its prompt
    in the tooltip: the slide stays where it is until the question opens)."""
    here = slides[min(max(record.slide, 1), len(slides)) - 1].key
    for q in qs:
        if q.slide == here:
            st.button(
                "Ask the class",
                key=f"wt_ask_{q.id}",
                help=q.prompt,
                on_click=callback(_teacher_act, "wt_", reset=False),
                args=(r, "ask", q),
                icon=":material/quiz:",
            )


def teacher_panel(r: Classroom, record: ClassRecord, question: Question) -> None:
    """The open (or revealed) question: its prompt, the live count, Reveal and Close."""
    st.markdown(f"**Question:** {question.prompt}")
    tally = r.tally(record.code, question)
    _bars(question, tally.counts, tally.total, revealed=record.phase is Phase.REVEALED)
    with st.container(horizontal=True):
        if record.phase is Phase.OPEN:
            st.button(
                "Reveal the answer",
                key="wt_reveal",
                on_click=callback(_teacher_act, "wt_", reset=False),
                args=(r, "reveal", question),
                type="primary",
                icon=":material/visibility:",
            )
        st.button(
            "Close the question",
            key="wt_close",
            on_click=callback(_teacher_act, "wt_", reset=False),
            args=(r, "close", question),
            icon=":material/close:",
        )
    if record.phase is Phase.REVEALED:
        st.success(f"Answer: {question.label(question.answer)}. {question.why}")


def _teacher_act(r: Classroom, action: str, question: Question) -> None:
    ss = st.session_state
    try:
        if action == "ask":
            r.ask(ss["wt_code"], ss["wt_token"], question)
        elif action == "reveal":
            r.reveal(ss["wt_code"], ss["wt_token"])
        else:
            r.close_question(ss["wt_code"], ss["wt_token"])
    except ClassError as e:
        ss["wt_notice"] = str(e)


def bars_html(question: Question, counts, total: int, *, revealed: bool) -> str:
    """The live count as a bar chart in plain HTML (cheap to redraw every second).

    A typed answer gets a bar of its own, up to TYPED_BARS of them (the most given first); the
    chart always has room for that many, so the slide below it stays put on the projector while
    new answers come in."""
    shown = dict(counts)
    choice = question.kind is Kind.CHOICE
    labels = [str(i) for i in range(len(question.choices))] if choice else []
    labels += [a for a, _ in counts if a not in labels][:TYPED_BARS]
    most = max([1, *shown.values()])
    rows = []
    for a in labels:
        right = revealed and a == question.answer
        width = 100 * shown.get(a, 0) / most
        rows.append(
            f'<div class="wt-bar{" wt-right" if right else ""}"><span class="wt-label">'
            f"{html.escape(question.label(a))}{' ✓' if right else ''}</span>"
            f'<span class="wt-track"><span class="wt-fill" style="width:{width:.0f}%"></span>'
            f"</span><b>{shown.get(a, 0)}</b></div>"
        )
    if not choice:  # room for the answers not given yet: rows like the others, not shown
        room = (
            '<div class="wt-bar wt-room" aria-hidden="true"><span class="wt-label">-</span>'
            '<span class="wt-track"></span><b>0</b></div>'
        )
        rows += [room] * (TYPED_BARS - len(labels))
    return (
        "<style>.wt-bar{display:flex;align-items:center;gap:.6rem;font-size:1.25rem;margin:.2rem 0}"
        ".wt-room{visibility:hidden}"
        ".wt-label{flex:0 0 45%}.wt-track{flex:1;background:#eee;height:1.4rem}"
        ".wt-fill{display:block;height:100%;background:#2166ac}"
        ".wt-right .wt-fill{background:#1a7f37}.wt-right{font-weight:700}"
        ".wt-code{font:700 2.6rem monospace;letter-spacing:.15em}"
        "@media (max-width:640px){.wt-bar{font-size:1rem;flex-wrap:wrap}"
        ".wt-label{flex:1 0 100%}}</style>"
        f'<div class="wt-bars" role="img" aria-label="{total} answers">'
        + f'<div class="wt-total">{total} answered</div>'  # above the bars: the room is below
        + "".join(rows)
        + "</div>"
    )


def _bars(question: Question, counts, total: int, *, revealed: bool) -> None:
    st.html(bars_html(question, counts, total, revealed=revealed))


def student_panel(r: Classroom, record: ClassRecord, question: Question) -> None:
    ss = st.session_state
    mine_key = f"wt_mine_{record.code}_{question.id}"
    if mine_key not in ss:
        ss[mine_key] = r.my_answer(record.code, ss.get("wt_me", ""), question) or ""
    mine = ss[mine_key]
    st.markdown(f"**Question:** {question.prompt}")
    if record.phase is Phase.REVEALED:
        if not mine:
            st.info(f"The answer: {question.label(question.answer)}. {question.why}")
        elif mine == question.answer:
            st.success(f"Right: {question.label(mine)}. {question.why}")
        else:
            st.error(
                f"Not this time: you answered {question.label(mine)}; the answer is "
                f"{question.label(question.answer)}. {question.why}"
            )
        return
    with st.form(f"wt_answer_{question.id}", border=False):
        if question.kind is Kind.CHOICE:
            st.radio(
                "Your answer",
                options=[str(i) for i in range(len(question.choices))],
                format_func=question.label,
                key=f"wt_pick_{question.id}",
                index=None,
            )
        else:
            st.text_input("Your answer, as a tuple", key=f"wt_pick_{question.id}", max_chars=40)
        st.form_submit_button(
            "Send my answer",
            on_click=callback(_answer, "wt_", reset=False, notice="wt_answer_error"),
            args=(r, question, mine_key),
        )
    if ss.get("wt_answer_error"):
        st.error(inert(ss["wt_answer_error"]))
    if mine:
        st.caption(f"Your answer: {question.label(mine)} (you can change it until the reveal)")


def _answer(r: Classroom, question: Question, mine_key: str) -> None:
    started = time.process_time()
    ss = st.session_state
    try:
        canonical = r.answer(
            ss["wt_code"], ss.get("wt_me", ""), question, ss.get(f"wt_pick_{question.id}")
        )
    except ClassError as e:
        ss["wt_answer_error"] = str(e) if e.problem is not Problem.NO_CLASS else "The class ended."
        return
    ss["wt_answer_error"] = ""
    ss[mine_key] = canonical
    ss[LAST_ANSWER_CPU] = time.process_time() - started
