"""The Walkthrough and the live class through streamlit.testing.v1.AppTest.

Each test gets its own class store (ATTNVIZ_DATA_DIR in tmp_path). Several sessions of one class
are several AppTests on the same store: a teacher and students, as on a real server. The fragment
that polls the store runs as part of every AppTest run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from attnviz.classroom import Phase, format_code, open_store
from attnviz.classroom.service import Classroom
from attnviz.ui import link

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 90


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_CLASS_STORE", raising=False)
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path / "data"))


def _room() -> Classroom:
    return Classroom(open_store())


def _app(params: dict[str, str] | None = None) -> AppTest:
    """The app as a browser opening /walkthrough?<params> would."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at._page_hash = calc_hash("walkthrough")
    at.run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.error, *at.warning, *at.info, *at.success)]
    parts += [m.value for m in (*at.markdown, *at.caption, *at.code)]
    return "\n".join(str(p) for p in parts)


def _slide(at: AppTest) -> int:
    return int(re.search(r"Slide (\d+) of", _texts(at))[1])


def _n_slides(at: AppTest) -> int:
    return int(re.search(r"Slide \d+ of (\d+)", _texts(at))[1])


def _click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def _teacher() -> tuple[AppTest, str]:
    at = _app()
    _click(at, "wt_start")
    return at, at.session_state["wt_code"]


def _student(code: str) -> AppTest:
    return _app({"class": format_code(code)})


# ---- slides (moved from tests/test_app.py) -------------------------------------------------------


def test_walkthrough_opens_on_slide_one_with_a_figure():
    at = _app()
    assert "Slide 1 of" in _texts(at)
    assert at.get("plotly_chart")


def test_walkthrough_slide_from_the_url():
    at = _app({"slide": "4"})
    assert "Slide 4 of" in _texts(at)


@pytest.mark.parametrize("slide", ["0", "99", "abc", "4.5", "-1", "", "²", "٣", "4" * 5000])
def test_walkthrough_bad_slide_in_the_url_starts_at_one(slide):
    at = _app({"slide": slide})
    assert "Starting at slide 1" in " ".join(w.value for w in at.warning)
    assert "Slide 1 of" in _texts(at)


def test_walkthrough_next_and_back_update_the_url():
    at = _app()
    _click(at, "wt_next")
    _click(at, "wt_next")
    assert at.query_params["slide"] == "3" and "Slide 3 of" in _texts(at)
    _click(at, "wt_back")
    assert at.query_params["slide"] == "2"


def test_walkthrough_every_slide_renders():
    at = _app()
    n = _n_slides(at)
    for _ in range(n - 1):
        _click(at, "wt_next")
        assert not at.error
    assert at.button(key="wt_next").disabled


def test_first_and_last_jump_to_the_ends():
    at = _app({"slide": "5"})
    _click(at, "wt_last")
    assert _slide(at) == _n_slides(at)
    _click(at, "wt_first")
    assert _slide(at) == 1


def test_the_trap_slide_shows_the_wrong_and_the_right_code():
    at = _app()
    _click(at, "wt_last")
    while "silent trap" not in _texts(at):
        _click(at, "wt_back")
    codes = [c.value for c in at.code]
    assert "(net_output * att_scores[:, None]).sum(axis=1)" in codes
    assert "(net_output * att_scores[..., None]).sum(axis=1)" in codes
    assert "cut (or cycled)" not in _texts(at) and "mod H" not in _texts(at)
    assert "keeps only the first 3 of its 5 hidden features" in _texts(at)


def test_strides_are_defined_on_the_first_slide():
    at = _app()
    assert "**Strides** say how many numbers to skip in memory" in _texts(at)


def test_the_description_is_folded_not_repeated_on_screen():
    at = _app()
    assert at.expander and any("Text description" in e.label for e in at.expander)
    assert not any("Heatmap of shape" in c.value for c in at.caption)


def test_slides_run_on_the_example_a_playground_link_carries():
    params = link.encode(link.Link(preset="random", shape=(3, 4, 2), seed=7))
    at = _app({**params, "tab": "steps", "step": "2"})
    assert not at.warning
    assert "net_output (3, 4, 2)" in _texts(at)


