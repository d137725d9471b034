"""Every page in a real browser, as a first visitor sees it: drawn, no exception box, no traceback.

Cheap on purpose (conftest's shared server, one tab, one load a page): .ci/run also runs it in the environment of
the lowest versions requirements.txt allows (scripts/lowest.py), where it is the browser smoke.
The Playground's and the Walkthrough's behaviour in a browser: test_browser, test_live_browser.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.chromium import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
WAIT_MS = 90_000
PAGES = {  # url path: an element only that page draws once its script has run
    "": '[data-testid="stDataFrame"]',
    "walkthrough": ".st-key-wt_next",
    "performance": '[data-testid="stButton"]',
}


@pytest.fixture(scope="module")
def url(request):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian's chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    return request.getfixturevalue("app_server").url  # conftest's, shared on this worker


@pytest.fixture(scope="module")
def tab(url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        yield page
        browser.close()


@pytest.mark.parametrize("path", list(PAGES), ids=lambda p: p or "playground")
def test_every_page_is_drawn_without_an_error(tab, url, path):
    tab.goto(f"{url}/{path}")
    tab.wait_for_selector(PAGES[path], timeout=WAIT_MS)
    tab.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]',
        state="attached",
        timeout=WAIT_MS,
    )
    assert tab.locator('[data-testid="stException"]').count() == 0
    text = tab.inner_text("body")
    assert "Traceback" not in text and "has encountered an error" not in text
    assert "not configured safely" not in text  # attnviz/ui/settings.py: every setting in force


def test_the_playgrounds_own_address_leads_to_it_with_the_links_example(tab, url):
    """/playground is what the menu's "Playground" suggests (as /walkthrough is the Walkthrough's);
    the Playground is served at the root, so it sends the visitor there, the example kept, never
    to Streamlit's "Page not found"."""
    tab.goto(f"{url}/playground?p=random&s=3x4x6&seed=7")
    tab.wait_for_url(f"{url}/?p=random&s=3x4x6&seed=7", timeout=WAIT_MS)
    tab.wait_for_selector(PAGES[""], timeout=WAIT_MS)
    tab.wait_for_selector(
        '[data-testid="stApp"][data-test-script-state="notRunning"]',
        state="attached",
        timeout=WAIT_MS,
    )
    assert tab.get_by_text("Page not found").count() == 0
    shape = [tab.get_by_role("spinbutton", name=f"{n} (").input_value() for n in "BTH"]
    assert shape == ["3", "4", "6"]  # the link's example, not the classic 2 x 3 x 5
    assert tab.locator('[data-testid="stException"]').count() == 0
