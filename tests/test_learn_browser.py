"""Learn the scores in a real browser: Train trains in the real worker, the curves and the weights
are drawn, a visitor's sentence is shown as text, nothing is fetched from outside, no traceback.
Reuses test_browser's server (conftest's app_server), browser and helpers."""

from __future__ import annotations

import pytest

from tests.test_browser import (  # noqa: F401  (fixtures, used by name)
    _no_exception_box,
    _open,
    _settle,
    browser,
    server,
    tab,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TRAIN_MS = 240_000  # the first Train starts the worker (torch, the corpus) on a shared machine


def test_train_draws_the_run_and_shows_a_sentence_as_text(tab, server):  # noqa: F811
    page = _open(tab, f"{server}/learn", wait_for="stButton")
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text("Held-out accuracy after", exact=False).wait_for(timeout=TRAIN_MS)
    _settle(page)
    # curves, 4 sentences, yours: the run that draws them may start after the text shows (seen on
    # a busy machine: the page settled, then no figure yet), so the fifth is waited for
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(4).wait_for(timeout=TRAIN_MS)
    _settle(page)
    assert charts.count() >= 5
    assert "largest weight sits on the sentiment word" in page.inner_text("body")
    box = page.locator(".st-key-lt_text input")
    box.fill("**bold** it was a dull film")
    box.press("Enter")
    page.get_by_text("bold it was a dull film", exact=True).wait_for(timeout=60_000)
    _settle(page)
    assert page.locator('[data-testid="stMarkdownContainer"] strong', has_text="bold").count() == 0
    assert "Prediction:" in page.inner_text("body")
    _no_exception_box(page)
