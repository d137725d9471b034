"""A live class in real browsers: one teacher (a 1920x1080 projector) and two students (a laptop and a
390x844 phone) on one `streamlit run app.py`, driven with Debian's chromium through Playwright.

On SQLite (the page is the same on either store): students follow the teacher's slide, answer,
the teacher's count updates, the reveal tells each student whether they were right, and after the
server is restarted mid-class the class, its slide and its answers are still there; the keyboard
moves the slides, and a student cannot move the class, nor with a forged teacher link or a forged
token in their browser. (The same class on Redis, shared by two replicas behind HAProxy, over the
websocket protocol: tests/test_serving_live.py; the stores' own rules, a token's check among them,
on both stores: tests/test_classroom_rules.py.) Latencies are measured and written to
artifacts/live_class.json (never asserted: the suite must pass on a busy machine).
Also: every slide at 1920x1080, 1366x768, 150% zoom and 390x844, with the cell numbers' font
sizes read from the DOM (>= 24 px on the projector, >= 12 px and never overlapping on the phone).

No fixed sleeps: every wait is on something a page shows or its websocket says (`Wire`): the
slide's text, the run that drew it for the screen the browser reported, the polls of the live
class, a reconnect. Each click that reruns a page is sent once that page's last run is done:
on a busy machine a click sent while a run is being replaced has counted twice (Next went from
slide 4 to 6; the slide buttons' callbacks step by a delta).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attnviz import examples
from attnviz.classroom import deck, open_store
from attnviz.ui.live_class import POLL_S
from scripts import streamlit_server
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.page_steps import open_expander

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots" / "live"
PROJECTOR = {"width": 1920, "height": 1080}
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
WAIT_MS = 60_000
_CALM_APP = '[data-testid="stApp"][data-test-connection-state="CONNECTED"]'
_CALM_APP += '[data-test-script-state="notRunning"]'
N_SLIDES = 12
TRAP_SLIDE = 1 + [s.key for s in deck.story(*examples.classic()).slides].index("trap")


class Server(streamlit_server.Server):
    """`streamlit run app.py` (scripts/streamlit_server.py) on a free port with this environment,
    not started yet: start(), stop() and start() again serve it on the same port and store."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        port = streamlit_server.free_port()
        super().__init__(f"http://127.0.0.1:{port}", port, None, log, dict(env), timeout_s=90)


