"""The live class in the Walkthrough: start or join, follow the teacher, answer check-in questions.

Everything shared lives in the class store (``attnviz.classroom``); this session keeps only who it
is: ``wt_code`` (the class), ``wt_token`` (a teacher's secret) or ``wt_me`` (a student's id), and
``wt_follow`` (whether a student's slides follow the teacher's). A fragment polls the store every
``POLL_S`` seconds: the page shows the store's slide (a following student's, and always the
teacher's: a teacher's move is written to the store first, and a move the store did not take is
not shown), the question panel and the teacher's live count redraw, and nothing else reruns.

Links: the join link ``/walkthrough?class=CODE`` (and its QR code); a student's own address
``?class=CODE&me=ID``. A student's browser keeps their id for the class in a cookie
(``live_screen.STUDENT_COOKIE``), so its tabs, reloads, reconnects and the server's restarts are
one student, with one name and one vote; a browser whose data was cleared is a new student. The
teacher's private link ``?class=CODE&teacher=TOKEN`` gives the class back in another browser, on
the class's slide; it is never drawn on the page (the teacher's menu copies it to the clipboard),
and the teacher's browser keeps the token in its localStorage (its address bar shows only
``?class=CODE&host=1``). Every teacher tab reports itself: a second device presenting the class is
announced on every teacher screen, and "Present only here" gives the class a new token, which
refuses the old link and every other session at once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from urllib.parse import parse_qsl

import streamlit as st

from attnviz.classroom import (
    ClassError,
    ClassRecord,
    Classroom,
    Problem,
    Question,
    format_code,
    peer,
    secret,
)
from attnviz.classroom.deck import Slide
from attnviz.errors import AttnvizError
from attnviz.ui import (
    client,
    figure,
    join_link,
    link,
    live_members,
    live_plan,
    live_question,
    live_results,
    live_screen,
    live_store,
)
from attnviz.ui.boundary import button, callback
from attnviz.ui.live_screen import STUDENT_COOKIE, Keep
from attnviz.ui.safe import inert

POLL_S = 1.0
#: Server CPU seconds spent in the last poll of this session (the closing note measures it).
LAST_POLL_CPU = "wt_poll_cpu"
#: ... and in the last answer it recorded.
LAST_ANSWER_CPU = live_question.LAST_ANSWER_CPU
UNREACHABLE_MOVE = "Could not reach the class: the slide did not change for anyone. Try again."
REVOKED = (
    "Another device now presents this class with a new private link: this one no longer teaches it."
)
#: A teacher tab (?class=CODE&host=1) whose browser keeps no valid token: the same words whether
#: the code names a class or not (the link must not tell).
NO_KEY = (
    "This browser keeps no teacher key for this class code: open your private teacher link to "
    "teach, or join the class with its code."
)
PREFIX = "wt_"  # the Walkthrough's keys: what the error boundary resets


room = live_store.room  # the class store (attnviz/ui/live_store.py)


def _ss():
    return st.session_state


def _clear(notice: str | None = None) -> None:
    ss = _ss()
    for key in ("wt_code", "wt_token", "wt_me", "wt_host"):
        ss[key] = ""
    ss["wt_follow"] = ss["wt_end_confirm"] = ss["wt_side"] = False
    if notice:
        ss["wt_notice"] = notice


def _student_id(code: str, from_link: str | None = None) -> str:
    """This browser's id in the class: the one its cookie keeps, else the link's, else a new one."""
    for text in (st.context.cookies.get(STUDENT_COOKIE.format(code=code)), from_link):
        try:
            return secret.parse_student(text)
        except AttnvizError:
            pass
    return secret.new_student()


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
    try:
        if "teacher" in params:
            if not r.is_teacher(code, params.get("teacher", "")):
                ss["wt_notice"] = "This teacher link is not valid, or its class has ended."
                return
            ss["wt_slide"] = r.state(code).slide  # the class's slide, whatever the link says
            ss["wt_code"], ss["wt_token"], ss["wt_remember"] = code, params["teacher"], True
            return
        if params.get("host") == "1":  # the teacher's own tab: the token comes from the browser
            ss["wt_host"] = code  # nothing of the class until the browser's token is checked
            return
        me = _student_id(code, params.get("me"))
        ss["wt_code"] = r.join(code, me, client=client.address())
    except ClassError as e:
        ss["wt_notice"] = str(e)
        return
    ss["wt_me"], ss["wt_follow"] = me, True


def screen() -> live_screen.Screen:
    """The browser's screen and this tab's id; tells the browser what to keep (a teacher's token,
    a student's id) and what to copy (the teacher's private link)."""
    ss = _ss()
    code, token, me = ss.get("wt_code", ""), ss.get("wt_token", ""), ss.get("wt_me", "")
    remember = (code, token) if token and ss.get("wt_remember") else ("", "")
    found = live_screen.screen(
        Keep(
            code=ss.get("wt_host", ""),
            remember=remember,
            forget=(ss.get("wt_forget", ""), ss.get("wt_forget_token", "")),
            student=(code, me, room().limits.ttl_s) if me else ("", "", 0),
            forget_student=ss.get("wt_forget_student", ""),
            copy=f"{_base_url()}?class={code}&teacher={token}" if token else "",
        )
    )
    if remember[1]:
        ss["wt_remember"] = False
    ss["wt_forget"] = ss["wt_forget_token"] = ss["wt_forget_student"] = ""
    if "wt_session" not in ss:
        ss["wt_session"] = secret.new_session()  # until the browser reports its tab's id
    ss["wt_tab"] = found.tab or ss["wt_session"]
    if found.copies > ss.get("wt_copies", 0):
        ss["wt_copies"], ss["wt_copy_note"] = found.copies, "ok" if found.copied else "failed"
    host = ss.get("wt_host", "")
    # only a report made for this code counts: after a reconnect the browser first sends back the
    # value it reported for the page it showed before (a teacher's, with no code asked)
    if host and found.reported and found.asked == host:
        try:
            teacher = bool(found.token) and room().is_teacher(host, found.token)
        except ClassError:
            return found  # the store is out of reach: the next run asks again
        if teacher:
            ss["wt_code"], ss["wt_token"], ss["wt_follow"] = host, found.token, False
        else:
            ss["wt_notice"] = NO_KEY
        ss["wt_host"] = ""
    return found


# ---- what the slide buttons do ----------------------------------------------------------------------


def moved(slide: int, n: int) -> bool:
    """A slide button was pressed: the teacher moves the class (in the store first); a student
    steps away. False when the page must stay where it is: the store did not take the move."""
    ss = _ss()
    if not ss.get("wt_code"):
        return True
    if ss.get("wt_token"):
        try:
            room().move(ss["wt_code"], ss["wt_token"], slide, n)
        except ClassError as e:
            if e.problem is Problem.UNREACHABLE:
                ss["wt_notice"] = UNREACHABLE_MOVE
                return False
            _clear(str(e))
        return True
    ss["wt_follow"] = False
    return True


def _start(query: str, slide: int, n: int) -> None:
    ss = _ss()
    r = room()
    example = live_plan.with_picked(query)  # the picked plan travels with the class
    if example is None:
        return
    slide, n = live_plan.start_slide(example, slide)  # the same slide, at its place in the plan
    try:
        started = r.start(example=example, client=client.address())
        r.move(started.code, started.token, slide, n)
    except ClassError as e:
        ss["wt_notice"] = str(e)
        return
    ss["wt_code"], ss["wt_token"], ss["wt_remember"] = started.code, started.token, True
    ss["wt_slide"] = slide
    ss["wt_show_join"] = True


def _join() -> None:
    ss = _ss()
    typed = ss.get("wt_join_code", "")
    try:  # this browser may have joined the class before: the same student
        me = _student_id(secret.parse_code(typed))
    except AttnvizError:
        me = secret.new_student()  # the join below says what is wrong with the code
    try:
        code = room().join(typed, me, ss.get("wt_join_name", ""), client=client.address())
        record = room().state(code)
    except ClassError as e:
        ss["wt_join_error"] = str(e)
        return
    ss["wt_join_error"] = ""
    ss["wt_code"], ss["wt_me"], ss["wt_follow"] = code, me, True
    ss["wt_slide"] = record.slide
    _adopt_example(record)


def _adopt_example(record: ClassRecord) -> None:
    """A student runs the slides on the teacher's example."""
    ss = _ss()
    if record.example != ss.get("wt_example"):
        try:
            ss["wt_example"] = link.example_query(dict(parse_qsl(record.example)))
        except AttnvizError:
            ss["wt_example"] = ""


