"""Reflow (WCAG 1.4.10): at 320 CSS px wide (400 % zoom of a 1280 px laptop) and at 640 px (200 %)
no page scrolls sideways, no two texts overlap and no text is cut off by its container: every
Playground tab (and all eight steps at once), the Walkthrough's slides with every kind of figure,
Performance and Learn the scores (issue #31).

Measured in a real browser: the boxes of every visible text (each line of each text node in the
page's HTML, each ``<text>`` of a plotly figure's SVG). Two texts overlap when their boxes share
more than 1 px each way; a text is cut when an element that clips (``overflow: hidden`` or
``clip``; a scroll container is fine, its text scrolls into view) shows less than all of it. The
collector is itself tested on a page written to fail. One server, one browser; a page per test,
its states reached by clicks. Screenshots of each state go to artifacts/reflow_*.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz.ui.live_screen import Screen
from attnviz.ui.sections import TABS
from scripts import streamlit_server
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS
from tests.test_live_browser import Wire

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts"
WAIT_MS = 90_000
TOLERANCE_PX = 1.0

#: Every visible text box on the page: {text, box: [left, top, right, bottom], cut: str, where}.
#: A text node's lines come from a Range (the glyphs' boxes, not the element's), each as tall as
#: the element's line-height where that is less than the font's content area (lines set solid do
#: not overlap); an SVG <text> is one box. Hidden things (display/visibility/opacity, screen-reader
#: -only clips, closed <details>, inactive tab panels) have no box or are skipped. A box inside a
#: container that scrolls sideways counts only where the container shows it (what scrolls out of
#: view is not drawn over anything). ``cut`` names the clipping element (overflow hidden or clip
#: on that axis, below the nearest scroller on it) that shows less than the whole box, or is "".
TEXT_BOXES_JS = r"""
() => {
  const out = [];
  const root = document.querySelector('[data-testid="stMain"]') || document.body;
  const visible = (el) => {
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0)
        return false;
      if (e.classList && e.classList.contains('attnviz-sr')) return false;
      if (e.tagName === 'DETAILS' && !e.open && !el.closest('summary')) return false;
    }
    return true;
  };
  const name = (e) => {
    const id = e.getAttribute('data-testid') || String(e.className.baseVal ?? e.className);
    return `<${e.tagName.toLowerCase()} ${id.slice(0, 40)}>`;
  };
  const clipper = (el, box) => {
    // per axis: an element that clips it shows all of the box, up to the nearest scroller on it
    let checkX = true, checkY = true;
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      const s = getComputedStyle(e);
      const r = e.getBoundingClientRect();
      const hides = (v) => v === 'hidden' || v === 'clip';
      const scrolls = (v) => v === 'auto' || v === 'scroll';
      if (checkX && hides(s.overflowX) && (box[0] < r.left - 1 || box[2] > r.right + 1))
        return name(e);
      if (checkY && hides(s.overflowY) && (box[1] < r.top - 1 || box[3] > r.bottom + 1))
        return name(e);
      if (scrolls(s.overflowX)) checkX = false;
      if (scrolls(s.overflowY)) checkY = false;
      if (!checkX && !checkY) break;
    }
    return '';
  };
  const shown = (el, box) => {
    // the part of the box that the containers which scroll sideways show (null: none of it)
    let [l, t, r, b] = box;
    for (let e = el; e && e !== root; e = e.parentElement) {
      const x = getComputedStyle(e).overflowX;
      if (x !== 'auto' && x !== 'scroll') continue;
      const c = e.getBoundingClientRect();
      l = Math.max(l, c.left);
      r = Math.min(r, c.right);
    }
    return r - l >= 1 ? [l, t, r, b] : null;
  };
  const where = (el) => {
    const key = el.closest('[class*="st-key-"]');
    const name = key ? [...key.classList].find((c) => c.startsWith('st-key-')) : '';
    const t = el.closest('[data-testid]');
    return `${name} ${t ? t.getAttribute('data-testid') : ''} <${el.tagName.toLowerCase()}>`;
  };
  const add = (el, text, box) => {
    const seen = shown(el, box);
    if (seen) out.push({text: text.slice(0, 40), box: seen, cut: clipper(el, box), where: where(el)});
  };
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim();
    const el = n.parentElement;
    if (!text || !el || el.closest('svg, script, style, noscript')) continue;
    if (!visible(el)) continue;
    const line = parseFloat(getComputedStyle(el).lineHeight);  // NaN for "normal"
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      const h = line < r.height ? line : r.height;
      const top = r.top + (r.height - h) / 2;
      add(el, text, [r.left, top, r.right, top + h]);
    }
  }
  for (const el of root.querySelectorAll('svg text')) {
    const text = el.textContent.trim();
    if (!text || !visible(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    add(el, text, [r.left, r.top, r.right, r.bottom]);
  }
  return out;
}
"""


def overlaps(boxes: list[dict], tolerance: float = TOLERANCE_PX) -> list[str]:
    """Each pair of text boxes that share more than ``tolerance`` px each way, one line a pair."""
    found = []
    ordered = sorted(boxes, key=lambda b: b["box"][1])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b["box"][1] >= a["box"][3] - tolerance:
                break  # sorted by top: nothing further down reaches a
            dx = min(a["box"][2], b["box"][2]) - max(a["box"][0], b["box"][0])
            dy = min(a["box"][3], b["box"][3]) - max(a["box"][1], b["box"][1])
            if dx > tolerance and dy > tolerance:
                found.append(
                    f"{a['text']!r} ({a['where']}) overlaps {b['text']!r} ({b['where']}) "
                    f"by {dx:.1f} x {dy:.1f} px"
                )
    return found


def cut(boxes: list[dict]) -> list[str]:
    """Each text its clipping container shows only in part."""
    return [f"{b['text']!r} ({b['where']}) is cut off by {b['cut']}" for b in boxes if b["cut"]]


#: The page as drawn for this width: the last run has ended, no element is stale (a run has not
#: redrawn it yet), and plotly has laid out every plot at its container's width. In a phone's
#: window (``live_screen.Screen.phone``) every heatmap with a colour bar has it under the figure
#: (a figure built in the phone's style: the page has learnt the browser's width and drawn for it).
DRAWN_JS = r"""
(phone) => {
  if (!document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]'))
    return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stStatusWidget"]')) return false;
  for (const plot of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    if (!plot._fullLayout || !plot._fullData) return false;
    if (Math.abs(plot._fullLayout.width - plot.getBoundingClientRect().width) > 2) return false;
    const bars = plot._fullData.filter((t) => t.type === 'heatmap' && t.showscale);
    if (phone && bars.some((t) => t.colorbar.orientation !== 'h')) return false;
  }
  return true;
}
"""


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    env = streamlit_server.class_store_env(tmp_path_factory.mktemp("class_data"))
    with streamlit_server.serve(env=env) as server:
        yield server.url


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def tab(request, browser):
    """A page in a window ``request.param`` CSS px wide (320: 400 % zoom of a 1280 px laptop;
    640: 200 %), one for each width, shared by the module's tests at that width: each test opens
    its page in it (``_open``: a new Streamlit session from the link alone, as a new tab would),
    and only the renderer and its compiled scripts are reused (a new page cost ~4 CPU-s of
    chromium's, a page opened again in the same tab ~1.5)."""
    width = request.param
    page = browser.new_page(viewport={"width": width, "height": 720 if width < 640 else 900})
    page.attnviz_width = width
    page.attnviz_wire = Wire(page)  # the runs the page asks for, and its screen's report
    yield page
    page.close()


def _drawn(page) -> None:
    """Wait until the page is drawn for its width (``DRAWN_JS``), on two frames in a row."""
    phone = Screen(w=page.attnviz_width).phone  # the page draws its figures in the phone's style
    for _ in range(2):
        page.wait_for_function(DRAWN_JS, arg=phone, timeout=WAIT_MS, polling="raf")


def _open(page, url: str, ready: str, screen: bool = True) -> None:
    """Load a page and wait until it is drawn; with ``screen``, drawn for the screen its browser
    reported (the first run draws a laptop's; a check between the two read a figure being
    redrawn, with no text in it: seen once in CI)."""
    page.goto(url)
    page.wait_for_selector(ready, timeout=WAIT_MS)
    if screen:
        page.attnviz_wire.settled()
    _drawn(page)


def _clicked(page, selector: str) -> None:
    """Click a widget and wait until the run it asks for has finished."""
    wire = page.attnviz_wire
    before = wire.asked
    page.locator(selector).click()
    wire.wait(lambda: wire.asked > before and wire.idle, f"the run a click on {selector} asks for")


def _problems(page, shot: str, figure=None) -> tuple[list[str], list[dict]]:
    """What breaks reflow on the page as drawn now (sideways scroll, overlaps, cut texts), its
    text boxes, and a screenshot in artifacts/ (of the window, with ``figure`` scrolled into
    it when given: a person looks there for illegible numbers)."""
    width = page.attnviz_width
    boxes = page.evaluate(TEXT_BOXES_JS)
    wide = page.evaluate(
        """() => Math.max(document.documentElement.scrollWidth,
                          document.querySelector('[data-testid="stMain"]').scrollWidth)"""
    )
    if figure is not None and figure.count():
        figure.first.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"reflow_{width}_{shot}.png"))
    found = [f"the page is {wide} px wide in a {width} px window"] if wide > width else []
    return found + overlaps(boxes) + cut(boxes), boxes