@pytest.fixture(scope="module")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class Wire:
    """What one page and its server session say over Streamlit's websocket, read with
    Streamlit's own protobuf classes: the reruns the browser asks for, the runs the server
    starts and finishes, the live class's polls (fragment runs), and whether the browser has
    reported its screen. Every wait here is on one of these, never on the clock."""

    def __init__(self, page) -> None:
        self.page = page
        self.connections = 0  # websockets opened: 2 after one reconnect
        self.runs = 0  # full runs finished on the current connection
        self.polls = 0  # fragment runs finished (the live class polls once per POLL_S)
        self.screen = False  # the browser has sent its screen (the wt_screen component's value)
        self.asked = 0  # reruns the browser asked for (a click, a key, a widget; not a poll)
        self._asked = False  # a rerun was asked for and its run has not finished yet
        self._started = False  # ... and a run started after it was asked for
        self.polls_here, self.last_poll = 0, 0.0  # polls on this connection, when the last ended
        self.said: list[str] = []  # the page's console warnings and errors, for a failure's message
        page.on("websocket", self._connect)
        page.on("console", self._console)

    def _console(self, message) -> None:
        if message.type in ("warning", "error"):
            self.said.append(f"{message.type}: {message.text[:300]}")

    def _connect(self, ws) -> None:
        if not ws.url.endswith("/_stcore/stream"):
            return
        self.connections += 1  # a new session on the server: it learns everything again
        self.runs, self.screen, self._asked, self._started = 0, False, False, False
        self.polls_here, self.last_poll = 0, 0.0
        ws.on("framesent", self._sent)
        ws.on("framereceived", self._received)

    def _sent(self, payload) -> None:
        if not isinstance(payload, bytes):
            return
        msg = BackMsg.FromString(payload)
        if msg.WhichOneof("type") != "rerun_script":
            return
        state = msg.rerun_script
        for widget in state.widget_states.widgets:
            if widget.id.endswith("-wt_screen") and widget.HasField("json_value"):
                self.screen = True
        if state.fragment_id and state.is_auto_rerun:
            # a poll of the live class: the server drops one whose fragment a page run has just
            # replaced (AppSession.request_rerun), so no run of its own may ever answer it; what
            # a click must not meet, a poll being run, is ready()'s wait for a poll just ended
            return
        self.asked += 1
        self._asked, self._started = True, False

    def _received(self, payload) -> None:
        if not isinstance(payload, bytes):
            return
        msg = ForwardMsg.FromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "new_session" and self._asked:
            self._started = True
        elif kind == "script_finished":
            status = msg.script_finished
            if status == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                self.polls += 1
                self.polls_here += 1
                self.last_poll = time.monotonic()
            elif status == ForwardMsg.FINISHED_SUCCESSFULLY:
                self.runs += 1
            if status != ForwardMsg.FINISHED_EARLY_FOR_RERUN and self._started:
                self._asked = False

    def __repr__(self) -> str:
        state = f"connections={self.connections} runs={self.runs} polls_here={self.polls_here}"
        state += f" asked={self.asked} waiting_for_run={self._asked} run_started={self._started}"
        said = "\n  ".join(self.said[-15:])
        return f"{state}\n  the page said:\n  {said}"

    @property
    def idle(self) -> bool:
        """Every rerun this browser asked for has run to its end (a run that started after it
        was asked for has finished, not cut short for another rerun). A poll of the live class on
        this connection also shows the page has been drawn here: a fragment runs only in a
        session whose page run registered it. (Seen once after a restart on a busy machine: the
        reconnected page drawn and polling, 50 polls finished on the new connection, and no page
        run reported as one.)"""
        if self.runs == 0 and self.polls_here == 0:
            return False
        return not self._asked

    def wait(self, condition, what: str, timeout_s: float = WAIT_MS / 1000) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f"waited {timeout_s:.0f} s for {what}: {self}"
            self.page.wait_for_timeout(50)  # playwright hands over the frames while it waits

    def ready(self) -> None:
        """The page has finished its last run (a person looks before the next click), and on a
        page of the live class a poll has just ended: the click is not sent while one runs."""

        def calm() -> bool:
            just_polled = time.monotonic() - self.last_poll < POLL_S / 2
            return self.idle and (self.polls_here == 0 or just_polled)

        self.wait(calm, "the page to finish its run")

    def settled(self) -> None:
        """The browser has reported its screen and the run that drew the page for it is done."""
        self.wait(lambda: self.screen and self.idle, "the page drawn for this screen")

    def polled(self, n: int) -> None:
        """n more polls of the live class have run."""
        target = self.polls + n
        self.wait(lambda: self.polls >= target, f"{n} polls")


