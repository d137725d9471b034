"""Control messages a browser may send but a visitor must not act on.

Streamlit (1.67) answers a websocket ``BackMsg`` with ``clear_cache=true`` by clearing
``st.cache_data`` and ``st.cache_resource`` for every session of the process
(``AppSession._handle_clear_cache_request``: "Because this cache is global, it will be cleared
for all users"). ``client.toolbarMode = "viewer"`` only hides the menu item; any client can still
send the message. Streamlit has no setting that turns the handler off (checked: config options,
``AppSession.handle_backmsg``), so ``protect()`` replaces that one handler, once per process, with
one that clears nothing shared and logs the attempt. ``load_git_info`` (the viewer toolbar hides
it too; it would read the deployment's git remote and branch) is answered the same way.

Everything else a browser sends (reruns, widget values, heartbeats) is untouched. The app calls
``protect()`` first thing on every run (app.py); it is idempotent. The caches can still be cleared
by the operator: restart the process, or ``st.cache_data.clear()`` from code.
"""

from __future__ import annotations

import logging

from streamlit.runtime.app_session import AppSession

_LOG = logging.getLogger("attnviz.ui")
_ORIGINAL = {
    "_handle_clear_cache_request": AppSession._handle_clear_cache_request,
    "_handle_git_information_request": AppSession._handle_git_information_request,
}


def _refuse_clear_cache(self: AppSession) -> None:
    _LOG.warning("refused a browser's clear_cache request (session %s)", self.id)


def _refuse_git_info(self: AppSession) -> None:
    _LOG.info("refused a browser's load_git_info request (session %s)", self.id)


def protect() -> None:
    """Make a browser's ``clear_cache`` and ``load_git_info`` messages do nothing shared."""
    AppSession._handle_clear_cache_request = _refuse_clear_cache
    AppSession._handle_git_information_request = _refuse_git_info


def protected() -> bool:
    """Whether ``protect()`` is in force in this process."""
    return AppSession._handle_clear_cache_request is _refuse_clear_cache
