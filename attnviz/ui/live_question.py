"""The live class's check-in question, peer instruction style: the teacher asks before the slide
that answers it, the room votes with no counts on any screen, the teacher shows the votes when
they choose, the room may vote again after discussing (round 1 kept, both shown side by side),
and the reveal explains the right answer and each common wrong answer by the mistake it comes from.

Drawn by the live class's poll (``attnviz.ui.live_class.live``) every second; the rules live in
``attnviz.classroom.peer``. A question's text comes from a plan a teacher may have written: it is
shown escaped in HTML or with ``st.text``/``st.code``, never as Markdown.
"""

from __future__ import annotations

import html
import time
from typing import Any

import streamlit as st

from attnviz.classroom import ClassError, ClassRecord, Classroom, Kind, Problem, Question, peer
from attnviz.classroom.deck import Slide
from attnviz.ui import figure
from attnviz.ui.boundary import button, callback
from attnviz.ui.safe import inert

TYPED_BARS = 6  # the count shows this many different typed answers (the most given)
EXPLAINED = 3  # the reveal explains this many of the most frequent wrong answers
#: Server CPU seconds spent in the last answer this session recorded (the closing note measures it).
LAST_ANSWER_CPU = "wt_answer_cpu"
COVER = "The slide follows the vote: predict first."

_STYLE = (
    "<style>.wt-bar{display:flex;align-items:center;gap:.6rem;font-size:1.25rem;margin:.2rem 0}"
    ".wt-label{flex:0 0 45%}.wt-track{flex:1;background:#eee;height:1.4rem}"
    ".wt-fill{display:block;height:100%;background:#2166ac}"
    ".wt-right .wt-fill{background:#1a7f37}.wt-right{font-weight:700}"
    ".wt-code{font:700 2.6rem monospace;letter-spacing:.15em}"
    ".wt-rounds{display:flex;gap:1.5rem;flex-wrap:wrap}.wt-round{flex:1 1 16rem}"
    ".wt-prompt{font-size:1.35rem;margin:.2rem 0 .4rem}"
    ".wt-needs{font:1.1rem monospace;background:#f3f3f3;padding:.3rem .5rem;white-space:pre-wrap}"
    "@media (max-width:640px){.wt-bar{font-size:1rem;flex-wrap:wrap}"
    ".wt-label{flex:1 0 100%}}</style>"
)


# ---- questions --------------------------------------------------------------------------------------


def offered(record: ClassRecord, slides: tuple[Slide, ...], qs: tuple[Question, ...]):
    """The questions the teacher may ask on the class's slide: those asked before this slide or
    before the next one (so each is asked before the slide that answers it)."""
    k = min(max(record.slide, 1), len(slides))
    here = {s.key for s in slides[k - 1 : k + 1]}
    return [q for q in qs if q.slide in here]


def _act_button(
    label: str, key: str, heard: bool, r: Classroom, action: str, q: Question, **options: Any
) -> None:
    """A teacher's button for ``action``; ``heard``: a teacher's act ran in this run already.

    A press whose callback Streamlit could not run still acts: a session rebuilt on another
    replica after a failover knows no callback for a button its runs have not drawn yet (the
    browser's next requests can cut those runs short), and drops the press's; the button still
    returns True. Then the act runs here, and the page runs again (as the slide buttons do)."""
    act = callback(_teacher_act, "wt_", reset=False)
    if st.button(label, key=key, on_click=act, args=(r, action, q), **options) and not heard:
        act(r, action, q)
        st.rerun()


def ask_buttons(
    r: Classroom,
    record: ClassRecord,
    slides: tuple[Slide, ...],
    qs: tuple[Question, ...],
    heard: bool = False,
) -> None:
    """The teacher's "Ask the class" button for each question offered on this slide (its prompt
    in the tooltip: nothing of it is on the projector until it opens). ``heard``: see
    ``_act_button``."""
    several = len(offered(record, slides, qs)) > 1
    for q in offered(record, slides, qs):
        _act_button(
            f"Ask the class: question {qs.index(q) + 1}" if several else "Ask the class",
            f"wt_ask_{q.id}",
            heard,
            r,
            "ask",
            q,
            help=q.prompt,
            icon=":material/quiz:",
        )