# the figure of the last run is drawn: its element is not stale (Streamlit marks what a run has
# not redrawn yet), nothing runs, and plotly has laid it out at the width of its container
_DRAWN = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
  const box = document.querySelector(
    '[data-testid=stElementContainer]:has([data-testid=stPlotlyChart])');
  const plot = box && box.querySelector('.js-plotly-plot');
  done(!!plot && !!plot._fullLayout && box.getAttribute('data-stale') !== 'true'
       && !document.querySelector('[data-testid="stStatusWidget"]')
       && Math.abs(plot._fullLayout.width - plot.getBoundingClientRect().width) < 2);
})))"""


def _drawn(page, wire: Wire) -> None:
    wire.settled()
    page.wait_for_function(_DRAWN, timeout=WAIT_MS)


def _open_all(contexts: list, url: str) -> list[tuple[object, Wire]]:
    """A page on url in each context, loading side by side; returns once each is drawn."""
    opened = []
    for context in contexts:
        page = context.new_page()
        opened.append((page, Wire(page)))
        page.goto(url, wait_until="commit")
    for page, wire in opened:
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=WAIT_MS)
        wire.settled()
    return opened


def _open(context, url: str) -> tuple[object, Wire]:
    return _open_all([context], url)[0]


def _on_slide(page, k: int) -> float:
    """Wait until the page shows slide k; returns the seconds it took."""
    started = time.monotonic()
    page.get_by_text(f"Slide {k} of {N_SLIDES}", exact=True).wait_for(timeout=WAIT_MS)
    return time.monotonic() - started


def _code(page) -> str:
    page.wait_for_url(re.compile(r".*class=[A-Z0-9]{9}.*"), timeout=WAIT_MS)
    return re.search(r"class=([A-Z0-9]{9})", page.url)[1]


def _answer_shape(page, text: str) -> None:
    box = page.get_by_label("Your answer, as a tuple")
    box.wait_for(timeout=WAIT_MS)
    box.fill(text)
    page.get_by_role("button", name="Send my answer").click()
    page.get_by_text(re.compile(r"Your answer: ")).wait_for(timeout=WAIT_MS)


def _answers_counted(page, n: int) -> float:
    """Wait until the teacher's panel says n answered (while open: "n of M answered")."""
    started = time.monotonic()
    page.get_by_text(re.compile(rf"^{n} of \d+ answered")).wait_for(timeout=WAIT_MS)
    return time.monotonic() - started


def _bottom_in_page(locator) -> tuple[float, int]:
    """(the bottom of what locator finds, in CSS px from the top of the page as if nothing were
    scrolled; the window's height): where it is <= the height, it shows on the first screen."""
    return locator.evaluate(
        """(el) => { let b = el.getBoundingClientRect().bottom + window.scrollY;
                     for (let e = el.parentElement; e; e = e.parentElement) b += e.scrollTop;
                     return [b, window.innerHeight]; }"""
    )


def _store(env: dict[str, str]):
    return open_store(env.get("ATTNVIZ_CLASS_STORE", ""), env.get("ATTNVIZ_DATA_DIR") or None)


# the teacher's live count shows this many answers for this choice
_COUNTED = """([choice, n]) => [...document.querySelectorAll('.wt-bar')].some(
  bar => bar.textContent.includes(choice) && bar.querySelector('b').textContent === n)"""


