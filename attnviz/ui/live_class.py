"""The live class in the Walkthrough: start or join, follow the teacher, answer check-in questions.

Everything shared lives in the class store (``attnviz.classroom``); this session keeps only who it
is: ``wt_code`` (the class), ``wt_token`` (a teacher's secret) or ``wt_me`` (a student's id), and
``wt_follow`` (whether a student's slides follow the teacher's). A fragment polls the store every
``POLL_S`` seconds: a following student jumps to the teacher's slide, the question panel and the
teacher's live count of answers redraw, and nothing else of the page reruns.

Links: the join link ``/walkthrough?class=CODE`` (and its QR code); a student's own address
``?class=CODE&me=ID`` keeps their answers across a reconnect; the teacher's private link
``?class=CODE&teacher=TOKEN`` gives the class back in another browser, and the teacher's browser
keeps the token in its localStorage (its address bar shows only ``?class=CODE&host=1``).
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Mapping
from urllib.parse import parse_qsl

import streamlit as st

from attnviz.classroom import (
    ClassError,
    ClassRecord,
    Classroom,
    Kind,
    Phase,
    Problem,
    Question,
    format_code,
    open_store,
    secret,
)
from attnviz.classroom.deck import Slide
from attnviz.errors import AttnvizError
from attnviz.ui import join_link, live_screen
from attnviz.ui.safe import inert

POLL_S = 1.0
TYPED_BARS = 6  # the teacher's count shows this many different typed answers (the most given)
#: Server CPU seconds spent in the last poll of this session (the closing note measures it).
LAST_POLL_CPU = "wt_poll_cpu"
#: ... and in the last answer it recorded.
LAST_ANSWER_CPU = "wt_answer_cpu"


@st.cache_resource(show_spinner=False)
def _room(url: str, data_dir: str) -> Classroom:
    """The shared store handle for this process (one per store address)."""
    return Classroom(open_store(url, data_dir or None))


def room() -> Classroom:
    """The class store named by ATTNVIZ_CLASS_STORE / ATTNVIZ_DATA_DIR."""
    return _room(os.environ.get("ATTNVIZ_CLASS_STORE", ""), os.environ.get("ATTNVIZ_DATA_DIR", ""))


def _client() -> str:
    """Where the browser connects from, for rate limits ('' when unknown)."""
    forwarded = (st.context.headers.get("X-Forwarded-For") or "").split(",")[0].strip()
    return (forwarded or st.context.ip_address or "")[:64]


def _ss():
    return st.session_state


def _clear(notice: str | None = None) -> None:
    ss = _ss()
    for key in ("wt_code", "wt_token", "wt_me", "wt_host"):
        ss[key] = ""
    ss["wt_follow"] = False
    if notice:
        ss["wt_notice"] = notice


# ---- from the link, once per session --------------------------------------------------------------


def init_from_link(params: Mapping[str, str]) -> None:
    """Read class= / teacher= / me= / host= from the link (strictly) and join or reconnect."""
    ss = _ss()
    _clear()
    text = params.get("class")
    if text is None:
        return
    try:
        code = secret.parse_code(text)
    except AttnvizError as e:
        ss["wt_notice"] = f"This link's class code could not be read. {e}"
        return
    r = room()
    if "teacher" in params:
        if r.is_teacher(code, params.get("teacher", "")):
            ss["wt_code"], ss["wt_token"], ss["wt_remember"] = code, params["teacher"], True
            return
        ss["wt_notice"] = "This teacher link is not valid, or its class has ended."
        return
    if params.get("host") == "1":  # the teacher's own tab: the token comes from the browser
        ss["wt_code"], ss["wt_host"] = code, code
        ss["wt_follow"] = True
        return
    try:
        me = secret.parse_student(params["me"]) if "me" in params else secret.new_student()
    except AttnvizError:
        me = secret.new_student()
    try:
        ss["wt_code"] = r.join(code, me, client=_client())
    except ClassError as e:
        ss["wt_notice"] = str(e)
        return
    ss["wt_me"], ss["wt_follow"] = me, True


def screen() -> live_screen.Screen:
    """The browser's screen; for the teacher's own tab also the token its browser kept."""
    ss = _ss()
    remember = ss.get("wt_token", "") if ss.get("wt_remember") else ""
    found = live_screen.screen(
        code=ss.get("wt_host", ""),
        remember=(ss.get("wt_code", ""), remember) if remember else ("", ""),
        forget=ss.get("wt_forget", ""),
    )
    if remember:
        ss["wt_remember"] = False
    ss["wt_forget"] = ""
    if ss.get("wt_host") and found.token and room().is_teacher(ss["wt_host"], found.token):
        ss["wt_token"], ss["wt_host"], ss["wt_follow"] = found.token, "", False
    return found


# ---- what the slide buttons do ----------------------------------------------------------------------


def moved(slide: int, n: int) -> None:
    """A slide button was pressed: the teacher moves the class; a student steps away."""
    ss = _ss()
    if not ss.get("wt_code"):
        return
    if ss.get("wt_token"):
        try:
            room().move(ss["wt_code"], ss["wt_token"], slide, n)
        except ClassError as e:
            _clear(str(e))
    else:
        ss["wt_follow"] = False


def _start(query: str, slide: int, n: int) -> None:
    ss = _ss()
    r = room()
    try:
        started = r.start(example=query, client=_client())
        r.move(started.code, started.token, slide, n)
    except ClassError as e:
        ss["wt_notice"] = str(e)
        return
    ss["wt_code"], ss["wt_token"], ss["wt_remember"] = started.code, started.token, True
    ss["wt_show_join"] = True


def _join() -> None:
    ss = _ss()
    me = secret.new_student()
    try:
        code = room().join(
            ss.get("wt_join_code", ""), me, ss.get("wt_join_name", ""), client=_client()
        )
    except ClassError as e:
        ss["wt_join_error"] = str(e)
        return
    ss["wt_join_error"] = ""
    ss["wt_code"], ss["wt_me"], ss["wt_follow"] = code, me, True
    record = room().state(code)
    ss["wt_slide"] = record.slide
    _adopt_example(record)


def _adopt_example(record: ClassRecord) -> None:
    """A student runs the slides on the teacher's example."""
    ss = _ss()
    if record.example != ss.get("wt_example"):
        from attnviz.ui.walkthrough import example_query  # the page owns the example's format

        try:
            ss["wt_example"] = example_query(dict(parse_qsl(record.example)))
        except AttnvizError:
            ss["wt_example"] = ""


