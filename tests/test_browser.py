"""The app in a real browser: `streamlit run app.py` on a free loopback port (conftest's
app_server), driven with Debian's chromium through Playwright. Screenshots go to
artifacts/screenshots/ (gitignored).

Skips with the reason where /usr/bin/chromium or playwright is missing (`.ci/run` installs chromium).
"""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import examples
from attnviz.ui.sections import TABS
from scripts.chromium import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots"
LAPTOP = {"width": 1366, "height": 768}
PROJECTOR = {"width": 1920, "height": 1080}
WAIT_MS = 60_000


@pytest.fixture(scope="module")
def server(request):
    """The app's url (conftest's app_server, shared with the other modules on this worker)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    SHOTS.mkdir(parents=True, exist_ok=True)
    return request.getfixturevalue("app_server").url


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def tab(browser):
    """One browser tab for the module's tests. Each test opens its page in it (_open: page.goto),
    which starts a new Streamlit session from the link alone, as a new tab would: only the
    renderer and Streamlit's compiled scripts are reused (most of what a new page cost)."""
    context = browser.new_context(viewport=LAPTOP)
    yield _watched(context.new_page())
    context.close()


def _watched(page):
    """page.outside lists the requests that left loopback (emptied by each _open)."""
    page.outside = []
    page.on(
        "request",
        lambda r: (
            None
            if r.url.startswith(("http://127.0.0.1", "data:", "blob:"))
            else page.outside.append(r.url)
        ),
    )
    return page


def _settle(page) -> None:
    """Wait until the script has finished its run: the app's script state reads notRunning.
    (Right after a click or a key the new run may not have started yet: what a test checks next
    it waits for on its own.)"""
    page.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]',
        state="attached",
        timeout=WAIT_MS,
    )


def _open(tab, url: str, viewport=LAPTOP, wait_for: str = "stDataFrame"):
    """The tab at url, in a new session, once the script has run."""
    tab.set_viewport_size(viewport)
    tab.outside.clear()
    tab.goto(url)
    tab.wait_for_selector(f'[data-testid="{wait_for}"]', timeout=WAIT_MS)
    _settle(tab)
    return tab


def _no_exception_box(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in page.inner_text("body")
    assert page.outside == []  # works offline: nothing from a CDN


def _frame(page, index: int) -> list[list[str]]:
    """The cells of the index-th table (the accessible copy of the canvas grid), row by row."""
    rows = (
        page.locator('[data-testid="stDataFrame"]').nth(index).locator("table[role=grid] tbody tr")
    )
    # one round trip for the whole table (a locator per cell cost one each)
    return rows.evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.innerText))"
    )


# the result table shows four decimals: a shown value is right within half a unit of the fourth
# (and float32's own error)
SHOWN = {"rtol": 0, "atol": 5.1e-5}


def _result(page, timeout_s: float = 30) -> np.ndarray:
    """weighted as shown: the first table of the result box, once every editor's grid is drawn
    too (the grids load on their own, after the plain tables). Polls until then (a busy server
    may still be drawing)."""
    deadline = time.monotonic() + timeout_s
    while True:
        table = page.locator(".st-key-pg_result table").first
        grids = page.locator('[data-testid="stDataFrame"]')
        drawn = [grids.nth(i).locator("table[role=grid] th").count() for i in range(grids.count())]
        if table.count() and drawn and all(drawn):
            header = table.locator("thead th").all_inner_texts()
            rows = [r.locator("td").all_inner_texts() for r in table.locator("tbody tr").all()]
            whole = len({len(r) for r in rows}) == 1  # not a table caught mid-redraw
            if rows and whole and header[:2] == ["sentence", "h0"] and rows[0][0] == "0":
                return np.array([[float(v) for v in r[1:]] for r in rows])
        if time.monotonic() > deadline:
            raise AssertionError("no result table on the page")
        page.wait_for_timeout(250)


