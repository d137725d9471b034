"""A live class held as a teacher and a mischievous student would, in real browsers (slow): Debian's
chromium through Playwright on one `streamlit run app.py` (SQLite), with the harness of
tests/test_live_browser.py (its server, its websocket observer, its waits: no fixed sleeps).

- The teacher stays the teacher: the private link is copied, never drawn; opened in another
  browser it lands on the class's slide, both screens announce the second device, and "Present
  only here" revokes it at once (the old link too).
- Keys a presenter expects: Space after a mouse click on Back advances, Space on a focused expander
  opens it, a mouse click on a toggle leaves the next Space to the slides, a focused toggle takes
  Space itself.
- Slides that fit: every slide with a question, open and revealed, on the 1920x1080 projector, and
  a student's figure above the fold of a 1366x768 laptop at the reveal, read as bounding boxes.
- Predict first, with two students: every question is asked on the slide before the one that
  answers it, and while it is open no student's page text holds its answer (the answering
  slide's title, code and narration, the explanation, a typed answer's value); no counts until
  the teacher shows them.
- One student per browser: four tabs of one student count once and keep the name through a reload
  and a server restart. End the class asks first.

A teacher's replica killed mid-move: tests/test_serving_browser.py.
"""

from __future__ import annotations

import re
import time

import pytest

