"""The error boundary around each page: a visitor sees a plain message, never a traceback."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.ui.safe import inert

_LOG = logging.getLogger("attnviz.ui")


def guarded(page: Callable[[], None], reset_prefix: str) -> Callable[[], None]:
    """Wrap a page function: AttnvizError -> its message; any other error -> a plain apology, the
    traceback in the server log only, and this page's session state (keys starting with
    reset_prefix) cleared so that the next run starts from the defaults."""

    @functools.wraps(page)
    def run() -> None:
        try:
            page()
        except AttnvizError as e:
            st.error(inert(str(e)))
        except Exception:  # Streamlit's rerun/stop are BaseExceptions and pass through
            _LOG.exception("page %s failed", page.__name__)
            for key in [k for k in st.session_state if str(k).startswith(reset_prefix)]:
                del st.session_state[key]
            st.error(
                "Something went wrong while drawing this page, so it has been reset to its "
                "defaults. Press **Reload defaults** below, or change any control to continue."
            )
            st.button("Reload defaults", key=f"{reset_prefix}reload")

    return run
