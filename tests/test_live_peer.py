"""Peer instruction in the Walkthrough through AppTest (a teacher and students on one store): the
slides are covered on every screen of the class while a question is open; no counts until the
teacher shows them; a second round shown beside the first; the reveal explains the wrong answers;
a plan from the operator's folder starts a class with its questions, a malformed one starts none;
the results and their downloads are in the teacher's menu before the end."""

from __future__ import annotations

import re
from unittest.mock import ANY

import pytest

from attnviz.classroom import plan
from tests.test_classroom_plan import TEACHER
from tests.test_walkthrough import _app, _click, _room, _student, _teacher, _texts

pytestmark = pytest.mark.usefixtures("_store")


@pytest.fixture
def _store(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_CLASS_STORE", raising=False)
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "plans"
    folder.mkdir()
    (folder / "week3.toml").write_text(TEACHER)
    (folder / "broken.toml").write_text(TEACHER.replace('kind = "number"', 'kind = "essay"'))
    monkeypatch.setenv("ATTNVIZ_PLAN_DIR", str(folder))


def _html(at) -> str:
    return " ".join(h.proto.body for h in at.get("html"))


def _screen(at) -> str:
    """Everything the page shows as text (messages, markdown, captions, code, text, HTML)."""
    return _texts(at) + " ".join(t.value for t in at.text) + _html(at)


def _ask(teacher, qid: str) -> None:
    while f"wt_ask_{qid}" not in [b.key for b in teacher.button]:
        _click(teacher, "wt_next")
    _click(teacher, f"wt_ask_{qid}")


def _send(student, qid: str, value: str) -> None:
    student.run()
    radios = [r for r in student.radio if r.key == f"wt_pick_{qid}"]
    if radios:
        radios[0].set_value(value)
    else:
        student.text_input(key=f"wt_pick_{qid}").input(value)
    student.button(key=f"wt_send_{qid}").click().run()
    assert not student.exception, student.exception


def test_an_open_question_covers_the_slides_on_every_screen_of_the_class():
    teacher, code = _teacher()
    students = [_student(code) for _ in range(2)]
    _ask(teacher, "result_shape")
    for at in (teacher, *students):
        at.run()
        assert "Predict first" in _texts(at)
        assert not at.get("plotly_chart")
        assert not [c for c in at.code if c.language == "python"]  # no slide code
        assert "net_output is (2, 3, 5)" not in _screen(at) or "(2, 5)" not in _screen(at)
    # a student who steps to another slide still sees no slide while it is open
    _click(students[0], "wt_next")
    assert not students[0].get("plotly_chart") and "Predict first" in _texts(students[0])
    _click(teacher, "wt_reveal")
    for at in (teacher, *students):
        at.run()
        assert at.get("plotly_chart")


def test_counts_are_hidden_until_shown_then_two_rounds_side_by_side():
    teacher, code = _teacher()
    one, two = _student(code), _student(code)
    _ask(teacher, "result_shape")
    _send(one, "result_shape", "(2, 3, 5)")
    _send(two, "result_shape", "(2, 5)")
    teacher.run()
    assert "2 of 2 answered" in _html(teacher)
    for at in (teacher, one):
        at.run()
        assert 'class="wt-bar' not in _html(at)  # no distribution anywhere while the round is open
    _click(teacher, "wt_show")
    one.run()
    assert "(50%)" in _html(teacher) and "(50%)" in _html(one)
    _click(teacher, "wt_again")
    _send(one, "result_shape", "(2, 5)")
    _click(teacher, "wt_reveal")
    html = _html(teacher)
    assert "Round 1" in html and "Round 2" in html
    assert "50% right" in html and "100% right" in html
    one.run()
    assert "Right" in " ".join(s.value for s in one.success)


def test_the_reveal_explains_a_wrong_answer_by_the_mistake_it_comes_from():
    teacher, code = _teacher()
    student = _student(code)
    _ask(teacher, "result_shape")
    _send(student, "result_shape", "(2, 3, 5)")
    _click(teacher, "wt_reveal")
    student.run()
    said = " ".join(t.value for t in (*teacher.text, *student.text))
    assert re.search(r"\(2, 3, 5\).*multiplied but did not sum", said)


def test_a_plan_from_the_operators_folder_starts_a_class_with_its_questions():
    teacher = _app()
    teacher.selectbox(key="wt_plan_pick").set_value("week3").run()
    _click(teacher, "wt_start")
    code = teacher.session_state["wt_code"]
    assert plan.PLAN_PARAM in _room().state(code).example
    student = _student(code)
    _click(teacher, "wt_next")  # slide 2 asks the question before att_scores... slide 2 itself
    _ask(teacher, "how_many_words")
    _send(student, "how_many_words", "3")
    _click(teacher, "wt_reveal")
    student.run()
    assert "Right" in " ".join(s.value for s in student.success)


def test_a_malformed_plan_starts_no_class_and_says_where():
    teacher = _app()
    teacher.selectbox(key="wt_plan_pick").set_value("broken").run()
    assert re.search(r"'kind' at line \d+", " ".join(e.value for e in teacher.error))
    _click(teacher, "wt_start")
    assert not teacher.session_state["wt_code"]


def test_the_results_are_in_the_teachers_menu_before_the_end():
    teacher, code = _teacher()
    student = _student(code)
    _ask(teacher, "sum_axis")
    _send(student, "sum_axis", "0")
    _click(teacher, "wt_reveal")
    (frame,) = teacher.dataframe
    row = frame.value.iloc[0]
    assert (row["question"], row["round"], row["answered"], row["% right"]) == (
        "sum_axis",
        1,
        "1 of 1",
        0,
    )
    assert row["most common mistake"].startswith("axis 0, the sentences (B = 2) (1): ")


def test_a_student_hears_the_teacher_move_ask_and_reveal_and_their_own_answer():
    from tests.test_a11y import said

    teacher, code = _teacher()
    student = _student(code)
    joined = said(student)["joined"][0]
    assert joined.startswith("You joined live class ") and "the teacher is on slide 1 of" in joined
    assert not said(student)["teacher"][2]  # where the teacher was on arrival is not news
    _ask(teacher, "result_shape")
    student.run()
    k = teacher.session_state["wt_slide"]
    # under the question, without the slide's title
    assert re.fullmatch(rf"The teacher moved to slide {k} of \d+\.", said(student)["teacher"][0])
    assert said(student)["question"][0].startswith("The teacher asks: ")
    asked = said(teacher)["question"]
    assert asked[0].startswith("Question asked: ")
    assert said(student)["mine"][2] is False  # no answer yet: nothing to say
    _send(student, "result_shape", "(2, 3, 1)")
    # said even where the page never noted the empty slot before it (first: True)
    assert said(student)["mine"] == ("Your answer (2, 3, 1) is recorded.", ANY, True)
    student.run()  # a poll: the same answer, not sent anew
    assert said(student)["mine"][::2] == ("Your answer (2, 3, 1) is recorded.", False)
    teacher.run()  # a student answered: the count moved, the teacher hears nothing new
    assert said(teacher)["question"][1] == asked[1]
    _click(teacher, "wt_reveal")
    student.run()
    assert said(student)["question"][0] == (
        "The answer is revealed: (2, 5). You answered (2, 3, 1)."
    )
