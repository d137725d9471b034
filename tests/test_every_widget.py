"""Every widget of every page fed hostile values, through AppTest: each ends in the page (a plain
message where the value is refused), never in Streamlit's error box or a traceback.

The pages are found as a visitor finds them (the Playground, its expression tab, the Walkthrough,
the live class's join form and a student's answer form, Performance); every text box, number box
and button on them is driven, so a widget added later is driven too. Forged values Streamlit itself
cannot read (a NaN for an int box, malformed editor JSON) and forged websocket messages:
tests/test_hostile.py, against a real server.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from attnviz.classroom import Classroom, open_store

pytestmark = pytest.mark.slow

APP = str(Path(__file__).resolve().parents[1] / "app.py")
TIMEOUT = 90
TEXTS = [
    "",
    "x" * 5000,
    "Ana\u200bMaria",  # a zero-width space from a paste
    "\x00\x1b[31m\u202e",
    "1e309",
    "NaN",
    "**bold** `code` <script>alert(1)</script> [l](javascript:x)",
    "Z" + "\u0301" * 38,
    "\ufdfd" * 40,
]
NUMBERS = [math.nan, math.inf, -math.inf, 1e309, 10**30, -(10**30)]
PAGES = {  # name: (url path, link parameters)
    "playground": (None, {}),
    "expression": (None, {"tab": "expr"}),
    "walkthrough": ("walkthrough", {}),
    "performance": ("performance", {}),
}


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_CLASS_STORE", raising=False)
    monkeypatch.setenv("ATTNVIZ_DATA_DIR", str(tmp_path / "data"))


def _open(page: str | None, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in params.items():
        at.query_params[k] = v
    if page is not None:
        at._page_hash = calc_hash(page)
    at.run()
    _plain(at, "opening the page")
    return at


def _plain(at: AppTest, what: str) -> None:
    """The page ran to its end: no exception box, no traceback in any text."""
    assert not at.exception, (what, [e.value for e in at.exception][:1])
    texts = [str(getattr(e, "value", "")) for e in at.main]
    assert not [t for t in texts if "Traceback" in t or 'File "' in t], (what, texts[:3])


def _keys(widgets) -> list[str]:
    return [w.key for w in widgets if w.key]


@pytest.mark.parametrize("name", list(PAGES))
def test_every_text_and_number_box_survives_hostile_values(name):
    at = _open(*PAGES[name])
    texts, numbers = _keys(at.text_input) + _keys(at.text_area), _keys(at.number_input)
    assert texts or numbers or name == "performance", f"no box found on {name}"
    if name == "expression":  # the Playground's number boxes were driven on its own page
        numbers = []
    for key in texts:
        for value in TEXTS:
            box = next(w for w in [*at.text_input, *at.text_area] if w.key == key)
            box.set_value(value).run()
            _plain(at, f"{key} = {value[:20]!r}")
    for key in numbers:
        for value in NUMBERS:
            at.number_input(key=key).set_value(value).run()
            _plain(at, f"{key} = {value!r}")


SWEEP_REACH_BYTES = 16 * 2**10  # the sweep's two smallest sizes (2x3x5 and the next)


@pytest.mark.parametrize("name", ["playground", "walkthrough", "performance"])
def test_every_button_can_be_pressed(name, monkeypatch):
    """Each button once, in a fresh session of the page (a button can change what the page shows)."""
    if name == "performance":
        # Sweep sizes times every method at every size up to past the last-level cache: minutes
        # of the benchmark worker on a 2-core machine (it ran past AppTest's 90 s). AppTest runs
        # the page in this process, so its module globals narrow the sweep for this test only:
        # the button, the worker, the table and the figures run as for a visitor, on small sizes.
        # (The full reach: test_performance_page's test_the_default_sweep_reaches_past_...)
        from attnviz.ui import performance

        monkeypatch.setattr(performance, "SWEEP_MAX_INPUT_BYTES", SWEEP_REACH_BYTES)
        monkeypatch.setattr(
            performance, "sweep_reach", lambda: (SWEEP_REACH_BYTES, "The sizes stop here.")
        )
    keys = _keys(_open(*PAGES[name]).button)
    assert keys, f"no button found on {name}"
    for key in keys:
        at = _open(*PAGES[name])
        found = [b for b in at.button if b.key == key and not b.disabled]
        if not found:  # drawn disabled (Back on the first step): a browser cannot press it
            continue
        found[0].click().run()
        _plain(at, f"pressing {key}")
        if key == "pf_sweep":  # the sweep's own output drawn: its table and its three figures
            assert "The sizes stop here." in [c.value for c in at.caption]
            assert any("shape" in d.value.columns for d in at.dataframe), "no sweep table"
            assert len({e.proto.id for e in at.get("plotly_chart")}) == 3


def test_a_student_in_a_class_survives_hostile_names_and_answers():
    room = Classroom(open_store())
    code = room.start().code
    at = _open("walkthrough", {})
    for name in TEXTS:
        at.text_input(key="wt_join_code").set_value(code)
        at.text_input(key="wt_join_name").set_value(name)
        at.button(key="wt_join_submit").click().run()
        _plain(at, f"joining as {name[:20]!r}")
        if at.session_state["wt_code"]:
            break  # in the class: the answer form next
    assert at.session_state["wt_code"] == code, "no hostile-looking name let the student in"
    for key in _keys(at.text_input):
        for value in TEXTS:
            at.text_input(key=key).set_value(value).run()
            _plain(at, f"{key} = {value[:20]!r}")


def test_a_teacher_in_a_class_can_press_every_button():
    """The teacher's controls, each pressed once in a fresh teacher session of one class with a
    student in it (Remove with that student picked): each run ends in the page."""
    room = Classroom(open_store())
    started = room.start()
    room.join(started.code, "s" * 16, "**Ann** <b>", client="school")
    link = {"class": started.code, "teacher": started.token}
    keys = _keys(_open("walkthrough", link).button)
    assert {"wt_close_joining", "wt_remove"} <= set(keys), keys
    for key in keys:
        at = _open("walkthrough", link)
        found = [b for b in at.button if b.key == key and not b.disabled]
        if not found:
            continue
        if key == "wt_remove":
            at.selectbox(key="wt_remove_pick").set_value("s" * 16)
        found[0].click().run()
        _plain(at, f"the teacher pressing {key}")


@pytest.mark.parametrize("code", ["<script>", "ACD-EFG-HJK", "x" * 5000, "ACDEFGHJK\x00"])
def test_a_teacher_tab_link_with_a_hostile_code_ends_in_the_page(code):
    at = _open("walkthrough", {"class": code, "host": "1"})
    at.session_state["wt_screen"] = {"w": 1366, "h": 768, "token": "<script>" * 4}
    at.run()
    _plain(at, f"host=1 with {code[:20]!r}")
    assert not at.session_state["wt_code"]
