"""Peer instruction on a real class store (SQLite): counts hidden while a round is open, shown when
the teacher chooses, a second round that keeps the first, the reveal explaining the most frequent
wrong answers by the mistake that produces them; the results of a class of 30 simulated students
exported (CSV and JSON) match what they answered, vote for vote."""

from __future__ import annotations

import csv
import io
import json
import random
from collections import Counter

import pytest

from attnviz import examples, forms
from attnviz.classroom import ClassError, Classroom, Problem, peer, results
from attnviz.classroom import secret as sec
from attnviz.classroom.plan import build_questions, default_plan
from attnviz.classroom.question import format_shape
from attnviz.classroom.sqlite_store import SQLiteStore

SHAPE = (2, 3, 5)


@pytest.fixture
def room(tmp_path):
    store = SQLiteStore(tmp_path / "classes.db")
    yield Classroom(store)
    store.close()


@pytest.fixture
def qs():
    return {
        q.id: q for q in build_questions(default_plan(), *examples.random_example(*SHAPE, seed=7))
    }


def _class(room, n, names=False):
    started = room.start()
    students = [sec.new_student() for _ in range(n)]
    for i, s in enumerate(students):
        room.join(started.code, s, f"Student Name {i}" if names else "")
    return started, students


def test_a_round_opens_hidden_and_its_votes_show_only_when_the_teacher_shows_them(room, qs):
    started, students = _class(room, 3)
    q = qs["result_shape"]
    peer.ask(room, started.code, started.token, q)
    assert peer.asked(room.state(started.code)) == peer.Asked(q.id, 1, peer.Stage.OPEN)
    peer.answer(room, started.code, students[0], q, "(2, 5)")
    peer.show_votes(room, started.code, started.token)
    assert peer.asked(room.state(started.code)).stage is peer.Stage.VOTES
    with pytest.raises(ClassError) as e:  # frozen while the votes are shown
        peer.answer(room, started.code, students[1], q, "(2, 3)")
    assert e.value.problem is Problem.NOT_OPEN


def test_a_second_round_keeps_the_first(room, qs):
    started, (a, b, c) = _class(room, 3)
    q = qs["result_shape"]
    peer.ask(room, started.code, started.token, q)
    for s, text in ((a, "(2, 3, 5)"), (b, "(2, 3, 5)"), (c, "(2, 5)")):
        peer.answer(room, started.code, s, q, text)
    peer.show_votes(room, started.code, started.token)
    peer.again(room, started.code, started.token, q)
    assert peer.asked(room.state(started.code)) == peer.Asked(q.id, 2, peer.Stage.OPEN)
    for s in (a, b, c):
        peer.answer(room, started.code, s, q, "(2, 5)")
    peer.reveal(room, started.code, started.token)
    first, second = peer.rounds(room, started.code, q, 3)
    assert [(r.label, r.count) for r in first.rows] == [("(2, 3, 5)", 2), ("(2, 5)", 1)]
    assert [(r.label, r.count) for r in second.rows] == [("(2, 5)", 3)]
    assert (first.percent_right, second.percent_right) == (pytest.approx(100 / 3), 100.0)
    assert peer.answered_line(first) == "3 of 3 answered"


def test_a_second_round_needs_the_first_rounds_votes_shown(room, qs):
    started, _ = _class(room, 1)
    peer.ask(room, started.code, started.token, qs["sum_axis"])
    with pytest.raises(ClassError):
        peer.again(room, started.code, started.token, qs["sum_axis"])


def test_the_three_most_frequent_wrong_answers_are_explained_by_their_mistake(room, qs):
    started, students = _class(room, 9)
    q = qs["result_shape"]
    peer.ask(room, started.code, started.token, q)
    given = ["(2, 3, 5)"] * 3 + ["(2, 3)"] * 2 + ["(3, 5)"] * 2 + ["(2, 5)"] * 2
    for s, text in zip(students, given, strict=True):
        peer.answer(room, started.code, s, q, text)
    peer.reveal(room, started.code, started.token)
    (r,) = peer.rounds(room, started.code, q, 9)
    wrong = [row for row in r.rows if not row.right]
    assert [row.label for row in wrong] == ["(2, 3, 5)", "(2, 3)", "(3, 5)"]
    assert r.mistake == wrong[0]
    x, w = examples.random_example(*SHAPE, seed=7)
    for row in wrong:  # the explanation names a form that, run, gives that very shape
        key = next(k for k, f in forms.FORMS.items() if f.code in row.why and f.when(None, False))
        ran = forms.FORMS[key].runs[0](forms.Inputs.of_weights(x, w))
        assert format_shape(tuple(ran.shape)) == row.label
    assert "multiplied but did not sum" in wrong[0].why