def _clear_cell(page, table: int, row: int, col: int) -> None:
    """Select a cell of an editor and press Delete: the table sends an empty (null) value."""
    _result(page)  # every table of the page is drawn, so none moves under the mouse
    grid = page.locator('[data-testid="stDataFrame"]').nth(table)
    box = grid.bounding_box()
    n_cols = grid.locator("table[role=grid] th").count()  # columns incl. the index
    col_w = (box["width"] - 57) / (n_cols - 1)
    page.mouse.click(box["x"] + 57 + col_w * (col + 0.5), box["y"] + 35 * (row + 1.5))
    # the grid has selected that cell (its accessible copy says so; column 0 is the index)
    selected = grid.locator(f"#glide-cell-{col + 1}-{row}[aria-selected=true]")
    selected.wait_for(state="attached", timeout=WAIT_MS)
    page.keyboard.press("Delete")
    _settle(page)


def _wait_result(page, expected: np.ndarray, timeout_s: float = 30) -> np.ndarray:
    """Poll the result table until it shows expected (reruns finish asynchronously)."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = _result(page)
        if shown.shape == expected.shape and np.allclose(shown, expected, **SHOWN):
            return shown
        if time.monotonic() > deadline:
            return shown
        page.wait_for_timeout(250)


def _edit_cell(page, table: int, row: int, col: int, text: str) -> None:
    """Select a cell of an editor (row, col count data cells from 0), open it with Enter and type
    text, as a visitor does: the table scrolled into the middle of the view and the pointer moved onto the cell
    before the click (a grid takes a click that arrives with no pointer movement, while another
    element has the focus, as focusing it only)."""
    _result(page)  # every table of the page is drawn, so none moves under the mouse
    grid = page.locator('[data-testid="stDataFrame"]').nth(table)
    grid.evaluate("e => e.scrollIntoView({block: 'center'})")  # not under the app's top bar
    box = grid.bounding_box()
    header_h = 35
    index_w = grid.locator("table[role=grid] th").count()  # columns incl. the index
    col_w = (box["width"] - 57) / (index_w - 1)
    x, y = box["x"] + 57 + col_w * (col + 0.5), box["y"] + header_h * (row + 1.5)
    page.mouse.move(x, y)
    page.wait_for_timeout(100)
    page.mouse.click(x, y, delay=80)
    selected = grid.locator(f"#glide-cell-{col + 1}-{row}[aria-selected=true]")
    selected.wait_for(state="attached", timeout=WAIT_MS)
    page.keyboard.press("Enter")
    cell_input = page.locator("#portal textarea, #portal input").first
    cell_input.wait_for(timeout=WAIT_MS)
    cell_input.fill(text)
    cell_input.press("Enter")
    _settle(page)


def _classic(**kw) -> np.ndarray:
    x, w = examples.classic()
    return attnviz.weighted_sum(x, w, **kw).numpy().astype(np.float64)


#: The rows of a plotly table drawn below their figure's bottom edge (plotly clips them: only
#: its scroll bar, shown on a hover, tells they are there), as the texts of their cells.
_HIDDEN_TABLE_ROWS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot) => {
  const bottom = plot.getBoundingClientRect().bottom;
  return [...plot.querySelectorAll('.table .cell-text')]
    .filter((t) => t.textContent.trim() && t.getBoundingClientRect().bottom > bottom + 1)
    .map((t) => t.textContent.slice(0, 40));
})"""


def test_playground_shows_the_classic_result(tab, server):
    page = _open(tab, server)
    np.testing.assert_allclose(_result(page), _classic(), **SHOWN)
    assert page.get_by_text("Step 1 of 8").is_visible()
    _no_exception_box(page)
    page.screenshot(path=SHOTS / "playground_laptop_1366x768.png")
    page = _open(tab, server, viewport=PROJECTOR)
    page.screenshot(path=SHOTS / "playground_projector_1920x1080.png")
    # the gallery's table on the projector: its text is biggest there, and every row still shows
    page = _open(tab, f"{server}/?tab=mistakes", viewport=PROJECTOR)
    page.locator('[role="tabpanel"]:visible .js-plotly-plot .table').first.wait_for(timeout=WAIT_MS)
    _settle(page)
    assert page.evaluate(_HIDDEN_TABLE_ROWS) == []


def test_editing_a_cell_updates_the_result_and_the_link(tab, server):
    page = _open(tab, server)
    _edit_cell(page, 0, 0, 0, "2.5")
    x, w = examples.classic()
    x[0, 0, 0] = 2.5
    expected = attnviz.weighted_sum(x, w).numpy().astype(np.float64)
    np.testing.assert_allclose(_wait_result(page, expected), expected, **SHOWN)
    page.wait_for_url("**x=2.5_*", timeout=WAIT_MS)
    _no_exception_box(page)