def test_a_live_class_with_a_teacher_and_two_students(chromium, tmp_path):
    env = {"ATTNVIZ_DATA_DIR": str(tmp_path / "data"), "ATTNVIZ_CLASS_STORE": ""}
    server = Server(env, tmp_path / "streamlit.log")
    server.start()
    measured: dict[str, object] = {"store": "sqlite"}
    phases: dict[str, float] = {}  # seconds from the start to the end of each part of the story
    began = time.monotonic()
    pages = []
    projector = chromium.new_context(viewport=PROJECTOR)
    laptops = chromium.new_context(viewport=LAPTOP)
    phones = chromium.new_context(viewport=PHONE, device_scale_factor=3)
    try:
        teacher, teacher_wire = _open(projector, f"{server.url}/walkthrough")
        open_expander(teacher, "Live class: start one, or join with a code", WAIT_MS)
        teacher.get_by_role("button", name="Start a live class").click()
        code = _code(teacher)
        assert "teacher=" not in teacher.url  # the token stays out of the address bar
        teacher.get_by_text("Join at").wait_for(timeout=WAIT_MS)
        teacher.screenshot(path=SHOTS / "class_teacher_join.png")

        students = _open_all([laptops, phones], f"{server.url}/walkthrough?class={code}")
        (laptop, laptop_wire), (phone, phone_wire) = students
        pages += [("teacher", teacher), ("laptop", laptop), ("phone", phone)]
        for page in (laptop, phone):
            page.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)
        phases["joined"] = time.monotonic() - began

        # the teacher moves the class twice: with → and PageDown (a clicker)
        # (each click that reruns a page waits until its last run is done: see the docstring)
        teacher_wire.ready()
        teacher.get_by_text("Show the join code").click()  # hide the QR
        teacher.get_by_text("Join at").wait_for(state="detached", timeout=WAIT_MS)
        for k, key in ((2, "ArrowRight"), (3, "PageDown")):
            teacher_wire.ready()
            teacher.locator("body").press(key)
            _on_slide(teacher, k)
        moved = time.monotonic()  # the teacher's own page shows the move: the store has it
        measured["follow_s"] = []
        for page in (laptop, phone):
            _on_slide(page, 3)
            measured["follow_s"].append(round(time.monotonic() - moved, 2))
        assert _store(env).load(code, time.time()).slide == 3
        phases["followed"] = time.monotonic() - began

        # a question: the students type a shape, the teacher's count updates, the reveal
        teacher_wire.ready()
        teacher.get_by_role("button", name=re.compile("Ask the class")).click()
        _answer_shape(laptop, "(2, 3, 1)")
        _answer_shape(phone, "[2, 3]")  # returns once the phone shows the answer it sent
        measured["count_s"] = round(_answers_counted(teacher, 2), 2)
        teacher.screenshot(path=SHOTS / "class_teacher_count.png")
        phone.screenshot(path=SHOTS / "class_phone_question.png", full_page=True)
        teacher_wire.ready()
        teacher.get_by_role("button", name="Reveal the answer").click()
        laptop.get_by_text(re.compile(r"^Right: \(2, 3, 1\)")).wait_for(timeout=WAIT_MS)
        phone.get_by_text(re.compile("^Not this time")).wait_for(timeout=WAIT_MS)
        phone.screenshot(path=SHOTS / "class_phone_reveal.png", full_page=True)
        # each student's own verdict is on their first screen, under the question and its votes
        for page, verdict in ((laptop, "^Right: "), (phone, "^Not this time")):
            bottom, height = _bottom_in_page(page.get_by_text(re.compile(verdict)))
            assert bottom <= height, (page.viewport_size, bottom)
        phases["revealed"] = time.monotonic() - began

        # what the page decides, not the store (the store's own checks of a forged token:
        # tests/test_classroom_rules.py, on both stores)
        _a_student_cannot_move_the_class(server, env, code, laptops, pages, students)
        phases["not_moved"] = time.monotonic() - began

        # mid-class: a new slide and question, one answer, then the server restarts
        teacher_wire.ready()
        teacher.get_by_role("button", name="Close the question").click()
        teacher.get_by_role("button", name=re.compile("Ask the class")).wait_for(timeout=WAIT_MS)
        for k in range(4, 7):  # 3 -> 6: its questions are asked before the sum slide
            teacher_wire.ready()
            teacher.get_by_role("button", name="Next").click()
            _on_slide(teacher, k)
        teacher_wire.ready()
        # two questions are asked before the sum slide: this one by its key
        teacher.locator(".st-key-wt_ask_sum_axis button").first.click()
        phone.get_by_text("axis 1, the words (T = 3)").wait_for(timeout=WAIT_MS)
        phone.get_by_text("axis 1, the words (T = 3)").click()
        phone.get_by_role("button", name="Send my answer").click()
        phone.get_by_text(re.compile(r"Your answer: axis 1")).wait_for(timeout=WAIT_MS)
        phases["asked"] = time.monotonic() - began
        server.stop()
        server.start()
        record = _store(env).load(code, time.time())
        assert (record.slide, record.question) == (6, "sum_axis")
        assert list(_store(env).answers(code, "sum_axis").values()) == ["1"]
        phases["restarted"] = time.monotonic() - began
        # the browsers reconnect on their own (new sessions, rebuilt from the link and the store):
        # the phone changes its answer as the same student, then the teacher moves the class
        started = time.monotonic()
        for wire in (phone_wire, teacher_wire):
            wire.wait(lambda w=wire: w.connections >= 2 and w.idle, "the browser to reconnect")
            wire.page.wait_for_selector(_CALM_APP, state="attached", timeout=WAIT_MS)
        measured["reconnect_s"] = round(time.monotonic() - started, 2)
        phone.get_by_text("axis 0, the sentences (B = 2)").click()
        phone.get_by_role("button", name="Send my answer").click()
        phone.get_by_text(re.compile(r"Your answer: axis 0")).wait_for(timeout=WAIT_MS)
        assert list(_store(env).answers(code, "sum_axis").values()) == ["0"]
        # still the teacher after the restart: no counts until shown, then the changed answer
        teacher_wire.settled()
        _answers_counted(teacher, 1)
        assert teacher.locator(".wt-bar").count() == 0
        teacher_wire.ready()
        teacher.get_by_role("button", name="Show the votes").click()
        teacher.wait_for_function(_COUNTED, arg=["axis 0", "1"], timeout=WAIT_MS)
        teacher_wire.ready()
        teacher.get_by_role("button", name="Next").click()
        for page in (teacher, laptop, phone):
            _on_slide(page, 7)
        assert _store(env).load(code, time.time()).slide == 7
        teacher.screenshot(path=SHOTS / "class_teacher_after_restart.png")
        for page in (teacher, laptop, phone):
            assert page.locator('[data-testid="stException"]').count() == 0
        phases["moved_after_restart"] = time.monotonic() - began
    finally:
        for name, page in pages:  # what each screen showed at the end (or when it failed)
            if not page.is_closed():
                page.screenshot(path=SHOTS / f"class_{name}_last.png", full_page=True)
        for context in (projector, laptops, phones):
            context.close()
        server.stop()
        measured["phases_s"] = {k: round(v, 2) for k, v in phases.items()}
        (ROOT / "artifacts" / "live_class.json").write_text(json.dumps(measured, indent=1))


