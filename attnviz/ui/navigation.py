"""The app's pages, for ``st.navigation``: Playground (the default), Walkthrough, Performance,
Learn the scores."""

from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st

from attnviz.ui import figure, playground
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
/* text contrast >= 4.5:1 on white (WCAG 2.1 AA): captions, figure summaries, code colours */
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] *,
.attnviz-summary { color: #4a4a4a !important; opacity: 1 !important; }
[data-testid="stCode"] .token.comment, [data-testid="stCode"] .token.prolog { color: #57585f; }
[data-testid="stCode"] .token.boolean, [data-testid="stCode"] .token.number,
[data-testid="stCode"] .token.constant { color: #0b6b2a; }
[data-testid="stCode"] .token.string, [data-testid="stCode"] .token.char { color: #8a4200; }
[data-testid="stCode"] .token.keyword, [data-testid="stCode"] .token.builtin { color: #7a1fa2; }
[data-testid="stCode"] .token.function, [data-testid="stCode"] .token.class-name { color: #1d4f91; }
[data-testid="stCode"] .token.operator, [data-testid="stCode"] .token.punctuation { color: #333333; }
/* one h1 a page; the Playground's panel heads (h2) and their parts (h3) at working size */
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] h2 { font-size: 1.25rem; }
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] h3 { font-size: 1.1rem; }
.attnviz-summary { font-size: 0.875rem; margin: 0 0 0.25rem 0; }
/* visible focus (>= 3:1) on every control, links and switches included */
a:focus-visible, button:focus-visible, [role="tab"]:focus-visible, [role="switch"]:focus-visible,
input:focus-visible, summary:focus-visible, [tabindex]:focus-visible, label:focus-within {
  outline: 3px solid #1a4f8b !important; outline-offset: 2px;
}
/* a multiselect's text box, beside its chips, a touch target of at least 24 px (WCAG 2.5.8) */
[data-testid="stMultiSelectTagsContainer"] input { min-width: 24px; min-height: 24px; }
/* a figure's numbers: real tables, scrolled sideways inside themselves when wider */
.attnviz-tables { overflow-x: auto; max-width: 100%; }
.attnviz-tables table { border-collapse: collapse; margin: 0.5rem 0 1rem 0; font-size: 0.875rem; }
.attnviz-tables caption { text-align: left; font-weight: 600; padding-bottom: 0.25rem; }
.attnviz-tables th, .attnviz-tables td { border: 1px solid #b0b0b0; padding: 0.15rem 0.5rem;
  text-align: right; white-space: nowrap; }
details.attnviz-numbers > summary { cursor: pointer; color: #1a4f8b; }
/* the live region and its sentences: for screen readers only */
.attnviz-sr { position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px;
  overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
[data-testid="stElementContainer"]:has(.attnviz-say),
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"]:empty) { display: none; }
/* no sideways page scroll on a narrow screen (320 CSS px): wide content scrolls inside itself;
   the tab strip wraps to a second row, every tab in view (no strip to scroll sideways) */
[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; overflow-x: visible; }
@media (max-width: 640px) {
  [data-testid="stMainBlockContainer"] { padding-left: 0.75rem; padding-right: 0.75rem; }
}
</style>
"""


def chrome() -> None:
    """What every page shares: a tighter top margin so the example is on the first screen,
    result tables that scroll sideways instead of overflowing their column, text and focus
    rings in WCAG AA contrast, and the page's accessibility script (``figure.install``)."""
    st.html(_STYLE)
    figure.install()  # figures hidden behind their text equivalents; the live region


APP_NAME = "attnviz"


def _titled(page: Callable[[], None], title: str) -> Callable[[], None]:
    """The page with its own browser-tab title ("Playground · attnviz"), before it draws."""

    @functools.wraps(page)
    def run() -> None:
        st.set_page_config(page_title=f"{title} · {APP_NAME}")
        page()

    return run


def walkthrough_page() -> st.Page:
    """The Walkthrough page (for ``st.page_link``)."""
    return st.Page(
        guarded(_titled(_walkthrough, "Walkthrough"), "wt_"),
        title="Walkthrough",
        url_path="walkthrough",
    )


def _sent_to(page: st.Page) -> Callable[[], None]:
    """A page that sends its visitor on to ``page``, with the link's query (its example, a
    class's code): every value, repeated keys included, as it came."""

    def send() -> None:
        st.switch_page(
            page, query_params=[(k, v) for k in st.query_params for v in st.query_params.get_all(k)]
        )

    return send


def pages() -> list[st.Page]:
    """The pages, each wrapped in the error boundary. The Playground is served at the app's root;
    /playground, the address its name in the menu suggests (as /walkthrough is the Walkthrough's),
    sends the visitor there with the link's example, not to Streamlit's "Page not found"."""
    home = st.Page(
        guarded(_titled(playground.page, "Playground"), "pg_"),
        title="Playground",
        url_path="",
        default=True,
    )
    return [
        home,
        st.Page(
            guarded(
                _sent_to(home), "pg_"
            ),  # a link it cannot forward: a plain message, as anywhere
            title="Playground",
            url_path="playground",
            visibility="hidden",
        ),
        walkthrough_page(),
        st.Page(
            guarded(_titled(_performance, "Performance"), "pf_"),
            title="Performance",
            url_path="performance",
        ),
        st.Page(
            guarded(_titled(_learn, "Learn the scores"), "lt_"),
            title="Learn the scores",
            url_path="learn",
        ),
    ]
