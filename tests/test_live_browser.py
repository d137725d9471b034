"""A live class in real browsers: one teacher (a 1920x1080 projector) and two students (a laptop and a
390x844 phone) on one `streamlit run app.py`, driven with Debian's chromium through Playwright.

Students follow the teacher's slide, answer, the teacher's count updates, the reveal tells each
student whether they were right; a student cannot move the class (nor with a forged teacher link);
the keyboard moves the slides; and after the server is restarted mid-class the class, its slide and
its answers are still there, with SQLite and with Redis. Latencies are measured and written to
artifacts/live_class.json (never asserted: the suite must pass on a busy machine).
Also: every slide at 1920x1080, 1366x768, 150% zoom and 390x844, with the cell numbers' font
sizes read from the DOM (>= 24 px on the projector, >= 12 px and never overlapping on the phone).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from attnviz import examples
from attnviz.classroom import deck, open_store
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots" / "live"
PROJECTOR = {"width": 1920, "height": 1080}
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
WAIT_MS = 60_000
N_SLIDES = 12
TRAP_SLIDE = 1 + [s.key for s in deck.story(*examples.classic()).slides].index("trap")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`streamlit run app.py` on a port, restartable on the same port with the same store."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.env = {**os.environ, **env}
        self.log = log
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(self.port)]
        cmd += ["--server.address", "127.0.0.1", "--server.headless", "true"]
        cmd += ["--server.fileWatcherType", "none"]
        out = open(self.log, "a")  # noqa: SIM115 -- closed with the process
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=self.env
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"streamlit did not start on {self.url}")
                time.sleep(0.3)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


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


@pytest.fixture(params=["sqlite", "redis"])
def store_env(request, tmp_path):
    """The environment that points the server (and this test) at one class store."""
    if request.param == "sqlite":
        yield request.param, {"ATTNVIZ_DATA_DIR": str(tmp_path / "data"), "ATTNVIZ_CLASS_STORE": ""}
        return
    from tests.test_classroom_store import RedisServer

    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:
        yield request.param, {"ATTNVIZ_CLASS_STORE": redis.url, "ATTNVIZ_DATA_DIR": ""}
    finally:
        redis.stop()


def _settle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=WAIT_MS
    )


def _open(browser, url: str, viewport: dict, scale: float = 1.0):
    page = browser.new_page(viewport=viewport, device_scale_factor=scale)
    page.goto(url)
    page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=WAIT_MS)
    _settle(page)
    return page


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
    started = time.monotonic()
    page.get_by_text(f"{n} answered", exact=True).wait_for(timeout=WAIT_MS)
    return time.monotonic() - started


def _retry(attempt, timeout_s: float = 90) -> None:
    """Repeat attempt() until it returns True: a browser reconnecting after a restart drops
    what is clicked before its new session is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if attempt():
                return
        except Exception:  # playwright's timeout while the page reconnects
            pass
        assert time.monotonic() < deadline, "the browsers did not reconnect"
        time.sleep(0.5)


def _store(env: dict[str, str]):
    return open_store(env.get("ATTNVIZ_CLASS_STORE", ""), env.get("ATTNVIZ_DATA_DIR") or None)