def _a_student_cannot_move_the_class(server, env, code, laptops, pages, students) -> None:
    """A student cannot move the class: their own steps and keys, a forged teacher link, a
    forged token kept in their browser. Ends with the laptop back on the teacher's slide 3."""
    (laptop, laptop_wire), (phone, phone_wire) = students
    laptop_wire.ready()
    laptop.get_by_role("button", name="Next").click()
    _on_slide(laptop, 4)
    laptop_wire.ready()
    laptop.locator("body").press("End")
    _on_slide(laptop, N_SLIDES)
    forged = laptops.new_page()  # another tab: this browser keeps no teacher token
    pages.append(("forged", forged))
    forged_wire = Wire(forged)
    forged.goto(f"{server.url}/walkthrough?class={code}&teacher={'A' * 32}")
    forged.get_by_text(re.compile("teacher link is not valid")).wait_for(timeout=WAIT_MS)
    # a forged stored token: this browser keeps one for the class, and opens its host link
    forged.evaluate(f"() => localStorage.setItem('attnviz.teacher.{code}', '{'B' * 32}')")
    forged.goto(f"{server.url}/walkthrough?class={code}&host=1")
    forged_wire.settled()  # the browser has sent the token it keeps, and the page is drawn
    forged.get_by_text(re.compile("open your private teacher link")).wait_for(timeout=WAIT_MS)
    assert forged.get_by_role("button", name="Reveal the answer").count() == 0
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # not in the class (the link tells nothing of it): on its own slides, from the first
    for attempt in range(3):  # a press lost in a rerun is pressed again, as a person would:
        forged_wire.ready()  # Next on slide 1 says slide 2, so a second press cannot skip one
        forged.locator("body").press("ArrowRight")
        try:
            forged.get_by_text(f"Slide 2 of {N_SLIDES}", exact=True).wait_for(timeout=20_000)
            break
        except PlaywrightTimeout:
            assert attempt < 2, "three presses of → did not move the forged host's page"
    _on_slide(forged, 2)  # its own step, done: a teacher's would have moved the store
    assert _store(env).load(code, time.time()).slide == 3
    forged.close()
    phone_wire.polled(2)  # the phone has asked the store twice since
    assert _store(env).load(code, time.time()).slide == 3
    assert phone.get_by_text(f"Slide 3 of {N_SLIDES}", exact=True).is_visible()
    laptop_wire.ready()
    laptop.get_by_role("button", name=re.compile("Back to slide 3")).click()
    _on_slide(laptop, 3)


