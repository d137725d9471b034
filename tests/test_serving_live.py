"""A live class on the many-machines layout of docs/deploy.md, on one machine (slow): two replicas
behind HAProxy under supervisord (`scripts/serve.py`), sharing a real `redis-server` as the class
store (the class server of tests/conftest.py, which test_serving's tests share). A teacher and six students, over Streamlit's own websocket protocol (scripts/stclient.py),
spread by the proxy over both replicas: they follow the teacher's slide, answer, the teacher's
count has every answer, the reveal tells each student whether they were right. Then the operator
stops the class server mid-class (every process exits) and starts it again: the class, its slide
and its answers are in Redis; each browser reconnects with its own link, a student changes their
answer as the same student, the teacher is still the teacher, and the class follows the next move.

What the pages look like in a real browser is tests/test_live_browser.py's (on SQLite: the page
is the same on either store; the stores' own rules run on both in tests/test_classroom_rules.py).
Correctness only: every wait is for something the pages say, with a generous deadline.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import parse_qs, urlsplit

import psutil
import pytest

from attnviz import examples
from attnviz.classroom import deck, open_store, questions
from scripts import serve
from scripts.stclient import Session
from tests.test_serving import WAIT_S, _reconnect, _until, _until_closed

pytestmark = pytest.mark.slow

STUDENTS = 6
SLIDES = [s.key for s in deck.story(*examples.classic()).slides]
QUESTIONS = {q.id: q for q in questions(*examples.classic())}
SHAPE = QUESTIONS["unsqueeze_shape"]  # typed: (2, 3, 1)
AXIS = QUESTIONS["sum_axis"]  # a choice: the axis the sum removes


def _slide(key: str) -> int:
    return 1 + SLIDES.index(key)


def _page(s: Session) -> str:
    """Every text the page shows now (a fragment's run redraws only its part)."""
    return "\n".join(e.text for e in s.tree.values() if e.text)


def _poll(s: Session, shows, what: str) -> None:
    """Poll the live class as the browser's timer does, until the page shows what it should."""

    def polled() -> bool:
        fid = min(s.auto_reruns)  # the live-class fragment: the page's only timer
        run = s.rerun(fragment_id=fid, is_auto_rerun=True)
        assert run.ok, (what, run.status, run.exceptions)
        return bool(shows(_page(s)))

    _until(polled, what, timeout=WAIT_S)


def _click(s: Session, key: str) -> None:
    s.click(key)
    run = s.rerun()
    assert run.ok, (key, run.status, run.exceptions)


def _answer(s: Session, question, text: str) -> None:
    _poll(s, lambda page: question.prompt in page, "the student sees the question")
    s.set_widget(f"wt_pick_{question.id}", text)
    _click(s, f"wt_send_{question.id}")
    assert "Your answer: " in _page(s), _page(s)


def _counted(html: str, label: str) -> int:
    """The teacher's bar for one answer (its label, with the reveal's ✓ or not): its count."""
    bars = re.findall(r'<span class="wt-label">(.*?)</span>.*?<b>(\d+)</b>', html)
    return next((int(n) for shown, n in bars if shown.removesuffix(" ✓") == label), 0)


def _private_link(run) -> str:
    """The teacher's private link, as the page hands it to its own component to copy (it is never
    drawn on the page)."""
    for msg in run.messages:
        element = msg.delta.new_element
        if msg.delta.HasField("new_element") and element.HasField("component_instance"):
            copy = json.loads(element.component_instance.json_args or "{}").get("copy", "")
            if copy:
                return copy
    raise AssertionError("no private link for the component to copy")


def _processes_gone(pids: list[int]) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def test_a_live_class_on_two_replicas_sharing_redis_survives_a_restart(class_server):
    s = class_server  # tests/conftest.py: 2 replicas behind HAProxy, the class store in Redis
    assert s.class_store.startswith("redis://")
    store = open_store(s.class_store, None)
    sessions: list[Session] = []
    try:
        teacher = Session(s.url, path="walkthrough")
        sessions.append(teacher)
        assert teacher.rerun().ok
        teacher.click("wt_start")
        started = teacher.rerun()
        assert started.ok, (started.status, started.exceptions)
        code = re.search(r"class=([A-Z0-9]{9})", teacher.query_string)[1]
        assert not any("&teacher=" in e.text for e in teacher.tree.values())  # never drawn
        token = parse_qs(urlsplit(_private_link(started)).query)["teacher"][0]

        students = [
            Session(s.url, path="walkthrough", query_string=f"class={code}")
            for _ in range(STUDENTS)
        ]  # each holds its websocket: the proxy's leastconn spreads them
        sessions += students
        for st in students:
            assert st.rerun().ok
            assert "following the teacher" in _page(st)
        assert {st.replica for st in students} == set(s.names)  # the class is on both replicas
        assert all(st.cookies[serve.COOKIE_NAME] == st.replica for st in students)

        # the teacher moves the class to the first question's slide; everyone follows
        for _ in range(_slide(SHAPE.slide) - 1):
            _click(teacher, "wt_next")
        here = f"Slide {_slide(SHAPE.slide)} of {len(SLIDES)}"
        assert here in _page(teacher)
        for st in students:
            _poll(st, lambda page: here in page, f"the student follows to {here}")
        assert store.load(code, time.time()).slide == _slide(SHAPE.slide)

        # the question: one replica's students answer right, the other's wrong
        _click(teacher, f"wt_ask_{SHAPE.id}")
        right = [st for st in students if st.replica == s.names[0]]
        for st in students:
            _answer(st, SHAPE, "(2, 3, 1)" if st in right else "[2, 3]")
        answers = store.answers(code, SHAPE.id)
        assert sorted(answers.values()) == sorted(
            "(2, 3, 1)" if st in right else "(2, 3)" for st in students
        )
        _poll(teacher, lambda page: f"{STUDENTS} of " in page, "the teacher's count")
        assert not any("wt-bars" in e.text for e in teacher.tree.values())  # hidden until shown
        _click(teacher, "wt_show")
        _poll(teacher, lambda page: "wt-bars" in page, "the votes shown")
        bars = next(e.text for e in teacher.tree.values() if "wt-bars" in e.text)
        assert _counted(bars, SHAPE.label("(2, 3, 1)")) == len(right)
        assert _counted(bars, SHAPE.label("(2, 3)")) == STUDENTS - len(right)
        _click(teacher, "wt_reveal")
        for st in students:
            verdict = "Right: (2, 3, 1)" if st in right else "Not this time"
            _poll(st, lambda page, v=verdict: v in page, "the student sees the reveal")

        # mid-class: the next question, one answer, then the operator restarts the server
        _poll(teacher, lambda page: "Close the question" in page, "the teacher's panel")
        _click(teacher, "wt_close")
        _poll(teacher, lambda page: "Ask the class" in page, "the question closed")
        for _ in range(_slide(AXIS.slide) - _slide(SHAPE.slide)):
            _click(teacher, "wt_next")
        ask = f"wt_ask_{AXIS.id}"  # its prompt is the button's tooltip
        _poll(teacher, lambda _: any(e.user_key == ask for e in teacher.tree.values()), ask)
        _click(teacher, f"wt_ask_{AXIS.id}")
        changer = students[-1]
        _answer(changer, AXIS, AXIS.label(AXIS.answer))  # a choice sends its label
        pids = [serve.supervisord_pid(s.run_dir), *serve.replica_pids(s).values()]
        serve.stop(s)
        _until(lambda: _processes_gone(pids), "every process of the class server exits")
        serve.start(s, timeout=WAIT_S)
        record = store.load(code, time.time())
        assert (record.slide, record.question) == (_slide(AXIS.slide), AXIS.id)
        assert list(store.answers(code, AXIS.id).values()) == [AXIS.answer]

        # each browser reconnects with its own link: the proxy's cookie names its replica
        assert teacher.query_string.endswith(f"class={code}&host=1")  # the teacher tab's address
        for st in sessions:
            _until_closed(st)  # the old websocket died with the server
            st.close()
            _reconnect(st)
            assert st.rerun().ok
        # the teacher's browser reports the token it keeps for the class (localStorage)
        teacher.set_widget(
            "wt_screen",
            json.dumps({"w": 1920, "h": 1080, "token": token, "asked": code}),
            field_name="json_value",
        )
        assert teacher.rerun().ok
        assert "you teach" in _page(teacher), _page(teacher)
        wrong = next(str(i) for i in range(len(AXIS.choices)) if str(i) != AXIS.answer)
        _answer(changer, AXIS, AXIS.label(wrong))  # the same student (me= in the link), changed
        assert list(store.answers(code, AXIS.id).values()) == [wrong]
        _poll(teacher, lambda page: "1 of " in page, "the teacher's count after the restart")
        _click(teacher, "wt_next")
        here = f"Slide {_slide(AXIS.slide) + 1} of {len(SLIDES)}"
        for st in students:
            _poll(st, lambda page: here in page, "the class follows after the restart")

        # the class ends: its data goes, and the students are told
        _click(teacher, "wt_end")  # asks first
        assert store.load(code, time.time()) is not None
        _click(teacher, "wt_end_yes")
        assert store.load(code, time.time()) is None
        _poll(students[0], lambda page: "has ended" in page, "the student is told")
    finally:
        for st in sessions:
            st.close()
        if not serve.supervisord_pid(s.run_dir):  # stopped mid-class: the next test needs it
            serve.start(s, timeout=WAIT_S)
