"""Peer instruction on a live class: vote alone with the counts hidden, see the votes when the
teacher shows them, vote again after discussing, then the reveal.

The class's ``question`` field says where the question is: ``id`` (round 1) or ``id@n`` (round
n, up to ``ROUNDS``), with ``+votes`` while the round's votes are shown and its answer is not.
Each round's answers are stored under its own key (``id``, ``id@2``, ...), so a round is kept
when the next opens, and a question asked again after its reveal starts from an empty round.

    ask(room, code, token, q)        # a fresh round open: every screen shows the question, no counts
    show_votes(room, code, token)    # answers frozen; counts, percentages, "N of M answered"
    again(room, code, token, q)      # the next round open ("vote again after discussing")
    reveal(room, code, token)        # the right answer and each common wrong answer explained
"""

from __future__ import annotations

import dataclasses
import enum
import re
from dataclasses import dataclass

from attnviz.classroom.question import Question, is_right
from attnviz.classroom.service import ClassError, Classroom, Problem, Tally
from attnviz.classroom.store import ClassRecord, Phase

ROUNDS = 4  # a question asked again after its reveal opens a fresh round: answers never leak back
_KEY = re.compile(r"([a-z][a-z0-9_]{0,39})(?:@([2-9]))?(\+votes)?")


class Stage(enum.Enum):
    """What every screen shows of the question on screen."""

    OPEN = "open"  # students answer; no counts anywhere
    VOTES = "votes"  # answers frozen; the counts are shown, the answer is not
    REVEALED = "revealed"  # the counts, the right answer and why, the wrong answers explained


@dataclass(frozen=True)
class Asked:
    """The question on screen: its id, its round (1 or 2) and its stage."""

    id: str
    round: int
    stage: Stage


def key(qid: str, round_: int = 1) -> str:
    """The key a round's answers are stored under: 'id' for round 1, 'id@2' for round 2."""
    return qid if round_ == 1 else f"{qid}@{round_}"


def asked(record: ClassRecord) -> Asked | None:
    """The question on the class's screens, or None (none, or a field this code did not write)."""
    if record.phase is Phase.NONE or not record.question:
        return None
    m = _KEY.fullmatch(record.question)
    if m is None:
        return None
    stage = Stage.OPEN if record.phase is Phase.OPEN else Stage.VOTES if m[3] else Stage.REVEALED
    return Asked(m[1], int(m[2] or 1), stage)


def in_round(question: Question, round_: int) -> Question:
    """The question as its round's answers are kept (its id is the round's key)."""
    return dataclasses.replace(question, id=key(question.id, round_))


# ---- the teacher -----------------------------------------------------------------------------------


def ask(room: Classroom, code: str, token: str, question: Question) -> ClassRecord:
    """Open the question's first round that has no answers yet (round 1 the first time): asked
    again after a reveal, nobody's earlier answer stands in the new round."""
    fresh = next(
        (n for n in range(1, ROUNDS + 1) if not room.tally(code, in_round(question, n)).total),
        None,
    )
    if fresh is None:
        raise ClassError(Problem.NOT_OPEN, f"This question has had its {ROUNDS} rounds.")
    if fresh == 1:
        return room.ask(code, token, question)
    return room._teacher(code, token, question=key(question.id, fresh), phase=Phase.OPEN)


def _now(room: Classroom, code: str) -> Asked:
    a = asked(room.state(code))
    if a is None:
        raise ClassError(Problem.NOT_OPEN, "No question is on screen.")
    return a


def show_votes(room: Classroom, code: str, token: str) -> ClassRecord:
    """Freeze the open round's answers and show its counts (not the answer)."""
    a = _now(room, code)
    if a.stage is not Stage.OPEN:
        raise ClassError(Problem.NOT_OPEN, "No question is open.")
    return room._teacher(code, token, question=key(a.id, a.round) + "+votes", phase=Phase.REVEALED)


def again(room: Classroom, code: str, token: str, question: Question) -> ClassRecord:
    """Open the next round of the question on screen: everyone votes again after discussing; the
    earlier rounds' answers are kept."""
    a = _now(room, code)
    if a.id != question.id or a.round >= ROUNDS or a.stage is Stage.OPEN:
        raise ClassError(Problem.NOT_OPEN, "Show this round's votes before another round.")
    return room._teacher(code, token, question=key(a.id, a.round + 1), phase=Phase.OPEN)


def reveal(room: Classroom, code: str, token: str) -> ClassRecord:
    """Freeze the answers and show the right one, why, and what each wrong answer comes from."""
    a = _now(room, code)
    if a.stage is Stage.REVEALED:
        raise ClassError(Problem.NOT_OPEN, "The answer is already shown.")
    return room._teacher(code, token, question=key(a.id, a.round), phase=Phase.REVEALED)


# ---- the students ----------------------------------------------------------------------------------


def answer(room: Classroom, code: str, student: str, question: Question, text: object) -> str:
    """A student's answer to the open round of question; returns its canonical form."""
    a = asked(room.state(code))
    if a is None or a.id != question.id or a.stage is not Stage.OPEN:
        raise ClassError(Problem.NOT_OPEN, "This question is not open for answers now.")
    return room.answer(code, student, in_round(question, a.round), text)


def my_answer(room: Classroom, code: str, student: str, question: Question, round_: int):
    """The student's canonical answer in a round, or None."""
    return room.my_answer(code, student, in_round(question, round_))


# ---- what the room answered ------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One answer as shown: its label, how many gave it, their share of those who answered, whether
    it is right, and the mistake it comes from ('' when right or unknown)."""

    label: str
    count: int
    percent: float
    right: bool
    why: str


@dataclass(frozen=True)
class Round:
    """One round of a question: its rows (most given first), how many answered of how many
    joined, the share right, and the most common wrong answer (None when there is none)."""

    round: int
    rows: tuple[Row, ...]
    answered: int
    joined: int
    percent_right: float
    mistake: Row | None


def summarise(question: Question, tally: Tally, joined: int, round_: int = 1) -> Round:
    """A round's tally as rows with percentages and explanations."""
    rows = tuple(
        Row(
            question.label(a),
            n,
            100.0 * n / tally.total if tally.total else 0.0,
            is_right(question, a),
            "" if is_right(question, a) else question.explain(a),
        )
        for a, n in tally.counts
    )
    wrong = [r for r in rows if not r.right]
    return Round(
        round_,
        rows,
        tally.total,
        max(joined, tally.total),
        100.0 * tally.right / tally.total if tally.total else 0.0,
        wrong[0] if wrong else None,
    )


def rounds(room: Classroom, code: str, question: Question, joined: int) -> tuple[Round, ...]:
    """Every round of question that has answers (round 1 always), in order."""
    out = []
    for n in range(1, ROUNDS + 1):
        tally = room.tally(code, in_round(question, n))
        if n == 1 or tally.total:
            out.append(summarise(question, tally, joined, n))
    return tuple(out)


def answered_line(r: Round) -> str:
    """'12 of 30 answered' (the room's size is who joined)."""
    return f"{r.answered} of {r.joined} answered"