_CELLS = """() => {
  const out = [];
  document.querySelectorAll('[data-testid=stPlotlyChart] text').forEach(t => {
    if (!t.textContent.trim()) return;
    const r = t.getBoundingClientRect();
    out.push({cell: !!t.closest('.hm'), size: parseFloat(getComputedStyle(t).fontSize),
              text: t.textContent.slice(0, 40), x: r.x, y: r.y, w: r.width, h: r.height});
  });
  const chart = document.querySelector('[data-testid=stPlotlyChart]');
  if (!chart) return null;  // redrawn meanwhile
  const fig = chart.getBoundingClientRect();
  return {texts: out, bottom: fig.bottom, width: document.documentElement.scrollWidth};
}"""


def _overlaps(boxes: list[dict]) -> int:
    n = 0
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            across = a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            if across and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]:
                n += 1
    return n


def _colliding(boxes: list[dict], slack: float = 1.0) -> list[tuple[str, str]]:
    """The pairs of texts whose boxes overlap by more than ``slack`` px both ways (a colour bar's
    ticks on an axis title, an axis title on the next panel's title, a label on a tick)."""
    pairs = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            across = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
            down = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
            if across > slack and down > slack:
                pairs.append((a["text"], b["text"]))
    return pairs


def _read_slide(page, wire: Wire, shot: Path, full_page: bool) -> dict:
    """The drawn slide's texts and their boxes, read (and shot) while no run replaces it; read
    again if the page ran meanwhile (it reported its size again, or it reconnected)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        _drawn(page, wire)
        mark = (wire.connections, wire.asked)
        page.screenshot(path=shot, full_page=full_page)
        info = page.evaluate(_CELLS)
        if info is not None and (wire.connections, wire.asked) == mark and wire.idle:
            return info
        assert time.monotonic() < deadline, "the slide was redrawn for a minute"


@pytest.fixture(scope="module")
def plain_server(app_server):
    """conftest's app_server (its own SQLite class store), shared on this worker: never restarted."""
    return app_server


@pytest.mark.parametrize(
    "name, viewport, scale",
    [
        ("projector", PROJECTOR, 1.0),
        ("laptop", LAPTOP, 1.0),
        ("zoom150", {"width": 1280, "height": 720}, 1.5),
        ("phone", PHONE, 3.0),
    ],
)
def test_every_slide_is_readable_on_each_screen(chromium, plain_server, name, viewport, scale):
    context = chromium.new_context(viewport=viewport, device_scale_factor=scale)
    page = context.new_page()
    wire = Wire(page)
    # every slide on the projector and the phone, from the link's slide 1 on with Next; on the
    # laptop and at 150% zoom, the silent-trap slide (the widest figure) from the link, then the
    # first and the last with their buttons: the same layout code, a third of the slides
    if name in ("projector", "phone"):
        slides, steps = range(1, N_SLIDES + 1), ["Next"] * (N_SLIDES - 1)
    else:
        slides, steps = (TRAP_SLIDE, 1, N_SLIDES), ["First", "Last"]
    try:
        page.goto(f"{plain_server.url}/walkthrough?slide={slides[0]}")
        for k, step in zip(slides, [None, *steps], strict=True):
            if step:
                wire.ready()
                page.get_by_role("button", name=step).click()
            _on_slide(page, k)  # a click's callback has run: the next click is a new one
            info = _read_slide(page, wire, SHOTS / f"{name}_slide{k:02d}.png", name == "phone")
            cells = [t for t in info["texts"] if t["cell"]]
            assert info["width"] <= viewport["width"], (k, "wider than the screen")
            assert _colliding(info["texts"]) == [], (k, "texts of the figure drawn over each other")
            if name == "projector":
                assert min(t["size"] for t in info["texts"]) >= 24, k
                assert info["bottom"] <= viewport["height"], (k, "the figure needs scrolling")
            if name == "laptop":
                assert info["bottom"] <= viewport["height"], (k, "the figure needs scrolling")
            if name == "phone":
                assert min((t["size"] for t in cells), default=12) >= 12, k
                assert _overlaps(cells) == 0, k
    finally:
        context.close()
