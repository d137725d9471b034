"""Accessibility in a real browser (WCAG 2.1 AA), kept so: axe-core over every page, every Playground
tab and every Walkthrough slide; a figure's table in the accessibility tree; a keyboard-only walk
through the steps; no sideways page scroll at 320 CSS px.

axe-core is pinned and installed by .ci/run (``npm install --prefix .axe axe-core@AXE_VERSION``);
these tests skip with the command to run where it (or chromium) is missing. One server, one
browser, one tab for the whole module: each page is loaded once and the states after it are
reached by clicks and keys (a rerun), which is most of what keeps the module cheap.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.figures.contrast import contrast
from attnviz.ui.sections import TABS
from scripts import streamlit_server
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.page_steps import open_expander

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
AXE_VERSION = "4.14.1"
AXE = ROOT / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
WAIT_MS = 90_000
LAPTOP = {"width": 1366, "height": 768}
#: What axe checks: WCAG 2.0/2.1 A and AA.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    if not AXE.exists():
        pytest.skip(f"axe-core is missing: npm install --prefix .axe axe-core@{AXE_VERSION}")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    env = streamlit_server.class_store_env(tmp_path_factory.mktemp("class_data"))
    with streamlit_server.serve(env=env) as server:
        yield server.url


@pytest.fixture(scope="module")
def tab(url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=LAPTOP)
        yield page
        browser.close()


#: the last run has ended and redrawn every element: none is stale (faded, its contrast lower
#: until the run redraws it) and no status widget shows; the same test as test_reflow_browser's
SETTLED_JS = """() =>
  !!document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')
  && !document.querySelector('[data-stale="true"], [data-testid="stStatusWidget"]')"""


def _settle(page) -> None:
    # twice, 300 ms apart: a click's rerun may start only after the first check passed (seen on
    # a busy machine: axe audited the faded page of a rerun that had just begun)
    for _ in range(2):
        page.wait_for_function(SETTLED_JS, timeout=WAIT_MS)
        page.wait_for_timeout(300)  # the page's script marks the plots on the next frame


def _open(page, url: str, ready: str) -> None:
    page.goto(url)
    page.wait_for_selector(ready, timeout=WAIT_MS)
    _settle(page)


def _violations(page) -> list[str]:
    """axe's critical and serious findings on the page as it is now, one line each."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async (tags) => {
            const r = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                               resultTypes: ['violations']});
            return r.violations.map(v => ({id: v.id, impact: v.impact,
                nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': '
                    + (n.failureSummary || '').split('\\n').slice(1, 2).join(' '))}));
        }""",
        AXE_TAGS,
    )
    return [f"{v['impact']} {v['id']}: {v['nodes']}" for v in found if v["impact"] in BLOCKING]


def test_every_playground_tab_has_no_serious_axe_violation(tab, url):
    problems = {}
    _open(tab, f"{url}/", '[data-testid="stPlotlyChart"]')
    for key, label in TABS:
        tab.get_by_role("tab", name=label).click()
        _settle(tab)
        found = _violations(tab)
        if found:
            problems[key] = found
    assert not problems, problems


def test_every_walkthrough_slide_has_no_serious_axe_violation(tab, url):
    _open(tab, f"{url}/walkthrough", ".st-key-wt_next")
    n = int(re.search(r"Slide 1 of (\d+)", tab.inner_text("body")).group(1))
    problems = {}
    for k in range(1, n + 1):
        tab.get_by_text(f"Slide {k} of {n}", exact=True).wait_for(timeout=WAIT_MS)
        _settle(tab)
        found = _violations(tab)
        if found:
            problems[k] = found
        if k < n:
            tab.locator(".st-key-wt_next button").click()
    assert not problems, problems


@pytest.mark.parametrize(
    ("path", "ready"),
    [("performance", '[data-testid="stButton"]'), ("learn", '[data-testid="stButton"]')],
)
def test_the_other_pages_have_no_serious_axe_violation(tab, url, path, ready):
    _open(tab, f"{url}/{path}", ready)
    assert _violations(tab) == []


def test_the_live_class_states_have_no_serious_axe_violation(tab, url):
    """Teacher: the start form, the join code, a question open, the reveal; a student: joined,
    the question, answered, the reveal."""
    problems: dict[str, list[str]] = {}

    def check(page, state: str) -> None:
        _settle(page)
        found = _violations(page)
        if found:
            problems[state] = found

    _open(tab, f"{url}/walkthrough", ".st-key-wt_next")
    open_expander(tab, "Live class: start one, or join with a code", WAIT_MS)
    check(tab, "start form")
    tab.get_by_role("button", name="Start a live class").click()
    tab.wait_for_url(re.compile(r".*class=[A-Z0-9]{9}.*"), timeout=WAIT_MS)
    code = re.search(r"class=([A-Z0-9]{9})", tab.url)[1]
    tab.get_by_text("Join at").wait_for(timeout=WAIT_MS)
    check(tab, "teacher: join code")
    # the Start button is gone: focus went somewhere sensible, not to the page's body
    assert tab.evaluate("() => document.activeElement.tagName") != "BODY"
    student = tab.context.browser.new_page(viewport={"width": 390, "height": 844})
    try:
        _open(student, f"{url}/walkthrough?class={code}", ".st-key-wt_next")
        student.get_by_text(re.compile("following the teacher")).wait_for(timeout=WAIT_MS)
        check(student, "student: joined")
        tab.get_by_text("Show the join code").click()
        tab.get_by_text("Join at").wait_for(state="detached", timeout=WAIT_MS)
        for k in (2, 3):  # slide 3 has a question to ask
            _settle(tab)
            tab.locator("body").press("ArrowRight")
            tab.get_by_text(re.compile(rf"^Slide {k} of \d+$")).wait_for(timeout=WAIT_MS)
        _settle(tab)
        tab.get_by_role("button", name=re.compile("Ask the class")).click()
        check(tab, "teacher: question open")
        box = student.get_by_label("Your answer, as a tuple")
        box.wait_for(timeout=WAIT_MS)
        check(student, "student: question")
        box.fill("(2, 3, 1)")
        student.get_by_role("button", name="Send my answer").click()
        student.get_by_text(re.compile(r"Your answer: ")).wait_for(timeout=WAIT_MS)
        check(student, "student: answered")
        tab.get_by_role("button", name="Reveal the answer").click()
        # the rerun's page, not the old one faded while it runs (a faded button fails contrast)
        tab.locator(".st-key-wt_reveal").wait_for(state="detached", timeout=WAIT_MS)
        tab.get_by_text(re.compile(r"^Answer: ")).wait_for(timeout=WAIT_MS)
        check(tab, "teacher: revealed")
    finally:
        student.close()
    assert not problems, problems


def test_every_page_has_its_own_title_and_one_h1(tab, url):
    titles = set()
    for path, ready in (
        ("", '[data-testid="stPlotlyChart"]'),
        ("walkthrough", ".st-key-wt_next"),
        ("performance", '[data-testid="stButton"]'),
    ):
        _open(tab, f"{url}/{path}", ready)
        assert tab.locator("h1").count() == 1, path
        titles.add(tab.title())
    assert len(titles) == 3, titles


def test_a_figure_reaches_the_accessibility_tree_as_a_named_figure_and_a_table(tab, url):
    _open(tab, f"{url}/", '[data-testid="stPlotlyChart"]')
    chart = tab.locator('[data-testid="stPlotlyChart"]').first
    tree = chart.aria_snapshot()
    lines = tree.splitlines()
    assert len(lines) == 1 and "figure" in lines[0], tree  # named, and nothing of the SVG under it
    assert "0." not in tree, tree  # no loose cell numbers
    numbers = tab.locator("details.attnviz-numbers").first
    numbers.locator("summary").click()
    tree = numbers.aria_snapshot()
    assert 'table "net_output [0]: rows are word' in tree and "- caption:" in tree, tree
    assert 'columnheader "hidden 0"' in tree and 'rowheader "word 0"' in tree, tree
    # the plot toolbar's buttons are out of the tab order
    tabbable = tab.locator('[data-testid="stPlotlyChart"] button:not([tabindex="-1"])')
    assert tabbable.count() == 0


def test_a_keyboard_walks_all_eight_steps_without_losing_focus(tab, url):
    _open(tab, f"{url}/", '[data-testid="stPlotlyChart"]')
    tab.locator(".st-key-pg_next button").focus()
    tab.keyboard.press("Shift+Tab")  # a keyboard move: the ring drawn is :focus-visible's
    tab.keyboard.press("Tab")
    ring = tab.evaluate(
        """() => { const s = getComputedStyle(document.activeElement);
                   return [s.outlineStyle, s.outlineColor, parseFloat(s.outlineWidth)]; }"""
    )
    assert ring[0] != "none" and ring[2] >= 2, ring
    rgb = "#" + "".join(f"{int(v):02x}" for v in re.findall(r"\d+", ring[1])[:3])
    assert contrast(rgb, "#ffffff") >= 3.0, ring  # the ring against the page's white
    for k in range(2, 9):
        tab.keyboard.press("Enter")
        tab.get_by_text(f"Step {k} of 8", exact=True).wait_for(timeout=WAIT_MS)
        _settle(tab)
        focused = tab.wait_for_function(  # a disabled Next gives focus to Back
            "() => document.activeElement && document.activeElement !== document.body",
            timeout=10_000,
        )
        assert focused, k
        if k < 8 and tab.evaluate("() => !document.activeElement.closest('.st-key-pg_next')"):
            tab.locator(".st-key-pg_next button").focus()  # pragma: the walk continues on Next
    assert tab.evaluate("() => window.attnvizSaid()").startswith("Step 8 of 8")


@pytest.mark.parametrize(
    ("path", "ready"),
    [
        ("", '[data-testid="stPlotlyChart"]'),
        ("walkthrough", ".st-key-wt_next"),
        ("performance", '[data-testid="stButton"]'),
        ("learn", '[data-testid="stButton"]'),
    ],
)
def test_nothing_scrolls_sideways_at_320_css_px(tab, url, path, ready):
    tab.set_viewport_size({"width": 320, "height": 720})
    try:
        _open(tab, f"{url}/{path}", ready)
        wide = tab.evaluate("() => document.documentElement.scrollWidth")
        tab.screenshot(path=str(ROOT / "artifacts" / f"a11y_320_{path or 'playground'}.png"))
    finally:
        tab.set_viewport_size(LAPTOP)
    assert wide <= 320


def test_a_keyboard_switches_every_tab_without_losing_focus(tab, url):
    """ArrowRight opens the next tab; its rerun disables the tab strip for a moment (focus falls
    to the body), and the page's script gives focus back to the tab now open, not another."""
    _open(tab, f"{url}/", '[data-testid="stPlotlyChart"]')
    tab.get_by_role("tab", name=TABS[0][1]).focus()
    lost = []
    for _, label in TABS[1:]:
        tab.keyboard.press("ArrowRight")
        tab.get_by_role("tab", name=label, selected=True).wait_for(timeout=WAIT_MS)
        _settle(tab)
        try:  # the page's script gives focus back once the rerun has drawn the tab strip again
            tab.wait_for_function(
                """(label) => { const e = document.activeElement;
                                return e?.getAttribute('role') === 'tab'
                                       && e.textContent.trim() === label; }""",
                arg=label,
                timeout=10_000,
            )
        except Exception:  # playwright's TimeoutError: focus never came back to the open tab
            now = tab.evaluate("() => document.activeElement.outerHTML.slice(0, 80)")
            lost.append((label, now))
            tab.get_by_role("tab", name=label).focus()
    assert not lost
