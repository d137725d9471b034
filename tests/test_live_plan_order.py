"""A plan's slide order in the Walkthrough through AppTest (a teacher and a student on one store):
a class started from a plan shows the plan's slides, in its order, without those it leaves out,
on the teacher's screen and the student's; the teacher's slide keeps its place in the plan; what
"Save this class as a plan" downloads starts a class with the same order again."""

from __future__ import annotations

import re

import pytest

from attnviz.classroom import deck, plan
from attnviz.ui import live_plan
from attnviz.ui.link import example_tensors
from tests.test_classroom_plan import REORDERED, TEACHER, _with_slides
from tests.test_walkthrough import _app, _click, _room, _slide, _student, _texts

pytestmark = pytest.mark.usefixtures("_store")


@pytest.fixture
def _store(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_CLASS_STORE", raising=False)
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "plans"
    folder.mkdir()
    (folder / "reordered.toml").write_text(_with_slides(REORDERED))
    (folder / "week3.toml").write_text(TEACHER)
    monkeypatch.setenv("ATTNVIZ_PLAN_DIR", str(folder))
    return folder


def _titles() -> dict[str, str]:
    """slide key -> its title, from the deck on the classic example (the oracle's names)."""
    x, w = example_tensors("")  # the classic example a link without one shows
    return {s.key: s.title for s in deck.story(x, w).slides}


def _title(at) -> str:
    """The slide's title as the page shows it ('# 4. Title')."""
    return re.search(r"^# \d+\. (.+)$", _texts(at), re.M)[1]


def _start(pick: str, slide: int = 1):
    teacher = _app({"slide": str(slide)})
    teacher.selectbox(key="wt_plan_pick").set_value(pick).run()
    _click(teacher, "wt_start")
    return teacher, teacher.session_state["wt_code"]


def test_a_class_from_a_plan_shows_its_slides_in_its_order_on_every_screen():
    titles = _titles()
    teacher, code = _start("reordered")
    student = _student(code)
    seen_t, seen_s = [], []
    for k in range(1, len(REORDERED) + 1):
        student.run()
        assert _slide(teacher) == _slide(student) == k
        assert f"Slide {k} of {len(REORDERED)}" in _texts(student)
        seen_t.append(_title(teacher))
        seen_s.append(_title(student))
        if k < len(REORDERED):
            _click(teacher, "wt_next")
    expected = [titles[key] for key in REORDERED]
    assert seen_t == expected and seen_s == expected
    assert teacher.button(key="wt_next").disabled  # the plan's last slide is the class's last


def test_the_teachers_slide_keeps_its_place_in_the_plan():
    # the deck's slide 10 is the trap: the plan puts it 4th
    teacher, code = _start("reordered", slide=plan.SLIDE_KEYS.index("trap") + 1)
    assert _room().state(code).slide == REORDERED.index("trap") + 1
    assert _title(teacher) == _titles()["trap"]


def test_a_slide_the_plan_leaves_out_starts_the_class_on_its_first_slide():
    teacher, code = _start("reordered", slide=plan.SLIDE_KEYS.index("view") + 1)
    assert _room().state(code).slide == 1
    assert _slide(teacher) == 1 and _title(teacher) == _titles()[REORDERED[0]]


def test_a_saved_plan_starts_a_class_with_the_same_order(_store):
    _, code = _start("reordered")
    saved = plan.plan_of(_room().state(code).example).text  # what "Save as a plan" downloads
    (_store / "saved.toml").write_text(saved)
    teacher, again = _start("saved")
    assert again != code
    assert plan.plan_of(_room().state(again).example).slides == tuple(REORDERED)
    _click(teacher, "wt_last")
    assert _title(teacher) == _titles()[REORDERED[-1]]


def test_outside_a_class_the_walkthrough_keeps_the_decks_order():
    at = _app()
    _click(at, "wt_last")
    assert _title(at) == _titles()[plan.SLIDE_KEYS[-1]]


def test_upload_picked_but_nothing_uploaded_starts_no_class():
    teacher = _app()
    teacher.selectbox(key="wt_plan_pick").set_value(live_plan.UPLOAD).run()
    _click(teacher, "wt_start")
    assert not teacher.session_state["wt_code"]
    assert "Upload a plan file first" in _texts(teacher)
