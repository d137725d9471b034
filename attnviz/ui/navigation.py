"""The app's pages, for ``st.navigation``: Playground (the default), Walkthrough, Performance,
Learn the scores."""

from __future__ import annotations

import streamlit as st

from attnviz.ui import playground
from attnviz.ui.boundary import guarded


def _walkthrough() -> None:
    from attnviz.ui import walkthrough  # imported on first visit: a faster first page

    walkthrough.page()


def _learn() -> None:
    from attnviz.ui import learn  # the training worker and corpus load only when asked for

    learn.page()


def _performance() -> None:
    from attnviz.ui import performance  # the benchmark harness loads only when asked for

    performance.page()


_STYLE = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 4.2rem; padding-bottom: 4rem; }
[data-testid="stMarkdownContainer"] h2 { padding-top: 0.2rem; }
/* the Playground's result tables: as wide as their numbers, scrolled sideways when wider */
.st-key-pg_result table { display: block; overflow-x: auto; max-width: 100%; }
.st-key-pg_result th, .st-key-pg_result td { white-space: nowrap; }
</style>
"""


def chrome() -> None:
    """What every page shares: a tighter top margin so the example is on the first screen, and
    result tables that scroll sideways instead of overflowing their column."""
    st.html(_STYLE)


def walkthrough_page() -> st.Page:
    """The Walkthrough page (for ``st.page_link``)."""
    return st.Page(guarded(_walkthrough, "wt_"), title="Walkthrough", url_path="walkthrough")


def pages() -> list[st.Page]:
    """The pages, each wrapped in the error boundary."""
    return [
        st.Page(
            guarded(playground.page, "pg_"),
            title="Playground",
            url_path="playground",
            default=True,
        ),
        walkthrough_page(),
        st.Page(
            guarded(_performance, "pf_"),
            title="Performance",
            url_path="performance",
        ),
        st.Page(guarded(_learn, "lt_"), title="Learn the scores", url_path="learn"),
    ]