def _end() -> None:
    ss = _ss()
    code = ss.get("wt_code", "")
    try:
        room().end(code, ss.get("wt_token", ""))
    except ClassError as e:
        ss["wt_notice"] = str(e)
    _clear("The class has ended; its answers are deleted.")
    ss["wt_forget"] = code


# ---- the panel ----------------------------------------------------------------------------------------


def start_or_join(query: str, n: int) -> None:
    """Start a class (a teacher) or join one with a code (a student), when in none."""
    ss = _ss()
    if ss.get("wt_code"):
        return
    with st.expander("Live class: start one, or join with a code", key="wt_live"):
        cols = st.columns(2)
        with cols[0]:
            st.markdown("**Teacher**: students follow your slides and answer questions.")
            st.button(
                "Start a live class",
                key="wt_start",
                on_click=_start,
                args=(query, ss["wt_slide"], n),
                icon=":material/co_present:",
            )
        with cols[1], st.form("wt_join_form", border=False):
            st.text_input("Class code", key="wt_join_code", max_chars=16)
            st.text_input("Your name (optional, shown only as text)", key="wt_join_name")
            st.form_submit_button("Join the class", on_click=_join)
            if ss.get("wt_join_error"):
                st.error(inert(ss["wt_join_error"]))


def height_above() -> int:
    """Roughly how many px the live-class strip takes above the slide (for the figure's height)."""
    ss = _ss()
    if not ss.get("wt_code"):
        return 0
    px = 52
    if ss.get("wt_token"):
        px += 52 + (260 if ss.get("wt_show_join") else 0)
    return px


def panel(query: str, n: int, slides: tuple[Slide, ...], qs: tuple[Question, ...]) -> None:
    """The live-class strip under the slide buttons while in a class: the join code for the
    teacher, and the polling fragment."""
    ss = _ss()
    if not ss.get("wt_code"):
        return
    if ss.get("wt_token"):
        _join_info(ss["wt_code"])
    live(n, slides, qs)


def _base_url() -> str:
    return join_link.base_url()


def _join_info(code: str) -> None:
    ss = _ss()
    join_link.section(code)  # a warning when students could not reach it, the link, the QR code
    with st.expander("Your private teacher link (keep it to yourself)", key="wt_private"):
        st.caption("Open it in another browser to take the class there.")
        st.code(f"{_base_url()}?class={code}&teacher={ss['wt_token']}", language=None)
        names = sorted(n for n in room().store.members(code).values() if n)
        if names:  # shown as plain text, never as markdown
            st.caption("Students who gave a name:")
            st.text(", ".join(names))
        st.button("End the class", key="wt_end", on_click=_end, icon=":material/stop_circle:")