def test_a_bad_cell_shows_a_message_and_keeps_the_result(tab, server):
    page = _open(tab, server)
    _clear_cell(page, 2, 0, 1)  # att_scores[0, 1] emptied
    alert = page.locator('[data-testid="stAlert"]', has_text="att_scores[0, 1]")
    try:
        alert.first.wait_for(timeout=WAIT_MS)
    finally:
        page.screenshot(path=SHOTS / "playground_bad_cell.png")
    assert "is empty" in alert.first.inner_text()
    np.testing.assert_allclose(_result(page), _classic(), **SHOWN)
    _no_exception_box(page)
    page.screenshot(path=SHOTS / "playground_bad_cell.png")


TYPED = [  # (typed, the number it means or None, what the message says)
    ("1e-3", 1e-3, None),
    ("0,5", 0.5, None),
    ("-.25", -0.25, None),
    ("1e30", None, "1e30 is larger than"),
    ("abc", None, "'abc' is not a number"),
    ("1,000", None, "could mean"),
]


def test_typed_numbers_are_read_or_refused_with_what_was_typed(tab, server):
    """Each of TYPED typed in turn into net_output[0, 1, 2] on one page, the refusals first: a
    refused one is named in its message, stays visible in its cell and keeps the classic result;
    a read one gives the classic example with that number. A failure names what was typed."""
    page = _open(tab, server)
    for typed, value, says in sorted(TYPED, key=lambda case: case[1] is not None):
        try:
            _type_a_number(page, typed, value, says)
        except Exception as e:  # an assertion or a wait that timed out: say which value
            raise AssertionError(f"typed {typed!r}: {e}") from e


def _type_a_number(page, typed: str, value: float | None, says: str | None) -> None:
    _edit_cell(page, 0, 1, 2, typed)  # net_output[0, 1, 2]
    x, w = examples.classic()
    if value is not None:
        x[0, 1, 2] = value
        expected = attnviz.weighted_sum(x, w).numpy().astype(np.float64)
        np.testing.assert_allclose(_wait_result(page, expected), expected, **SHOWN)
    else:
        alert = page.locator('[data-testid="stAlert"]', has_text="net_output[0, 1, 2]")
        alert = alert.filter(has_text=says)  # this value's message, not the one before it
        alert.first.wait_for(timeout=WAIT_MS)
        assert says in alert.first.inner_text()
        assert typed in _frame(page, 0)[1]  # what was typed stays visible in its cell
        np.testing.assert_allclose(_result(page), _classic(), **SHOWN)
    _no_exception_box(page)
    page.screenshot(path=SHOTS / f"typed_{typed.replace(',', 'comma')}.png")


def test_stepping_through_the_broadcast(tab, server):
    page = _open(tab, server, viewport={"width": 1280, "height": 800})
    for k in range(2, 6):
        page.get_by_role("button", name="Next").click()
        page.get_by_text(f"Step {k} of 8").wait_for(timeout=WAIT_MS)
    _settle(page)
    assert "step=4" in page.url
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.scroll_into_view_if_needed()
    assert chart.is_visible()
    assert "(3, 1, 0)" in page.inner_text("body")  # the stretch: stride 0 on the hidden axis
    _no_exception_box(page)
    page.screenshot(path=SHOTS / "steps_expand_1280x800.png", full_page=False)


def test_clicking_a_result_cell_shows_its_provenance(tab, server):
    page = _open(tab, f"{server}/?tab=cell", wait_for="stPlotlyChart")
    chart = page.locator(".st-key-pg_pick .nsewdrag").first
    chart.wait_for(timeout=WAIT_MS)
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    # weighted is (2, 5), rows from the top (reversed y axis): cell (b=1, h=3)
    page.mouse.click(box["x"] + box["width"] * 3.5 / 5, box["y"] + box["height"] * 0.75)
    page.get_by_text("weighted[1, 3] = Σ_t").first.wait_for(timeout=WAIT_MS)
    _no_exception_box(page)
    # the sum written out with the numbers of the classic example, as the library computes it
    expected = attnviz.trace.provenance(*examples.classic(), 1, 3).equation
    body = " ".join(page.inner_text("body").split())
    assert " ".join(expected.split()) in body
    page.screenshot(path=SHOTS / "provenance_click_1366x768.png")