def test_a_live_class_with_a_teacher_and_two_students(chromium, store_env, tmp_path):
    kind, env = store_env
    server = Server(env, tmp_path / "streamlit.log")
    server.start()
    measured: dict[str, object] = {"store": kind}
    pages = []
    try:
        teacher = _open(chromium, f"{server.url}/walkthrough", PROJECTOR)
        teacher.get_by_text("Live class: start one, or join with a code").click()
        teacher.get_by_role("button", name="Start a live class").click()
        code = _code(teacher)
        assert "teacher=" not in teacher.url  # the token stays out of the address bar
        teacher.get_by_text("Join at").wait_for(timeout=WAIT_MS)
        teacher.screenshot(path=SHOTS / f"{kind}_teacher_join.png")

        laptop = _open(chromium, f"{server.url}/walkthrough?class={code}", LAPTOP)
        phone = _open(chromium, f"{server.url}/walkthrough?class={code}", PHONE, scale=3)
        pages += [("teacher", teacher), ("laptop", laptop), ("phone", phone)]
        for page in (laptop, phone):
            page.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)

        # the keyboard moves the class: → and PageDown (a clicker), then Space
        teacher.get_by_text("Show the join code").click()  # hide the QR
        _settle(teacher)
        teacher.locator("body").press("ArrowRight")
        _on_slide(teacher, 2)
        _settle(teacher)
        teacher.keyboard.press("PageDown")
        _on_slide(teacher, 3)
        moved = time.monotonic()  # the teacher's own page shows the move: the store has it
        measured["follow_s"] = []
        for page in (laptop, phone):
            _on_slide(page, 3)
            measured["follow_s"].append(round(time.monotonic() - moved, 2))
        assert _store(env).load(code, time.time()).slide == 3

        # a question: the students type a shape, the teacher's count updates, the reveal
        teacher.get_by_role("button", name=re.compile("Ask the class")).click()
        _answer_shape(laptop, "(2, 3, 1)")
        _answer_shape(phone, "[2, 3]")  # returns once the phone shows the answer it sent
        measured["count_s"] = round(_answers_counted(teacher, 2), 2)
        teacher.screenshot(path=SHOTS / f"{kind}_teacher_count.png")
        phone.screenshot(path=SHOTS / f"{kind}_phone_question.png", full_page=True)
        teacher.get_by_role("button", name="Reveal the answer").click()
        laptop.get_by_text(re.compile(r"^Right: \(2, 3, 1\)")).wait_for(timeout=WAIT_MS)
        phone.get_by_text(re.compile("^Not this time")).wait_for(timeout=WAIT_MS)
        phone.screenshot(path=SHOTS / f"{kind}_phone_reveal.png", full_page=True)

        # a student cannot move the class: own steps, keys, and a forged teacher link
        laptop.get_by_role("button", name="Next").click()
        _on_slide(laptop, 4)
        laptop.locator("body").press("End")
        _on_slide(laptop, N_SLIDES)
        forged = _open(
            chromium, f"{server.url}/walkthrough?class={code}&teacher={'A' * 32}", LAPTOP
        )
        forged.get_by_text(re.compile("teacher link is not valid")).wait_for(timeout=WAIT_MS)
        forged.close()
        forged = _open(chromium, f"{server.url}/walkthrough", LAPTOP)  # a forged stored token
        forged.evaluate(f"() => localStorage.setItem('attnviz.teacher.{code}', '{'B' * 32}')")
        forged.goto(f"{server.url}/walkthrough?class={code}&host=1")
        forged.get_by_text(re.compile("open your private teacher link")).wait_for(timeout=WAIT_MS)
        assert forged.get_by_role("button", name="Reveal the answer").count() == 0
        forged.locator("body").press("ArrowRight")
        forged.close()
        phone.wait_for_timeout(2500)  # a few polls
        assert _store(env).load(code, time.time()).slide == 3
        assert phone.get_by_text(f"Slide 3 of {N_SLIDES}", exact=True).is_visible()
        laptop.get_by_role("button", name=re.compile("Back to slide 3")).click()
        _on_slide(laptop, 3)

        # mid-class: a new slide and question, one answer, then the server restarts
        teacher.get_by_role("button", name="Close the question").click()
        teacher.get_by_role("button", name=re.compile("Ask the class")).wait_for(timeout=WAIT_MS)
        _settle(teacher)
        for k in range(4, 8):  # 3 -> 7, the sum slide; like a teacher, look before the next click
            teacher.get_by_role("button", name="Next").click()
            _on_slide(teacher, k)
            _settle(teacher)
        teacher.get_by_role("button", name=re.compile("Ask the class")).click()
        _on_slide(phone, 7)
        phone.get_by_text("axis 1, the words (T = 3)").click()
        phone.get_by_role("button", name="Send my answer").click()
        phone.get_by_text(re.compile(r"Your answer: axis 1")).wait_for(timeout=WAIT_MS)
        server.stop()
        server.start()
        record = _store(env).load(code, time.time())
        assert (record.slide, record.question) == (7, "sum_axis")
        assert list(_store(env).answers(code, "sum_axis").values()) == ["1"]
        # the browsers reconnect on their own (new sessions, rebuilt from the link and the store):
        # the phone changes its answer as the same student, then the teacher moves the class
        started = time.monotonic()

        def change_answer() -> bool:
            phone.get_by_text("axis 0, the sentences (B = 2)").click(timeout=3000)
            phone.get_by_role("button", name="Send my answer").click(timeout=3000)
            phone.wait_for_timeout(1000)
            return list(_store(env).answers(code, "sum_axis").values()) == ["0"]

        _retry(change_answer)
        measured["reconnect_s"] = round(time.monotonic() - started, 2)
        teacher.get_by_text("1 answered", exact=True).wait_for(timeout=WAIT_MS)

        def teacher_moves() -> bool:
            if _store(env).load(code, time.time()).slide == 7:
                teacher.get_by_role("button", name="Next").click(timeout=3000)
                teacher.wait_for_timeout(1500)
            return _store(env).load(code, time.time()).slide == 8

        _retry(teacher_moves)  # still the teacher after the restart
        for page in (laptop, phone):
            _on_slide(page, 8)
        teacher.screenshot(path=SHOTS / f"{kind}_teacher_after_restart.png")
        for page in (teacher, laptop, phone):
            assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        for name, page in pages:  # what each screen showed at the end (or when it failed)
            page.screenshot(path=SHOTS / f"{kind}_{name}_last.png", full_page=True)
        server.stop()
        out = ROOT / "artifacts" / "live_class.json"
        with open(out.with_suffix(".lock"), "w") as lock:  # the other store's run may be writing
            fcntl.flock(lock, fcntl.LOCK_EX)
            runs = json.loads(out.read_text()) if out.exists() else {}
            runs[kind] = measured
            out.write_text(json.dumps(runs, indent=1))