def card_html(question: Question) -> str:
    """The question and what it needs (the code it is about), escaped."""
    needs = f'<div class="wt-needs">{html.escape(question.needs)}</div>' if question.needs else ""
    return (
        _STYLE
        + f'<div class="wt-prompt"><b>Question:</b> {html.escape(question.prompt)}</div>'
        + needs
    )


def cover(record: ClassRecord | None, in_class: bool) -> peer.Asked | None:
    """The question on screen while its answer must not be (open, or its votes shown): then every
    screen of the class shows the question instead of any slide."""
    a = peer.asked(record) if record is not None and in_class else None
    return a if a is not None and a.stage is not peer.Stage.REVEALED else None


def teacher_panel(
    r: Classroom, record: ClassRecord, question: Question, heard: bool = False
) -> None:
    """The question on screen: its card, then by stage the number answered (open), the votes
    (shown), both rounds, the answer and the wrong answers explained (revealed); the buttons
    (``heard``: see ``_act_button``)."""
    a = peer.asked(record)
    st.html(card_html(question))
    joined = r.members(record.code)
    rounds = peer.rounds(r, record.code, question, joined)
    # said when the teacher acts (ask, show, again, reveal), never for a count that moved
    figure.announce(
        _stage_sentence(question, a, rounds, teacher=True),
        "question",
        rank=figure.CLASS,
        key=_stage_key(question, a),
    )
    if a.stage is peer.Stage.OPEN:
        now = rounds[a.round - 1] if a.round <= len(rounds) else None
        answered = now.answered if now else 0
        st.html(
            f'<div class="wt-total">{answered} of {max(joined, answered)} answered'
            f"{f' (round {a.round}: vote again after discussing)' if a.round > 1 else ''}</div>"
            + '<div class="wt-hidden">The votes are hidden until you show them.</div>'
        )
    else:
        st.html(rounds_html(question, rounds, revealed=a.stage is peer.Stage.REVEALED))
    with st.container(horizontal=True):
        if a.stage is peer.Stage.OPEN:
            _act_button(
                "Show the votes",
                "wt_show",
                heard,
                r,
                "show",
                question,
                icon=":material/bar_chart:",
            )
        if a.stage is peer.Stage.VOTES and a.round < peer.ROUNDS:
            _act_button(
                "Vote again after discussing",
                "wt_again",
                heard,
                r,
                "again",
                question,
                icon=":material/forum:",
            )
        if a.stage is not peer.Stage.REVEALED:
            _act_button(
                "Reveal the answer",
                "wt_reveal",
                heard,
                r,
                "reveal",
                question,
                type="primary",
                icon=":material/visibility:",
            )
        _act_button(
            "Close the question",
            "wt_close",
            heard,
            r,
            "close",
            question,
            icon=":material/close:",
        )
    if a.stage is peer.Stage.REVEALED:
        _explained(question, rounds[-1])


def _stage_key(question: Question, a: peer.Asked) -> str:
    return f"{question.id}:{a.round}:{a.stage.value}"


def _votes(rounds: tuple[peer.Round, ...]) -> str:
    """The last round's votes in words: '3 of 4 answered: (2, 3, 1) 2, (2, 3) 1'."""
    if not rounds:
        return "no votes"
    last = rounds[-1]
    counts = ", ".join(f"{row.label} {row.count}" for row in last.rows[:TYPED_BARS])
    return peer.answered_line(last) + (f": {counts}" if counts else "")


def _stage_sentence(
    question: Question,
    a: peer.Asked,
    rounds: tuple[peer.Round, ...],
    *,
    teacher: bool,
    mine: str = "",
) -> str:
    """What a question's stage says in the live region (the prompt is plain text there)."""
    if a.stage is peer.Stage.OPEN:
        if a.round > 1:
            return f"Vote again after discussing: {question.prompt}"
        return f"{'Question asked' if teacher else 'The teacher asks'}: {question.prompt}"
    if a.stage is peer.Stage.VOTES:
        return f"The votes are shown: {_votes(rounds)}."
    answer = f"The answer is revealed: {question.label(question.answer)}."
    if teacher or not mine:
        return answer
    if mine == question.answer:
        return f"{answer} You were right."
    return f"{answer} You answered {question.label(mine)}."


def _explained(question: Question, last: peer.Round) -> None:
    """The right answer and why, then each of the most frequent wrong answers explained."""
    st.success(f"Answer: {inert(question.label(question.answer))}. {inert(question.why)}")
    wrong = [row for row in last.rows if not row.right][:EXPLAINED]
    for row in wrong:
        st.text(f"{row.label} ({row.count}): {row.why or 'no known mistake gives this answer.'}")


