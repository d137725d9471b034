"""A class's results, kept before it ends: per question and round, what the room answered, and a
download of every answer (CSV or JSON).

Anonymous by default: each student is "student N", numbered the same way in every question (so a
student's two rounds can be followed) but never named; the names they typed are written only when
the teacher asks (``names=True``). Every cell a spreadsheet could read as a formula is quoted.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from attnviz.classroom import peer
from attnviz.classroom.question import Question, is_right
from attnviz.classroom.service import Classroom

COLUMNS = ("question", "round", "student", "answer", "right")


@dataclass(frozen=True)
class Vote:
    """One answer: the question's id, the round, who (anonymous or a name), the answer as the
    students saw it and whether it was right."""

    question: str
    round: int
    student: str
    answer: str
    right: bool


@dataclass(frozen=True)
class Results:
    """A class's results: its code, how many joined, each question's rounds, every vote."""

    code: str
    joined: int
    questions: tuple[tuple[Question, tuple[peer.Round, ...]], ...]
    votes: tuple[Vote, ...]


def collect(
    room: Classroom, code: str, questions: tuple[Question, ...], *, names: bool = False
) -> Results:
    """Everything the class answered so far (the class stays as it is)."""
    members = room.store.members(code)
    number = {s: f"student {i}" for i, s in enumerate(sorted(members), start=1)}
    who = {s: (members[s] or number[s]) if names else number[s] for s in members}
    joined = len(members)
    per_question = []
    votes = []
    for q in questions:
        per_question.append((q, peer.rounds(room, code, q, joined)))
        for n in range(1, peer.ROUNDS + 1):
            given = room.store.answers(code, peer.key(q.id, n))
            for student in sorted(given, key=lambda s: (who.get(s, s), s)):
                a = given[student]
                votes.append(
                    Vote(q.id, n, who.get(student, "student ?"), q.label(a), is_right(q, a))
                )
    return Results(code, joined, tuple(per_question), tuple(votes))


def _cell(value: object) -> object:
    """A spreadsheet reads '=...', '+...', '@...' (and '-' before letters) as a formula: quote it."""
    if (
        isinstance(value, str)
        and value[:1] in ("=", "+", "@", "\t", "\r")
        or (isinstance(value, str) and value[:1] == "-" and not value[1:2].isdigit())
    ):
        return "'" + value
    return value


def to_csv(results: Results) -> str:
    """Every vote, one row each: question, round, student, answer, right."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for v in results.votes:
        w.writerow([_cell(v.question), v.round, _cell(v.student), _cell(v.answer), v.right])
    return out.getvalue()


def to_json(results: Results) -> str:
    """The summary (per question, per round) and every vote, as JSON."""
    doc = {
        "class": results.code,
        "joined": results.joined,
        "questions": [
            {
                "id": q.id,
                "prompt": q.prompt,
                "answer": q.label(q.answer),
                "rounds": [
                    {
                        "round": r.round,
                        "answered": r.answered,
                        "percent_right": round(r.percent_right, 1),
                        "counts": {row.label: row.count for row in r.rows},
                        "most_common_mistake": None
                        if r.mistake is None
                        else {
                            "answer": r.mistake.label,
                            "count": r.mistake.count,
                            "why": r.mistake.why,
                        },
                    }
                    for r in rounds
                ],
            }
            for q, rounds in results.questions
        ],
        "votes": [v.__dict__ for v in results.votes],
    }
    return json.dumps(doc, indent=1, ensure_ascii=False)
