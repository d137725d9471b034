"""scripts/stclient.py against a real `streamlit run app.py` on a free loopback port (slow)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from attnviz.figures.heatmap import plain_label
from attnviz.ui.expression import EXPRESSIONS
from scripts.stclient import ProtocolError, Session

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
TITLE = "Attention-weighted aggregation, through broadcasting"


@pytest.fixture(scope="module")
def url(app_server):
    """The app served on a free loopback port (conftest's app_server, shared on this worker)."""
    return app_server.url


def test_first_load_shows_the_page_title(url):
    with Session(url) as s:
        run = s.rerun()
    assert run.ok, (run.status, [e.text for e in run.exceptions])
    assert any(TITLE in t for t in run.texts())


def test_first_load_lists_the_widgets_by_key(url):
    with Session(url) as s:
        run = s.rerun()
    assert {"pg_preset", "pg_next", "pg_tab"} <= set(run.widgets())


def test_clicking_next_shows_the_next_step(url):
    with Session(url) as s:
        first = s.rerun()
        s.click("pg_next")
        second = s.rerun()
    assert "**Step 1 of" in first.text()
    assert second.ok and "**Step 2 of" in second.text()


def test_a_set_number_changes_the_page(url):
    with Session(url) as s:
        s.rerun()
        s.set_widget("pg_b", 4.0)
        run = s.rerun()
    assert run.ok and "**4 sentences**" in run.text()


def test_a_page_name_opens_that_page(url):
    with Session(url) as s:
        s.rerun()
        run = s.rerun(page_name="walkthrough")
    assert run.ok and TITLE not in run.text()
    assert s.page_script_hash == s.pages["walkthrough"]


def test_a_connection_closed_under_a_send_is_a_lost_connection_as_under_a_receive():
    """A server that closes the socket while a message is being sent (one over its size limit,
    with no close frame) is reported as under a receive: ProtocolError, "connection lost"."""
    from websockets.exceptions import ConnectionClosedError

    class Closed:
        def send(self, data):
            raise ConnectionClosedError(None, None)  # "no close frame received or sent"

        def recv(self, timeout=None):
            raise ConnectionClosedError(None, None)

    s = Session("http://127.0.0.1:9", connect=False)
    s._ws = Closed()
    for act in (lambda: s.send(BackMsg(rerun_script=s.client_state())), s.recv):
        with pytest.raises(ProtocolError, match="connection lost: ConnectionClosedError"):
            act()


def test_reconnect_resumes_the_same_session(url):
    with Session(url) as s:
        s.rerun()
        s.click("pg_next")
        s.rerun()
        s.reconnect()  # the server keeps the session's state (step 2) for a resuming client
        run = s.rerun()
    assert run.ok and "**Step 2 of" in run.text()


def _figure_specs(run) -> list[str]:
    return [
        m.delta.new_element.plotly_chart.spec
        for m in run.messages
        if m.WhichOneof("type") == "delta"
        and m.delta.WhichOneof("type") == "new_element"
        and m.delta.new_element.WhichOneof("type") == "plotly_chart"
    ]


def _edit(s: Session, first, value: str) -> None:
    key = next(k for k in first.widgets() if k.startswith("pg_x") and k.endswith("_0"))
    edits = {"edited_rows": {"0": {"h0": value}}, "added_rows": [], "deleted_rows": []}
    s.set_widget(key, json.dumps(edits))


def test_a_cell_edit_reruns_the_editors_and_tabs_not_the_whole_page(url):
    with Session(url) as s:
        first = s.rerun()
        _edit(s, first, "100")
        run = s.rerun()
    assert run.ok, (run.status, [e.text for e in run.exceptions])
    assert run.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"
    assert run.elements and all(e.fragment_id for e in run.elements)
    assert TITLE not in run.text()  # the title and the example's controls were not sent again
    assert any(k.startswith("pg_x") for k in run.widgets())  # the editors were


def test_a_cell_edit_shows_the_new_value_in_the_open_step(url):
    with Session(url) as s:
        first = s.rerun()
        _edit(s, first, "100")
        run = s.rerun()
    (spec,) = _figure_specs(run)  # step 1, net_output, with the edited cell
    cells = json.loads(spec)["data"][0]["text"]
    assert plain_label(cells[0][0]) == "100.000"
    assert "100.000" not in json.dumps(_figure_specs(first))


def test_a_refused_cell_keeps_the_last_valid_example(url):
    with Session(url) as s:
        first = s.rerun()
        _edit(s, first, "abc")
        run = s.rerun()
    assert run.ok
    assert "'abc' is not a number" in run.text()
    assert _figure_specs(run) == _figure_specs(first)  # still the classic example


def test_a_click_in_a_fragment_the_session_does_not_hold_runs_the_page(url):
    """What a browser sends first after a failover (compat.py, fragment_resume): the whole page runs."""
    with Session(url) as other:  # app.py installs the rule on its first run in a process
        assert other.rerun().ok
    with Session(url) as s:
        run = s.rerun(fragment_id="a-fragment-of-another-replica")
    assert run.ok and run.status == "FINISHED_SUCCESSFULLY"
    assert TITLE in run.text()


@pytest.mark.parametrize("key, shown", [("wt_next", 3), ("wt_back", 1), ("wt_last", None)])
def test_a_slide_button_pressed_first_on_a_rebuilt_session_moves_the_slide(url, key, shown):
    """A failover's first press on the Walkthrough: the browser's first message to the replica
    that rebuilds the session from its link is the press, before any run there drew the buttons
    (or those runs were cut short by the next request), so Streamlit knows no callback for them.
    The press still moves the slide, once (a teacher's → right after a reconnect was lost so)."""
    with Session(url, path="walkthrough", query_string="slide=2") as s:
        run = s.rerun()
        assert run.ok
        n = int(re.search(r"\*\*Slide 2 of (\d+)\*\*", run.text())[1])
        s.close()
        s.connect()  # a new session on the server, which has never run this page for it
        s.click(key)
        run = s.rerun(timeout=30)
        assert run.ok
        assert f"**Slide {shown or n} of {n}**" in run.text()
        run = s.rerun()  # the press is counted once
        assert f"**Slide {shown or n} of {n}**" in run.text()


def test_a_teachers_question_button_pressed_first_on_a_rebuilt_session_acts(url):
    """A failover's first press of a teacher's question button (here Reveal): the rebuilt session's
    first message carries the teacher's key (the browser's report) and the press, before any of
    its runs drew the button, so Streamlit knows no callback for it; the press still acts."""
    from urllib.parse import parse_qs, urlsplit

    from tests.test_serving_live import SHAPE, _page, _private_link, _slide

    with Session(url, path="walkthrough") as teacher:
        assert teacher.rerun().ok
        teacher.click("wt_start")
        started = teacher.rerun()
        assert started.ok
        code = re.search(r"class=([A-Z0-9]{9})", teacher.query_string)[1]
        token = parse_qs(urlsplit(_private_link(started)).query)["teacher"][0]
        for _ in range(_slide(SHAPE.slide) - 1):
            teacher.click("wt_next")
            assert teacher.rerun().ok
        teacher.click(f"wt_ask_{SHAPE.id}")
        assert teacher.rerun().ok
        assert "Reveal the answer" in _page(teacher)
        assert teacher.query_string.endswith(f"class={code}&host=1")
        teacher.close()
        teacher.connect()  # a new session on the server, which has drawn no button for it
        teacher.tree.clear()
        screen = {"w": 1920, "h": 1080, "token": token, "asked": code}
        teacher.set_widget("wt_screen", json.dumps(screen), field_name="json_value")
        teacher.click("wt_reveal")
        assert teacher.rerun(timeout=30).ok
        page = _page(teacher)
        assert "you teach" in page and "The answer is revealed" in page, page[-2000:]
        assert "Reveal the answer" not in page


def _rebuilt(s: Session) -> None:
    """The session on the server forgotten, as a failover forgets it: the next message is the
    first of a new session, before any of its runs has drawn a button."""
    s.close()
    s.connect()
    s.tree.clear()


def test_start_a_live_class_pressed_first_on_a_rebuilt_session_starts_one_class(url):
    """The press acts though Streamlit ran no callback for it (boundary.button), and only once."""
    with Session(url, path="walkthrough") as teacher:
        assert teacher.rerun().ok
        _rebuilt(teacher)
        teacher.click("wt_start")
        assert teacher.rerun(timeout=30).ok
        page = "\n".join(e.text for e in teacher.tree.values() if e.text)
        assert "you teach" in page, page[-2000:]
        code = re.search(r"class=([A-Z0-9]{9})", teacher.query_string)[1]
        assert teacher.rerun().ok  # no second class: the press acted once
        assert re.search(r"class=([A-Z0-9]{9})", teacher.query_string)[1] == code


def test_join_pressed_first_on_a_rebuilt_session_joins_with_what_was_typed(url):
    """A student's Join (a form's button) as a rebuilt session's first message, with the code and
    the name typed in the same message: joined, under that name, once."""
    with Session(url, path="walkthrough") as teacher:
        assert teacher.rerun().ok
        teacher.click("wt_start")
        assert teacher.rerun().ok
        code = re.search(r"class=([A-Z0-9]{9})", teacher.query_string)[1]
        with Session(url, path="walkthrough") as student:
            assert student.rerun().ok
            _rebuilt(student)
            student.set_widget("wt_join_code", code)
            student.set_widget("wt_join_name", "Ada")
            student.click("wt_join_submit")
            assert student.rerun(timeout=30).ok
            page = "\n".join(e.text for e in student.tree.values() if e.text)
            assert "following the teacher" in page, page[-2000:]
            assert f"class={code}&me=" in student.query_string
        teacher.rerun()
        page = "\n".join(e.text for e in teacher.tree.values() if e.text)
        assert "1 joined" in page, page[-2000:]


LINK = "p=random&s=2x3x5&seed=3"
FIRST_CHANGES = [  # (box, what the browser sends, whether it changes the example: None, as ever)
    ("pg_b", 4.0, True),
    ("pg_h", 2.0, True),
    ("pg_seed", 8.0, True),
    ("pg_preset", "square", True),  # a preset with a shape of its own: 2x4x4
    ("pg_b", float("nan"), False),  # forged: checked away, the link's example stays
    ("pg_seed", -1e309, False),
    ("pg_preset", "A" * 5000, False),
    # a value of another kind than the box's (the field named): as a session that never moved
    ("pg_h", True, None),
    ("pg_t", "abc", None),
    ("pg_preset", 123, False),  # (where drawn, its callback fails and the page resets, plainly)
]
FIELDS = {bool: "bool_value", int: "int_value", str: "string_value"}


def _changed(url: str, key: str, value: object, *, rebuilt: bool) -> tuple[str, str]:
    """The link and the page after ``key`` is set to ``value`` on a session opened at LINK,
    as its first message after a failover (``rebuilt``) or in the same session."""
    with Session(url, query_string=LINK) as s:
        assert s.rerun().ok
        if rebuilt:
            _rebuilt(s)
        kind = s.known[key].kind  # the box's own kind of value, or one named for another
        forged = type(value) is not {"selectbox": str}.get(kind, float)
        s.set_widget(key, value, field_name=FIELDS[type(value)] if forged else None)
        run = s.rerun(timeout=30)
        assert run.ok, [e.text for e in run.exceptions]
        link, page = s.query_string, _page(s)
        if link != LINK:  # (a forged value sent again is a callback's: test_hostile's)
            again = s.rerun()  # the change is made once: nothing more changes
            assert again.ok and s.query_string == link
    return link, page


# (the tab the link opens, the widget in it, what the browser sends): each a failover's first
# message on the Playground, a widget inside a tab changed on the replica that died
TAB_CHANGES = [
    ("", "pg_tab", "Your expression"),
    ("steps", "pg_all", True),
    ("cell", "pg_cell_b", "1"),
    ("expr", "pg_expr", "net_output.sum(1)"),
    ("expr", "pg_expr_pick", EXPRESSIONS[2]),  # a pick: its callback fills the expression
    ("grad", "pg_grad_part", ["net_output"]),  # not in the link: the page says it
    ("cell", "pg_cell_b", "9"),  # forged: no such sentence, the link's cell stays
    ("", "pg_tab", "No such tab"),
    ("expr", "pg_expr", "A" * 5000),  # longer than the box takes: cut to its length
]


def _changed_in_tab(url: str, tab: str, key: str, value: object, *, rebuilt: bool):
    """The link and the page after ``key`` (in the tab the link opens) is set to ``value``, as a
    rebuilt session's first message or in the same session."""
    with Session(url, query_string=LINK + (f"&tab={tab}" if tab else "")) as s:
        assert s.rerun().ok
        if rebuilt:
            _rebuilt(s)
        s.set_widget(key, value)
        run = s.rerun(timeout=30)
        assert run.ok, [e.text for e in run.exceptions]
        link = s.query_string
        again = s.rerun()  # the change is made once: nothing more changes
        assert again.ok and s.query_string == link
    return link, again.text()  # the whole page, as that run drew it


@pytest.mark.parametrize("tab, key, value", TAB_CHANGES, ids=lambda v: str(v)[:12])
def test_a_widget_in_a_tab_changed_first_on_a_rebuilt_session_counts(url, tab, key, value):
    """A rebuilt session holds no value for the widgets inside the Playground's tabs: what the
    browser sent is their value, checked as in every run, and the page and the link are those of
    a session that never moved (before, the link's values replaced what was sent)."""
    link, page = _changed_in_tab(url, tab, key, value, rebuilt=True)
    assert (link, page) == _changed_in_tab(url, tab, key, value, rebuilt=False)
    opened = LINK + (f"&tab={tab}" if tab else "")
    if key == "pg_grad_part":
        assert "with respect to net_output" in page, page[-3000:]
    else:  # sent as a normal session sends it: the link says the change, a forged value none
        forged = value in ("9", "No such tab")
        assert (link == opened) is forged, link
    assert "A" * 2001 not in page and "encountered an error" not in page


def _page(s: Session) -> str:
    """What the page shows now (a run's texts also hold what a run before it drew)."""
    return "\n".join(e.text for e in s.tree.values() if e.text)


@pytest.mark.parametrize("key, value, changes", FIRST_CHANGES, ids=lambda v: str(v)[:12])
def test_a_box_changed_first_on_a_rebuilt_session_changes_the_example(url, key, value, changes):
    """A failover's first message on the Playground: a preset, size or seed box changed on the
    replica that died reaches a session that has not drawn the box, so Streamlit runs no callback
    for it; the example still changes as in a session that never moved, and a forged value
    changes nothing there either."""
    link, page = _changed(url, key, value, rebuilt=True)
    if changes is not None:
        assert (link != LINK) is changes, link
    if changes is not False:  # (a forged preset, sent again where it was drawn: test_hostile's)
        assert (link, page) == _changed(url, key, value, rebuilt=False)
    b = dict(parse_qsl(link))["s"].split("x")[0]
    assert f"**{b} sentences**" in page
    assert "A" * 100 not in page and "encountered an error" not in page