def _teacher_act(r: Classroom, action: str, question: Question) -> None:
    ss = st.session_state
    ss["wt_acted"] = True  # heard in this run (see _act_button)
    code, token = ss["wt_code"], ss["wt_token"]
    try:
        if action == "ask":
            peer.ask(r, code, token, question)
        elif action == "show":
            peer.show_votes(r, code, token)
        elif action == "again":
            peer.again(r, code, token, question)
        elif action == "reveal":
            peer.reveal(r, code, token)
        else:
            r.close_question(code, token)
    except ClassError as e:
        ss["wt_notice"] = str(e)


def bars_html(
    question: Question, counts, total: int, *, revealed: bool, total_line: bool = True
) -> str:
    """One round's count as a bar chart in plain HTML (cheap to redraw every second).

    A typed answer gets a bar of its own, up to TYPED_BARS of them (the most given first). The
    bars are drawn only for a round whose answers are frozen (the votes shown, or the answer
    revealed; while it is open the count says only how many answered), so the chart never grows
    under the eyes and keeps no room for answers to come: on a phone that room pushed a student's
    own verdict off the screen. Each bar says its count and its share of those who answered."""
    shown = dict(counts)
    choice = question.kind is Kind.CHOICE
    labels = [str(i) for i in range(len(question.choices))] if choice else []
    labels += [a for a, _ in counts if a not in labels][:TYPED_BARS]
    most = max([1, *shown.values()])
    rows = []
    for a in labels:
        right = revealed and a == question.answer
        n = shown.get(a, 0)
        share = f" ({100 * n / total:.0f}%)" if total else ""
        rows.append(
            f'<div class="wt-bar{" wt-right" if right else ""}" role="listitem">'
            '<span class="wt-label">'
            f"{html.escape(question.label(a))}{' ✓' if right else ''}</span>"
            '<span class="wt-track" aria-hidden="true">'
            f'<span class="wt-fill" style="width:{100 * n / most:.0f}%">'
            f"</span></span><b>{n}</b>{share}</div>"
        )
    return (
        _STYLE
        + '<div class="wt-bars">'
        + (f'<div class="wt-total">{total} answered</div>' if total_line else "")
        + f'<div role="list" aria-label="{total} answers">'  # a list with counts, read as text
        + "".join(rows)
        + "</div></div>"
    )


def rounds_html(question: Question, rounds: tuple[peer.Round, ...], *, revealed: bool) -> str:
    """Every round's votes side by side: 'Round n · N of M answered · p% right' over its bars."""
    cols = []
    for r in rounds:
        counts = tuple((a, n) for a, n in _canonical_counts(question, r))
        right = f" · {r.percent_right:.0f}% right" if revealed else ""
        cols.append(
            f'<div class="wt-round"><div class="wt-head"><b>Round {r.round}</b> · '
            f"{peer.answered_line(r)}{right}</div>"
            + bars_html(question, counts, r.answered, revealed=revealed, total_line=False)[
                len(_STYLE) :
            ]
            + "</div>"
        )
    return _STYLE + '<div class="wt-rounds">' + "".join(cols) + "</div>"


def _canonical_counts(question: Question, r: peer.Round):
    """A round's rows back as (canonical answer, count), for the bars."""
    by_label = {question.label(c): c for c in _known(question)}
    return [(by_label.get(row.label, row.label), row.count) for row in r.rows]


def _known(question: Question) -> list[str]:
    if question.kind is Kind.CHOICE:
        return [str(i) for i in range(len(question.choices))]
    return []


def frozen_rounds(r: Classroom, record: ClassRecord, question: Question):
    """The rounds of a question whose answers are frozen (votes shown, or revealed): read from the
    store once per change of the class (its version), not at every poll."""
    ss = st.session_state
    key = (record.code, record.version, question.id)
    if ss.get("wt_frozen_key") != key:
        ss["wt_frozen"] = peer.rounds(r, record.code, question, r.members(record.code))
        ss["wt_frozen_key"] = key
    return ss["wt_frozen"]


