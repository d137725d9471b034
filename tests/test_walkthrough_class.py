"""The live class's defences through AppTest (the helpers and the store fixture of
test_walkthrough): a teacher-tab link that tells nothing of whether its code names a class, join
text that does not parse answered in words, every callback inside the error boundary, and the
teacher's students (remove one, close the class to new students)."""

from __future__ import annotations

import pytest

from attnviz.classroom import Problem, format_code, open_store
from attnviz.classroom import secret as sec
from attnviz.classroom.service import ClassError, Classroom
from attnviz.ui import live_class
from tests import test_walkthrough as _wt
from tests.test_walkthrough import (
    _answer,
    _app,
    _click,
    _host_tab,
    _open_question,
    _teacher,
    _texts,
)

_store = _wt._store  # each test its own class store (an autouse fixture)
JOIN = "wt_join_submit"
SCREEN = {"w": 1920, "h": 1080, "token": ""}


def _other_code(code: str) -> str:
    """A well-formed code that names no class."""
    return next(c for c in ("ACDEFGHJK", "ACDEFGHJM") if c != code)


def _join(at, code: str, name: str = ""):
    at.text_input(key="wt_join_code").input(code)
    at.text_input(key="wt_join_name").input(name)
    at.button(key=JOIN).click().run()
    assert not at.exception, at.exception
    return at


# ---- ?class=CODE&host=1 --------------------------------------------------------------------------


def test_a_host_link_says_the_same_of_a_class_and_of_no_class():
    _, code = _teacher()
    seen = []
    for typed in (code, _other_code(code)):
        at = _host_tab(typed, SCREEN)  # this browser keeps no token for the code
        assert not at.session_state["wt_code"] and not at.session_state["wt_token"]
        seen.append(_texts(at).replace(format_code(typed), "CODE").replace(typed, "CODE"))
    assert seen[0] == seen[1]
    assert live_class.NO_KEY in seen[0] and "Live class" not in seen[0]


def test_a_host_link_shows_nothing_of_the_class_until_the_browser_reports():
    _, code = _teacher()
    at = _app({"class": code, "host": "1"})  # the browser has not reported yet
    assert "Live class" not in _texts(at) and not at.session_state["wt_code"]
    assert dict(at.query_params) == {"class": code, "host": "1", "slide": "1"}


# ---- join text that does not parse -------------------------------------------------------------


@pytest.mark.parametrize("name", ["x" * 41, "Ann\x07", "Z" + "\u0301" * 38, "\ufdfd" * 40])
def test_a_name_that_does_not_parse_is_a_plain_message(name):
    _, code = _teacher()
    at = _join(_app(), format_code(code), name)
    assert at.error and "name" in at.error[0].value
    assert not at.session_state["wt_code"]
    assert Classroom(open_store()).members(code) == 0


def test_a_pasted_zero_width_space_is_dropped_from_the_name():
    _, code = _teacher()
    at = _join(_app(), format_code(code), "Ana\u200bMaria")
    assert at.session_state["wt_code"] == code
    assert list(open_store().members(code).values()) == ["AnaMaria"]


def test_a_right_code_joins_after_the_servers_failed_count_is_used_up(monkeypatch):
    _, code = _teacher()
    room = live_class.room()
    monkeypatch.setattr(room, "limits", type(room.limits)(failed_joins_per_min=3))
    for i in range(3):  # other addresses' guesses
        with pytest.raises(ClassError):
            room.join(_other_code(code), sec.new_student(), client=f"10.0.0.{i}")
    at = _join(_app(), format_code(code))
    assert at.session_state["wt_code"] == code


# ---- the error boundary ------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["join", "start", "next"])
def test_a_callback_that_fails_shows_a_plain_message(monkeypatch, key):
    def broken(*args, **kwargs):
        raise RuntimeError("an unforeseen failure")

    at = _app()
    if key == "join":
        _, code = _teacher()
        monkeypatch.setattr(Classroom, "join", broken)
        _join(at, format_code(code))
    elif key == "start":
        monkeypatch.setattr(Classroom, "start", broken)
        _click(at, "wt_start")
    else:
        monkeypatch.setattr(live_class, "moved", broken)
        _click(at, "wt_next")
    assert not at.exception
    assert "could not use" in _texts(at) and "unforeseen" not in _texts(at)


def test_an_answer_whose_callback_fails_shows_a_plain_message(monkeypatch):
    teacher, code = _teacher()
    student = _app({"class": format_code(code)})
    _open_question(teacher, "sum_axis")

    def broken(*args, **kwargs):
        raise RuntimeError("an unforeseen failure")

    monkeypatch.setattr(Classroom, "answer", broken)
    _answer(student, "sum_axis", "1")
    assert not student.exception and "could not use" in _texts(student)


# ---- the teacher's students --------------------------------------------------------------------


def test_the_teacher_closes_the_class_to_new_students_and_opens_it_again():
    teacher, code = _teacher()
    member = _app({"class": format_code(code)})
    _click(teacher, "wt_close_joining")
    assert not Classroom(open_store()).state(code).joining
    assert "closed to new students" in _texts(teacher)
    late = _join(_app(), format_code(code))
    assert "closed this class" in late.error[0].value and not late.session_state["wt_code"]
    member.run()
    assert member.session_state["wt_code"] == code  # a member stays, and may come back
    _click(teacher, "wt_open_joining")
    assert _join(_app(), format_code(code)).session_state["wt_code"] == code


def test_the_teacher_removes_a_fake_member_and_their_vote():
    teacher, code = _teacher()
    real, fake = _app({"class": format_code(code)}), _app({"class": format_code(code)})
    _open_question(teacher, "sum_axis")
    _answer(real, "sum_axis", "1")
    _answer(fake, "sum_axis", "0")
    teacher.run()
    assert "2 joined" in _texts(teacher)
    teacher.selectbox(key="wt_remove_pick").set_value(fake.session_state["wt_me"])
    _click(teacher, "wt_remove")
    room = Classroom(open_store())
    q = next(q for q in _questions() if q.id == "sum_axis")
    assert room.tally(code, q).total == 1
    assert room.members(code) == 1
    with pytest.raises(ClassError) as e:
        room.join(code, fake.session_state["wt_me"], client="local")
    assert e.value.problem is Problem.REMOVED


def _questions():
    from attnviz import examples
    from attnviz.classroom import questions

    return questions(*examples.classic())
