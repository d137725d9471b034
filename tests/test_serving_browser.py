"""Failover in a real browser (slow): a student's replica is killed mid-class; the browser reconnects
through HAProxy to the live replica and shows the same example, page and step, rebuilt from the link,
with no error page; supervisord brings the killed replica back. Debian's chromium through Playwright.

The time from the kill to the rebuilt view is printed (run with -s), never asserted.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from scripts import serve
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.page_steps import open_expander
from tests.test_serving import _all_up, _until

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots"
WAIT_MS = 120_000
# A link that is not the default example: what the rebuilt view must still show.
LINK = "?p=classic&s=2x3x5&sm=1"  # the Playground is the default page, at /


@pytest.fixture
def server(class_server):
    """The class server of this test process (tests/conftest.py), shared with test_serving."""
    return class_server


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _settled(page) -> None:
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=WAIT_MS
    )


_PAGE_STATE = """() => {
  const a = document.activeElement, next = document.querySelector(".st-key-wt_next button");
  return {
    focus: a ? a.tagName + (a.closest("[class*='st-key-']")?.className.match(/st-key-\\S+/)?.[0] || "") : "",
    next: next ? (next.disabled ? "disabled" : "enabled") : "missing",
    alerts: [...document.querySelectorAll("[data-testid='stAlert']")].map((e) => e.innerText),
    status: document.querySelector("[data-testid='stStatusWidget']")?.innerText || "",
    keys: window.__attnvizKeys ? "page" : window.__attnvizFrameKeys ? "frame" : "none",
  };
}"""


def _press_to(page, runs: Runs, key: str, text: str) -> None:
    """A presenter's key press, then ``text`` on the page; when it does not come, the failure
    says where the focus was, whether Next was usable, the page's notices, who hears keys, how
    many runs the server finished after the press, which runs and presses the page sent after it
    (none: the press never left the browser) and what its console logged."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    seen, sent, errors = runs.finished, len(runs.sent), len(runs.errors)
    page.keyboard.press(key)
    try:
        page.get_by_text(text, exact=True).wait_for(timeout=WAIT_MS)
    except PlaywrightTimeout:
        asked = runs.sent[sent:]
        state = dict(
            page.evaluate(_PAGE_STATE),
            runs_after_the_press=runs.finished - seen,
            sent_after_the_press=[a for a in asked if a != "poll"][:20],
            polls_sent=asked.count("poll"),
            console=runs.errors[errors:][-8:],
        )
        raise AssertionError(f"{key} did not bring {text!r}: {state}") from None


def _href(page) -> str:
    """The address bar now (page.url can lag behind the page's history.replaceState)."""
    return page.evaluate("() => window.location.href")


def _wait_href(page, part: str) -> None:
    page.wait_for_function(f"() => window.location.href.includes({part!r})", timeout=WAIT_MS)


def _replica(context) -> str:
    return {c["name"]: c["value"] for c in context.cookies()}.get(serve.COOKIE_NAME, "")


def _step(page) -> int:
    """The step the page shows ("Step k of n" -> k)."""
    text = page.get_by_text(re.compile(r"^Step \d+ of \d+$")).inner_text(timeout=WAIT_MS)
    return int(text.split()[1])


def _shows_step(page, k: int) -> None:
    """Wait until the page shows step k, as a person looks at the screen after a click (a run
    that finished is not yet drawn; a click that was lost never shows it, and fails here)."""
    page.get_by_text(re.compile(rf"^Step {k} of \d+$")).wait_for(timeout=WAIT_MS)