def test_a_tampered_example_in_the_link_falls_back_to_the_classic():
    at = _app({"p": "classic", "s": "2x3x5", "x": "1_2"})
    assert "could not be read" in " ".join(w.value for w in at.warning)
    assert "net_output (2, 3, 5)" in _texts(at)


# ---- the live class --------------------------------------------------------------------------------


def test_a_teacher_starts_a_class_with_a_code_link_and_qr():
    at, code = _teacher()
    assert at.get("imgs") or at.get("image")
    assert any(f"?class={code}" in c.value for c in at.code)
    assert at.query_params["class"] == code and at.query_params["host"] == "1"
    assert "teacher" not in at.query_params  # the token never reaches the address bar


def test_a_student_follows_the_teacher():
    teacher, code = _teacher()
    student = _student(code)
    assert _slide(student) == 1
    _click(teacher, "wt_next")
    _click(teacher, "wt_next")
    assert _room().state(code).slide == 3
    student.run()  # the next poll
    student.run()  # the rerun it asked for
    assert _slide(student) == 3


def test_a_student_steps_back_and_rejoins():
    teacher, code = _teacher()
    _click(teacher, "wt_last")
    student = _student(code)
    assert _slide(student) == _n_slides(student)
    _click(student, "wt_back")
    student.run()
    assert _slide(student) == _n_slides(student) - 1  # stays where they went
    assert _room().state(code).slide == _n_slides(student)  # the class did not move
    _click(student, "wt_rejoin")
    assert _slide(student) == _n_slides(student)


def test_a_student_cannot_move_the_class():
    teacher, code = _teacher()
    student = _student(code)
    for key in ("wt_next", "wt_last"):
        _click(student, key)
    assert _room().state(code).slide == 1
    student.session_state["wt_token"] = "forged" * 5 + "ab"  # a forged token in the session
    _click(student, "wt_back")
    assert _room().state(code).slide == 1


