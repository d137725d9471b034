"""Lighthouse's accessibility score is 100 on every page, desktop and mobile (issue #31).

Lighthouse 12.2.3 is pinned and installed by .ci/run into .lighthouse/; these tests skip with the
command to run where it, node or chromium is missing. One server and one Lighthouse browser for
every page and form factor (``scripts/lighthouse.py``); each audit waits for the page Streamlit
draws, and a result whose page had no heading counts as a failure (the empty shell scores 100 too).
"""

from __future__ import annotations

import pytest

from scripts import lighthouse

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_lighthouse_accessibility_is_100_on_every_page_desktop_and_mobile(request):
    """One test, not one a page: Lighthouse's browser starts once, on conftest's app_server (its
    own SQLite class store), shared with the other modules on this worker."""
    reason = lighthouse.missing()
    if reason:
        pytest.skip(reason)
    results = lighthouse.audit(request.getfixturevalue("app_server").url)
    assert {r["version"] for r in results} == {lighthouse.VERSION}
    assert len(results) == len(lighthouse.PAGES) * len(lighthouse.FORM_FACTORS)
    found = {f"{r['name']} ({r['formFactor']})": lighthouse.problems(r) for r in results}
    assert not any(found.values()), (lighthouse.table(results), found)
    assert all(r["score"] == 1 for r in results), lighthouse.table(results)


def test_an_unrendered_page_is_not_taken_for_a_pass():
    shell = {"score": 1, "failing": [], "applicable": ["document-title"], "h1": None}
    assert lighthouse.problems(shell) == [
        "the audited page had no heading: Lighthouse saw the empty shell"
    ]


def test_a_failing_audit_is_named():
    result = {
        "score": 0.96,
        "failing": [{"id": "target-size", "title": "Touch targets", "nodes": ["<input>"]}],
        "applicable": ["heading-order", "target-size"],
        "h1": "Performance",
    }
    assert lighthouse.problems(result) == ["target-size (Touch targets): ['<input>']"]