from attnviz import examples
from attnviz.classroom import Classroom, deck, open_store, peer, questions
from tests.page_steps import open_expander
from tests.test_live_browser import (
    _CALM_APP,
    _DRAWN,
    LAPTOP,
    N_SLIDES,
    PROJECTOR,
    WAIT_MS,
    Server,
    Wire,
    _code,
    _on_slide,
    _open,
    chromium,  # noqa: F401 -- the module's browser (a fixture)
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLIDES = deck.story(*examples.classic()).slides
KEYS = [s.key for s in SLIDES]
QUESTIONS = questions(*examples.classic())
#: each question with the slide it is asked on: the one before the slide that answers it
ASKED = sorted(((KEYS.index(q.slide), q) for q in QUESTIONS), key=lambda kq: kq[0])  # 2 4 6 6 9
ANNOUNCED = "Another device is presenting this class"

# where the slide's parts are on screen (px from the window's top), and how far the page scrolls
_BOXES = """() => {
  const box = s => { const e = document.querySelector(s); if (!e) return null;
                     const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  const main = document.querySelector('[data-testid=stMain]') || document.documentElement;
  return {figure: box('[data-testid=stPlotlyChart]'), question: box('.st-key-wt_live_question'),
          bar: box('.st-key-wt_live_bar'), scrolled: main.scrollTop + window.scrollY};
}"""


def _env(tmp_path) -> dict[str, str]:
    return {"ATTNVIZ_DATA_DIR": str(tmp_path / "data"), "ATTNVIZ_CLASS_STORE": ""}


def _room(env: dict[str, str]) -> Classroom:
    return Classroom(open_store(env["ATTNVIZ_CLASS_STORE"], env["ATTNVIZ_DATA_DIR"]))


def _boxes(page, wire: Wire) -> dict:
    """The drawn slide's boxes, read while no run replaces them."""
    while True:
        wire.wait(lambda: wire.idle, "the page to finish its run")
        page.wait_for_function(_DRAWN, timeout=WAIT_MS)
        mark = (wire.connections, wire.asked)
        boxes = page.evaluate(_BOXES)
        if boxes["figure"] is not None and (wire.connections, wire.asked) == mark and wire.idle:
            return boxes


def _press(page, wire: Wire, key: str, slide: int) -> None:
    wire.ready()
    page.keyboard.press(key)
    _on_slide(page, slide)


def _click(page, wire: Wire, name: str | re.Pattern) -> None:
    wire.ready()
    page.get_by_role("button", name=name).click()


def _menu(page, wire: Wire) -> None:
    """Open the teacher's menu (the "Teacher" button in the slide buttons' row)."""
    wire.ready()
    page.locator(".st-key-wt_tools button").first.click()


def _shows_question(page, revealed: bool) -> None:
    name = "Close the question" if revealed else "Reveal the answer"
    page.get_by_role("button", name=name).wait_for(timeout=WAIT_MS)
    if revealed:
        page.get_by_text(re.compile("^Answer: ")).wait_for(timeout=WAIT_MS)


def test_the_teacher_stays_the_teacher_keys_act_where_they_should_and_slides_fit(
    chromium,  # noqa: F811
    app_server,
):
    server, env = app_server, app_server.env  # conftest's, never restarted: a class of its own
    clipboard = ["clipboard-read", "clipboard-write"]
    projector = chromium.new_context(viewport=PROJECTOR, permissions=clipboard)
    photo = chromium.new_context(viewport=PROJECTOR)  # a student's browser with the link's photo
    try:
        teacher, wire = _open(projector, f"{server.url}/walkthrough")
        open_expander(teacher, "Live class: start one, or join with a code", WAIT_MS)
        _click(teacher, wire, "Start a live class")
        code = _code(teacher)
        teacher.get_by_text("Join at").wait_for(timeout=WAIT_MS)
        wire.ready()
        teacher.get_by_text("Show the join code").click()  # the mouse: QR hidden
        teacher.get_by_text("Join at").wait_for(state="detached", timeout=WAIT_MS)

        # keys: a mouse click on the toggle leaves Space to the slides; so does one on Back
        _press(teacher, wire, " ", 2)
        _click(teacher, wire, "Back")
        _on_slide(teacher, 1)
        _press(teacher, wire, " ", 2)  # advances, never presses the Back it clicked
        _press(teacher, wire, "PageDown", 3)
        assert _room(env).state(code).slide == 3
        # Space on a focused expander opens it; on a focused toggle flips it: not the slide
        wire.ready()
        teacher.locator(".st-key-wt_description summary").focus()
        teacher.keyboard.press(" ")
        teacher.locator(".st-key-wt_description details[open]").wait_for(timeout=WAIT_MS)
        switch = teacher.get_by_role("switch", name="Show the join code")
        switch.focus()
        teacher.keyboard.press(" ")
        teacher.get_by_text("Join at").wait_for(timeout=WAIT_MS)
        wire.ready()
        assert teacher.get_by_text(f"Slide 3 of {N_SLIDES}", exact=True).is_visible()
        assert _room(env).state(code).slide == 3
        wire.ready()
        teacher.get_by_text("Show the join code").click()  # hidden again, by the mouse
        teacher.get_by_text("Join at").wait_for(state="detached", timeout=WAIT_MS)

        # every slide with a question fits the projector: open (the question covers the slide:
        # no figure), and revealed (the slide beside its question)
        fits = {}
        for k, q in ASKED:
            while _room(env).state(code).slide < k:
                _press(teacher, wire, "ArrowRight", _room(env).state(code).slide + 1)
            wire.ready()
            teacher.locator(f".st-key-wt_ask_{q.id} button").first.click()
            _shows_question(teacher, False)
            teacher.get_by_text(re.compile(r"^\d+\. Predict first$")).wait_for(timeout=WAIT_MS)
            assert teacher.locator("[data-testid=stPlotlyChart]").count() == 0
            _click(teacher, wire, "Reveal the answer")
            _shows_question(teacher, True)
            fits[(k, q.id)] = boxes = _boxes(teacher, wire)
            for part in ("figure", "question", "bar"):  # seen from the page's top
                bottom = boxes[part]["bottom"] + boxes["scrolled"]
                assert bottom <= PROJECTOR["height"], (k, q.id, part, boxes)
            _click(teacher, wire, "Close the question")
            teacher.locator(f".st-key-wt_ask_{q.id} button").first.wait_for(timeout=WAIT_MS)
        print("\nprojector, question revealed:", fits)

        # the private link: copied, never drawn
        _menu(teacher, wire)
        teacher.get_by_role("button", name=re.compile("Copy my private link")).click()
        teacher.get_by_text("Copied.", exact=False).wait_for(timeout=WAIT_MS)
        link = teacher.evaluate("() => navigator.clipboard.readText()")
        token = re.search(r"teacher=([A-Za-z0-9_-]{32})", link)[1]
        assert token not in teacher.inner_text("body")
        teacher.keyboard.press("Escape")  # the menu closes

        # a second device opens it: on the class's slide, announced on both screens
        here = _room(env).state(code).slide  # the last question's slide
        other, other_wire = _open(photo, link)
        _on_slide(other, here)
        for page in (teacher, other):
            page.get_by_text(re.compile(ANNOUNCED)).wait_for(timeout=WAIT_MS)
        _click(teacher, wire, "Present only here")
        other.get_by_text(re.compile("no longer teaches it")).wait_for(timeout=WAIT_MS)
        assert other.evaluate(f"() => localStorage.getItem('attnviz.teacher.{code}')") is None
        teacher.get_by_text(re.compile(ANNOUNCED)).wait_for(state="detached", timeout=WAIT_MS)
        other.goto(link)  # the old link, in the other browser
        other.get_by_text(re.compile("teacher link is not valid")).wait_for(timeout=WAIT_MS)
        _click(teacher, wire, "Back")
        _on_slide(teacher, here - 1)
        assert _room(env).state(code).slide == here - 1  # still the teacher, the only one

        # keys outlive the helper's frame: a reconnect (a replica's failover) replaces it, and a
        # listener made in a frame's realm dies with the frame: the next → was lost
        teacher.locator('iframe[src*="live_screen"]').first.evaluate(
            "f => { f.src = 'about:blank'; }"
        )
        teacher.wait_for_function(
            """() => [...document.querySelectorAll('iframe')].some(
                 f => f.getAttribute('src') === 'about:blank' && f.contentDocument
                      && f.contentDocument.readyState === 'complete')""",
            timeout=WAIT_MS,
        )
        _press(teacher, wire, "ArrowRight", here)
        assert _room(env).state(code).slide == here

        # End the class asks first
        _menu(teacher, wire)
        _click(teacher, wire, re.compile("End the class"))
        teacher.get_by_text("End the class now?", exact=False).wait_for(timeout=WAIT_MS)
        assert _room(env).state(code).code == code
        _click(teacher, wire, "Yes, end the class")
        teacher.get_by_text(re.compile("The class has ended")).wait_for(timeout=WAIT_MS)
        assert (
            open_store(env["ATTNVIZ_CLASS_STORE"], env["ATTNVIZ_DATA_DIR"]).load(code, time.time())
            is None
        )
        for page in (teacher, other):
            assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        projector.close()
        photo.close()


def test_one_student_per_browser_keeps_their_name_and_sees_the_figure(
    chromium,  # noqa: F811
    tmp_path,
):
    env = _env(tmp_path)
    server = Server(env, tmp_path / "streamlit.log")
    server.start()
    room = _room(env)
    started = room.start()  # the teacher, without a browser
    code, token = started.code, started.token
    laptop = chromium.new_context(viewport=LAPTOP)
    other = chromium.new_context(viewport=LAPTOP)  # another student, in a browser of their own
    try:
        first, wire = _open(laptop, f"{server.url}/walkthrough")
        open_expander(first, "Live class: start one, or join with a code", WAIT_MS)
        first.get_by_label("Class code").fill(code.lower())
        first.get_by_label("Your name (optional, shown only as text)").fill("Bob")
        _click(first, wire, "Join the class")
        first.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)
        # three more tabs of the same browser on the join link: the same student
        tabs = [(first, wire)]
        for _ in range(3):
            page = laptop.new_page()
            tabs.append((page, Wire(page)))
            page.goto(f"{server.url}/walkthrough?class={code}", wait_until="commit")
        for page, _ in tabs:
            page.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)
        assert list(room.store.members(code).values()) == ["Bob"]  # four tabs, one student
        for page, _ in tabs[2:]:  # two are enough from here on (each tab polls every second)
            page.close()
        tabs = tabs[:2]
        first.reload()
        first.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)
        server.stop()
        server.start()
        for page, w in tabs:
            w.wait(lambda w=w: w.connections >= 2 and w.idle, "the tab to reconnect")
            page.wait_for_selector(_CALM_APP, state="attached", timeout=WAIT_MS)
        assert list(room.store.members(code).values()) == ["Bob"]  # one student, named

        # predict first, with two students: each question asked on the slide before the one
        # that answers it; while it is open, no student's page text holds its answer (a third
        # student's page was the same page read a third time: every page here is a student's)
        tabs[1][0].close()
        page, w = _open(other, f"{server.url}/walkthrough?class={code}")
        page.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)
        students = [tabs[0], (page, w)]
        assert len(room.store.members(code)) == 2  # a student per browser
        checked = {}
        for k, q in ASKED:
            room.move(code, token, k, N_SLIDES)
            for page, _ in students:
                _on_slide(page, k)
            peer.ask(room, code, token, q)
            answer_words = _answer_words(q)
            for page, _ in students:
                page.get_by_role("button", name="Send my answer").wait_for(timeout=WAIT_MS)
                page.get_by_text(re.compile(r"^\d+\. Predict first$")).wait_for(timeout=WAIT_MS)
                text = page.inner_text("body")
                assert q.prompt.split(":")[0] in text  # the question is there...
                found = [words for words in answer_words if words in text]
                assert found == [], (q.id, found)  # ...its answer is not
                assert page.locator(".wt-bar").count() == 0  # nor any count
            # a student who steps on to the slide that answers it still sees only the question
            page, w = students[1]
            w.ready()
            page.get_by_role("button", name="Next").click()
            _on_slide(page, k + 1)
            page.get_by_text(re.compile(r"^\d+\. Predict first$")).wait_for(timeout=WAIT_MS)
            text = page.inner_text("body")
            assert [words for words in answer_words if words in text] == [], q.id
            w.ready()
            page.get_by_role("button", name=re.compile("Back to slide")).click()
            _on_slide(page, k)
            checked[q.id] = len(answer_words)
            peer.reveal(room, code, token)
            page, w = students[0]
            page.get_by_text("The answer:", exact=False).wait_for(timeout=WAIT_MS)
            boxes = _boxes(page, w)  # at the reveal the slide is back, above the laptop's fold
            assert boxes["figure"]["top"] + boxes["scrolled"] < LAPTOP["height"], (k, boxes)
            room.close_question(code, token)
        print("\nanswer texts absent while open, per question:", checked)
        assert "Bob" in room.store.members(code).values()
        for page, _ in students:
            assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        laptop.close()
        other.close()
        server.stop()


def _answer_words(q) -> list[str]:
    """Text that gives q's answer away: the answering slide's title and first sentence, the
    explanation's first words, and a typed answer's value (a choice's words are its options)."""
    slide = SLIDES[KEYS.index(q.slide)]
    words = [slide.title, slide.narration.split(". ")[0].replace("`", ""), q.why[:40]]
    if q.kind.value != "choice":
        words.append(q.label(q.answer))
    return [w for w in words if w]