# ---- the teacher's menu -------------------------------------------------------------------------------


def _end_ask() -> None:
    _ss()["wt_end_confirm"] = True


def _end_cancel() -> None:
    _ss()["wt_end_confirm"] = False


def _end() -> None:
    ss = _ss()
    code = ss.get("wt_code", "")
    try:
        room().end(code, ss.get("wt_token", ""))
    except ClassError as e:
        if e.problem is Problem.UNREACHABLE:  # not ended: the teacher stays and tries again
            ss["wt_notice"] = str(e)
            return
        ss["wt_notice"] = str(e)
    _clear("The class has ended; its answers are deleted.")
    ss["wt_forget"] = code


def _rotate() -> None:
    """A new private link: the old one, and every other device holding it, stops teaching."""
    ss = _ss()
    try:
        new = room().rotate(ss.get("wt_code", ""), ss.get("wt_token", ""))
    except ClassError as e:
        if e.problem is Problem.UNREACHABLE:
            ss["wt_notice"] = str(e)
        else:
            _clear(str(e))
        return
    ss["wt_token"], ss["wt_remember"], ss["wt_reload"] = new, True, True
    ss["wt_rotated"] = True


def tools() -> None:
    """The teacher's menu (in the slide buttons' row): copy the private link without showing it,
    a new private link that ends every other device, and End the class (asked twice)."""
    ss = _ss()
    if not ss.get("wt_token"):
        return
    with st.popover("Teacher", key="wt_tools", icon=":material/school:"):
        st.button("Copy my private link", key="wt_copy_link", icon=":material/content_copy:")
        note = ss.get("wt_copy_note")
        if note == "ok":
            st.caption("Copied. Paste it only where the room cannot see it.")
        elif note == "failed":
            st.caption("This browser did not allow the copy: save the link as a file instead.")
        st.download_button(
            "Save my private link as a file",
            data=f"{_base_url()}?class={ss['wt_code']}&teacher={ss['wt_token']}\n",
            file_name="attnviz-teacher-link.txt",
            mime="text/plain",
            key="wt_save_link",
            on_click="ignore",
            icon=":material/download:",
        )
        st.caption(
            "The link opens this class on its current slide in any browser. It is never shown."
        )
        button(
            "Present only here",
            key="wt_rotate",
            on_click=callback(_rotate, PREFIX, reset=False),
            icon=":material/key:",
        )
        st.caption("A new private link: the old one and every other device stop teaching at once.")
        if ss.get("wt_rotated"):
            st.caption("Done: this browser holds the new link.")
        live_results.section()  # before the end: the summary, the downloads, the plan
        if ss.get("wt_end_confirm"):
            st.warning("End the class now? Everyone leaves it, and its answers are deleted.")
            with st.container(horizontal=True):
                button(
                    "Yes, end the class",
                    key="wt_end_yes",
                    on_click=callback(_end, PREFIX, reset=False),
                    type="primary",
                )
                button(
                    "Keep teaching",
                    key="wt_end_no",
                    on_click=callback(_end_cancel, PREFIX, reset=False),
                )
        else:
            button(
                "End the class",
                key="wt_end",
                on_click=callback(_end_ask, PREFIX, reset=False),
                icon=":material/stop_circle:",
            )


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
            live_plan.picker()
            button(
                "Start a live class",
                key="wt_start",
                on_click=callback(_start, PREFIX, reset=False),
                args=(query, ss["wt_slide"], n),
                icon=":material/co_present:",
            )
        with cols[1], st.form("wt_join_form", border=False):
            st.text_input("Class code", key="wt_join_code", max_chars=16)
            st.text_input("Your name (optional, shown only as text)", key="wt_join_name")
            button(
                "Join the class",
                key="wt_join_submit",
                on_click=callback(_join, PREFIX, reset=False, notice="wt_join_error"),
                form=True,
            )
            if ss.get("wt_join_error"):
                st.error(inert(ss["wt_join_error"]))