def _svg_texts(boxes: list[dict]) -> int:
    return sum(1 for b in boxes if b["where"].endswith("<text>"))


@pytest.mark.parametrize(
    ("boxes", "n"),
    [
        ([[0, 0, 10, 10], [9.5, 0, 20, 10]], 0),  # touching: 0.5 px across
        ([[0, 0, 10, 10], [0, 9.5, 10, 20]], 0),  # the next line, 0.5 px down
        ([[0, 0, 10, 10], [20, 0, 30, 10]], 0),
        ([[0, 0, 10, 10], [8, 2, 20, 8]], 1),  # 2 px across, 6 px down
        ([[0, 0, 10, 10], [2, 2, 8, 8], [0, 30, 5, 40]], 1),  # one inside another
        ([[0, 0, 100, 10], [0, 5, 10, 15], [90, 5, 100, 15]], 2),  # a wide box over two
    ],
)
def test_overlaps_counts_the_pairs_sharing_more_than_a_pixel(boxes, n):
    found = overlaps([{"text": f"t{i}", "box": b, "where": ""} for i, b in enumerate(boxes)])
    assert len(found) == n, found


def test_cut_names_each_text_its_container_clips():
    boxes = [{"text": "0.125", "box": [0, 0, 1, 1], "cut": c, "where": "x"} for c in ("", "<g>")]
    assert cut(boxes) == ["'0.125' (x) is cut off by <g>"]


