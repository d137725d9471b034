"""A keyboard-only walk through the app in a real browser (issue #31), and what it hears.

One server (127.0.0.2), one chromium. A student uses only page.keyboard (Tab, Shift+Tab, Enter,
arrows, typing; no click, no .focus() on a control): on the Playground they edit a number in a
table, switch every tab, step through all 8 steps and judge an expression of their own; on the
Walkthrough they move through every slide; in a live class a teacher started (with the mouse, in
another browser context) they join with the code and answer the teacher's question. After every
key that reruns the page the walk waits for the run to finish and checks that focus is on a
control, never the page's body; at the end of each task it checks the sentence the page's one
polite live region said (``window.attnvizSaid()``, see attnviz/ui/figure.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.ui.sections import TABS
from scripts import streamlit_server
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.page_steps import open_expander
from tests.test_live_browser import Wire

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "keyboard_walk"
WAIT_MS = 90_000  # a cold server on a busy machine draws its first page slowly
LAPTOP = {"width": 1366, "height": 768}
N_STEPS = 8
#: The focused element in words, for a failure's message.
_FOCUS = """() => { const e = document.activeElement;
  if (!e) return 'null';
  const box = e.closest("[class*='st-key-']");
  const key = box ? [...box.classList].find(c => c.startsWith('st-key-')) : '';
  return `${e.tagName} ${e.getAttribute('role') || ''} ${key} `
         + (e.getAttribute('aria-label') || e.textContent || '').trim().slice(0, 40); }"""
_SAYS = """() => [...document.querySelectorAll('.attnviz-say')].map(e =>
  [e.dataset.slot, e.dataset.key, e.closest('[data-stale]')?.dataset.stale, e.dataset.say])"""
_ON_CONTROL = "() => !!document.activeElement && document.activeElement !== document.body"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    env = streamlit_server.class_store_env(tmp_path_factory.mktemp("class_data"))
    with streamlit_server.serve(address="127.0.0.2", env=env) as server:
        yield server.url


@pytest.fixture(scope="module")
def browser(url):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def student(browser):
    context = browser.new_context(viewport=LAPTOP)
    page = context.new_page()
    _WIRES[page] = Wire(page)  # the reruns the page asks for and the runs that answer them
    yield page
    context.close()


_WIRES: dict = {}


def _open(page, address: str, ready: str) -> None:
    """Load a page and wait until it was drawn for the screen its browser reported (a cell edit
    sent while that run replaces the table is lost: seen on a cold server)."""
    page.goto(address)
    page.wait_for_selector(ready, timeout=WAIT_MS)
    _WIRES[page].settled()
    _settle(page)


_FRAMES = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
  done(true))))"""


def _typed(page, text: str) -> None:
    """Type text, and let the page draw it before the next key: a table cell's editor takes a
    frame to hold what was typed (Enter pressed sooner committed the old value: 2 edits in 6
    lost, 0 in 10 after two frames)."""
    page.keyboard.type(text)
    page.wait_for_function(_FRAMES)


def _settle(page) -> None:
    """The last run has finished and been drawn (the page's script acts on the next frame)."""
    if page in _WIRES:
        _WIRES[page].wait(lambda: _WIRES[page].idle, "the page's runs to finish")
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]',
        state="attached",
        timeout=WAIT_MS,
    )
    page.wait_for_function(_FRAMES)


def _focused(page, what: str) -> None:
    """Focus is on an element, not the body (the page's script may give it back a moment after
    the run: wait for it, then say where it is if it never came)."""
    _settle(page)
    try:
        page.wait_for_function(_ON_CONTROL, timeout=10_000)
    except Exception:  # playwright's TimeoutError: say where focus is
        pytest.fail(f"after {what}: focus is on {page.evaluate(_FOCUS)}")


def _focus_comes_to(page, label: str) -> None:
    """Focus comes to the control showing ``label`` (the tab an arrow key selected). The tabs
    select first and move focus on a later frame, and the run the selection asks for may not be
    on the wire yet: seen once, focus still on the tab before a moment after the new one showed
    as selected. Where it never comes, say where it is."""
    try:
        page.wait_for_function(
            "(label) => document.activeElement?.textContent.trim() === label",
            arg=label,
            timeout=10_000,
        )
    except Exception:  # playwright's TimeoutError: say where focus is
        pytest.fail(f"focus never came to {label!r}: it is on {page.evaluate(_FOCUS)}")


def _tab_to(page, test: str, what: str, *, back: bool = False, most: int = 80) -> None:
    """Press Tab (Shift+Tab) until the focused element passes test (a JS predicate on it)."""
    seen = []
    for _ in range(most):
        if page.evaluate(f"() => {{ const e = document.activeElement; return !!e && ({test}); }}"):
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
        seen.append(page.evaluate(_FOCUS))
    pytest.fail(f"{most} presses of Tab never reached {what}; focus went to {seen}")