_CELLS = """() => {
  const out = [];
  document.querySelectorAll('[data-testid=stPlotlyChart] text').forEach(t => {
    if (!t.textContent.trim()) return;
    const r = t.getBoundingClientRect();
    out.push({cell: !!t.closest('.hm'), size: parseFloat(getComputedStyle(t).fontSize),
              x: r.x, y: r.y, w: r.width, h: r.height});
  });
  const fig = document.querySelector('[data-testid=stPlotlyChart]').getBoundingClientRect();
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


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    server = Server({"ATTNVIZ_DATA_DIR": str(folder), "ATTNVIZ_CLASS_STORE": ""}, folder / "log")
    server.start()
    yield server
    server.stop()


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
    page = chromium.new_page(viewport=viewport, device_scale_factor=scale)
    # every slide on the projector and the phone; on the laptop and at 150% zoom, the first slide,
    # the silent-trap slide (the widest figure) and the last: the same layout code, a third the time
    slides = range(1, N_SLIDES + 1) if name in ("projector", "phone") else (1, TRAP_SLIDE, N_SLIDES)
    for k in slides:
        page.goto(f"{plain_server.url}/walkthrough?slide={k}")
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=WAIT_MS)
        _settle(page)
        page.wait_for_timeout(800)  # the browser reports its size; the figure is redrawn
        _settle(page)
        page.screenshot(path=SHOTS / f"{name}_slide{k:02d}.png", full_page=name == "phone")
        info = page.evaluate(_CELLS)
        cells = [t for t in info["texts"] if t["cell"]]
        assert info["width"] <= viewport["width"], (k, "wider than the screen")
        if name == "projector":
            assert min(t["size"] for t in info["texts"]) >= 24, k
            assert info["bottom"] <= viewport["height"], (k, "the figure needs scrolling")
        if name == "laptop":
            assert info["bottom"] <= viewport["height"], (k, "the figure needs scrolling")
        if name == "phone":
            assert min((t["size"] for t in cells), default=12) >= 12, k
            assert _overlaps(cells) == 0, k
    page.close()