def _host_tab(code: str, screen: dict) -> AppTest:
    """The teacher's own tab (?class=CODE&host=1) whose browser reports screen."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["class"], at.query_params["host"] = code, "1"
    at._page_hash = calc_hash("walkthrough")
    at.session_state["wt_screen"] = {"asked": code, **screen}  # the code it looked up
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_token_the_teachers_browser_kept_gives_the_class_back():
    teacher, code = _teacher()
    token = teacher.session_state["wt_token"]
    at = _host_tab(code, {"w": 1920, "h": 1080, "token": token})
    assert at.session_state["wt_token"] == token
    _click(at, "wt_next")
    assert _room().state(code).slide == 2


def test_a_report_made_for_another_page_is_not_taken_for_this_code():
    """After a restart the browser first sends back the value it reported before (a teacher's page,
    no code asked): the tab waits for the report made for its code, then teaches."""
    teacher, code = _teacher()
    token = teacher.session_state["wt_token"]
    at = _host_tab(code, {"w": 1920, "h": 1080, "token": "", "asked": ""})
    assert not at.session_state["wt_notice"] and not at.session_state["wt_token"]
    at.session_state["wt_screen"] = {"w": 1920, "h": 1080, "token": token, "asked": code}
    at.run()
    assert at.session_state["wt_token"] == token


def test_a_forged_token_from_the_browser_does_not_make_a_teacher():
    _, code = _teacher()
    at = _host_tab(code, {"w": 1920, "h": 1080, "token": "A" * 32})  # a forged value
    assert not at.session_state["wt_token"]
    assert "wt_reveal" not in [b.key for b in at.button]
    at.session_state["wt_screen"] = {"w": "1920", "h": 10**9, "token": "<script>"}  # malformed
    at.run()
    assert not at.exception and not at.session_state["wt_token"]


def test_a_forged_teacher_link_is_refused():
    _, code = _teacher()
    at = _app({"class": code, "teacher": "A" * 32})
    assert "not valid" in " ".join(w.value for w in at.warning)
    assert not at.session_state["wt_token"]


def test_the_private_teacher_link_gives_the_class_back():
    teacher, code = _teacher()
    token = teacher.session_state["wt_token"]
    again = _app({"class": code, "teacher": token})
    assert again.session_state["wt_token"] == token
    _click(again, "wt_next")
    assert _room().state(code).slide == 2


@pytest.mark.parametrize("text", ["", "nope", "ACD-EFG-HJ0", "<b>x</b>"])
def test_joining_with_a_wrong_code_says_so(text):
    at = _app()
    at.text_input(key="wt_join_code").input(text)
    at.button(key="wt_join_submit").click().run()
    assert "code" in " ".join(e.value for e in at.error)
    assert not at.session_state["wt_code"]


def test_joining_with_the_code_and_a_name():
    teacher, code = _teacher()
    token = teacher.session_state["wt_token"]
    at = _app()
    at.text_input(key="wt_join_code").input(format_code(code).lower())
    at.text_input(key="wt_join_name").input("**Bold** [x](https://e.example)")
    at.button(key="wt_join_submit").click().run()
    assert at.session_state["wt_code"] == code
    names = list(open_store().members(code).values())
    assert names == ["**Bold** [x](https://e.example)"]  # stored as typed
    teacher = _app({"class": code, "teacher": token})
    assert "**Bold** [x](https://e.example)" in [t.value for t in teacher.text]  # plain text


def _open_question(teacher: AppTest, slide_key: str) -> None:
    while f"wt_ask_{slide_key}" not in [b.key for b in teacher.button]:
        _click(teacher, "wt_next")
    _click(teacher, f"wt_ask_{slide_key}")


def _answer(student: AppTest, qid: str, value: str) -> None:
    student.run()
    widget = student.radio(key=f"wt_pick_{qid}") if qid != "unsqueeze_shape" else None
    if widget is not None:
        widget.set_value(value)
    else:
        student.text_input(key=f"wt_pick_{qid}").input(value)
    student.button(key=f"wt_send_{qid}").click().run()
    assert not student.exception


def test_answers_are_counted_and_the_reveal_says_who_was_right():
    teacher, code = _teacher()
    one, two = _student(code), _student(code)
    _open_question(teacher, "sum_axis")
    _answer(one, "sum_axis", "1")
    _answer(two, "sum_axis", "0")
    teacher.run()
    bars = " ".join(h.proto.body for h in teacher.get("html"))
    assert "2 answered" in bars
    _click(teacher, "wt_reveal")
    one.run()
    two.run()
    assert "Right" in " ".join(s.value for s in one.success)
    assert "Not this time" in " ".join(e.value for e in two.error)
    assert _room().state(code).phase is Phase.REVEALED


def test_a_typed_shape_is_parsed_as_a_tuple():
    teacher, code = _teacher()
    student = _student(code)
    _open_question(teacher, "unsqueeze_shape")
    _answer(student, "unsqueeze_shape", "2x3x1")
    assert "tuple" in " ".join(e.value for e in student.error)
    _answer(student, "unsqueeze_shape", "[2, 3, 1]")
    assert "Your answer: (2, 3, 1)" in _texts(student)


def test_ending_the_class_asks_first():
    teacher, code = _teacher()
    _click(teacher, "wt_end")
    assert "End the class now?" in _texts(teacher)
    assert _room().state(code).code == code  # not ended yet
    _click(teacher, "wt_end_no")
    assert "wt_end_yes" not in [b.key for b in teacher.button]
    assert teacher.session_state["wt_code"] == code and _room().state(code).code == code


def test_ending_the_class_sends_students_back_to_the_slides():
    teacher, code = _teacher()
    student = _student(code)
    _click(teacher, "wt_end")
    _click(teacher, "wt_end_yes")
    student.run()
    assert "ended" in " ".join(w.value for w in student.warning)
    assert not student.session_state["wt_code"]
    assert open_store().load(code, 0) is None


def test_a_students_link_keeps_their_answers_across_a_reconnect():
    teacher, code = _teacher()
    student = _student(code)
    _open_question(teacher, "sum_axis")
    _answer(student, "sum_axis", "1")
    address = {k: student.query_params[k] for k in student.query_params}
    again = _app(address)  # a new session on the same link, as after a server restart
    assert again.session_state["wt_me"] == student.session_state["wt_me"]
    assert "Your answer: axis 1" in _texts(again)


def _bound(at: AppTest, key: str):
    """The callback and arguments a button was drawn with: what Streamlit runs for its press, and
    what it runs again when a new request replaces the run the press started."""
    meta = at.session_state._state._state._new_widget_state.widget_metadata
    m = meta[at.button(key=key).id]
    return m.callback, m.callback_args, m.callback_kwargs


def test_a_slide_button_names_the_slide_it_goes_to():
    """A press Streamlit applies twice (its run replaced mid-way) must not move the class two
    slides: each button carries its target, drawn on slide 5 of n."""
    at = _app({"slide": "5"})
    n = _n_slides(at)
    targets = {"wt_first": 1, "wt_back": 4, "wt_next": 6, "wt_last": n}
    for key, slide in targets.items():
        _, _, kwargs = _bound(at, key)
        assert kwargs == {"to": slide}, key
    _click(at, "wt_next")
    assert _slide(at) == 6 and _bound(at, "wt_next")[2] == {"to": 7}


def test_the_votes_have_a_bar_per_answer_given_and_no_empty_rows():
    """The bars are drawn only once a round's answers are frozen (votes shown, or revealed), so
    they keep no hidden rows for answers to come: on a phone 5 such rows (305 px) pushed the
    student's own verdict below the screen. A typed answer gets a bar, up to TYPED_BARS of them;
    a choice question a bar per choice, given or not."""
    from attnviz import examples
    from attnviz.classroom import Kind, questions
    from attnviz.ui.live_question import TYPED_BARS, bars_html

    def n_rows(html: str) -> int:
        return len(re.findall(r'class="wt-bar[ "]', html))

    qs = questions(*examples.classic())
    shape = next(q for q in qs if q.kind is Kind.SHAPE)
    given = [("(2, 3, 1)", 5), ("(2, 3)", 3), ("(3, 2, 1)", 1), ("(2, 1, 3)", 1)]
    for k in range(len(given) + 1):
        for revealed in (False, True):
            html = bars_html(
                shape, tuple(given[:k]), sum(n for _, n in given[:k]), revealed=revealed
            )
            assert n_rows(html) == k
            assert "visibility:hidden" not in html and "wt-room" not in html
            for answer, n in given[:k]:
                assert f"{answer}" in html and f"<b>{n}</b>" in html
    many = tuple((f"({i}, 1)", 1) for i in range(TYPED_BARS + 3))
    assert n_rows(bars_html(shape, many, len(many), revealed=True)) == TYPED_BARS
    choice = next(q for q in qs if q.kind is Kind.CHOICE)
    counted = ((str(i), 2) for i in range(len(choice.choices)))
    rows = {n_rows(bars_html(choice, c, 2, revealed=False)) for c in ((), tuple(counted))}
    assert rows == {len(choice.choices)}


# ---- the teacher stays the teacher --------------------------------------------------------------


def _drawn(at: AppTest) -> str:
    """Everything the page draws as text (the component's arguments are not drawn)."""
    parts = [_texts(at)] + [t.value for t in at.text] + [h.proto.body for h in at.get("html")]
    parts += [b.label for b in at.button]
    return "\n".join(parts)


def test_the_private_link_is_never_drawn():
    teacher, code = _teacher()
    token = teacher.session_state["wt_token"]
    for at in (teacher, _app({"class": code, "teacher": token})):
        assert token not in _drawn(at)
        assert "wt_copy_link" in [b.key for b in at.button]


def test_the_private_link_opens_on_the_class_slide():
    teacher, code = _teacher()
    for _ in range(3):
        _click(teacher, "wt_next")
    again = _app({"class": code, "teacher": teacher.session_state["wt_token"], "slide": "1"})
    assert _slide(again) == 4


def test_a_teacher_page_shows_the_stores_slide():
    one, code = _teacher()
    two = _app({"class": code, "teacher": one.session_state["wt_token"]})
    _click(two, "wt_next")
    _click(two, "wt_next")
    one.run()  # the poll: the class is on slide 3
    one.run()  # the rerun it asked for
    assert _slide(one) == 3


def test_a_second_teacher_session_is_announced_and_revoked():
    one, code = _teacher()
    token = one.session_state["wt_token"]
    two = _app({"class": code, "teacher": token})  # a photo of the private link
    one.run()
    two.run()
    for at in (one, two):
        assert "Another device is presenting this class" in _texts(at)
    _click(one, "wt_only_here")
    assert one.session_state["wt_token"] != token
    two.run()
    assert not two.session_state["wt_token"] and not two.session_state["wt_code"]
    assert "no longer teaches" in _texts(two)
    assert not _app({"class": code, "teacher": token}).session_state["wt_token"]
    _click(two, "wt_next")  # on its own slides now
    assert _room().state(code).slide == 1
    _click(one, "wt_next")
    assert _room().state(code).slide == 2


def test_a_move_the_store_did_not_take_is_not_shown(monkeypatch):
    import sqlite3

    from attnviz.ui import live_class

    teacher, code = _teacher()
    store = live_class.room().store  # the app's own handle (one per process and store)

    def out_of_reach(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    with monkeypatch.context() as m:
        m.setattr(store, "update", out_of_reach)
        _click(teacher, "wt_next")
    assert _slide(teacher) == 1 and "Could not reach the class" in _texts(teacher)
    _click(teacher, "wt_next")
    assert _slide(teacher) == 2 and _room().state(code).slide == 2


def test_a_student_keeps_their_name_through_a_reconnect():
    teacher, code = _teacher()
    at = _app()
    at.text_input(key="wt_join_code").input(code)
    at.text_input(key="wt_join_name").input("Bob")
    at.button(key="wt_join_submit").click().run()
    me = at.session_state["wt_me"]
    again = _app({k: at.query_params[k] for k in at.query_params})  # reload, reconnect, restart
    assert again.session_state["wt_me"] == me
    assert open_store().members(code) == {me: "Bob"}
    teacher.run()
    assert "1 joined" in _texts(teacher) and "Bob" in [t.value for t in teacher.text]


# ---- what the browser reports ---------------------------------------------------------------------


def test_the_browsers_report_is_parsed_strictly():
    from attnviz.ui.live_screen import Screen, parse_screen

    tab, token = "a" * 16, "t" * 32
    good = {"w": 1920, "h": 1080, "token": token, "tab": tab, "copies": 2, "copied": True}
    assert parse_screen(good) == Screen(1920, 1080, token, True, tab, 2, True)
    for bad in ({"tab": "<script>"}, {"tab": "a" * 17}, {"tab": 7}):
        assert parse_screen({**good, **bad}).tab == ""  # the tab's own id, or none
    for bad in ({"copies": -1}, {"copies": "2"}, {"copies": 10**9}, {"copied": "yes"}):
        assert (parse_screen({**good, **bad}).copies, parse_screen({**good, **bad}).copied) == (
            0,
            False,
        )
    assert parse_screen({**good, "token": "x"}).token == ""
    assert parse_screen({**good, "asked": "acd-efg-hjk"}).asked == "ACDEFGHJK"
    assert parse_screen({**good, "asked": "<script>"}).asked == ""
    assert parse_screen("nope") == Screen() and parse_screen({**good, "w": 10**6}) == Screen()


def test_a_projectors_figure_takes_smaller_text_only_when_that_makes_it_fit():
    from attnviz import examples, figures
    from attnviz.classroom import deck
    from attnviz.ui import walkthrough as wt
    from attnviz.ui.live_screen import Screen

    slides = deck.story(*examples.classic()).slides
    projector = Screen(1920, 1080, reported=True)
    for slide in slides:  # no class: every slide has room for the projector's 24 px text
        assert wt.figure_fit(projector, slide) == (
            figures.PROJECTOR,
            wt.figure_height(projector, slide),
        )
    trap = next(s for s in slides if s.key == "trap")
    room = wt.figure_room(projector, trap, 140, wt.SLIDE_SHARE)  # a class's strip, a question
    assert wt.SMALLER_TEXT_LEAST <= room < wt.PROJECTOR_LEAST
    assert wt.figure_fit(projector, trap, 140, wt.SLIDE_SHARE) == (figures.SCREEN, room)
    squeezed = wt.figure_fit(projector, slides[0], 650)  # beside a QR code shown to the room
    assert squeezed == (figures.PROJECTOR, wt.PROJECTOR_LEAST)
    laptop = Screen(1366, 768, reported=True)
    assert wt.figure_fit(laptop, trap, 250)[0] is figures.SCREEN