def _simulate(room, qs, n=30, seed=0, names=False):
    """n students answer every question in round 1 and most of them in round 2, at random."""
    rng = random.Random(seed)
    started, students = _class(room, n, names)
    typed = {
        "unsqueeze_shape": ["(2, 3, 1)", "(2, 1, 3)", "(2, 3)", "[2, 3, 1]"],
        "result_shape": ["(2, 5)", "(2, 3, 5)", "(2, 3)", "2,5"],
    }
    truth = []  # (question, round, student, canonical)
    for q in qs.values():
        options = typed.get(q.id) or [str(i) for i in range(len(q.choices))]
        peer.ask(room, started.code, started.token, q)
        for round_ in (1, 2):
            if round_ == 2:
                peer.show_votes(room, started.code, started.token)
                peer.again(room, started.code, started.token, q)
            for s in students:
                if round_ == 2 and rng.random() < 0.2:
                    continue  # not everyone votes again
                canonical = peer.answer(room, started.code, s, q, rng.choice(options))
                truth.append((q.id, round_, s, canonical))
        peer.reveal(room, started.code, started.token)
    return started, students, truth


def test_the_export_of_a_class_of_30_matches_what_was_answered_vote_for_vote(room, qs):
    started, students, truth = _simulate(room, qs)
    got = results.collect(room, started.code, tuple(qs.values()))
    number = {s: f"student {i}" for i, s in enumerate(sorted(students), start=1)}
    expected = Counter(
        (qid, str(n), number[s], qs[qid].label(a), str(a == qs[qid].answer))
        for qid, n, s, a in truth
    )
    rows = list(csv.DictReader(io.StringIO(results.to_csv(got))))
    assert tuple(rows[0]) == results.COLUMNS
    exported = Counter(
        (r["question"], r["round"], r["student"], r["answer"], r["right"]) for r in rows
    )
    assert exported == expected and len(rows) == len(truth)
    doc = json.loads(results.to_json(got))
    for qd in doc["questions"]:
        for rd in qd["rounds"]:
            mine = Counter(
                qs[qd["id"]].label(a)
                for qid, n, _, a in truth
                if qid == qd["id"] and n == rd["round"]
            )
            assert rd["counts"] == dict(mine)
            right = sum(v for k, v in mine.items() if k == qs[qd["id"]].label(qs[qd["id"]].answer))
            assert rd["percent_right"] == round(100 * right / sum(mine.values()), 1)
    assert len(doc["votes"]) == len(truth)


def test_the_export_names_no_one_unless_the_teacher_asks(room, qs):
    started, students, _ = _simulate(room, {"sum_axis": qs["sum_axis"]}, n=5, names=True)
    anonymous = results.to_csv(results.collect(room, started.code, (qs["sum_axis"],)))
    named = results.to_csv(results.collect(room, started.code, (qs["sum_axis"],), names=True))
    assert "Student Name" not in anonymous and "student 1" in anonymous
    assert all(f"Student Name {i}" in named for i in range(5))
    assert not any(s in anonymous + named for s in students)  # ids never leave the store


def test_a_name_that_looks_like_a_formula_is_quoted_in_the_csv(room, qs):
    started = room.start()
    s = sec.new_student()
    room.join(started.code, s, "=HYPERLINK(1)")
    peer.ask(room, started.code, started.token, qs["sum_axis"])
    peer.answer(room, started.code, s, qs["sum_axis"], "1")
    text = results.to_csv(results.collect(room, started.code, (qs["sum_axis"],), names=True))
    assert "'=HYPERLINK(1)" in text


def test_a_question_asked_again_after_its_reveal_starts_a_fresh_round(room, qs):
    started, (a, b) = _class(room, 2)
    q = qs["sum_axis"]
    peer.ask(room, started.code, started.token, q)
    peer.answer(room, started.code, a, q, "0")
    peer.reveal(room, started.code, started.token)
    room.close_question(started.code, started.token)
    peer.ask(room, started.code, started.token, q)  # asked again: round 2, empty
    assert peer.asked(room.state(started.code)) == peer.Asked(q.id, 2, peer.Stage.OPEN)
    assert peer.my_answer(room, started.code, a, q, 2) is None  # no answer carried over
    peer.answer(room, started.code, b, q, "1")
    first, second = peer.rounds(room, started.code, q, 2)
    assert [(r.label, r.count) for r in first.rows] == [(q.label("0"), 1)]
    assert [(r.label, r.count) for r in second.rows] == [(q.label("1"), 1)]