def test_tampered_link_keeps_the_defaults(tab, server):
    page = _open(tab, f"{server}/?p=classic&s=2x3x5&x=1_2_3")
    assert "could not be read" in page.locator('[data-testid="stAlert"]').first.inner_text()
    np.testing.assert_allclose(_result(page), _classic(), **SHOWN)
    _no_exception_box(page)


def test_walkthrough_opens_on_the_slide_in_the_link(tab, server):
    page = _open(tab, f"{server}/walkthrough?slide=4", viewport=PROJECTOR, wait_for="stPlotlyChart")
    assert page.get_by_text("Slide 4 of").is_visible()
    page.screenshot(path=SHOTS / "walkthrough_projector_1920x1080.png")
    page.get_by_role("button", name="Next").click()
    page.get_by_text("Slide 5 of").wait_for(timeout=WAIT_MS)
    page.wait_for_url("**slide=5*", timeout=WAIT_MS)
    _no_exception_box(page)


def test_performance_times_the_methods(tab, server):
    page = _open(tab, f"{server}/performance", wait_for="stButton")
    has_gpu = torch.cuda.is_available() or torch.backends.mps.is_available()
    assert ("No GPU on this server" in page.inner_text("body")) != has_gpu
    page.get_by_role("button", name="Time them").click()
    # the server's benchmark worker runs niced; on a machine busy with CPU-bound work it may be
    # refused at its wall limit (WALL_SLACK x its budget, attnviz/bench/worker.py) with a plain
    # message: an expected failure then, reported as such, never a pass
    refused = page.get_by_text(re.compile("did not finish within|used up its CPU-time budget"))
    page.locator('[data-testid="stDataFrame"]').or_(refused).first.wait_for(timeout=3 * WAIT_MS)
    if refused.count():
        _no_exception_box(page)
        pytest.xfail(f"the niced benchmark worker was starved: {refused.first.inner_text()}")
    _settle(page)
    rows = page.locator('[data-testid="stDataFrame"]').first.locator("table[role=grid] tbody tr")
    rows.first.wait_for(state="attached", timeout=WAIT_MS)  # the grid has drawn its rows
    methods = [r[0] for r in _frame(page, 0)]
    assert methods[0] == "floor" and "broadcast" in methods
    _no_exception_box(page)
    page.screenshot(path=SHOTS / "performance_laptop_1366x768.png")


# ---- no edit lost, whatever came before it -------------------------------------------------------


def _changes_result(page, table: int, row: int, col: int, text: str) -> None:
    """Type text into a cell: the cell keeps it, the result changes and the link carries it."""
    before = _result(page)
    _edit_cell(page, table, row, col, text)
    deadline = time.monotonic() + 30
    while np.array_equal(_result(page), before):
        assert time.monotonic() < deadline, f"the edit {text} of table {table} was lost"
        page.wait_for_timeout(250)
    assert _frame(page, table)[row][col + 1] == text  # column 0 is the row's index
    page.wait_for_url(f"**{text}*", timeout=WAIT_MS)


def _pick_preset(page, name: str) -> None:
    page.locator(".st-key-pg_preset").click()
    page.get_by_role("option", name=name, exact=True).click()
    _settle(page)


def _size(page, letter: str, value: int) -> None:
    box = page.locator(f".st-key-pg_{letter} input")
    box.fill(str(value))
    box.press("Enter")
    _settle(page)


_NAVIGATIONS = {  # what a visitor does before editing
    "tab": lambda page: page.get_by_role("tab", name="Mistakes").click(),
    "step": lambda page: page.get_by_role("button", name="Next").click(),
    "preset": lambda page: _pick_preset(page, "random"),
    "size": lambda page: _size(page, "h", 4),
}