#: A page written to fail: two words drawn over each other, a word its box clips, and a number
#: its SVG clips; and what must pass: a table scrolled sideways beside a word (its hidden part
#: is over nothing), lines below the fold of a scroller, lines set solid, hidden text.
MADE_UP = """<div data-testid="stMain" style="height:400px;overflow:auto">
  <p style="position:absolute;left:10px;top:10px;margin:0">alpha</p>
  <p style="position:absolute;left:14px;top:12px;margin:0">beta</p>
  <div style="position:absolute;top:60px;width:30px;overflow:hidden;white-space:nowrap"
    >clipped-away-text</div>
  <div style="position:absolute;top:100px;width:40px;overflow-x:auto;white-space:nowrap"
    >scrolled-text</div>
  <p style="position:absolute;top:100px;left:60px;margin:0">beside</p>
  <div style="position:absolute;top:130px;height:20px;overflow-y:auto;overflow-x:hidden">
    one<br>two<br>three</div>
  <h1 style="position:absolute;top:200px;width:100px;font-size:40px;line-height:1;margin:0"
    >set solid</h1>
  <p style="display:none">gone</p><p class="attnviz-sr">said</p>
  <details style="position:absolute;top:200px;left:200px"><summary>more</summary><p>folded</p></details>
  <svg width="200" height="60" style="position:absolute;top:300px">
    <text x="10" y="20">0.125</text><text x="14" y="22">0.250</text>
    <text x="190" y="40">0.375</text></svg></div>"""