class Runs:
    """Counts the script runs the page's websockets report finished (ForwardMsg script_finished),
    and keeps what the page asked of the server (each rerun it sent: a fragment's poll or a whole
    run, and the buttons it pressed) and the errors its console logged, for a failure to say."""

    def __init__(self, page) -> None:
        self.page, self.sockets, self.finished = page, 0, 0
        self.sent: list[str] = []
        self.errors: list[str] = []
        page.on("websocket", self._socket)
        page.on("console", self._console)

    def _socket(self, ws) -> None:
        self.sockets += 1
        ws.on("framereceived", self._frame)
        ws.on("framesent", self._sent)
        ws.on("close", lambda _ws: self.sent.append("closed"))

    def _sent(self, payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = BackMsg()
            msg.ParseFromString(bytes(payload))
            if msg.WhichOneof("type") == "rerun_script":
                state = msg.rerun_script
                pressed = [
                    w.id.rsplit("-", 1)[-1] for w in state.widget_states.widgets if w.trigger_value
                ]
                kind = "poll" if state.is_auto_rerun else "fragment" if state.fragment_id else "run"
                self.sent.append(kind + (f"{pressed}" if pressed else ""))

    def _console(self, message) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(message.text[:300])

    def _frame(self, payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            msg = ForwardMsg()
            msg.ParseFromString(bytes(payload))
            early = ForwardMsg.FINISHED_EARLY_FOR_RERUN
            if msg.WhichOneof("type") == "script_finished" and msg.script_finished != early:
                self.finished += 1

    def click(self, name: str) -> None:
        """Click a button and wait until the run it starts has finished."""
        seen = self.finished
        self.page.get_by_role("button", name=name).click()
        deadline = time.monotonic() + WAIT_MS / 1000
        while self.finished == seen:
            assert time.monotonic() < deadline, f"no run finished after clicking {name}"
            self.page.wait_for_timeout(100)
        self.page.wait_for_timeout(300)  # the frontend renders what arrived


def test_a_killed_replica_costs_a_reconnect_not_the_view(server, browser):
    _until(lambda: _all_up(server), "both replicas UP before one is killed")
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    runs = Runs(page)
    try:
        page.goto(f"{server.url}/{LINK}")
        page.wait_for_selector('[data-testid="stDataFrame"]', timeout=WAIT_MS)
        _settled(page)
        for _ in range(2):
            runs.click("Next")
        _shows_step(page, 3)
        _wait_href(page, "step=2")  # the page writes its step into the link
        assert _step(page) == 3
        before = _replica(context)
        assert before in server.names and "sm=1" in _href(page)
        opened = runs.sockets

        gone = serve.replica_pids(server)[before]
        os.kill(gone, signal.SIGKILL)
        t0 = time.monotonic()
        # the browser notices, reconnects through the proxy, and lands on the other replica
        while runs.sockets == opened or _replica(context) in ("", before):
            assert time.monotonic() - t0 < WAIT_MS / 1000, "the browser did not reconnect"
            page.wait_for_timeout(100)
        _settled(page)
        after = _replica(context)
        print(
            f"\nfailover: {before} killed, reconnected to {after} in {time.monotonic() - t0:.1f} s"
        )
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "serving-failover.png"))

        # the same example, page and step, no error page
        assert after in server.names and after != before
        assert _step(page) == 3 and "step=2" in _href(page) and "sm=1" in _href(page)
        assert page.get_by_role("switch", name="Softmax the scores").is_checked()
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Traceback" not in page.inner_text("body")
        # the new replica rebuilds the session from the link on the next run; Next moves on from
        # there (the first click may be absorbed by the rebuild: see tests/test_serving.py::
        # test_a_killed_replicas_students_keep_their_view_and_their_next_click)
        runs.click("Next")
        _settled(page)
        shown = _step(page)
        assert shown in (3, 4)
        _wait_href(page, f"step={shown - 1}")
        runs.click("Next")
        _shows_step(page, shown + 1)
        _wait_href(page, f"step={shown}")
        assert page.get_by_role("switch", name="Softmax the scores").is_checked()
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        context.close()

    _until(lambda: _all_up(server, gone), "supervisord brings the killed replica back, UP")


def test_a_teacher_whose_replica_is_killed_mid_move_shows_the_class_its_slide(server, browser):
    """The teacher presses → and their replica is killed at once: whether the move reached the
    store or not, after the reconnect the teacher's screen and every student's show the store's
    slide (the teacher's move goes to the store first; a teacher's page shows the store's slide),
    and the next press moves everyone."""
    from attnviz.classroom import open_store
    from scripts.stclient import Session
    from tests.test_serving import _reconnect, _until_closed
    from tests.test_serving_live import _page, _poll

    _until(lambda: _all_up(server), "both replicas UP before one is killed")
    store = open_store(server.class_store, None)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    runs = Runs(page)
    students: list[Session] = []
    n = 12
    try:
        page.goto(f"{server.url}/walkthrough")
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=WAIT_MS)
        _settled(page)
        open_expander(page, "Live class: start one, or join with a code", WAIT_MS)
        runs.click("Start a live class")
        _wait_href(page, "host=1")
        code = re.search(r"class=([A-Z0-9]{9})", _href(page))[1]
        students = [
            Session(server.url, path="walkthrough", query_string=f"class={code}") for _ in range(2)
        ]
        for st in students:
            assert st.rerun().ok and "following the teacher" in _page(st)
        _press_to(page, runs, "ArrowRight", f"Slide 2 of {n}")
        _settled(page)

        before, opened = _replica(context), runs.sockets
        gone = serve.replica_pids(server)[before]
        page.keyboard.press("ArrowRight")  # mid-move: the replica dies as the press arrives
        os.kill(gone, signal.SIGKILL)
        t0 = time.monotonic()
        while runs.sockets == opened or _replica(context) in ("", before):
            assert time.monotonic() - t0 < WAIT_MS / 1000, "the teacher's browser did not reconnect"
            page.wait_for_timeout(100)
        _settled(page)
        slide = store.load(code, time.time()).slide
        assert slide in (2, 3)  # done for everyone, or not at all
        page.get_by_text(f"Slide {slide} of {n}", exact=True).wait_for(timeout=WAIT_MS)
        # still the teacher (.first: while a run redraws the page, the old banner may linger
        # beside the new one for a moment)
        page.get_by_text(re.compile("you teach")).first.wait_for(timeout=WAIT_MS)
        print(f"\nthe teacher's replica killed mid-move: the class is on slide {slide}")
        for st in students:
            if st.replica == before:  # its websocket died with the replica
                _until_closed(st)
                st.close()
                _reconnect(st)
                assert st.rerun().ok
            here = f"Slide {slide} of {n}"
            _poll(st, lambda text, h=here: h in text, f"the student shows {here}")
        _settled(page)
        try:
            _press_to(page, runs, "ArrowRight", f"Slide {slide + 1} of {n}")
        except AssertionError as e:  # whether the store took the move, and what the replicas said
            logs = sorted((server.run_dir / "log").glob("replica-*.log"))
            tails = {p.name: p.read_text(errors="replace")[-1500:] for p in logs}
            now = store.load(code, time.time()).slide
            raise AssertionError(
                f"{e}; the store's slide: {now}; the replicas' logs: {tails}"
            ) from None
        assert store.load(code, time.time()).slide == slide + 1
        for st in students:
            here = f"Slide {slide + 1} of {n}"
            _poll(st, lambda text, h=here: h in text, f"the student follows to {here}")
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        for st in students:
            st.close()
        context.close()
    _until(lambda: _all_up(server, gone), "supervisord brings the killed replica back, UP")