def _heard(page, pattern: str) -> str:
    """Wait until the live region says something matching pattern (a regular expression)."""
    try:
        page.wait_for_function(
            "(p) => new RegExp(p).test(window.attnvizSaid ? window.attnvizSaid() : '')",
            arg=pattern,
            timeout=WAIT_MS,
        )
    except Exception:  # playwright's TimeoutError: what was said, and what the page holds
        said = page.evaluate("() => window.attnvizSaid()")
        held = page.evaluate(_SAYS)
        page.screenshot(path=str(SHOTS / "not_heard.png"))
        pytest.fail(f"never heard /{pattern}/; the page said {said!r} and holds {held}")
    return page.evaluate("() => window.attnvizSaid()")


#: Focus is in a table: on its canvas, or on the cell of its screen-reader copy that the grid
#: hands focus to. Streamlit's grid draws that copy 200 ms after a change (a debounced memo in its
#: DataFrame bundle) and then moves focus from the canvas to the selected cell's <td>, so on a
#: busy machine a Tab that lands on the canvas can read back as a cell (seen once in a full run:
#: every Tab through the first table named a cell of it). Keys on either reach the grid.
_IN_GRID = "(e.tagName === 'CANVAS' || e.getAttribute('role') === 'gridcell')"


def _on_cell(page, cell: str) -> None:
    """Focus comes to a table's cell (its id, ``glide-cell-COLUMN-ROW``): the walk then goes one
    way on a quiet machine and a busy one."""
    try:
        page.wait_for_function(
            "(id) => document.activeElement?.id === id", arg=cell, timeout=10_000
        )
    except Exception:  # playwright's TimeoutError: say where focus is
        pytest.fail(f"focus never came to the cell {cell}: it is on {page.evaluate(_FOCUS)}")


def _in(key: str) -> str:
    return f"!!e.closest('.st-key-{key}')"


def test_a_student_walks_the_playground_by_keyboard(student, url):
    page = student
    _open(page, f"{url}/", '[data-testid="stPlotlyChart"]')

    # a number of net_output[0]: into the table, one cell right (h0 of word 0), type, Enter
    _tab_to(page, _IN_GRID + " && " + _in("pg_x1_0"), "the first table")
    _on_cell(page, "glide-cell-0-0")  # the grid hands focus to its first cell, as a reader hears it
    page.keyboard.press("ArrowRight")
    _on_cell(page, "glide-cell-1-0")
    page.keyboard.press("Enter")  # the cell's editor opens on its value
    page.wait_for_function("() => document.activeElement?.tagName === 'TEXTAREA'")
    page.keyboard.press("ControlOrMeta+a")
    _typed(page, "0.5")
    assert page.evaluate("() => document.activeElement.value") == "0.5"
    page.keyboard.press("Enter")
    said = _heard(page, r"^Result updated")
    _focused(page, "a cell edit")
    assert "weighted (2, 5)" in said and "net_output[0, 0, 0] is now 0.5" in said, said

    # all 8 steps with Next (Enter); on the last one Next is disabled and focus is on Back
    _tab_to(page, _in("pg_next") + " && e.tagName === 'BUTTON'", "Next")
    for k in range(2, N_STEPS + 1):
        page.keyboard.press("Enter")
        page.get_by_text(f"Step {k} of {N_STEPS}", exact=True).wait_for(timeout=WAIT_MS)
        _focused(page, f"Next to step {k}")
    assert _heard(page, rf"^Step {N_STEPS} of {N_STEPS}")
    assert page.evaluate(f"() => {{ const e = document.activeElement; return {_in('pg_back')}; }}")
    page.screenshot(path=str(SHOTS / "playground_step8.png"))

    # every tab, with the arrow keys; on Your expression, into its box: type, Enter, the verdict
    _tab_to(page, "e.getAttribute('role') === 'tab'", "the tabs", back=True)
    for key, label in TABS[1:]:
        page.keyboard.press("ArrowRight")
        page.get_by_role("tab", name=label, selected=True).wait_for(timeout=WAIT_MS)
        _focused(page, f"the tab {label}")
        _focus_comes_to(page, label)
        if key == "expr":
            _judge(page)
            _tab_to(page, "e.getAttribute('role') === 'tab'", "the tabs", back=True)