def _asked(record: ClassRecord, qs: tuple[Question, ...]) -> Question | None:
    """The question this session shows beside the slide now (None for none)."""
    ss = _ss()
    a = peer.asked(record)
    if a is None or not (ss.get("wt_token") or ss.get("wt_me")):
        return None
    return next((q for q in qs if q.id == a.id), None)


def question_beside(qs: tuple[Question, ...], phone: bool) -> bool:
    """Whether the page puts the live class's panel beside the figure (a question is on screen,
    and the screen is not a phone's); the poll reruns the page when that changes."""
    ss = _ss()
    side = False
    if ss.get("wt_code") and not phone:
        with contextlib.suppress(ClassError):  # out of reach, or ended: the poll says so
            side = _asked(room().state(ss["wt_code"]), qs) is not None
    ss["wt_side"], ss["wt_wide"] = side, not phone
    return side


def height_above(width: int) -> int:
    """Roughly how many px the live-class strip takes above the slide on a window width px wide
    (for the figure's height)."""
    ss = _ss()
    if not ss.get("wt_code"):
        return 0
    px = 0 if ss.get("wt_side") else 52  # the poll's bar, unless it is beside the figure
    if ss.get("wt_token"):
        px += 44 + (260 if ss.get("wt_show_join") else 0)
        t = join_link.target()[0]
        warning = join_link.warning_text(t)
        if warning:  # ~8 px a character at 16 px, in a box 220 px narrower than the window
            px += 48 + 26 * -(-len(warning) * 8 // max(width - 220, 200)) + 26 * len(t.elsewhere)
    return px


def panel(query: str, n: int, slides: tuple[Slide, ...], qs: tuple[Question, ...]) -> None:
    """The live-class strip under the slide buttons while in a class: the join code for the
    teacher, and the polling fragment (unless it goes beside the figure: ``question_beside``)."""
    ss = _ss()
    if not ss.get("wt_code"):
        return
    if ss.get("wt_token"):
        _join_info(ss["wt_code"])
    if not ss.get("wt_side"):
        live(n, slides, qs)


def _base_url() -> str:
    return join_link.base_url()


def _join_info(code: str) -> None:
    join_link.section(code)  # a warning when students could not reach it, the link, the QR code


@st.fragment(run_every=POLL_S)
def live(n: int, slides: tuple[Slide, ...], qs: tuple[Question, ...]) -> None:
    """One poll of the store: show its slide, draw the question and its count."""
    started = time.process_time()
    ss = _ss()
    heard = ss.pop("wt_acted", False)  # a teacher's act ran in this run (live_question)
    code, token = ss.get("wt_code", ""), ss.get("wt_token", "")
    if not code:
        return
    r = room()
    try:
        record = r.state(code)
    except ClassError as e:
        if e.problem is Problem.UNREACHABLE:
            st.warning("Could not reach the class just now: trying again.", icon="⚠️")
            return
        if ss.get("wt_me"):
            ss["wt_forget_student"] = code
        _clear("The class has ended.")
        st.rerun()
    if token and not secret.token_matches(token, record.token_hash):
        _clear(REVOKED)
        ss["wt_forget"], ss["wt_forget_token"] = code, token
        st.rerun()
    if (token or ss.get("wt_follow")) and record.slide != ss.get("wt_slide"):
        ss["wt_slide"] = record.slide  # the store's slide: the teacher's, and the class's
        if not token:
            _adopt_example(record)
    question = _asked(record, qs)
    if (
        ss.get("wt_slide") != ss.get("wt_shown")  # the page shows another slide: redraw it
        or (ss.get("wt_wide") and (question is not None) != bool(ss.get("wt_side")))
        or (question is not None and live_question.cover(record, True) is not None)
        != bool(ss.get("wt_covered"))  # a question covers the slides, or stops covering them
        or ss.pop("wt_reload", False)
    ):
        st.rerun()
    if not token:
        _say_moves(record, slides, question is not None)
    presenters = 1
    if token:
        with contextlib.suppress(ClassError):  # out of reach, or revoked: the next poll tells
            presenters = r.present(code, token, ss["wt_tab"])
    with st.container(key="wt_live_bar", horizontal=True, vertical_alignment="center"):
        _status(r, record, bool(token), presenters)
        if token and question is None:
            live_question.ask_buttons(r, record, slides, qs, heard)
    if question is not None:
        with st.container(key="wt_live_question"):
            if token:
                live_question.teacher_panel(r, record, question, heard)
            else:
                live_question.student_panel(r, record, question)
    ss[LAST_POLL_CPU] = time.process_time() - started


def _say_moves(record: ClassRecord, slides: tuple[Slide, ...], asking: bool) -> None:
    """A student hears that they joined, and every move of the teacher (said once each: a poll
    that finds the class where it was says nothing). Under a question the slide's title is not
    said: the question comes before the slide that answers it."""
    n = len(slides)
    k = min(max(record.slide, 1), n)
    where = f"slide {k} of {n}" + ("" if asking else f": {slides[k - 1].title}")
    figure.announce(
        f"You joined live class {format_code(record.code)}; the teacher is on {where}.",
        "joined",
        rank=figure.CLASS,
        key=record.code,
    )
    figure.announce(
        f"The teacher moved to {where}.", "teacher", rank=figure.CLASS, key=str(k), first=False
    )


def _status(r: Classroom, record: ClassRecord, teacher: bool, presenters: int) -> None:
    ss = _ss()
    code = format_code(record.code)
    if teacher:
        try:
            members = r.member_list(record.code, ss.get("wt_token", ""))
        except ClassError:
            members = ()
        closed = "" if record.joining else " · closed to new students"
        st.markdown(f"**Live class {code}** · you teach · {len(members)} joined{closed}")
        live_members.panel(r, record, members)
        if presenters > 1:
            st.warning(
                "Another device is presenting this class. If it is not yours, present only "
                "here: a new private link, and every other device stops teaching at once.",
                icon=":material/devices:",
            )
            button(
                "Present only here",
                key="wt_only_here",
                on_click=callback(_rotate, PREFIX, reset=False),
                type="primary",
            )
        return
    if ss.get("wt_follow"):
        st.markdown(f"**Live class {code}** · following the teacher")
    else:
        st.markdown(f"**Live class {code}** · the teacher is on slide {record.slide}")
        button(
            f"Back to slide {record.slide}",
            key="wt_rejoin",
            on_click=callback(_rejoin, PREFIX, reset=False),
            args=(record.slide,),
            icon=":material/sync:",
        )


def _rejoin(slide: int) -> None:
    ss = _ss()
    ss["wt_follow"], ss["wt_slide"] = True, slide


# ---- the address bar ----------------------------------------------------------------------------------


def write_link(query: str, slide: int) -> None:
    """Keep the address bar on the example, the slide and this browser's place in the class."""
    ss = _ss()
    params = dict(parse_qsl(query))
    params["slide"] = str(slide)
    if ss.get("wt_code") or ss.get("wt_host"):  # a teacher tab being checked keeps its link
        params["class"] = ss.get("wt_code") or ss["wt_host"]
        if ss.get("wt_me"):
            params["me"] = ss["wt_me"]
        elif ss.get("wt_token") or ss.get("wt_host"):
            params["host"] = "1"
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