def student_panel(r: Classroom, record: ClassRecord, question: Question) -> None:
    """A student's side: the card and the answer form (open), the votes (shown), and at the
    reveal whether they were right, with their own mistake explained."""
    ss = st.session_state
    a = peer.asked(record)
    mine_key = f"wt_mine_{record.code}_{peer.key(question.id, a.round)}"
    if mine_key not in ss:
        ss[mine_key] = peer.my_answer(r, record.code, ss.get("wt_me", ""), question, a.round) or ""
    mine = ss[mine_key]
    st.html(card_html(question))
    rounds = ()
    if a.stage is not peer.Stage.OPEN:
        rounds = frozen_rounds(r, record, question)
        st.html(rounds_html(question, rounds, revealed=a.stage is peer.Stage.REVEALED))
    said = _stage_sentence(question, a, rounds, teacher=False, mine=mine)
    figure.announce(said, "question", rank=figure.CLASS, key=_stage_key(question, a))
    # their own answer, once recorded (not on arrival): said where it differs from the one this
    # session showed before, even where the page never noted that one (runs close together)
    shown, ss[f"{mine_key}_shown"] = ss.get(f"{mine_key}_shown"), mine
    if a.stage is not peer.Stage.REVEALED:
        recorded = f"Your answer {question.label(mine)} is recorded." if mine else ""
        sent = shown is not None and shown != mine
        figure.announce(recorded, "mine", rank=figure.CLASS, key=mine, first=sent)
    if a.stage is peer.Stage.REVEALED:
        answer, why = inert(question.label(question.answer)), inert(question.why)
        if not mine:
            st.info(f"The answer: {answer}. {why}")
        elif mine == question.answer:
            st.success(f"Right: {inert(question.label(mine))}. {why}")
        else:
            st.error(
                f"Not this time: you answered {inert(question.label(mine))}; the answer is "
                f"{answer}. {why}"
            )
            if question.explain(mine):
                st.text(question.explain(mine))
        return
    if a.stage is peer.Stage.VOTES:
        if mine:
            st.caption(f"Your answer: {inert(question.label(mine))}")
        return
    if a.round > 1:
        st.caption(f"Round {a.round}: vote again after discussing with your neighbour.")
    with st.form(f"wt_answer_{question.id}", border=False):
        if question.kind is Kind.CHOICE:
            st.radio(
                "Your answer",
                options=[str(i) for i in range(len(question.choices))],
                format_func=question.label,
                key=f"wt_pick_{question.id}",
                index=None,
            )
        elif question.kind is Kind.SHAPE:
            st.text_input("Your answer, as a tuple", key=f"wt_pick_{question.id}", max_chars=40)
        elif question.kind is Kind.NUMBER:
            st.text_input("Your answer, a number", key=f"wt_pick_{question.id}", max_chars=20)
        else:
            st.text_input("Your expression", key=f"wt_pick_{question.id}", max_chars=200)
        button(
            "Send my answer",
            key=f"wt_send_{question.id}",
            on_click=callback(_answer, "wt_", reset=False, notice="wt_answer_error"),
            args=(r, question, mine_key),
            form=True,
        )
    if ss.get("wt_answer_error"):
        st.error(inert(ss["wt_answer_error"]))
        figure.announce(ss["wt_answer_error"], "answer-error", rank=figure.CLASS)
    if mine:
        st.caption(
            f"Your answer: {inert(question.label(mine))} (you can change it until the reveal)"
        )


def _answer(r: Classroom, question: Question, mine_key: str) -> None:
    started = time.process_time()
    ss = st.session_state
    try:
        canonical = peer.answer(
            r, ss["wt_code"], ss.get("wt_me", ""), question, ss.get(f"wt_pick_{question.id}")
        )
    except ClassError as e:
        ss["wt_answer_error"] = str(e) if e.problem is not Problem.NO_CLASS else "The class ended."
        return
    ss["wt_answer_error"] = ""
    ss[mine_key] = canonical
    ss[LAST_ANSWER_CPU] = time.process_time() - started


def covered(r: Classroom) -> bool:
    """Whether this session's slides are covered now: it is in a class (a teacher or a student)
    whose question is open or shows its votes. Kept in ``wt_covered`` for the poll; when the store
    is out of reach, the last answer stands."""
    ss = st.session_state
    code = ss.get("wt_code", "")
    if not code or not (ss.get("wt_token") or ss.get("wt_me")):
        ss["wt_covered"] = False
        return False
    try:
        ss["wt_covered"] = cover(r.state(code), True) is not None
    except ClassError:
        ss["wt_covered"] = bool(ss.get("wt_covered"))
    return ss["wt_covered"]