def test_the_collector_finds_overlapping_and_cut_text_in_a_made_up_page(browser):
    page = browser.new_page(viewport={"width": 320, "height": 400})
    try:
        page.set_content(MADE_UP)
        boxes = page.evaluate(TEXT_BOXES_JS)
    finally:
        page.close()
    texts = sorted(b["text"] for b in boxes)
    shown = ["one", "two", "three", "set solid", "set solid", "beside", "scrolled-text", "more"]
    shown.append("clipped-away-text")
    assert texts == sorted(["alpha", "beta", *shown, "0.125", "0.250", "0.375"]), boxes
    pairs = [line.split(" (")[0] for line in overlaps(boxes)]
    assert pairs == ["'alpha'", "'0.125'"], overlaps(boxes)
    assert sorted(b["text"] for b in boxes if b["cut"]) == ["0.375", "clipped-away-text"], boxes


#: Every step's figure is on the page (the toggle "All steps at once" is on).
ALL_STEPS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .filter((p) => p.offsetParent !== null).length >= 8"""


@pytest.mark.parametrize("tab", [320, 640], indirect=True)
def test_every_playground_tab_reflows(tab, url):
    """Every tab of the Playground, and every step at once: no sideways scroll, no text over
    text, none cut."""
    _open(tab, f"{url}/", '[data-testid="stPlotlyChart"]')
    problems, heatmap_numbers = {}, 0
    wire = tab.attnviz_wire
    for key, label in TABS:
        # as a person reads each tab before the next: the run the click asks for finishes first
        # (in one full run a click on the next tab, sent while that run was still going on a
        # busy machine, never selected it; 96 quick clicks on a quiet one all did)
        before = wire.asked
        tab.get_by_role("tab", name=label).click()
        if key != TABS[0][0]:  # the tab shown already: its click asks for no run
            wire.wait(
                lambda b=before: wire.asked > b and wire.idle, f"the run the tab {label} asks for"
            )
        tab.get_by_role("tab", name=label, selected=True).wait_for(timeout=WAIT_MS)
        _drawn(tab)
        panel = tab.locator('[role="tabpanel"]:visible [data-testid="stPlotlyChart"]')
        found, boxes = _problems(tab, f"playground_{key}", panel)
        if key == TABS[0][0]:
            heatmap_numbers = sum(1 for b in boxes if re.fullmatch(r"-?\d\.\d+", b["text"]))
            _clicked(tab, ".st-key-pg_all label")  # all eight steps, one figure each
            tab.wait_for_function(ALL_STEPS_JS, timeout=WAIT_MS)
            _drawn(tab)
            more, _ = _problems(tab, "playground_all_steps", panel.nth(4))
            found += more
        if found:
            problems[key] = found
    # the collector reads the heatmap's cell numbers: net_output (2, 3, 5), 30 of them
    assert heatmap_numbers >= 30, heatmap_numbers
    assert not problems, problems


#: The Walkthrough's slides from the alignment on: every kind of figure (alignment, stretched
#: heatmap, product, sum, one result cell, the silent trap, gradients, expand vs repeat).
SLIDES = range(4, 13)


@pytest.mark.parametrize(
    "tab",
    [320, 640],
    indirect=True,
)
def test_the_walkthrough_reflows(tab, url):
    _open(tab, f"{url}/walkthrough?slide={SLIDES[0]}", ".st-key-wt_next")
    n = int(re.search(rf"Slide {SLIDES[0]} of (\d+)", tab.inner_text("body")).group(1))
    assert n == SLIDES[-1], "a slide was added: is SLIDES still every kind of figure?"
    problems = {}
    for k in SLIDES:
        tab.get_by_text(f"Slide {k} of {n}", exact=True).wait_for(timeout=WAIT_MS)
        # every slide here has a figure: plotly draws it after its element is on the page
        tab.locator('[data-testid="stMain"] .js-plotly-plot').first.wait_for(timeout=WAIT_MS)
        _drawn(tab)
        found, boxes = _problems(tab, f"walkthrough_{k:02d}")
        assert _svg_texts(boxes) > 0, k  # every slide here has a figure
        if found:
            problems[k] = found
        if k < n:
            _clicked(tab, ".st-key-wt_next button")
    assert not problems, problems


@pytest.mark.parametrize("tab", [320, 640], indirect=True)
@pytest.mark.parametrize("path", ["performance", "learn"])
def test_the_other_pages_reflow(tab, url, path):
    _open(tab, f"{url}/{path}", '[data-testid="stButton"]', screen=False)  # none asked
    found, _ = _problems(tab, path)
    assert not found, found
