"""The expression box in a real browser (chromium through Playwright, the helpers of
test_browser): a mistake is drawn as an error, what the box does not run as neutral information,
and an answer right on the example only is not a success. Skips where chromium is missing."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.test_browser import _no_exception_box, _open, browser, server, tab  # noqa: F401

pytestmark = pytest.mark.slow

ALERT = '[data-testid="stAlert"]'


def _alerts(page) -> list[tuple[str, str]]:
    """(kind, text) of every alert: kind from Streamlit's content test id (Error, Info...)."""
    out = []
    for alert in page.locator(ALERT).all():
        content = alert.locator('[data-testid^="stAlertContent"]').first
        kind = (content.get_attribute("data-testid") or "").removeprefix("stAlertContent")
        out.append((kind, alert.inner_text()))
    return out


@pytest.mark.parametrize(
    ("expr", "kind", "says"),
    [
        ("net_output.mean(1)", "Error", "Right on this example only"),
        ("(net_output * att_scores[..., None]).sum(axis=0)", "Error", "Wrong shape"),
        ("net_output.sum(1)", "Error", "wrong numbers"),
        ("net_output.view(torch.int32)", "Info", "Not supported here"),
        ("(net_output * att_scores.view(*att_scores.shape, 1)).sum(1)", "Success", "Right"),
    ],
)
def test_the_verdicts_colour_says_mistake_or_not_supported(tab, server, expr, kind, says):  # noqa: F811
    query = urlencode({"p": "uniform", "s": "2x4x4", "tab": "expr", "e": expr})
    page = _open(tab, f"{server}/?{query}", wait_for="stAlert")
    _no_exception_box(page)
    alerts = [a for a in _alerts(page) if says in a[1]]
    assert alerts and {k for k, _ in alerts} == {kind}, _alerts(page)
    assert "`" not in page.locator('[data-testid="stMain"]').inner_text()