@st.fragment(run_every=POLL_S)
def live(n: int, slides: tuple[Slide, ...], qs: tuple[Question, ...]) -> None:
    """One poll of the store: follow the teacher, draw the question and its count."""
    started = time.process_time()
    ss = _ss()
    code = ss.get("wt_code", "")
    if not code:
        return
    try:
        record = room().state(code)
    except ClassError:
        _clear("The class has ended.")
        st.rerun()
    teacher = bool(ss.get("wt_token"))
    if not teacher and ss.get("wt_follow") and record.slide != ss.get("wt_slide"):
        ss["wt_slide"] = record.slide
        _adopt_example(record)
    if ss.get("wt_slide") != ss.get("wt_shown"):  # the page shows another slide: redraw it
        st.rerun()
    question = next((q for q in qs if q.id == record.question), None)
    with st.container(key="wt_live_bar", horizontal=True, vertical_alignment="center"):
        _status(record, teacher, n)
    with st.container(key="wt_live_question"):
        if teacher:
            _teacher_question(record, slides, qs, question)
        elif question is not None and record.phase is not Phase.NONE and ss.get("wt_me"):
            _student_question(record, question)
    ss[LAST_POLL_CPU] = time.process_time() - started


def _status(record: ClassRecord, teacher: bool, n: int) -> None:
    ss = _ss()
    code = format_code(record.code)
    if teacher:
        st.markdown(f"**Live class {code}** · you teach · {room().members(record.code)} joined")
        return
    if ss.get("wt_host"):
        st.markdown(f"**Live class {code}** · following · open your private teacher link to teach")
        return
    if ss.get("wt_follow"):
        st.markdown(f"**Live class {code}** · following the teacher")
    else:
        st.markdown(f"**Live class {code}** · the teacher is on slide {record.slide}")
        st.button(
            f"Back to slide {record.slide}",
            key="wt_rejoin",
            on_click=_rejoin,
            args=(record.slide,),
            icon=":material/sync:",
        )


def _rejoin(slide: int) -> None:
    ss = _ss()
    ss["wt_follow"], ss["wt_slide"] = True, slide


# ---- questions --------------------------------------------------------------------------------------


def _teacher_question(
    record: ClassRecord,
    slides: tuple[Slide, ...],
    qs: tuple[Question, ...],
    question: Question | None,
) -> None:
    here = slides[min(max(record.slide, 1), len(slides)) - 1].key
    ask = [q for q in qs if q.slide == here]
    if question is None or record.phase is Phase.NONE:
        for q in ask:
            st.button(
                f"Ask the class: {q.prompt}",
                key=f"wt_ask_{q.id}",
                on_click=_teacher_act,
                args=("ask", q),
                icon=":material/quiz:",
            )
        return
    st.markdown(f"**Question:** {question.prompt}")
    tally = room().tally(record.code, question)
    _bars(question, tally.counts, tally.total, revealed=record.phase is Phase.REVEALED)
    with st.container(horizontal=True):
        if record.phase is Phase.OPEN:
            st.button(
                "Reveal the answer",
                key="wt_reveal",
                on_click=_teacher_act,
                args=("reveal", question),
                type="primary",
                icon=":material/visibility:",
            )
        st.button(
            "Close the question",
            key="wt_close",
            on_click=_teacher_act,
            args=("close", question),
            icon=":material/close:",
        )
    if record.phase is Phase.REVEALED:
        st.success(f"Answer: {question.label(question.answer)}. {question.why}")


def _teacher_act(action: str, question: Question) -> None:
    ss = _ss()
    r = room()
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


def _student_question(record: ClassRecord, question: Question) -> None:
    ss = _ss()
    mine_key = f"wt_mine_{record.code}_{question.id}"
    if mine_key not in ss:
        ss[mine_key] = room().my_answer(record.code, ss.get("wt_me", ""), question) or ""
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
        st.form_submit_button("Send my answer", on_click=_answer, args=(question, mine_key))
    if ss.get("wt_answer_error"):
        st.error(inert(ss["wt_answer_error"]))
    if mine:
        st.caption(f"Your answer: {question.label(mine)} (you can change it until the reveal)")


def _answer(question: Question, mine_key: str) -> None:
    started = time.process_time()
    ss = _ss()
    try:
        canonical = room().answer(
            ss["wt_code"], ss.get("wt_me", ""), question, ss.get(f"wt_pick_{question.id}")
        )
    except ClassError as e:
        ss["wt_answer_error"] = str(e) if e.problem is not Problem.NO_CLASS else "The class ended."
        return
    ss["wt_answer_error"] = ""
    ss[mine_key] = canonical
    ss[LAST_ANSWER_CPU] = time.process_time() - started


# ---- the address bar ----------------------------------------------------------------------------------


def write_link(query: str, slide: int) -> None:
    """Keep the address bar on the example, the slide and this browser's place in the class."""
    ss = _ss()
    params = dict(parse_qsl(query))
    params["slide"] = str(slide)
    if ss.get("wt_code"):
        params["class"] = ss["wt_code"]
        if ss.get("wt_me"):
            params["me"] = ss["wt_me"]
        elif ss.get("wt_token") or ss.get("wt_host"):
            params["host"] = "1"
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