def _judge(page) -> None:
    """In the expression box: a mistake, then the right form, each judged and said."""
    _tab_to(page, "e.tagName === 'INPUT' && " + _in("pg_expr"), "the expression box")
    page.keyboard.press("ControlOrMeta+a")
    _typed(page, "(net_output * att_scores[:, None, :]).sum(1)")
    page.keyboard.press("Enter")
    said = _heard(page, r"^This expression has a mistake: ")
    _focused(page, "the expression's Enter")
    assert "(2, 1, 3)" in said, said  # the shapes that clash, in plain words
    page.keyboard.press("ControlOrMeta+a")
    _typed(page, "(net_output * att_scores[..., None]).sum(axis=1)")
    page.keyboard.press("Enter")
    _heard(page, r"^Result: shape \(2, 5\)\. Right")
    _focused(page, "the expression's Enter")
    page.screenshot(path=str(SHOTS / "playground_expression.png"))


def test_a_student_moves_through_every_slide_by_keyboard(student, url):
    page = student
    _open(page, f"{url}/walkthrough", ".st-key-wt_next")
    n = int(re.search(r"Slide 1 of (\d+)", page.inner_text("body")).group(1))
    _tab_to(page, _in("wt_next") + " && e.tagName === 'BUTTON'", "Next")
    for k in range(2, n + 1):
        page.keyboard.press("Enter")
        page.get_by_text(f"Slide {k} of {n}", exact=True).wait_for(timeout=WAIT_MS)
        _focused(page, f"Next to slide {k}")
    assert _heard(page, rf"^Slide {n} of {n}: ")
    # Next and Last are disabled on the last slide: focus went to Back's side of the row
    assert page.evaluate(f"() => {{ const e = document.activeElement; return {_in('wt_nav')}; }}")
    page.screenshot(path=str(SHOTS / "walkthrough_last.png"))


def test_a_student_joins_a_live_class_and_answers_by_keyboard(browser, student, url):
    teacher = browser.new_context(viewport=LAPTOP).new_page()
    try:
        teacher.goto(f"{url}/walkthrough")
        teacher.wait_for_selector(".st-key-wt_next", timeout=WAIT_MS)
        open_expander(teacher, "Live class: start one, or join with a code", WAIT_MS)
        teacher.get_by_role("button", name="Start a live class").click()
        teacher.wait_for_url(re.compile(r".*class=[A-Z0-9]{9}.*"), timeout=WAIT_MS)
        code = re.search(r"class=([A-Z0-9]{9})", teacher.url)[1]
        teacher.get_by_text("Join at").wait_for(timeout=WAIT_MS)

        page = student
        _open(page, f"{url}/walkthrough", ".st-key-wt_next")
        _tab_to(page, "e.tagName === 'SUMMARY' && " + _in("wt_live"), "the live class's expander")
        page.keyboard.press("Enter")
        _tab_to(page, "e.tagName === 'INPUT' && e.getAttribute('aria-label') === 'Class code'",
                "the class code")  # fmt: skip
        _typed(page, code)
        page.keyboard.press("Tab")
        _typed(page, "Kim")
        page.keyboard.press("Enter")  # submits the join form
        said = _heard(page, r"^You joined live class")
        _focused(page, "joining")
        assert "the teacher is on slide 1 of" in said, said

        # the teacher moves on to the slide with a question, and asks it
        for k in (2, 3):
            _settle(teacher)
            teacher.locator(".st-key-wt_next button").click()
            teacher.get_by_text(re.compile(rf"^Slide {k} of \d+$")).wait_for(timeout=WAIT_MS)
        said = _heard(page, r"^The teacher moved to slide 3 of \d+: ")
        _settle(teacher)
        teacher.get_by_role("button", name=re.compile("Ask the class")).click()
        said = _heard(page, r"^The teacher asks: ")
        _focused(page, "the question's arrival")

        # the student answers: into the box, type, Enter
        _tab_to(page, "e.tagName === 'INPUT' && (e.getAttribute('aria-label') || '')"
                ".startsWith('Your answer')", "the answer box")  # fmt: skip
        _typed(page, "(2, 3, 1)")
        page.keyboard.press("Enter")
        said = _heard(page, r"^Your answer \(2, 3, 1\) is recorded")
        _focused(page, "sending the answer")
        # the class's polls go on (one a second), and redraw the same sentences: none is said again
        says = page.evaluate("() => window.attnvizSays()")
        _WIRES[page].polled(3)
        _settle(page)
        assert page.evaluate("() => window.attnvizSays()") == says
        assert page.evaluate("() => window.attnvizSaid()") == said
        page.screenshot(path=str(SHOTS / "live_answered.png"))

        _settle(teacher)
        teacher.get_by_role("button", name="Reveal the answer").click()
        said = _heard(page, r"^The answer is revealed: ")
        assert "You were right" in said or "You answered (2, 3, 1)" in said, said
        _focused(page, "the reveal")
        page.screenshot(path=str(SHOTS / "live_revealed.png"))
    finally:
        teacher.context.close()