def _navigate(page, how: str) -> None:
    """One of _NAVIGATIONS, then wait until the page shows it: the link has changed (each one
    changes the link) and the run that changed it has finished. A visitor edits the tables the
    page shows once it has redrawn; right after a key or a click the run may not have started yet,
    and an edit typed then would land in the tables that run is about to replace."""
    before = page.url
    _NAVIGATIONS[how](page)
    page.wait_for_url(lambda url: url != before, timeout=WAIT_MS)
    _settle(page)


NAVIGATIONS = {how: functools.partial(_navigate, how=how) for how in _NAVIGATIONS}


@pytest.mark.parametrize("how", [*NAVIGATIONS, "link"])
def test_every_editor_keeps_an_edit_made_right_after_a_navigation(tab, server, how):
    """After a tab switch, a step, a preset, a new size or a link, a value typed into each table
    (both sentences of net_output, then att_scores) is kept and changes the result."""
    if how == "link":
        page = _open(tab, f"{server}/?p=random&s=2x4x4&seed=3&tab=grad&x=" + "_".join(["0.5"] * 32))
    else:
        page = _open(tab, server)
        NAVIGATIONS[how](page)
        _settle(page)
    for k, (table, text) in enumerate([(0, "7.25"), (1, "-3.5"), (2, "2.75")]):
        _changes_result(page, table, k % 2, 1, text)
        if k < 2 and how == "tab":  # another tab before the next table
            page.get_by_role("tab", name=("Gradients", "Step by step")[k]).click()
        elif k < 2 and how == "step":  # another step before the next table
            NAVIGATIONS["step"](page)
        _settle(page)
    _no_exception_box(page)


# ---- the Playground on a phone -------------------------------------------------------------------

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def phone(browser):
    context = browser.new_context(viewport=PHONE, device_scale_factor=2)
    yield _watched(context.new_page())
    context.close()


def test_every_playground_tab_is_legible_on_a_phone(phone, server):
    """390x844, every tab in turn (one page, each tab opened by its tab button, as a visitor
    does): nothing wider than the screen, no two texts of a figure drawn over each other (their
    boxes measured in the page), cell numbers at least 12 px, no plot toolbar, no exception box,
    nothing fetched. Every tab is checked; the failure names each tab and what it broke."""
    from tests.test_live_browser import _CELLS, Wire, _colliding

    wire = Wire(phone)  # the rerun a tab's button asks for, and the run that answers it
    page = _open(phone, f"{server}/?tab={TABS[0][0]}", viewport=PHONE)
    problems = {}
    for i, (key, label) in enumerate(TABS):
        if i:
            wire.wait(lambda: wire.idle, "the page to finish its run")
            asked = wire.asked
            page.get_by_role("tab", name=label).click()
            page.get_by_role("tab", name=label, selected=True).wait_for(timeout=WAIT_MS)
            wire.wait(lambda a=asked: wire.asked > a and wire.idle, f"the {key} tab's run")
        deadline = time.monotonic() + WAIT_MS / 1000
        while page.locator(".modebar-btn").count():  # the phone's run (its size reported) is drawn
            assert time.monotonic() < deadline, f"{key}: the figures kept their laptop toolbar"
            page.wait_for_timeout(250)
        _settle(page)
        info = page.evaluate(_CELLS) or {"texts": []}
        page.locator('[data-testid="stTabs"]').evaluate("e => e.scrollIntoView()")  # its content
        page.screenshot(path=SHOTS / f"playground_phone_{key}.png")
        found = []
        wide = page.evaluate("document.documentElement.scrollWidth")
        if wide > PHONE["width"]:
            found.append(f"the page is {wide} px wide")
        if _colliding(info["texts"]):
            found.append(f"texts drawn over each other: {_colliding(info['texts'])}")
        cells = [t["size"] for t in info["texts"] if t["cell"]]
        if min(cells, default=12) < 12:
            found.append(f"cell numbers of {min(cells)} px")
        if page.evaluate(_HIDDEN_TABLE_ROWS):
            found.append(f"table rows cut off: {page.evaluate(_HIDDEN_TABLE_ROWS)}")
        if page.locator('[data-testid="stException"]').count():
            found.append("an exception box")
        if "Traceback" in page.inner_text("body"):
            found.append("a traceback")
        if page.outside:  # works offline: nothing from a CDN
            found.append(f"fetched {page.outside}")
            page.outside.clear()
        if found:
            problems[key] = found
    assert not problems, problems
